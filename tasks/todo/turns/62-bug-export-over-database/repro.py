import os
import sys
import tempfile

from todo.cli import main

os.chdir(tempfile.mkdtemp())
main(["--db", "todo.db", "add", "Renew passport"])
main(["--db", "todo.db", "add", "Call the bank"])

# meant: --db todo.db export -o todos.json  (tab completion picked the wrong file)
main(["--db", "todo.db", "export", "-o", "todo.db"])
print("exit code of list:", code := main(["--db", "todo.db", "list"]))
sys.exit(code)

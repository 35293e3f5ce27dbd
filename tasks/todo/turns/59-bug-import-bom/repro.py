import os
import sys
import tempfile

from todo.cli import main

folder = tempfile.mkdtemp()
backup = os.path.join(folder, "backup.json")
# the backup after a quick edit in Notepad, which saves "UTF-8 with BOM"
with open(backup, "w", encoding="utf-8-sig", newline="\r\n") as handle:
    handle.write('[\n  {"title": "Book flights", "done": false},\n  {"title": "Pack bags", "done": false}\n]\n')

code = main(["--db", os.path.join(folder, "todo.db"), "import", backup])
print("exit code:", code)
sys.exit(code)

import os
import subprocess
import sys
import tempfile

from todo.service import TodoService
from todo.storage import TodoStore

db = os.path.join(tempfile.mkdtemp(), "big.db")
with TodoStore(db) as store:
    TodoService(store).import_todos([{"title": f"Imported task number {n}"} for n in range(1, 10001)])

# the same as: python -m todo --db big.db list | head -n 3
todo_list = subprocess.Popen([sys.executable, "-m", "todo", "--db", db, "list"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
for _ in range(3):
    print(todo_list.stdout.readline(), end="")
todo_list.stdout.close()
errors = todo_list.stderr.read()
todo_list.wait()
print(errors, end="")
if errors:
    raise SystemExit(1)

import json
import os
import tempfile

from todo.cli import main
from todo.service import TodoService
from todo.storage import TodoStore

folder = tempfile.mkdtemp()
laptop, new_laptop = os.path.join(folder, "laptop.db"), os.path.join(folder, "new-laptop.db")
backup, check = os.path.join(folder, "backup.json"), os.path.join(folder, "check.json")
with TodoStore(laptop) as store:
    TodoService(store).create("File taxes", priority="high", tags=["money"], due="2025-04-30")

main(["--db", laptop, "export", "-o", backup])
main(["--db", new_laptop, "import", backup])
main(["--db", new_laptop, "export", "-o", check])

KEYS = ("title", "done", "priority", "tags", "due")
with open(backup, encoding="utf-8") as before, open(check, encoding="utf-8") as after:
    old = [{key: todo[key] for key in KEYS} for todo in json.load(before)]
    new = [{key: todo[key] for key in KEYS} for todo in json.load(after)]
print("backup:  ", old)
print("restored:", new)
if old != new:
    raise SystemExit("the restored todos differ from the backup")

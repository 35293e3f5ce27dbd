import contextlib
import io
import os
import re
import tempfile

from todo.cli import main
from todo.service import TodoService
from todo.storage import TodoStore

db = os.path.join(tempfile.mkdtemp(), "repro.db")
with TodoStore(db) as store:
    service = TodoService(store)
    service.create("Water the plants")
    service.create("Buy milk\nand eggs")  # pasted from a chat message in the web client
    service.create("Call\tthe   landlord")

output = io.StringIO()
with contextlib.redirect_stdout(output):
    main(["--db", db, "list"])
lines = output.getvalue().splitlines()
for line in lines:
    print(repr(line))
broken = [line for line in lines if not re.fullmatch(r"\[[ x]\] #\d+ \S.*", line) or "\t" in line or "  " in line]
if broken:
    raise SystemExit(f"{len(broken)} line(s) of `todo list` are not one todo per line")

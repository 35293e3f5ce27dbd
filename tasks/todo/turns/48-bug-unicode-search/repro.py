import os
import tempfile

from todo.service import TodoService
from todo.storage import TodoStore

service = TodoService(TodoStore(os.path.join(tempfile.mkdtemp(), "repro.db")))
for title in ["Café mit Jörg", "Ölwechsel beim Händler", "ÉCOLE: réunion des parents"]:
    service.create(title)

missing = []
for text in ["café", "CAFÉ", "jÖrg", "ölwechsel", "ÖLWECHSEL", "école", "Réunion"]:
    found = [todo.title for todo in service.list(search=text)]
    print(f"search {text!r:14} -> {found}")
    if not found:
        missing.append(text)
if missing:
    raise SystemExit(f"nothing found for: {', '.join(missing)}")

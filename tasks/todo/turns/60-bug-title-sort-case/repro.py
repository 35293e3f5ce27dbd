import os
import tempfile

from todo.service import TodoService
from todo.storage import TodoStore

service = TodoService(TodoStore(os.path.join(tempfile.mkdtemp(), "repro.db")))
for title in ["Écrire au syndic", "écouter le podcast", "Öl kaufen", "öffnungszeiten prüfen", "apple pie"]:
    service.create(title)

titles = [todo.title for todo in service.list(sort="title")]
print("sort=title:", titles)
expected = sorted(titles, key=str.casefold)
if titles != expected:
    raise SystemExit(f"expected:   {expected}")

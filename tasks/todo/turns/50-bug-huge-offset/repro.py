import os
import tempfile

from todo.service import TodoService
from todo.storage import TodoStore

service = TodoService(TodoStore(os.path.join(tempfile.mkdtemp(), "repro.db")))
for number in range(1, 4):
    service.create(f"Todo {number}")

for offset in (2, 50, 99999999999999999999):
    todos, total = service.list_page(limit=10, offset=offset)
    print(f"offset={offset}: {[todo.title for todo in todos]} total={total}")

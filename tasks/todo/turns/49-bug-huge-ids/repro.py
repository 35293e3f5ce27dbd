import os
import tempfile

from todo.errors import TodoNotFound
from todo.service import TodoService
from todo.storage import TodoStore

service = TodoService(TodoStore(os.path.join(tempfile.mkdtemp(), "repro.db")))
service.create("Water the plants")

# the mobile client sent a millisecond timestamp instead of a todo id
for todo_id in (1, 404, 17329011234567890123):
    try:
        print(f"get({todo_id}) -> {service.get(todo_id).title!r}")
    except TodoNotFound as exc:
        print(f"get({todo_id}) -> not found: {exc}")

import re
from datetime import datetime, timedelta, timezone

from todo_hidden_http import call

TS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")


class FakeClock:
    def __init__(self, start):
        self.now = start

    def __call__(self):
        return self.now

    def advance(self, **kwargs):
        self.now = self.now + timedelta(**kwargs)


def _service(tmp_path, clock=None):
    from todo.service import TodoService
    from todo.storage import TodoStore

    return TodoService(TodoStore(tmp_path / "svc.db"), clock=clock)


def test_create_sets_both_timestamps_from_clock(tmp_path):
    clock = FakeClock(datetime(2024, 3, 1, 9, 30, 15, tzinfo=timezone.utc))
    todo = _service(tmp_path, clock).create("Buy milk")
    assert todo.created_at == "2024-03-01T09:30:15Z"
    assert todo.updated_at == "2024-03-01T09:30:15Z"


def test_changes_bump_only_updated_at(tmp_path):
    clock = FakeClock(datetime(2024, 3, 1, 9, 30, tzinfo=timezone.utc))
    service = _service(tmp_path, clock)
    todo = service.create("Buy milk")
    clock.advance(minutes=5)
    renamed = service.rename(todo.id, "Buy oat milk")
    assert renamed.created_at == "2024-03-01T09:30:00Z"
    assert renamed.updated_at == "2024-03-01T09:35:00Z"
    clock.advance(hours=1)
    done = service.complete(todo.id)
    assert done.updated_at == "2024-03-01T10:35:00Z"
    again = service.get(todo.id)
    assert (again.created_at, again.updated_at) == ("2024-03-01T09:30:00Z", "2024-03-01T10:35:00Z")


def test_non_utc_clock_is_converted_to_utc(tmp_path):
    plus_two = timezone(timedelta(hours=2))
    clock = FakeClock(datetime(2024, 3, 1, 11, 30, 0, tzinfo=plus_two))
    todo = _service(tmp_path, clock).create("Buy milk")
    assert todo.created_at == "2024-03-01T09:30:00Z"


def test_http_exposes_timestamps(tmp_path):
    from todo.web import create_app

    clock = FakeClock(datetime(2023, 12, 31, 23, 59, 59, tzinfo=timezone.utc))
    app = create_app(str(tmp_path / "api.db"), clock=clock)
    status, _, created = call(app, "POST", "/todos", json={"title": "Party"})
    assert status == 201
    assert created["created_at"] == "2023-12-31T23:59:59Z"
    assert created["updated_at"] == "2023-12-31T23:59:59Z"
    clock.advance(seconds=2)
    _, _, patched = call(app, "PATCH", f"/todos/{created['id']}", json={"done": True})
    assert patched["created_at"] == "2023-12-31T23:59:59Z"
    assert patched["updated_at"] == "2024-01-01T00:00:01Z"
    _, _, listing = call(app, "GET", "/todos")
    assert listing["todos"][0]["updated_at"] == "2024-01-01T00:00:01Z"


def test_default_clock_format_and_persistence(tmp_path):
    from todo.models import Todo
    from todo.service import TodoService
    from todo.storage import TodoStore

    path = tmp_path / "real.db"
    with TodoStore(path) as store:
        todo = TodoService(store).create("Buy milk")
    assert TS.match(todo.created_at) and TS.match(todo.updated_at)
    assert todo.created_at <= todo.updated_at
    with TodoStore(path) as store:
        again = store.get(todo.id)
    assert (again.created_at, again.updated_at) == (todo.created_at, todo.updated_at)
    data = Todo("x", created_at="2024-01-01T00:00:00Z").to_dict()
    assert data["created_at"] == "2024-01-01T00:00:00Z"
    assert data["updated_at"] is None

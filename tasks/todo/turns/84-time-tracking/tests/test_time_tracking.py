import sqlite3

import pytest
from todo_hidden_http import call


def _app(path):
    from todo.web import create_app

    return create_app(str(path))


@pytest.fixture
def statements(monkeypatch):
    """Every SQL statement run on connections opened from now on."""
    import todo.storage

    seen = []
    real = sqlite3.connect

    def traced(*args, **kwargs):
        conn = real(*args, **kwargs)
        conn.set_trace_callback(seen.append)
        return conn

    monkeypatch.setattr(sqlite3, "connect", traced)
    if hasattr(todo.storage, "connect"):
        monkeypatch.setattr(todo.storage, "connect", traced)
    return seen


def _seed(app, count):
    ids = []
    for n in range(count):
        todo_id = call(app, "POST", "/todos", json={"title": f"task {n:02d}", "tags": ["work"]})[2]["id"]
        for minutes in (10, n + 1):
            assert call(app, "POST", f"/todos/{todo_id}/time", json={"minutes": minutes})[0] == 201
        ids.append(todo_id)
    return ids


def _statements_for(app, statements, path):
    statements.clear()
    status, _, body = call(app, "GET", path)
    assert status == 200
    return len(statements), body


def test_logging_time_adds_up(tmp_path):
    app = _app(tmp_path / "t.db")
    first = call(app, "POST", "/todos", json={"title": "write report"})[2]
    other = call(app, "POST", "/todos", json={"title": "idle"})[2]
    assert first["time_spent"] == 0
    status, _, body = call(app, "POST", f"/todos/{first['id']}/time", json={"minutes": 25})
    assert status == 201 and body["id"] == first["id"] and body["time_spent"] == 25
    status, _, body = call(app, "POST", f"/todos/{first['id']}/time", json={"minutes": 5})
    assert body["time_spent"] == 30
    assert call(app, "GET", f"/todos/{first['id']}")[2]["time_spent"] == 30
    assert call(app, "GET", f"/todos/{other['id']}")[2]["time_spent"] == 0
    listed = {t["title"]: t["time_spent"] for t in call(app, "GET", "/todos")[2]["todos"]}
    assert listed == {"write report": 30, "idle": 0}


def test_time_survives_other_changes(tmp_path):
    app = _app(tmp_path / "t.db")
    todo_id = call(app, "POST", "/todos", json={"title": "keep counting"})[2]["id"]
    call(app, "POST", f"/todos/{todo_id}/time", json={"minutes": 90})
    assert call(app, "PATCH", f"/todos/{todo_id}", json={"title": "renamed", "tags": ["x"]})[2]["time_spent"] == 90
    assert call(app, "POST", f"/todos/{todo_id}/complete")[2]["time_spent"] == 90
    assert call(app, "POST", f"/todos/{todo_id}/archive")[2]["time_spent"] == 90
    archived = call(app, "GET", "/todos?archived=true")[2]["todos"]
    assert [(t["id"], t["time_spent"]) for t in archived] == [(todo_id, 90)]


@pytest.mark.parametrize("minutes", [0, -5, 1441, 2.5, "10", True, None, [30]])
def test_bad_minutes_are_input_errors(tmp_path, minutes):
    app = _app(tmp_path / "t.db")
    todo_id = call(app, "POST", "/todos", json={"title": "careful"})[2]["id"]
    payload = {} if minutes is None else {"minutes": minutes}
    status, _, body = call(app, "POST", f"/todos/{todo_id}/time", json=payload)
    assert status == 400 and body["field"] == "minutes", body
    assert call(app, "GET", f"/todos/{todo_id}")[2]["time_spent"] == 0


def test_limits_and_missing_todos(tmp_path):
    app = _app(tmp_path / "t.db")
    todo_id = call(app, "POST", "/todos", json={"title": "long day"})[2]["id"]
    assert call(app, "POST", f"/todos/{todo_id}/time", json={"minutes": 1440})[2]["time_spent"] == 1440
    assert call(app, "POST", f"/todos/{todo_id}/time", json={"minutes": 1})[2]["time_spent"] == 1441
    status, _, body = call(app, "POST", "/todos/999/time", json={"minutes": 10})
    assert status == 404 and body["error"]
    status, _, _ = call(app, "POST", f"/todos/{todo_id}/time", json=[10])
    assert status == 400
    assert call(app, "GET", f"/todos/{todo_id}/time")[0] == 405


def test_service_log_time(tmp_path):
    from todo.errors import TodoNotFound, ValidationError
    from todo.service import TodoService
    from todo.storage import TodoStore

    service = TodoService(TodoStore(tmp_path / "s.db"))
    todo = service.create("service level")
    assert service.log_time(todo.id, 45).time_spent == 45
    assert service.log_time(todo.id, 15).time_spent == 60
    assert service.get(todo.id).time_spent == 60
    assert [t.time_spent for t in service.list()] == [60]
    with pytest.raises(ValidationError):
        service.log_time(todo.id, 0)
    with pytest.raises(TodoNotFound):
        service.log_time(todo.id + 1, 5)


def test_list_needs_the_same_number_of_queries_for_5_and_50_todos(tmp_path, statements):
    small = _app(tmp_path / "small.db")
    _seed(small, 5)
    big = _app(tmp_path / "big.db")
    _seed(big, 50)
    few, body = _statements_for(small, statements, "/todos")
    assert [t["time_spent"] for t in body["todos"]] == [10 + n for n in range(5, 0, -1)]
    many, body = _statements_for(big, statements, "/todos")
    assert len(body["todos"]) == 50
    assert [t["time_spent"] for t in body["todos"]] == [10 + n for n in range(50, 0, -1)]
    assert few == many, (few, many)


def test_filtered_pages_need_the_same_number_of_queries(tmp_path, statements):
    small = _app(tmp_path / "small.db")
    _seed(small, 5)
    big = _app(tmp_path / "big.db")
    _seed(big, 50)
    path = "/todos?tag=work&sort=title&limit=40&offset=2"
    few, body = _statements_for(small, statements, path)
    assert [t["time_spent"] for t in body["todos"]] == [13, 14, 15]
    many, body = _statements_for(big, statements, path)
    assert len(body["todos"]) == 40 and body["todos"][0]["time_spent"] == 13
    assert few == many, (few, many)

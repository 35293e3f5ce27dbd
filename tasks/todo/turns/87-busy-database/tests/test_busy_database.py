import sqlite3
import threading

import pytest
from todo_hidden_http import call


def _locker(db):
    """A second connection holding the write lock until it is closed."""
    other = sqlite3.connect(str(db), timeout=0, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    return other


def _app(db, monkeypatch, timeout="0.05"):
    from todo.web import create_app

    monkeypatch.setenv("TODO_DB_TIMEOUT", timeout)
    return create_app(str(db))


def test_timeout_setting():
    from todo.config import ConfigError, load_settings

    assert load_settings({}).db_timeout == 5
    assert load_settings({"TODO_DB_TIMEOUT": "0.25"}).db_timeout == 0.25
    assert load_settings({"TODO_DB_TIMEOUT": " 12 "}).db_timeout == 12
    assert load_settings({"TODO_DB_TIMEOUT": "0"}).db_timeout == 0
    for bad in ("-1", "soon", "nan", "inf", "1,5"):
        with pytest.raises(ConfigError) as info:
            load_settings({"TODO_DB_TIMEOUT": bad})
        assert "TODO_DB_TIMEOUT" in str(info.value) and bad in str(info.value)


def test_locked_database_gives_503_with_retry_after(tmp_path, monkeypatch):
    db = tmp_path / "busy.db"
    app = _app(db, monkeypatch)
    assert call(app, "POST", "/todos", json={"title": "before"})[0] == 201
    other = _locker(db)
    try:
        status, headers, body = call(app, "POST", "/todos", json={"title": "while locked"})
        assert status == 503, body
        assert body["error"]
        assert int(headers["retry-after"]) >= 1
    finally:
        other.execute("ROLLBACK")
        other.close()
    status, _, body = call(app, "POST", "/todos", json={"title": "after"})
    assert status == 201
    assert [t["title"] for t in call(app, "GET", "/todos")[2]["todos"]] == ["after", "before"]


def test_every_kind_of_write_waits_then_gives_up(tmp_path, monkeypatch):
    db = tmp_path / "busy.db"
    app = _app(db, monkeypatch)
    todo_id = call(app, "POST", "/todos", json={"title": "target", "tags": ["a"]})[2]["id"]
    finished = call(app, "POST", "/todos", json={"title": "finished"})[2]["id"]
    assert call(app, "POST", f"/todos/{finished}/complete")[0] == 200  # something for clear-completed to delete
    other = _locker(db)
    try:
        attempts = [
            ("PATCH", f"/todos/{todo_id}", {"title": "renamed", "tags": ["b"]}),
            ("POST", f"/todos/{todo_id}/complete", None),
            ("DELETE", f"/todos/{todo_id}", None),
            ("POST", "/todos/bulk", {"action": "add-tags", "ids": [todo_id], "tags": ["c"]}),
            ("POST", "/todos/clear-completed", None),
        ]
        for method, path, payload in attempts:
            status, headers, _ = call(app, method, path, json=payload)
            assert status == 503 and "retry-after" in headers, (method, path, status)
    finally:
        other.execute("ROLLBACK")
        other.close()
    todo = call(app, "GET", f"/todos/{todo_id}")[2]
    assert (todo["title"], todo["tags"], todo["done"]) == ("target", ["a"], False)
    assert call(app, "GET", f"/todos/{finished}")[0] == 200


def test_several_instances_writing_from_threads(tmp_path):
    from todo.service import TodoService
    from todo.storage import TodoStore

    db = tmp_path / "shared.db"
    TodoStore(db, timeout=30).close()  # the schema, made once before the writers start
    errors = []

    def work(number):
        try:
            service = TodoService(TodoStore(db, timeout=30))  # each writer's store opened on its own thread
            for n in range(8):
                todo = service.create(f"worker {number} item {n}", tags=[f"w{number}"])
                service.complete(todo.id)
        except Exception as exc:  # noqa: BLE001 - collected and reported below
            errors.append(repr(exc))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    reader = TodoService(TodoStore(db, timeout=30))
    todos = reader.list(archived=None)
    assert len(todos) == 32 and len({t.id for t in todos}) == 32
    assert all(t.done for t in todos)
    assert reader.stats()["by_tag"] == {f"w{i}": 8 for i in range(4)}

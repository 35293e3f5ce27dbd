import sqlite3

from todo_hidden_http import call


def _app(path):
    from todo.web import create_app

    return create_app(str(path))


def test_health_is_ok_with_a_working_database(tmp_path):
    app = _app(tmp_path / "h.db")
    status, headers, body = call(app, "GET", "/health")
    assert status == 200
    assert "json" in headers.get("content-type", "")
    assert body["status"] == "ok" and body["database"] == "ok"
    call(app, "POST", "/todos", json={"title": "still here"})
    status, _, body = call(app, "GET", "/health")
    assert status == 200 and body["database"] == "ok"


def test_health_does_not_touch_the_todos(tmp_path):
    app = _app(tmp_path / "h.db")
    call(app, "POST", "/todos", json={"title": "one"})
    for _ in range(3):
        assert call(app, "GET", "/health")[0] == 200
    status, _, body = call(app, "GET", "/todos")
    assert [t["title"] for t in body["todos"]] == ["one"] and body["total"] == 1


def test_missing_table_is_reported_as_unavailable(tmp_path):
    db = tmp_path / "h.db"
    app = _app(db)
    assert call(app, "GET", "/health")[0] == 200
    other = sqlite3.connect(str(db))
    other.execute("DROP TABLE todos")
    other.commit()
    other.close()
    status, _, body = call(app, "GET", "/health")
    assert status == 503, body
    assert body["status"] == "unavailable" and body["database"] == "error"


def test_broken_database_file_is_reported_as_unavailable(tmp_path):
    db = tmp_path / "h.db"
    app = _app(db)
    call(app, "POST", "/todos", json={"title": "soon gone"})
    assert call(app, "GET", "/health")[0] == 200
    for path in sorted(tmp_path.glob("h.db*")):  # the file and any journal or write-ahead log beside it
        with open(path, "r+b") as handle:
            handle.write(b"this is not a database at all. " * 40)
    status, _, body = call(app, "GET", "/health")
    assert status == 503, body
    assert body["status"] == "unavailable" and body["database"] == "error"


def test_only_get_is_allowed(tmp_path):
    app = _app(tmp_path / "h.db")
    status, headers, body = call(app, "POST", "/health", json={})
    assert status == 405
    assert "GET" in headers.get("allow", "")
    assert "error" in body
    assert call(app, "DELETE", "/health")[0] == 405


def test_other_paths_outside_todos_are_still_not_found(tmp_path):
    app = _app(tmp_path / "h.db")
    assert call(app, "GET", "/health")[0] == 200
    for path in ("/healthz", "/health/db", "/", "/status"):
        status, _, body = call(app, "GET", path)
        assert status == 404, path
        assert "error" in body

import io
import sqlite3
import sys

from todo_hidden_http import call

EXPECTED = {
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "content-security-policy": "default-src 'none'; frame-ancestors 'none'",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}


def _app(path):
    from todo.web import create_app

    return create_app(str(path))


def _check(headers):
    for name, value in EXPECTED.items():
        assert headers.get(name) == value, (name, headers)


def _raw_headers(app, method, path):
    captured = {}

    def start_response(status, headers, exc_info=None):
        captured["headers"] = headers
        return lambda data: None

    environ = {"REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": "", "CONTENT_LENGTH": "0",
               "SERVER_NAME": "t", "SERVER_PORT": "80", "wsgi.input": io.BytesIO(b""), "wsgi.errors": sys.stderr,
               "wsgi.url_scheme": "http", "wsgi.version": (1, 0)}
    b"".join(app(environ, start_response))
    return [name.lower() for name, _ in captured["headers"]]


def test_successful_responses_carry_the_headers(tmp_path):
    app = _app(tmp_path / "s.db")
    status, headers, body = call(app, "POST", "/todos", json={"title": "secure"})
    assert status == 201
    _check(headers)
    assert "json" in headers["content-type"]
    for path in ("/todos", f"/todos/{body['id']}", "/todos/stats", "/todos/summary"):
        status, headers, _ = call(app, "GET", path)
        assert status == 200, path
        _check(headers)
    status, headers, _ = call(app, "PATCH", f"/todos/{body['id']}", json={"title": "still secure"})
    assert status == 200
    _check(headers)


def test_empty_responses_carry_the_headers(tmp_path):
    app = _app(tmp_path / "s.db")
    todo_id = call(app, "POST", "/todos", json={"title": "bye"})[2]["id"]
    status, headers, body = call(app, "DELETE", f"/todos/{todo_id}")
    assert status == 204 and body is None
    _check(headers)


def test_error_responses_carry_the_headers(tmp_path):
    app = _app(tmp_path / "s.db")
    status, headers, body = call(app, "POST", "/todos", json={"title": ""})
    assert status == 400 and body["field"] == "title"
    _check(headers)
    status, headers, _ = call(app, "GET", "/todos/999")
    assert status == 404
    _check(headers)
    status, headers, _ = call(app, "GET", "/nowhere")
    assert status == 404
    _check(headers)
    status, headers, _ = call(app, "PUT", "/todos")
    assert status == 405 and "GET" in headers["allow"]
    _check(headers)
    status, headers, _ = call(app, "POST", "/todos", body="{not json")
    assert status == 400
    _check(headers)


def test_health_and_crashes_carry_the_headers(tmp_path):
    db = tmp_path / "s.db"
    app = _app(db)
    status, headers, _ = call(app, "GET", "/health")
    assert status == 200
    _check(headers)
    other = sqlite3.connect(str(db))
    other.execute("DROP TABLE todos")
    other.commit()
    other.close()
    status, headers, _ = call(app, "GET", "/health")
    assert status == 503
    _check(headers)
    status, headers, body = call(app, "GET", "/todos")
    assert status == 500 and body["error"]
    _check(headers)


def test_too_large_bodies_carry_the_headers(tmp_path):
    app = _app(tmp_path / "s.db")
    status, headers, _ = call(app, "POST", "/todos", json={"title": "x"}, headers={"Content-Length": str(10 ** 9)})
    assert status == 413
    _check(headers)


def test_each_header_is_sent_once(tmp_path):
    app = _app(tmp_path / "s.db")
    for method, path in (("GET", "/todos"), ("GET", "/todos/5"), ("DELETE", "/health")):
        names = _raw_headers(app, method, path)
        for name in EXPECTED:
            assert names.count(name) == 1, (method, path, names)

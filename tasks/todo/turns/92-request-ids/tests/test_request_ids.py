import logging
import re
import sqlite3

import pytest
from todo_hidden_http import call

GENERATED = re.compile(r"[0-9a-f]{32}")


@pytest.fixture
def app(tmp_path):
    from todo.web import create_app

    return create_app(str(tmp_path / "r.db"))


def test_every_response_gets_a_fresh_id(app):
    seen = set()
    todo_id = call(app, "POST", "/todos", json={"title": "x"})[2]["id"]
    requests = [("GET", "/todos"), ("GET", f"/todos/{todo_id}"), ("GET", "/todos/999"), ("POST", "/todos"),
                ("PUT", "/todos"), ("GET", "/health"), ("DELETE", f"/todos/{todo_id}")]
    for method, path in requests:
        _, headers, _ = call(app, method, path)
        request_id = headers.get("x-request-id", "")
        assert GENERATED.fullmatch(request_id), (method, path, request_id)
        seen.add(request_id)
    assert len(seen) == len(requests)


def test_a_valid_client_id_is_echoed(app):
    for given in ("abc-123", "trace.0001_A", "x" * 64, "7"):
        status, headers, _ = call(app, "GET", "/todos", headers={"X-Request-ID": given})
        assert status == 200 and headers["x-request-id"] == given
    _, headers, _ = call(app, "POST", "/todos", json={"title": ""}, headers={"X-Request-ID": "bad-input-1"})
    assert headers["x-request-id"] == "bad-input-1"


@pytest.mark.parametrize("given", ["x" * 65, "has space", "semi;colon", "new\r\nX-Evil: 1", "caf\u00e9", "a/b", ""])
def test_other_client_ids_are_replaced(app, given):
    status, headers, _ = call(app, "GET", "/todos", headers={"X-Request-ID": given})
    assert status == 200
    assert GENERATED.fullmatch(headers["x-request-id"]), headers["x-request-id"]
    assert "x-evil" not in headers


def test_crashes_report_the_id(tmp_path, caplog):
    from todo.web import create_app

    db = tmp_path / "r.db"
    app = create_app(str(db))
    other = sqlite3.connect(str(db))
    other.execute("DROP TABLE todos")
    other.commit()
    other.close()
    caplog.set_level(logging.ERROR)
    status, headers, body = call(app, "GET", "/todos", headers={"X-Request-ID": "support-42"})
    assert status == 500
    assert body["request_id"] == "support-42" == headers["x-request-id"]
    assert any("support-42" in record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR)
    status, headers, body = call(app, "GET", "/todos")
    assert status == 500 and body["request_id"] == headers["x-request-id"]
    assert GENERATED.fullmatch(body["request_id"])

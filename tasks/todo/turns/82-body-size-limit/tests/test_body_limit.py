import json
import threading
import urllib.error
import urllib.request

import pytest
from todo_hidden_http import call

DEFAULT_KB = {{ max_body_kb }}


def _padded(title, size):
    """A JSON object body of exactly ``size`` bytes: {"title": ...} padded with spaces."""
    head = json.dumps({"title": title})[:-1]
    return head + " " * (size - len(head) - 1) + "}"


def _titles(app):
    return [t["title"] for t in call(app, "GET", "/todos")[2]["todos"]]


@pytest.fixture
def app(tmp_path, monkeypatch):
    from todo.web import create_app

    monkeypatch.delenv("TODO_MAX_BODY_KB", raising=False)
    return create_app(str(tmp_path / "b.db"))


def test_settings_carry_the_limit():
    from todo.config import load_settings

    assert load_settings({}).max_body_kb == DEFAULT_KB
    assert load_settings({"TODO_MAX_BODY_KB": " 2 "}).max_body_kb == 2
    assert load_settings({"TODO_MAX_BODY_KB": "1"}).max_body_kb == 1


@pytest.mark.parametrize("value", ["0", "-1", "lots", "1.5", "64k"])
def test_bad_limit_is_a_config_error(value):
    from todo.config import ConfigError, load_settings

    with pytest.raises(ConfigError) as info:
        load_settings({"TODO_MAX_BODY_KB": value})
    assert "TODO_MAX_BODY_KB" in str(info.value) and value in str(info.value)


def test_default_limit_is_exact(app):
    limit = DEFAULT_KB * 1024
    status, _, body = call(app, "POST", "/todos", body=_padded("just fits", limit))
    assert status == 201, body
    status, _, body = call(app, "POST", "/todos", body=_padded("one byte too many", limit + 1))
    assert status == 413
    assert body["error"]
    assert _titles(app) == ["just fits"]


def test_limit_comes_from_the_environment(tmp_path, monkeypatch):
    from todo.web import create_app

    monkeypatch.setenv("TODO_MAX_BODY_KB", "1")
    app = create_app(str(tmp_path / "env.db"))
    assert call(app, "POST", "/todos", body=_padded("small", 1024))[0] == 201
    status, _, body = call(app, "POST", "/todos", body=_padded("too big", 1025))
    assert status == 413 and body["error"]
    todo_id = call(app, "GET", "/todos")[2]["todos"][0]["id"]
    status, _, _ = call(app, "PATCH", f"/todos/{todo_id}", body=_padded("renamed", 2000))
    assert status == 413
    status, _, _ = call(app, "POST", "/todos/bulk", body='{"action": "delete", "ids": [%d]%s}' % (todo_id, " " * 1100))
    assert status == 413
    assert _titles(app) == ["small"]


def test_declared_length_is_enough_to_refuse(app):
    status, _, body = call(app, "POST", "/todos", json={"title": "liar"},
                           headers={"Content-Length": str(DEFAULT_KB * 1024 + 1)})
    assert status == 413 and body["error"]
    status, _, _ = call(app, "POST", "/todos", json={"title": "huge"}, headers={"Content-Length": str(10 ** 12)})
    assert status == 413
    assert _titles(app) == []
    assert call(app, "POST", "/todos", json={"title": "normal"})[0] == 201


def test_server_uses_the_configured_limit(tmp_path):
    from todo.config import Settings
    from todo.server import create_server

    server = create_server(Settings(db_path=str(tmp_path / "srv.db"), port=0, max_body_kb=1))
    try:
        worker = threading.Thread(target=server.handle_request, daemon=True)
        worker.start()
        request = urllib.request.Request(f"http://127.0.0.1:{server.server_address[1]}/todos",
                                         data=_padded("big", 1500).encode(), headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(request, timeout=20)
        assert info.value.code == 413
        info.value.close()
        worker.join(20)
    finally:
        server.server_close()

from datetime import datetime, timezone

import pytest
from todo_hidden_http import call

PASSWORD = "correct horse {{ min_password_length }} battery"
NOW = datetime(2025, 3, 4, 9, 30, tzinfo=timezone.utc)


@pytest.fixture(autouse=True)
def _cheap_password_hashing(monkeypatch):
    """These tests register and log in a lot: hash passwords with few iterations."""
    try:
        monkeypatch.setattr("todo.auth.HASH_ITERATIONS", 1000, raising=False)
    except ImportError:  # no todo/auth.py at all: the behaviour is graded all the same
        pass


def _app(path):
    from todo.web import create_app

    return create_app(str(path), clock=lambda: NOW)


def _register(app, username, password=PASSWORD):
    status, _, body = call(app, "POST", "/users", json={"username": username, "password": password})
    assert status == 201, body
    return body


def _login(app, username, password=PASSWORD):
    return call(app, "POST", "/users/login", json={"username": username, "password": password})


def _me(app, token):
    return call(app, "GET", "/users/me", headers={"Authorization": f"Bearer {token}"})


def test_login_gives_a_token_for_me(tmp_path):
    app = _app(tmp_path / "a.db")
    alice = _register(app, "alice")
    status, _, body = _login(app, "alice")
    assert status == 200, body
    token = body["token"]
    assert isinstance(token, str) and len(token) >= 16
    status, _, me = _me(app, token)
    assert status == 200, me
    assert me["id"] == alice["id"] and me["username"] == "alice" and me["created_at"] == alice["created_at"]
    assert "password" not in me


def test_tokens_belong_to_their_user(tmp_path):
    app = _app(tmp_path / "a.db")
    _register(app, "alice")
    bob = _register(app, "bob", PASSWORD + "!")
    first = _login(app, "  ALICE ")[2]["token"]
    second = _login(app, "alice")[2]["token"]
    bobs = _login(app, "bob", PASSWORD + "!")[2]["token"]
    assert len({first, second, bobs}) == 3
    assert _me(app, first)[2]["username"] == "alice"
    assert _me(app, second)[2]["username"] == "alice"
    assert _me(app, bobs)[2]["id"] == bob["id"]


def test_wrong_credentials_are_401_without_telling_which(tmp_path):
    app = _app(tmp_path / "a.db")
    _register(app, "alice")
    wrong_password = _login(app, "alice", PASSWORD + "x")
    unknown_user = _login(app, "nobody", PASSWORD)
    for status, _, body in (wrong_password, unknown_user):
        assert status == 401, body
        assert body["error"] and "token" not in body
    assert wrong_password[2]["error"] == unknown_user[2]["error"]
    assert _login(app, "alice", PASSWORD.upper())[0] == 401


@pytest.mark.parametrize("headers", [
    {},
    {"Authorization": "Bearer not-a-real-token"},
    {"Authorization": "Bearer "},
    {"Authorization": "Basic YWxpY2U6c2VjcmV0"},
])
def test_me_needs_a_valid_token(tmp_path, headers):
    app = _app(tmp_path / "a.db")
    _register(app, "alice")
    _login(app, "alice")
    status, response_headers, body = call(app, "GET", "/users/me", headers=headers)
    assert status == 401, body
    assert body["error"]
    assert response_headers.get("www-authenticate", "").lower().startswith("bearer")


def test_token_is_not_stored_in_plain_text(tmp_path):
    path = tmp_path / "a.db"
    app = _app(path)
    _register(app, "alice")
    token = _login(app, "alice")[2]["token"]
    assert token.encode() not in b"".join(p.read_bytes() for p in sorted(tmp_path.glob("a.db*")))  # a write-ahead log too
    assert _me(_app(path), token)[0] == 200


def test_todos_without_a_token_work_as_before(tmp_path):
    app = _app(tmp_path / "a.db")
    _register(app, "alice")
    assert _login(app, "alice")[0] == 200
    assert call(app, "POST", "/todos", json={"title": "anonymous"})[0] == 201
    assert call(app, "GET", "/todos")[2]["total"] == 1

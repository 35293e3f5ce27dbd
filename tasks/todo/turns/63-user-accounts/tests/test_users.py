import json
from datetime import datetime, timezone

import pytest
from todo_hidden_http import call

MIN_LENGTH = {{ min_password_length }}
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


def _password(length=MIN_LENGTH, char="p"):
    return "S3cret" + char * (length - 6)


def _register(app, username, password):
    return call(app, "POST", "/users", json={"username": username, "password": password})


def test_register_returns_the_new_user(tmp_path):
    app = _app(tmp_path / "u.db")
    password = _password(MIN_LENGTH + 3, "q")
    status, _, body = _register(app, "  Alice_1 ", password)
    assert status == 201, body
    assert body["username"] == "alice_1"
    assert isinstance(body["id"], int)
    assert body["created_at"] == "2025-03-04T09:30:00Z"
    assert "password" not in body
    assert password not in json.dumps(body)
    status, _, other = _register(app, "bob", password)
    assert status == 201 and other["id"] != body["id"]


def test_password_is_not_stored_in_plain_text(tmp_path):
    path = tmp_path / "u.db"
    app = _app(path)
    password = _password(MIN_LENGTH + 8, "Z")
    assert _register(app, "carol", password)[0] == 201
    data = b"".join(p.read_bytes() for p in sorted(tmp_path.glob("u.db*")))  # a write-ahead log holds recent rows
    assert b"carol" in data
    assert password.encode() not in data
    assert password.encode("utf-16-le") not in data


@pytest.mark.parametrize("username", ["ab", "a" * 21, "has space", "dash-name", "émile", "", "   ", 42, None])
def test_bad_usernames_are_input_errors(tmp_path, username):
    app = _app(tmp_path / "u.db")
    payload = {"password": _password()}
    if username is not None:
        payload["username"] = username
    status, _, body = call(app, "POST", "/users", json=payload)
    assert status == 400, body
    assert body["field"] == "username" and body["error"]


@pytest.mark.parametrize("username", ["abc", "a" * 20, "user_42", " MiXeD "])
def test_good_usernames(tmp_path, username):
    app = _app(tmp_path / "u.db")
    status, _, body = _register(app, username, _password())
    assert status == 201, body
    assert body["username"] == username.strip().lower()


def test_password_minimum_length(tmp_path):
    app = _app(tmp_path / "u.db")
    for bad in (_password(MIN_LENGTH - 1), 12345678901234, None):
        payload = {"username": "dave"}
        if bad is not None:
            payload["password"] = bad
        status, _, body = call(app, "POST", "/users", json=payload)
        assert status == 400 and body["field"] == "password" and body["error"], (bad, body)
    status, _, body = _register(app, "dave", _password(MIN_LENGTH))
    assert status == 201, body


def test_taken_username_is_a_conflict(tmp_path):
    app = _app(tmp_path / "u.db")
    assert _register(app, "erin", _password())[0] == 201
    status, _, body = _register(app, "  ERIN", _password(MIN_LENGTH + 1))
    assert status == 409, body
    assert body["field"] == "username" and body["error"]
    assert _register(app, "erin2", _password())[0] == 201


def test_todos_work_as_before(tmp_path):
    app = _app(tmp_path / "u.db")
    assert _register(app, "frank", _password())[0] == 201
    status, _, todo = call(app, "POST", "/todos", json={"title": "still here"})
    assert status == 201
    assert call(app, "GET", "/todos")[2]["total"] == 1


def test_hashes_keep_working_when_the_cost_changes(monkeypatch):
    from todo import auth

    password = _password(MIN_LENGTH + 2, "h")
    monkeypatch.setattr(auth, "HASH_ITERATIONS", 1000)
    older = auth.hash_password(password)
    monkeypatch.setattr(auth, "HASH_ITERATIONS", 1500)
    newer = auth.hash_password(password)
    assert isinstance(older, str) and password not in older and password not in newer
    assert older != newer
    for stored in (older, newer):
        assert auth.check_password(password, stored)
        assert not auth.check_password(password + "x", stored)
        assert not auth.check_password(password[:-1], stored)
    monkeypatch.setattr(auth, "HASH_ITERATIONS", 700)
    assert auth.check_password(password, older) and auth.check_password(password, newer)
    assert not auth.check_password("S3cret-but-wrong", older)

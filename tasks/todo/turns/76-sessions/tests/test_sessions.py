from datetime import datetime, timedelta, timezone

import pytest
from todo_hidden_http import call

LIFETIME = timedelta(hours={{ token_lifetime_hours }})
PASSWORD = "pa55word-{{ min_password_length }}-long-enough"
START = datetime(2025, 4, 1, 6, 0, tzinfo=timezone.utc)


@pytest.fixture(autouse=True)
def _cheap_password_hashing(monkeypatch):
    """These tests register and log in a lot: hash passwords with few iterations."""
    try:
        monkeypatch.setattr("todo.auth.HASH_ITERATIONS", 1000, raising=False)
    except ImportError:  # no todo/auth.py at all: the behaviour is graded all the same
        pass


def _stamp(moment):
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


class Clock:
    def __init__(self):
        self.now = START

    def __call__(self):
        return self.now


def _setup(tmp_path, *usernames):
    from todo.web import create_app

    clock = Clock()
    app = create_app(str(tmp_path / "s.db"), clock=clock)
    for username in usernames:
        assert call(app, "POST", "/users", json={"username": username, "password": PASSWORD})[0] == 201
    return app, clock


def _login(app, username):
    status, _, body = call(app, "POST", "/users/login", json={"username": username, "password": PASSWORD})
    assert status == 200, body
    return {"Authorization": f"Bearer {body['token']}"}


def _sessions(app, auth):
    status, _, body = call(app, "GET", "/users/me/sessions", headers=auth)
    assert status == 200, body
    return body


def test_sessions_are_listed_newest_first(tmp_path):
    app, clock = _setup(tmp_path, "alice", "bob")
    first = _login(app, "alice")
    clock.now = START + timedelta(minutes=30)
    second = _login(app, "alice")
    _login(app, "bob")
    clock.now = START + timedelta(hours=1)
    _login(app, "alice")
    body = _sessions(app, second)
    assert [s["created_at"] for s in body] == [_stamp(START + timedelta(hours=1)), _stamp(START + timedelta(minutes=30)), _stamp(START)]
    assert [s["expires_at"] for s in body] == [_stamp(START + timedelta(hours=1) + LIFETIME), _stamp(START + timedelta(minutes=30) + LIFETIME), _stamp(START + LIFETIME)]
    assert [s["current"] for s in body] == [False, True, False]
    assert len({s["id"] for s in body}) == 3
    assert all(isinstance(s["id"], int) for s in body)
    assert [s["current"] for s in _sessions(app, first)] == [False, False, True]
    for session in body:
        assert "token" not in session


def test_expired_and_revoked_sessions_are_not_listed(tmp_path):
    app, clock = _setup(tmp_path, "alice")
    _login(app, "alice")
    clock.now = START + LIFETIME - timedelta(minutes=1)
    late = _login(app, "alice")
    gone = _login(app, "alice")
    assert call(app, "POST", "/users/logout", headers=gone)[0] == 204
    assert len(_sessions(app, late)) == 2
    clock.now = START + LIFETIME
    body = _sessions(app, late)
    assert len(body) == 1 and body[0]["current"] is True


def test_revoking_another_session(tmp_path):
    app, clock = _setup(tmp_path, "alice")
    phone = _login(app, "alice")
    clock.now = START + timedelta(minutes=5)
    laptop = _login(app, "alice")
    phone_session = [s for s in _sessions(app, laptop) if not s["current"]][0]
    status, _, body = call(app, "DELETE", f"/users/me/sessions/{phone_session['id']}", headers=laptop)
    assert status == 204 and body is None
    assert call(app, "GET", "/users/me", headers=phone)[0] == 401
    assert call(app, "GET", "/users/me", headers=laptop)[0] == 200
    assert [s["current"] for s in _sessions(app, laptop)] == [True]


def test_revoking_the_current_session_logs_out(tmp_path):
    app, _ = _setup(tmp_path, "alice")
    auth = _login(app, "alice")
    session_id = _sessions(app, auth)[0]["id"]
    assert call(app, "DELETE", f"/users/me/sessions/{session_id}", headers=auth)[0] == 204
    assert call(app, "GET", "/users/me/sessions", headers=auth)[0] == 401


def test_other_peoples_sessions_are_not_found(tmp_path):
    app, _ = _setup(tmp_path, "alice", "bob")
    alice, bob = _login(app, "alice"), _login(app, "bob")
    bobs_id = _sessions(app, bob)[0]["id"]
    status, _, body = call(app, "DELETE", f"/users/me/sessions/{bobs_id}", headers=alice)
    assert status == 404, body
    assert body["error"]
    assert call(app, "DELETE", f"/users/me/sessions/{bobs_id + 100}", headers=alice)[0] == 404
    assert call(app, "GET", "/users/me", headers=bob)[0] == 200


def test_sessions_need_a_token(tmp_path):
    app, _ = _setup(tmp_path, "alice")
    auth = _login(app, "alice")
    session_id = _sessions(app, auth)[0]["id"]
    assert call(app, "GET", "/users/me/sessions")[0] == 401
    assert call(app, "DELETE", f"/users/me/sessions/{session_id}")[0] == 401
    assert call(app, "DELETE", f"/users/me/sessions/{session_id}", headers={"Authorization": "Bearer x"})[0] == 401
    assert call(app, "GET", "/users/me", headers=auth)[0] == 200

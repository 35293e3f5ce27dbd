from datetime import datetime, timedelta, timezone

import pytest
from todo_hidden_http import call

LIFETIME = timedelta(hours={{ token_lifetime_hours }})
PASSWORD = "pa55word-{{ min_password_length }}-long-enough"
START = datetime(2025, 1, 31, 22, 15, 30, tzinfo=timezone.utc)


@pytest.fixture(autouse=True)
def _cheap_password_hashing(monkeypatch):
    """These tests register and log in a lot: hash passwords with few iterations."""
    try:
        monkeypatch.setattr("todo.auth.HASH_ITERATIONS", 1000, raising=False)
    except ImportError:  # no todo/auth.py at all: the behaviour is graded all the same
        pass


class Clock:
    def __init__(self, now):
        self.now = now

    def __call__(self):
        return self.now


def _setup(tmp_path, username="alice"):
    from todo.web import create_app

    clock = Clock(START)
    app = create_app(str(tmp_path / "t.db"), clock=clock)
    assert call(app, "POST", "/users", json={"username": username, "password": PASSWORD})[0] == 201
    return app, clock


def _login(app, username="alice"):
    status, _, body = call(app, "POST", "/users/login", json={"username": username, "password": PASSWORD})
    assert status == 200, body
    return body


def _me(app, token):
    return call(app, "GET", "/users/me", headers={"Authorization": f"Bearer {token}"})


def test_login_tells_when_the_token_expires(tmp_path):
    app, clock = _setup(tmp_path)
    body = _login(app)
    assert body["expires_at"] == (START + LIFETIME).strftime("%Y-%m-%dT%H:%M:%SZ")
    clock.now = START + timedelta(hours=1)
    assert _login(app)["expires_at"] == (START + LIFETIME + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_token_works_until_it_expires(tmp_path):
    app, clock = _setup(tmp_path)
    token = _login(app)["token"]
    clock.now = START + LIFETIME - timedelta(seconds=1)
    assert _me(app, token)[0] == 200
    clock.now = START + LIFETIME
    status, headers, body = _me(app, token)
    assert status == 401, body
    assert body["error"]
    clock.now = START + LIFETIME * 3
    assert _me(app, token)[0] == 401


def test_expired_token_on_todo_requests_is_401(tmp_path):
    app, clock = _setup(tmp_path)
    auth = {"Authorization": f"Bearer {_login(app)['token']}"}
    todo = call(app, "POST", "/todos", json={"title": "mine"}, headers=auth)[2]
    clock.now = START + LIFETIME + timedelta(minutes=5)
    for method, path in (("GET", "/todos"), ("GET", f"/todos/{todo['id']}"), ("POST", f"/todos/{todo['id']}/complete")):
        status, _, body = call(app, method, path, headers=auth)
        assert status == 401, (path, body)
    status, _, body = call(app, "POST", "/todos", json={"title": "sneaky"}, headers=auth)
    assert status == 401
    assert call(app, "GET", "/todos")[2]["total"] == 0


def test_logging_in_again_gives_a_working_token(tmp_path):
    app, clock = _setup(tmp_path)
    old = _login(app)["token"]
    clock.now = START + LIFETIME + timedelta(days=2)
    new = _login(app)["token"]
    assert _me(app, new)[0] == 200
    assert _me(app, old)[0] == 401
    clock.now = START + LIFETIME * 2 + timedelta(days=2) - timedelta(seconds=1)
    assert _me(app, new)[0] == 200


def test_naive_clock_times_are_utc(tmp_path):
    from todo.web import create_app

    clock = Clock(datetime(2025, 1, 1, 0, 0))
    app = create_app(str(tmp_path / "t.db"), clock=clock)
    assert call(app, "POST", "/users", json={"username": "bob", "password": PASSWORD})[0] == 201
    body = _login(app, "bob")
    assert body["expires_at"] == (datetime(2025, 1, 1) + LIFETIME).strftime("%Y-%m-%dT%H:%M:%SZ")
    clock.now = datetime(2025, 1, 1) + LIFETIME
    assert _me(app, body["token"])[0] == 401

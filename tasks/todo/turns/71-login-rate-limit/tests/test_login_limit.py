from datetime import datetime, timedelta, timezone

import pytest
from todo_hidden_http import call

LIMIT = {{ max_failed_logins }}
PASSWORD = "pa55word-{{ min_password_length }}-long-enough"
START = datetime(2025, 2, 3, 8, 0, 0, tzinfo=timezone.utc)
WINDOW = timedelta(minutes=15)


@pytest.fixture(autouse=True)
def _cheap_password_hashing(monkeypatch):
    """These tests register and log in a lot: hash passwords with few iterations."""
    try:
        monkeypatch.setattr("todo.auth.HASH_ITERATIONS", 1000, raising=False)
    except ImportError:  # no todo/auth.py at all: the behaviour is graded all the same
        pass


class Clock:
    def __init__(self):
        self.now = START

    def __call__(self):
        return self.now


def _setup(tmp_path, *usernames):
    from todo.web import create_app

    clock = Clock()
    app = create_app(str(tmp_path / "r.db"), clock=clock)
    for username in usernames:
        assert call(app, "POST", "/users", json={"username": username, "password": PASSWORD})[0] == 201
    return app, clock


def _login(app, username, password=PASSWORD):
    return call(app, "POST", "/users/login", json={"username": username, "password": password})


def _fail(app, username, times):
    for _ in range(times):
        status, _, body = _login(app, username, "wrong-" + PASSWORD)
        assert status == 401, body


def test_too_many_failures_block_even_the_right_password(tmp_path):
    app, clock = _setup(tmp_path, "alice")
    _fail(app, "alice", LIMIT)
    status, headers, body = _login(app, "alice")
    assert status == 429, body
    assert body["error"]
    assert int(headers["retry-after"]) == 15 * 60
    clock.now = START + timedelta(minutes=10)
    status, headers, _ = _login(app, "alice", "wrong-" + PASSWORD)
    assert status == 429
    assert int(headers["retry-after"]) == 5 * 60


def test_block_ends_when_the_failures_are_old_enough(tmp_path):
    app, clock = _setup(tmp_path, "alice")
    _fail(app, "alice", LIMIT)
    clock.now = START + WINDOW - timedelta(seconds=1)
    status, headers, _ = _login(app, "alice")
    assert status == 429 and int(headers["retry-after"]) == 1
    clock.now = START + WINDOW
    status, _, body = _login(app, "alice")
    assert status == 200, body


def test_the_window_slides(tmp_path):
    app, clock = _setup(tmp_path, "alice")
    _fail(app, "alice", 1)
    clock.now = START + timedelta(minutes=10)
    _fail(app, "alice", LIMIT - 1)
    assert _login(app, "alice")[0] == 429
    clock.now = START + WINDOW
    _fail(app, "alice", 1)
    status, headers, _ = _login(app, "alice")
    assert status == 429
    assert int(headers["retry-after"]) == 10 * 60


def test_fewer_failures_are_fine_and_success_resets(tmp_path):
    app, clock = _setup(tmp_path, "alice")
    _fail(app, "alice", LIMIT - 1)
    assert _login(app, "alice")[0] == 200
    _fail(app, "alice", LIMIT - 1)
    status, _, body = _login(app, "alice")
    assert status == 200, body
    _fail(app, "alice", LIMIT)
    assert _login(app, "alice")[0] == 429


def test_limit_is_per_username(tmp_path):
    app, clock = _setup(tmp_path, "alice", "bob")
    _fail(app, " ALICE", LIMIT)
    assert _login(app, "alice")[0] == 429
    assert _login(app, "bob")[0] == 200
    token = call(app, "POST", "/users/login", json={"username": "bob", "password": PASSWORD})[2]["token"]
    assert call(app, "GET", "/users/me", headers={"Authorization": f"Bearer {token}"})[0] == 200


def test_unknown_usernames_are_limited_too(tmp_path):
    app, clock = _setup(tmp_path, "alice")
    _fail(app, "mallory", LIMIT)
    status, headers, body = _login(app, "mallory")
    assert status == 429 and body["error"] and int(headers["retry-after"]) > 0
    assert _login(app, "alice")[0] == 200

import sqlite3
from datetime import datetime, timezone

import pytest
from todo_hidden_http import call

MIN_LENGTH = {{ min_password_length }}
NOW = datetime(2025, 3, 4, 9, 30, tzinfo=timezone.utc)
PASSWORD = "S3cret" + "r" * MIN_LENGTH


@pytest.fixture(autouse=True)
def _cheap_password_hashing(monkeypatch):
    """These tests register and log in a lot: hash passwords with few iterations."""
    try:
        monkeypatch.setattr("todo.auth.HASH_ITERATIONS", 1000, raising=False)
    except ImportError:
        pass


def _iterations(monkeypatch, count):
    monkeypatch.setattr("todo.auth.HASH_ITERATIONS", count)


def _app(path):
    from todo.web import create_app

    return create_app(str(path), clock=lambda: NOW)


def _stored_hashes(path, password):
    """Every value in the database that is a stored hash of ``password``."""
    from todo.auth import check_password

    found = []
    con = sqlite3.connect(str(path))
    try:
        tables = [row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            for row in con.execute(f'SELECT * FROM "{table}"'):
                for cell in row:
                    if isinstance(cell, str) and len(cell) > 20 and _matches(check_password, password, cell):
                        found.append(cell)
    finally:
        con.close()
    return found


def _matches(check_password, password, cell):
    try:
        return bool(check_password(password, cell))
    except Exception:  # pylint: disable=broad-except
        return False


def _register(app, username, password=PASSWORD):
    status, _, body = call(app, "POST", "/users", json={"username": username, "password": password})
    assert status == 201, body


def _login(app, username, password=PASSWORD):
    return call(app, "POST", "/users/login", json={"username": username, "password": password})


def _single_hash(path, password=PASSWORD):
    hashes = _stored_hashes(path, password)
    assert len(hashes) == 1, hashes
    return hashes[0]


def test_login_upgrades_a_hash_made_with_fewer_iterations(tmp_path, monkeypatch):
    db = tmp_path / "u.db"
    app = _app(db)
    _register(app, "alice")
    old = _single_hash(db)
    _iterations(monkeypatch, 1500)
    status, _, body = _login(app, "alice")
    assert status == 200, body
    new = _single_hash(db)
    assert new != old
    # made with exactly the current count: logging in again at 1500 keeps it, at 1501 upgrades it
    assert _login(app, "alice")[0] == 200
    assert _single_hash(db) == new
    _iterations(monkeypatch, 1501)
    assert _login(app, "alice")[0] == 200
    assert _single_hash(db) != new


def test_upgraded_password_and_tokens_keep_working(tmp_path, monkeypatch):
    db = tmp_path / "u.db"
    app = _app(db)
    _register(app, "bob")
    old = _single_hash(db)
    _iterations(monkeypatch, 1500)
    status, _, first = _login(app, "bob")
    assert status == 200, first
    assert _single_hash(db) != old
    status, _, me = call(app, "GET", "/users/me", headers={"Authorization": f"Bearer {first['token']}"})
    assert status == 200 and me["username"] == "bob"
    status, _, again = _login(app, "bob")
    assert status == 200, again
    status, _, wrong = _login(app, "bob", PASSWORD + "x")
    assert status == 401, wrong


def test_current_hash_is_not_rewritten_on_every_login(tmp_path, monkeypatch):
    db = tmp_path / "u.db"
    app = _app(db)
    _register(app, "carol")
    old = _single_hash(db)
    _iterations(monkeypatch, 1200)
    assert _login(app, "carol")[0] == 200
    upgraded = _single_hash(db)
    assert upgraded != old
    for _ in range(2):
        status, _, body = _login(app, "carol")
        assert status == 200, body
    assert _single_hash(db) == upgraded


def test_stronger_hash_is_never_downgraded(tmp_path, monkeypatch):
    db = tmp_path / "u.db"
    app = _app(db)
    weak, strong = PASSWORD, PASSWORD + "S"
    _register(app, "weak", weak)
    _iterations(monkeypatch, 1500)
    _register(app, "strong", strong)
    weak_before, strong_before = _single_hash(db, weak), _single_hash(db, strong)
    _iterations(monkeypatch, 1200)
    assert _login(app, "weak", weak)[0] == 200
    assert _login(app, "strong", strong)[0] == 200
    assert _single_hash(db, strong) == strong_before
    assert _single_hash(db, weak) != weak_before


def test_failed_login_leaves_the_old_hash_alone(tmp_path, monkeypatch):
    db = tmp_path / "u.db"
    app = _app(db)
    _register(app, "erin")
    before = _single_hash(db)
    _iterations(monkeypatch, 1500)
    status, _, body = _login(app, "erin", PASSWORD + "nope")
    assert status == 401, body
    assert _single_hash(db) == before
    assert _login(app, "erin")[0] == 200
    assert _single_hash(db) != before

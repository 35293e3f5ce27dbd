from datetime import datetime, timezone

import pytest
from todo_hidden_http import call

PASSWORD = "pa55word-{{ min_password_length }}-long-enough"
NOW = datetime(2025, 6, 10, 12, 0, tzinfo=timezone.utc)


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


def _user(app, username):
    assert call(app, "POST", "/users", json={"username": username, "password": PASSWORD})[0] == 201
    status, _, body = call(app, "POST", "/users/login", json={"username": username, "password": PASSWORD})
    assert status == 200, body
    return {"Authorization": f"Bearer {body['token']}"}


def _add(app, title, auth=None, done=False, **fields):
    status, _, body = call(app, "POST", "/todos", json={"title": title, **fields}, headers=auth)
    assert status == 201, body
    if done:
        assert call(app, "POST", f"/todos/{body['id']}/complete", headers=auth)[0] == 200
    return body["id"]


def _get(app, todo_id, auth=None):
    return call(app, "GET", f"/todos/{todo_id}", headers=auth)[2]


def _summary(app, auth=None):
    body = call(app, "GET", "/todos/summary", headers=auth)[2]
    return body["total"], body["done"], body["open"]


def _check_open_by_priority(stats, low, normal, high):
    counts = stats["open_by_priority"]
    assert (counts["low"], counts["normal"], counts["high"]) == (low, normal, high), counts
    assert all(count == 0 for level, count in counts.items() if level not in ("low", "normal", "high")), counts


def test_someone_elses_ids_in_bulk_count_as_missing(tmp_path):
    app = _app(tmp_path / "b.db")
    alice, bob = _user(app, "alice"), _user(app, "bob")
    a1, a2 = _add(app, "a1", alice), _add(app, "a2", alice)
    b1, loose = _add(app, "b1", bob), _add(app, "loose")
    status, _, body = call(app, "POST", "/todos/bulk", json={"action": "complete", "ids": [a1, b1, loose, a2]}, headers=alice)
    assert status == 404, body
    assert body["missing"] == [b1, loose]
    assert _get(app, a1, alice)["done"] is False and _get(app, a2, alice)["done"] is False
    status, _, body = call(app, "POST", "/todos/bulk", json={"action": "delete", "ids": [a1]})
    assert status == 404 and body["missing"] == [a1]
    status, _, body = call(app, "POST", "/todos/bulk", json={"action": "delete", "ids": [a1, a2]}, headers=alice)
    assert status == 200 and body["count"] == 2
    assert _get(app, b1, bob)["title"] == "b1" and _get(app, loose)["title"] == "loose"


def test_clear_completed_only_clears_own_todos(tmp_path):
    app = _app(tmp_path / "b.db")
    alice, bob = _user(app, "alice"), _user(app, "bob")
    a_done, a_open = _add(app, "a done", alice, done=True), _add(app, "a open", alice)
    b_done = _add(app, "b done", bob, done=True)
    loose_done = _add(app, "loose done", done=True)
    status, _, body = call(app, "POST", "/todos/clear-completed", headers=alice)
    assert status == 200 and body["deleted"] == 1
    assert call(app, "GET", f"/todos/{a_done}", headers=alice)[0] == 404
    assert _get(app, a_open, alice)["title"] == "a open"
    assert _get(app, b_done, bob)["done"] is True
    assert call(app, "POST", "/todos/clear-completed")[2]["deleted"] == 1
    assert call(app, "GET", f"/todos/{loose_done}")[0] == 404
    assert _get(app, b_done, bob)["done"] is True


def test_summary_counts_own_todos(tmp_path):
    app = _app(tmp_path / "b.db")
    alice, bob = _user(app, "alice"), _user(app, "bob")
    _add(app, "a1", alice, done=True)
    _add(app, "a2", alice)
    _add(app, "a3", alice)
    _add(app, "b1", bob, done=True)
    _add(app, "loose")
    assert _summary(app, alice) == (3, 1, 2)
    assert _summary(app, bob) == (1, 1, 0)
    assert _summary(app) == (1, 0, 1)


def test_stats_count_own_todos(tmp_path):
    app = _app(tmp_path / "b.db")
    alice, bob = _user(app, "alice"), _user(app, "bob")
    _add(app, "a1", alice, priority="high", tags=["Work ", " work", "HOME"], due="2025-06-01")
    _add(app, "a2", alice, done=True, tags=["home"])
    _add(app, "a3", alice, priority="low")
    _add(app, "b1", bob, priority="high", tags=["work", "garden"], due="2025-05-01")
    _add(app, "b2", bob, done=True)
    _add(app, "loose", tags=["misc"], due="2025-01-01")
    stats = call(app, "GET", "/todos/stats", headers=alice)[2]
    _check_open_by_priority(stats, 1, 0, 1)
    assert stats["by_tag"] == {"home": 2, "work": 1}
    assert stats["overdue"] == 1
    assert stats["completion_rate"] == 0.33
    stats = call(app, "GET", "/todos/stats", headers=bob)[2]
    _check_open_by_priority(stats, 0, 0, 1)
    assert stats["by_tag"] == {"garden": 1, "work": 1}
    assert stats["completion_rate"] == 0.5
    stats = call(app, "GET", "/todos/stats")[2]
    assert stats["by_tag"] == {"misc": 1}
    _check_open_by_priority(stats, 0, 1, 0)
    assert stats["overdue"] == 1 and stats["completion_rate"] == 0


def test_new_user_starts_empty(tmp_path):
    app = _app(tmp_path / "b.db")
    _add(app, "loose", done=True, tags=["x"])
    carol = _user(app, "carol")
    stats = call(app, "GET", "/todos/stats", headers=carol)[2]
    _check_open_by_priority(stats, 0, 0, 0)
    assert stats["by_tag"] == {} and stats["overdue"] == 0 and stats["completion_rate"] == 0
    assert _summary(app, carol) == (0, 0, 0)
    assert call(app, "POST", "/todos/clear-completed", headers=carol)[2]["deleted"] == 0

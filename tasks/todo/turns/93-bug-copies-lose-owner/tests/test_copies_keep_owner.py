from datetime import datetime, timezone

import pytest
from todo_hidden_http import call

PASSWORD = "pa55word-{{ min_password_length }}-long-enough"
SUFFIX = "{{ copy_suffix }}"


@pytest.fixture(autouse=True)
def _cheap_password_hashing(monkeypatch):
    """These tests register and log in a lot: hash passwords with few iterations."""
    try:
        monkeypatch.setattr("todo.auth.HASH_ITERATIONS", 1000, raising=False)
    except ImportError:  # no todo/auth.py at all: the behaviour is graded all the same
        pass


def _app(path):
    from todo.web import create_app

    return create_app(str(path), clock=lambda: datetime(2025, 3, 3, 9, 0, tzinfo=timezone.utc))


def _user(app, username):
    assert call(app, "POST", "/users", json={"username": username, "password": PASSWORD})[0] == 201
    status, _, body = call(app, "POST", "/users/login", json={"username": username, "password": PASSWORD})
    assert status == 200, body
    return {"Authorization": f"Bearer {body['token']}"}


def _add(app, title, auth=None, **fields):
    status, _, body = call(app, "POST", "/todos", json={"title": title, **fields}, headers=auth)
    assert status == 201, body
    return body


def _listed(app, auth=None):
    status, _, body = call(app, "GET", "/todos", headers=auth)
    assert status == 200, body
    return sorted((todo["title"], todo["due"], todo["done"]) for todo in body["todos"])


def test_a_users_duplicate_is_their_own(tmp_path):
    app = _app(tmp_path / "d.db")
    alice, bob = _user(app, "alice"), _user(app, "bob")
    original = _add(app, "Call the doctor", alice, notes="about the results", tags=["health"])
    status, _, copy = call(app, "POST", f"/todos/{original['id']}/duplicate", headers=alice)
    assert status == 201, copy
    assert copy["title"] == "Call the doctor" + SUFFIX
    assert copy["notes"] == "about the results" and copy["tags"] == ["health"]
    status, _, fetched = call(app, "GET", f"/todos/{copy['id']}", headers=alice)
    assert status == 200 and fetched["title"] == copy["title"]
    assert _listed(app, alice) == [("Call the doctor", None, False), ("Call the doctor" + SUFFIX, None, False)]
    assert _listed(app) == []
    assert _listed(app, bob) == []
    assert call(app, "GET", f"/todos/{copy['id']}")[0] == 404


def test_a_duplicate_keeps_the_checklist_for_its_owner(tmp_path):
    app = _app(tmp_path / "d.db")
    alice = _user(app, "alice")
    original = _add(app, "Pack", alice)
    status, _, item = call(app, "POST", f"/todos/{original['id']}/items", json={"text": "passport"}, headers=alice)
    assert status == 201, item
    call(app, "PATCH", f"/todos/{original['id']}/items/{item['id']}", json={"done": True}, headers=alice)
    status, _, copy = call(app, "POST", f"/todos/{original['id']}/duplicate", headers=alice)
    assert status == 201, copy
    status, _, fetched = call(app, "GET", f"/todos/{copy['id']}", headers=alice)
    assert status == 200, fetched
    assert [(entry["text"], entry["done"]) for entry in fetched["items"]] == [("passport", False)]
    assert call(app, "POST", f"/todos/{copy['id']}/complete", headers=alice)[0] == 200


def test_nobody_can_duplicate_someone_elses_todo(tmp_path):
    app = _app(tmp_path / "d.db")
    alice, bob = _user(app, "alice"), _user(app, "bob")
    original = _add(app, "Secret plan", alice)
    mine = _add(app, "Bob's own", bob)
    assert call(app, "POST", f"/todos/{original['id']}/duplicate", headers=bob)[0] == 404
    assert call(app, "POST", f"/todos/{original['id']}/duplicate")[0] == 404
    status, _, copy = call(app, "POST", f"/todos/{mine['id']}/duplicate", headers=bob)
    assert status == 201, copy
    assert _listed(app, bob) == [("Bob's own", None, False), ("Bob's own" + SUFFIX, None, False)]
    assert _listed(app, alice) == [("Secret plan", None, False)]
    assert _listed(app) == []


def test_completing_a_users_repeating_todo(tmp_path):
    app = _app(tmp_path / "r.db")
    alice, bob = _user(app, "alice"), _user(app, "bob")
    rent = _add(app, "Pay rent", alice, due="2025-01-15", repeat="monthly")
    status, _, done = call(app, "POST", f"/todos/{rent['id']}/complete", headers=alice)
    assert status == 200, done
    assert done["done"] is True and done["repeat"] is None
    # the missed February date is skipped: the next one is the first that isn't in the past
    assert _listed(app, alice) == [("Pay rent", "2025-01-15", True), ("Pay rent", "2025-03-15", False)]
    assert _listed(app) == []
    assert _listed(app, bob) == []


@pytest.mark.parametrize("how", ["patch", "bulk"])
def test_other_ways_of_completing_keep_the_next_one_with_its_owner(tmp_path, how):
    app = _app(tmp_path / "r.db")
    alice = _user(app, "alice")
    report = _add(app, "Weekly report", alice, due="2025-03-07", repeat="weekly")
    if how == "patch":
        status, _, body = call(app, "PATCH", f"/todos/{report['id']}", json={"done": True}, headers=alice)
    else:
        status, _, body = call(app, "POST", "/todos/bulk", json={"action": "complete", "ids": [report["id"]]}, headers=alice)
    assert status == 200, body
    assert _listed(app, alice) == [("Weekly report", "2025-03-07", True), ("Weekly report", "2025-03-14", False)]
    assert _listed(app) == []


def test_anonymous_and_user_copies_stay_apart(tmp_path):
    app = _app(tmp_path / "n.db")
    alice = _user(app, "alice")
    gym = _add(app, "Gym", alice, due="2025-03-03", repeat="daily")
    plants = _add(app, "Water plants", due="2025-03-03", repeat="daily")
    for todo_id, auth in ((plants["id"], None), (gym["id"], alice)):
        status, _, copy = call(app, "POST", f"/todos/{todo_id}/duplicate", headers=auth)
        assert status == 201, copy
        assert call(app, "POST", f"/todos/{todo_id}/complete", headers=auth)[0] == 200
    assert _listed(app) == [
        ("Water plants", "2025-03-03", True),
        ("Water plants", "2025-03-04", False),
        ("Water plants" + SUFFIX, "2025-03-03", False),
    ]
    assert _listed(app, alice) == [
        ("Gym", "2025-03-03", True),
        ("Gym", "2025-03-04", False),
        ("Gym" + SUFFIX, "2025-03-03", False),
    ]

import sqlite3
from datetime import datetime, timezone

import pytest
from todo_hidden_http import call

MAX_TAGS = {{ max_tags }}
NOW = datetime(2025, 6, 2, 8, 0, tzinfo=timezone.utc)
LATER = datetime(2025, 6, 2, 9, 15, tzinfo=timezone.utc)


@pytest.fixture(autouse=True)
def _cheap_password_hashing(monkeypatch):
    """These tests register and log in: hash passwords with few iterations."""
    try:
        monkeypatch.setattr("todo.auth.HASH_ITERATIONS", 1000, raising=False)
    except ImportError:
        pass


@pytest.fixture
def statements(monkeypatch):
    """Every SQL statement run on connections opened from now on."""
    import todo.storage

    seen = []
    real = sqlite3.connect

    def traced(*args, **kwargs):
        conn = real(*args, **kwargs)
        conn.set_trace_callback(seen.append)
        return conn

    monkeypatch.setattr(sqlite3, "connect", traced)
    if hasattr(todo.storage, "connect"):
        monkeypatch.setattr(todo.storage, "connect", traced)
    return seen


class Clock:
    def __init__(self):
        self.now = NOW

    def __call__(self):
        return self.now


def _app(path, clock=None):
    from todo.web import create_app

    return create_app(str(path), clock=clock or (lambda: NOW))


def _seed(app, count, tags=("home",), headers=None):
    ids = []
    for n in range(count):
        status, _, body = call(app, "POST", "/todos", json={"title": f"task {n:02d}", "tags": list(tags)}, headers=headers)
        assert status == 201, body
        if n % 2:
            assert call(app, "POST", f"/todos/{body['id']}/items", json={"text": "step"}, headers=headers)[0] == 201
        ids.append(body["id"])
    return ids


def _bulk(app, statements, payload, headers=None):
    statements.clear()
    status, _, body = call(app, "POST", "/todos/bulk", json=payload, headers=headers)
    return status, body, len(statements)


def test_add_tags_uses_the_same_number_of_queries_for_5_and_40_todos(tmp_path, statements):
    small, big = _app(tmp_path / "s.db"), _app(tmp_path / "b.db")
    few, many = _seed(small, 5), _seed(big, 40)
    status, body, few_count = _bulk(small, statements, {"action": "add-tags", "ids": few, "tags": ["Errands"]})
    assert status == 200, body
    status, body, many_count = _bulk(big, statements, {"action": "add-tags", "ids": many, "tags": ["Errands"]})
    assert status == 200, body
    assert many_count == few_count, (few_count, many_count)
    for todo_id in (many[0], many[17], many[-1]):
        assert call(big, "GET", f"/todos/{todo_id}")[2]["tags"] == ["errands", "home"]


def test_remove_tags_uses_the_same_number_of_queries(tmp_path, statements):
    small, big = _app(tmp_path / "s.db"), _app(tmp_path / "b.db")
    few, many = _seed(small, 5, ("home", "work")), _seed(big, 40, ("home", "work"))
    status, body, few_count = _bulk(small, statements, {"action": "remove-tags", "ids": few, "tags": [" WORK "]})
    assert status == 200, body
    status, body, many_count = _bulk(big, statements, {"action": "remove-tags", "ids": many, "tags": [" WORK "]})
    assert status == 200, body
    assert many_count == few_count, (few_count, many_count)
    tags = {todo["id"]: todo["tags"] for todo in call(big, "GET", "/todos?limit=100")[2]["todos"]}
    assert all(tags[todo_id] == ["home"] for todo_id in many)


def test_history_and_updated_at_are_kept_with_few_queries(tmp_path, statements):
    clock = Clock()
    small, big = _app(tmp_path / "s.db", clock), _app(tmp_path / "b.db", clock)
    few, many = _seed(small, 5), _seed(big, 30)
    clock.now = LATER
    _, _, few_count = _bulk(small, statements, {"action": "add-tags", "ids": few, "tags": ["urgent", "home"]})
    status, body, many_count = _bulk(big, statements, {"action": "add-tags", "ids": many, "tags": ["urgent", "home"]})
    assert status == 200, body
    assert many_count == few_count
    todo = call(big, "GET", f"/todos/{many[3]}")[2]
    assert todo["updated_at"] == "2025-06-02T09:15:00Z"
    history = call(big, "GET", f"/todos/{many[3]}/history")[2]["history"]
    assert [(event["action"], event["fields"], event["at"]) for event in history][-1] == (
        "updated",
        ["tags"],
        "2025-06-02T09:15:00Z",
    )


def test_all_or_nothing_still_holds_and_a_valid_call_stays_cheap(tmp_path, statements):
    small, big = _app(tmp_path / "s.db"), _app(tmp_path / "b.db")
    few, many = _seed(small, 5), _seed(big, 40)
    status, body, _ = _bulk(big, statements, {"action": "add-tags", "ids": many + [9999, 8888], "tags": ["x"]})
    assert status == 404, body
    assert sorted(body["missing"]) == [8888, 9999]
    assert call(big, "GET", f"/todos/{many[0]}")[2]["tags"] == ["home"]
    status, body, _ = _bulk(big, statements, {"action": "add-tags", "ids": many, "tags": [f"t{n}" for n in range(MAX_TAGS)]})
    assert status == 400 and body["field"] == "tags", body
    _, _, few_count = _bulk(small, statements, {"action": "add-tags", "ids": few, "tags": ["x"]})
    _, _, many_count = _bulk(big, statements, {"action": "add-tags", "ids": many, "tags": ["x"]})
    assert many_count == few_count
    assert call(big, "GET", f"/todos/{many[-1]}")[2]["tags"] == ["home", "x"]


def test_a_users_bulk_tagging_is_constant_too(tmp_path, statements):
    app = _app(tmp_path / "u.db")
    password = "S3cret-password-long"
    assert call(app, "POST", "/users", json={"username": "mia", "password": password})[0] == 201
    token = call(app, "POST", "/users/login", json={"username": "mia", "password": password})[2]["token"]
    auth = {"Authorization": f"Bearer {token}"}
    mine_few, mine_many = _seed(app, 4, headers=auth), _seed(app, 36, headers=auth)
    others = _seed(app, 2)
    status, body, few_count = _bulk(app, statements, {"action": "add-tags", "ids": mine_few, "tags": ["shared"]}, auth)
    assert status == 200, body
    status, body, many_count = _bulk(app, statements, {"action": "add-tags", "ids": mine_many, "tags": ["shared"]}, auth)
    assert status == 200, body
    assert many_count == few_count
    status, body, _ = _bulk(app, statements, {"action": "add-tags", "ids": mine_few + others, "tags": ["shared"]}, auth)
    assert status == 404 and sorted(body["missing"]) == sorted(others), body

from datetime import datetime, timezone

import pytest
from todo_hidden_http import call

NOW = datetime(2025, 7, 1, 10, 0, tzinfo=timezone.utc)
LATER = datetime(2025, 7, 1, 11, 30, tzinfo=timezone.utc)


@pytest.fixture(autouse=True)
def _cheap_password_hashing(monkeypatch):
    """These tests register and log in: hash passwords with few iterations."""
    try:
        monkeypatch.setattr("todo.auth.HASH_ITERATIONS", 1000, raising=False)
    except ImportError:
        pass


class Clock:
    def __init__(self):
        self.now = NOW

    def __call__(self):
        return self.now


def _app(path, clock=None):
    from todo.web import create_app

    return create_app(str(path), clock=clock or (lambda: NOW))


def _seed(app, count=3, headers=None):
    return [call(app, "POST", "/todos", json={"title": f"job {n}"}, headers=headers)[2]["id"] for n in range(count)]


def _priorities(app, headers=None):
    body = call(app, "GET", "/todos?limit=100", headers=headers)[2]
    return {todo["id"]: todo["priority"] for todo in body["todos"]}


def _bulk(app, payload, headers=None):
    return call(app, "POST", "/todos/bulk", json=payload, headers=headers)


def test_set_priority_on_several_todos(tmp_path):
    app = _app(tmp_path / "p.db")
    ids = _seed(app, 4)
    status, _, body = _bulk(app, {"action": "set-priority", "ids": [ids[0], ids[2]], "priority": "high"})
    assert status == 200, body
    assert body["action"] == "set-priority" and body["count"] == 2
    assert _priorities(app) == {ids[0]: "high", ids[1]: "normal", ids[2]: "high", ids[3]: "normal"}
    status, _, body = _bulk(app, {"action": "set-priority", "ids": ids, "priority": "urgent"})
    assert status == 200 and body["count"] == 4
    assert set(_priorities(app).values()) == {"urgent"}


def test_unknown_ids_change_nothing(tmp_path):
    app = _app(tmp_path / "p.db")
    ids = _seed(app)
    status, _, body = _bulk(app, {"action": "set-priority", "ids": [ids[0], 404, ids[1], 405], "priority": "low"})
    assert status == 404, body
    assert body["missing"] == [404, 405]
    assert "error" in body
    assert set(_priorities(app).values()) == {"normal"}


@pytest.mark.parametrize("priority", [None, "critical", "HIGH", 3, ["high"]])
def test_bad_priority_is_an_input_error(tmp_path, priority):
    app = _app(tmp_path / "p.db")
    ids = _seed(app)
    payload = {"action": "set-priority", "ids": ids}
    if priority is not None:
        payload["priority"] = priority
    status, _, body = _bulk(app, payload)
    assert status == 400, body
    assert body["field"] == "priority" and body["error"]
    assert set(_priorities(app).values()) == {"normal"}


@pytest.mark.parametrize("ids", [[], "1", [1, "2"], None])
def test_bad_ids_are_reported_on_ids(tmp_path, ids):
    app = _app(tmp_path / "p.db")
    _seed(app)
    status, _, body = _bulk(app, {"action": "set-priority", "ids": ids, "priority": "low"})
    assert status == 400 and body["field"] == "ids", body


def test_change_is_in_the_history(tmp_path):
    clock = Clock()
    app = _app(tmp_path / "p.db", clock)
    ids = _seed(app, 2)
    clock.now = LATER
    assert _bulk(app, {"action": "set-priority", "ids": [ids[1]], "priority": "low"})[0] == 200
    todo = call(app, "GET", f"/todos/{ids[1]}")[2]
    assert todo["priority"] == "low" and todo["updated_at"] == "2025-07-01T11:30:00Z"
    history = call(app, "GET", f"/todos/{ids[1]}/history")[2]["history"]
    assert (history[-1]["action"], history[-1]["fields"], history[-1]["at"]) == ("updated", ["priority"], "2025-07-01T11:30:00Z")
    assert call(app, "GET", f"/todos/{ids[0]}")[2]["updated_at"] == "2025-07-01T10:00:00Z"


def test_users_only_reach_their_own_todos(tmp_path):
    app = _app(tmp_path / "p.db")
    password = "S3cret-password-long"
    tokens = {}
    for name in ("nora", "otto"):
        assert call(app, "POST", "/users", json={"username": name, "password": password})[0] == 201
        tokens[name] = {"Authorization": "Bearer " + call(app, "POST", "/users/login", json={"username": name, "password": password})[2]["token"]}
    mine = _seed(app, 2, tokens["nora"])
    theirs = _seed(app, 1, tokens["otto"])
    status, _, body = _bulk(app, {"action": "set-priority", "ids": mine + theirs, "priority": "high"}, tokens["nora"])
    assert status == 404 and body["missing"] == theirs, body
    status, _, body = _bulk(app, {"action": "set-priority", "ids": mine, "priority": "high"}, tokens["nora"])
    assert status == 200 and body["count"] == 2
    assert set(_priorities(app, tokens["nora"]).values()) == {"high"}
    assert set(_priorities(app, tokens["otto"]).values()) == {"normal"}

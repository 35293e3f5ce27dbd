from datetime import datetime, timezone

import pytest
from todo_hidden_http import call


def _app(path, today=(2024, 5, 10)):
    from todo.web import create_app

    return create_app(str(path), clock=lambda: datetime(*today, 8, 30, tzinfo=timezone.utc))


def _create(app, **fields):
    status, _, body = call(app, "POST", "/todos", json={"title": "water plants", **fields})
    assert status == 201, body
    return body


def _all(app):
    status, _, body = call(app, "GET", "/todos?sort=id")
    assert status == 200, body
    return body["todos"]


def test_repeat_is_stored_and_changed(tmp_path):
    app = _app(tmp_path / "r.db")
    assert _create(app)["repeat"] is None
    todo = _create(app, repeat="weekly")
    assert todo["repeat"] == "weekly"
    assert call(app, "GET", f"/todos/{todo['id']}")[2]["repeat"] == "weekly"
    status, _, body = call(app, "PATCH", f"/todos/{todo['id']}", json={"repeat": "monthly"})
    assert status == 200 and body["repeat"] == "monthly"
    status, _, body = call(app, "PATCH", f"/todos/{todo['id']}", json={"repeat": None})
    assert status == 200 and body["repeat"] is None
    assert call(app, "GET", f"/todos/{todo['id']}")[2]["repeat"] is None


@pytest.mark.parametrize("bad", ["yearly", "Daily", "", 7, ["daily"]])
def test_unknown_repeat_is_an_input_error(tmp_path, bad):
    app = _app(tmp_path / "r.db")
    status, _, body = call(app, "POST", "/todos", json={"title": "x", "repeat": bad})
    assert status == 400 and body["field"] == "repeat"
    todo = _create(app, repeat="daily")
    status, _, body = call(app, "PATCH", f"/todos/{todo['id']}", json={"repeat": bad, "title": "changed"})
    assert status == 400 and body["field"] == "repeat"
    assert [(t["title"], t["repeat"]) for t in _all(app)] == [("water plants", "daily")]


@pytest.mark.parametrize(
    "repeat, due, expected",
    [
        ("daily", "2024-05-12", "2024-05-13"),
        ("daily", "2024-02-28", "2024-02-29"),
        ("weekly", "2024-12-28", "2025-01-04"),
        ("monthly", "2024-03-15", "2024-04-15"),
        ("monthly", "2024-01-31", "2024-02-29"),
        ("monthly", "2023-01-31", "2023-02-28"),
        ("monthly", "2024-05-31", "2024-06-30"),
        ("monthly", "2024-12-31", "2025-01-31"),
    ],
)
def test_completing_creates_the_next_occurrence(tmp_path, repeat, due, expected):
    app = _app(tmp_path / "r.db")
    todo = _create(app, repeat=repeat, due=due)
    status, _, body = call(app, "POST", f"/todos/{todo['id']}/complete")
    assert status == 200 and body["done"] is True
    todos = _all(app)
    assert len(todos) == 2
    nxt = todos[1]
    assert nxt["id"] != todo["id"] and nxt["done"] is False
    assert nxt["due"] == expected and nxt["repeat"] == repeat


@pytest.mark.parametrize("repeat, expected", [("daily", "2024-05-11"), ("weekly", "2024-05-17"), ("monthly", "2024-06-10")])
def test_without_a_due_date_the_next_one_counts_from_today(tmp_path, repeat, expected):
    app = _app(tmp_path / "r.db", today=(2024, 5, 10))
    todo = _create(app, repeat=repeat)
    call(app, "POST", f"/todos/{todo['id']}/complete")
    assert [t["due"] for t in _all(app)] == [None, expected]


def test_next_occurrence_copies_the_todo_and_unticks_the_checklist(tmp_path):
    app = _app(tmp_path / "r.db")
    todo = _create(app, title="weekly report", priority="high", tags=["Work", "reports"], notes="send to Ana",
                   repeat="weekly", due="2024-05-10")
    for text in ("collect numbers", "write summary"):
        item = call(app, "POST", f"/todos/{todo['id']}/items", json={"text": text})[2]
        call(app, "PATCH", f"/todos/{todo['id']}/items/{item['id']}", json={"done": True})
    call(app, "POST", f"/todos/{todo['id']}/complete")
    old, nxt = _all(app)
    assert nxt["title"] == "weekly report" and nxt["priority"] == "high"
    assert nxt["tags"] == ["reports", "work"] and nxt["notes"] == "send to Ana"
    assert nxt["due"] == "2024-05-17" and nxt["repeat"] == "weekly" and nxt["done"] is False
    assert [(i["text"], i["done"]) for i in nxt["items"]] == [("collect numbers", False), ("write summary", False)]
    assert [(i["text"], i["done"]) for i in old["items"]] == [("collect numbers", True), ("write summary", True)]


def test_the_completed_todo_stops_repeating(tmp_path):
    app = _app(tmp_path / "r.db")
    todo = _create(app, repeat="daily", due="2024-05-10")
    status, _, body = call(app, "POST", f"/todos/{todo['id']}/complete")
    assert body["repeat"] is None and body["due"] == "2024-05-10"
    call(app, "POST", f"/todos/{todo['id']}/uncomplete")
    call(app, "POST", f"/todos/{todo['id']}/complete")
    todos = _all(app)
    assert [(t["done"], t["due"], t["repeat"]) for t in todos] == [(True, "2024-05-10", None), (False, "2024-05-11", "daily")]


def test_one_off_todos_do_not_come_back(tmp_path):
    app = _app(tmp_path / "r.db")
    todo = _create(app, due="2024-05-10")
    call(app, "POST", f"/todos/{todo['id']}/complete")
    call(app, "PATCH", f"/todos/{todo['id']}", json={"done": True})
    todos = _all(app)
    assert [(t["done"], t["repeat"]) for t in todos] == [(True, None)]


def test_patch_and_bulk_complete_repeat_too(tmp_path):
    app = _app(tmp_path / "r.db")
    a = _create(app, title="a", repeat="daily", due="2024-05-01")
    b = _create(app, title="b", repeat="weekly", due="2024-05-01")
    c = _create(app, title="c", due="2024-05-01")
    status, _, body = call(app, "PATCH", f"/todos/{a['id']}", json={"done": True})
    assert status == 200 and body["done"] is True
    status, _, body = call(app, "POST", "/todos/bulk", json={"action": "complete", "ids": [b["id"], c["id"]]})
    assert status == 200, body
    open_ones = sorted((t["title"], t["due"]) for t in _all(app) if not t["done"])
    assert open_ones == [("a", "2024-05-02"), ("b", "2024-05-08")]
    assert all(t["repeat"] is None for t in _all(app) if t["done"])

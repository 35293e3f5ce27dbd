from datetime import datetime, timezone

import pytest
from todo_hidden_http import call


def _app(path, today):
    from todo.web import create_app

    return create_app(str(path), clock=lambda: datetime(*today, 23, 30, tzinfo=timezone.utc))


def _next_due(app, **fields):
    _, _, todo = call(app, "POST", "/todos", json={"title": "water plants", **fields})
    status, _, body = call(app, "POST", f"/todos/{todo['id']}/complete")
    assert status == 200, body
    todos = call(app, "GET", "/todos?done=false")[2]["todos"]
    assert len(todos) == 1
    assert todos[0]["repeat"] == fields["repeat"]
    return todos[0]["due"]


@pytest.mark.parametrize(
    "repeat, due, today, expected",
    [
        ("daily", "2024-05-01", (2024, 5, 14), "2024-05-14"),
        ("daily", "2024-05-13", (2024, 5, 14), "2024-05-14"),
        ("weekly", "2024-05-01", (2024, 5, 14), "2024-05-15"),
        ("weekly", "2024-05-01", (2024, 5, 15), "2024-05-15"),
        ("weekly", "2024-04-03", (2024, 5, 8), "2024-05-08"),
        ("monthly", "2024-01-31", (2024, 3, 5), "2024-03-31"),
        ("monthly", "2024-01-31", (2024, 4, 1), "2024-04-30"),
        ("monthly", "2023-11-15", (2024, 2, 16), "2024-03-15"),
        ("monthly", "2023-11-30", (2024, 2, 10), "2024-02-29"),
    ],
)
def test_missed_dates_are_skipped(tmp_path, repeat, due, today, expected):
    app = _app(tmp_path / "s.db", today)
    assert _next_due(app, repeat=repeat, due=due) == expected


def test_only_missed_dates_change(tmp_path):
    on_time = [
        ("daily", "2024-05-14", "2024-05-15"),
        ("daily", "2024-05-20", "2024-05-21"),
        ("weekly", "2024-05-14", "2024-05-21"),
        ("monthly", "2024-05-31", "2024-06-30"),
        ("monthly", "2024-12-31", "2025-01-31"),
    ]
    for index, (repeat, due, expected) in enumerate(on_time):
        app = _app(tmp_path / f"s{index}.db", (2024, 5, 14))
        assert _next_due(app, repeat=repeat, due=due) == expected
    app = _app(tmp_path / "late.db", (2024, 5, 14))
    assert _next_due(app, repeat="daily", due="2024-05-12") == "2024-05-14"


def test_patch_and_bulk_complete_skip_too(tmp_path):
    app = _app(tmp_path / "s.db", (2024, 5, 14))
    a = call(app, "POST", "/todos", json={"title": "a", "repeat": "daily", "due": "2024-05-01"})[2]["id"]
    b = call(app, "POST", "/todos", json={"title": "b", "repeat": "weekly", "due": "2024-05-01"})[2]["id"]
    assert call(app, "PATCH", f"/todos/{a}", json={"done": True})[0] == 200
    assert call(app, "POST", "/todos/bulk", json={"action": "complete", "ids": [b]})[0] == 200
    c = call(app, "POST", "/todos", json={"title": "c", "repeat": "weekly"})[2]["id"]
    assert call(app, "POST", f"/todos/{c}/complete")[0] == 200
    open_ones = sorted((t["title"], t["due"]) for t in call(app, "GET", "/todos?done=false")[2]["todos"])
    assert open_ones == [("a", "2024-05-14"), ("b", "2024-05-15"), ("c", "2024-05-21")]

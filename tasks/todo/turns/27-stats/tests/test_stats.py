from datetime import datetime, timezone

import pytest
from todo_hidden_http import call


def _app(tmp_path, now=datetime(2024, 9, 15, 8, 0, tzinfo=timezone.utc)):
    from todo.web import create_app

    return create_app(str(tmp_path / "stats.db"), clock=lambda: now)


def _add(app, title, done=False, **fields):
    body = call(app, "POST", "/todos", json={"title": title, **fields})[2]
    if done:
        call(app, "POST", f"/todos/{body['id']}/complete")
    return body


def _stats(app):
    status, _, body = call(app, "GET", "/todos/stats")
    assert status == 200
    return body


def test_empty_database(tmp_path):
    body = _stats(_app(tmp_path))
    assert body["open_by_priority"] == {"low": 0, "normal": 0, "high": 0}
    assert body["by_tag"] == {}
    assert body["overdue"] == 0
    assert body["completion_rate"] == 0


def test_open_todos_per_priority(tmp_path):
    app = _app(tmp_path)
    _add(app, "a", priority="high")
    _add(app, "b", priority="high")
    _add(app, "c", priority="high", done=True)
    _add(app, "d")
    _add(app, "e", priority="low", done=True)
    assert _stats(app)["open_by_priority"] == {"low": 0, "normal": 1, "high": 2}


def test_todos_per_tag_count_done_ones_too(tmp_path):
    app = _app(tmp_path)
    _add(app, "a", tags=["work", "urgent"])
    _add(app, "b", tags=["Work"], done=True)
    _add(app, "c", tags=["home"])
    _add(app, "d")
    gone = _add(app, "e", tags=["temp", "home"])
    call(app, "DELETE", f"/todos/{gone['id']}")
    assert _stats(app)["by_tag"] == {"home": 1, "urgent": 1, "work": 2}


@pytest.mark.parametrize(("now", "expected"), [
    (datetime(2024, 9, 15, 8, 0, tzinfo=timezone.utc), 2),
    (datetime(2024, 9, 16, 0, 30, tzinfo=timezone.utc), 3),
    (datetime(2024, 9, 1, 0, 0), 1),
    (datetime(2024, 7, 31, 23, 59), 0),
])
def test_overdue_count_follows_the_overdue_rule(tmp_path, now, expected):
    app = _app(tmp_path, now)
    _add(app, "way late", due="2024-08-01")
    _add(app, "late", due="2024-09-14")
    _add(app, "today", due="2024-09-15")
    _add(app, "late but done", due="2024-09-10", done=True)
    _add(app, "no date")
    assert _stats(app)["overdue"] == expected
    assert _stats(app)["overdue"] == call(app, "GET", "/todos?overdue=true")[2]["total"]


@pytest.mark.parametrize(("done", "total", "rate"), [(1, 3, 0.33), (2, 3, 0.67), (3, 3, 1.0), (1, 7, 0.14), (0, 4, 0.0)])
def test_completion_rate_is_rounded_to_two_decimals(tmp_path, done, total, rate):
    app = _app(tmp_path)
    for n in range(total):
        _add(app, f"t{n}", done=n < done)
    assert _stats(app)["completion_rate"] == pytest.approx(rate)


def test_summary_is_unchanged(tmp_path):
    app = _app(tmp_path)
    _add(app, "a", done=True)
    _add(app, "b", priority="high", tags=["x"])
    assert call(app, "GET", "/todos/summary")[2] == {"total": 2, "done": 1, "open": 1}
    assert _stats(app)["open_by_priority"]["high"] == 1

from datetime import datetime, timedelta, timezone

import pytest
from todo_hidden_http import call


def _app(tmp_path, now=None):
    from todo.web import create_app

    if now is None:
        return create_app(str(tmp_path / "due.db"))
    return create_app(str(tmp_path / "due.db"), clock=lambda: now)


def _titles(app, query=""):
    status, _, body = call(app, "GET", "/todos" + query)
    assert status == 200, body
    return [t["title"] for t in body["todos"]]


def test_due_date_is_stored_and_defaults_to_null(tmp_path):
    app = _app(tmp_path)
    _, _, dated = call(app, "POST", "/todos", json={"title": "File taxes", "due": "2025-04-15"})
    _, _, undated = call(app, "POST", "/todos", json={"title": "Someday"})
    assert dated["due"] == "2025-04-15" and undated["due"] is None
    assert call(app, "GET", f"/todos/{dated['id']}")[2]["due"] == "2025-04-15"


def test_patch_sets_changes_and_clears_due(tmp_path):
    app = _app(tmp_path)
    _, _, todo = call(app, "POST", "/todos", json={"title": "Dentist", "tags": ["health"]})
    status, _, body = call(app, "PATCH", f"/todos/{todo['id']}", json={"due": "2024-02-29"})
    assert status == 200 and body["due"] == "2024-02-29"
    status, _, body = call(app, "PATCH", f"/todos/{todo['id']}", json={"title": "Dentist (moved)"})
    assert body["due"] == "2024-02-29"
    status, _, body = call(app, "PATCH", f"/todos/{todo['id']}", json={"due": None})
    assert status == 200 and body["due"] is None
    fetched = call(app, "GET", f"/todos/{todo['id']}")[2]
    assert (fetched["title"], fetched["due"], fetched["tags"]) == ("Dentist (moved)", None, ["health"])


@pytest.mark.parametrize("bad", ["2024-13-01", "2023-02-29", "tomorrow", "2024-5-1", "01.05.2024", "2024-05-01T10:00:00Z", 20240501, ["2024-05-01"]])
def test_invalid_due_is_rejected_without_changes(tmp_path, bad):
    app = _app(tmp_path)
    status, _, body = call(app, "POST", "/todos", json={"title": "x", "due": bad})
    assert status == 400 and body["field"] == "due" and body["error"]
    assert call(app, "GET", "/todos")[2]["todos"] == []
    _, _, todo = call(app, "POST", "/todos", json={"title": "keep", "due": "2024-06-01"})
    status, _, body = call(app, "PATCH", f"/todos/{todo['id']}", json={"title": "changed", "due": bad})
    assert status == 400 and body["field"] == "due"
    fetched = call(app, "GET", f"/todos/{todo['id']}")[2]
    assert (fetched["title"], fetched["due"]) == ("keep", "2024-06-01")


@pytest.mark.parametrize("day", [datetime(2024, 5, 10, 12, 0, tzinfo=timezone.utc), datetime(2023, 12, 31, 23, 59, 59)])
def test_overdue_means_open_and_due_before_today(tmp_path, day):
    app = _app(tmp_path, now=day)
    today = day.date()
    plan = [
        ("long ago", today - timedelta(days=40), False),
        ("yesterday", today - timedelta(days=1), False),
        ("done late", today - timedelta(days=3), True),
        ("today", today, False),
        ("tomorrow", today + timedelta(days=1), False),
        ("no date", None, False),
    ]
    for title, due, done in plan:
        body = call(app, "POST", "/todos", json={"title": title, "due": due and due.isoformat()})[2]
        if done:
            call(app, "POST", f"/todos/{body['id']}/complete")
    assert _titles(app, "?overdue=true") == ["yesterday", "long ago"]
    assert _titles(app, "?overdue=false") == ["no date", "tomorrow", "today", "done late"]
    status, _, body = call(app, "GET", "/todos?overdue=maybe")
    assert status == 400


def test_today_is_the_utc_date_of_the_clock(tmp_path):
    # 01:30 in UTC+05:00 is still the previous day in UTC; 22:00 in UTC-04:00 is the next one
    east = datetime(2024, 3, 10, 1, 30, tzinfo=timezone(timedelta(hours=5)))
    app = _app(tmp_path, now=east)
    call(app, "POST", "/todos", json={"title": "due 9th", "due": "2024-03-09"})
    call(app, "POST", "/todos", json={"title": "due 8th", "due": "2024-03-08"})
    assert _titles(app, "?overdue=true") == ["due 8th"]
    west = datetime(2024, 3, 9, 22, 0, tzinfo=timezone(timedelta(hours=-4)))
    app = _app(tmp_path, now=west)
    assert _titles(app, "?overdue=true") == ["due 8th", "due 9th"]


def test_overdue_combines_with_tag_and_priority(tmp_path):
    app = _app(tmp_path, now=datetime(2024, 7, 1, 9, tzinfo=timezone.utc))
    for title, tags, priority, due in [
        ("a", ["work"], "high", "2024-06-01"),
        ("b", ["work"], "low", "2024-06-20"),
        ("c", ["home"], "high", "2024-06-02"),
        ("d", ["work"], "high", "2024-07-02"),
    ]:
        call(app, "POST", "/todos", json={"title": title, "tags": tags, "priority": priority, "due": due})
    assert _titles(app, "?overdue=true&tag=work") == ["b", "a"]
    assert _titles(app, "?overdue=true&priority=high") == ["c", "a"]


def test_sort_by_due_puts_undated_last_both_ways(tmp_path):
    app = _app(tmp_path)
    for title, due in [("none1", None), ("june", "2024-06-15"), ("jan", "2025-01-02"), ("none2", None), ("may", "2024-05-31")]:
        call(app, "POST", "/todos", json={"title": title, "due": due})
    assert _titles(app, "?sort=due") == ["may", "june", "jan", "none1", "none2"]
    assert _titles(app, "?sort=due&order=desc") == ["jan", "june", "may", "none2", "none1"]

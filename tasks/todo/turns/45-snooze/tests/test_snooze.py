from datetime import datetime, timezone

import pytest
from todo_hidden_http import call


def _app(path):
    from todo.web import create_app

    return create_app(str(path), clock=lambda: datetime(2024, 6, 10, 22, 0, tzinfo=timezone.utc))


def _todo(app, **fields):
    return call(app, "POST", "/todos", json={"title": "renew passport", **fields})[2]["id"]


def test_snooze_moves_the_due_date(tmp_path):
    app = _app(tmp_path / "z.db")
    todo_id = _todo(app, due="2024-06-20")
    status, _, body = call(app, "POST", f"/todos/{todo_id}/snooze", json={"days": 3})
    assert status == 200, body
    assert body["due"] == "2024-06-23" and body["id"] == todo_id
    assert call(app, "GET", f"/todos/{todo_id}")[2]["due"] == "2024-06-23"
    status, _, body = call(app, "POST", f"/todos/{todo_id}/snooze", json={"days": 30})
    assert status == 200 and body["due"] == "2024-07-23"


def test_empty_body_means_one_day(tmp_path):
    app = _app(tmp_path / "z.db")
    todo_id = _todo(app, due="2024-12-31")
    status, _, body = call(app, "POST", f"/todos/{todo_id}/snooze", json={})
    assert status == 200 and body["due"] == "2025-01-01"


def test_todos_without_a_due_date_count_from_today(tmp_path):
    app = _app(tmp_path / "z.db")
    todo_id = _todo(app)
    status, _, body = call(app, "POST", f"/todos/{todo_id}/snooze", json={"days": 2})
    assert status == 200 and body["due"] == "2024-06-12"


def test_overdue_todos_count_from_today(tmp_path):
    app = _app(tmp_path / "z.db")
    late = _todo(app, due="2024-06-01")
    today = _todo(app, title="today", due="2024-06-10")
    assert [t["id"] for t in call(app, "GET", "/todos?overdue=true")[2]["todos"]] == [late]
    status, _, body = call(app, "POST", f"/todos/{late}/snooze", json={"days": 1})
    assert status == 200 and body["due"] == "2024-06-11"
    assert call(app, "GET", "/todos?overdue=true")[2]["todos"] == []
    assert call(app, "POST", f"/todos/{today}/snooze", json={"days": 1})[2]["due"] == "2024-06-11"


@pytest.mark.parametrize("bad", [0, 31, -1, 1.5, "2", True, None])
def test_days_must_be_a_whole_number_from_1_to_30(tmp_path, bad):
    app = _app(tmp_path / "z.db")
    todo_id = _todo(app, due="2024-06-20")
    status, _, body = call(app, "POST", f"/todos/{todo_id}/snooze", json={"days": bad})
    assert status == 400 and body["field"] == "days" and body["error"]
    assert call(app, "GET", f"/todos/{todo_id}")[2]["due"] == "2024-06-20"
    assert call(app, "POST", f"/todos/{todo_id}/snooze", json={"days": 1})[2]["due"] == "2024-06-21"


def test_done_todos_cannot_be_snoozed(tmp_path):
    app = _app(tmp_path / "z.db")
    todo_id = _todo(app, due="2024-06-20")
    call(app, "POST", f"/todos/{todo_id}/complete")
    status, _, body = call(app, "POST", f"/todos/{todo_id}/snooze", json={"days": 1})
    assert status == 400 and body["field"] == "done"
    assert call(app, "GET", f"/todos/{todo_id}")[2]["due"] == "2024-06-20"
    status, _, body = call(app, "POST", "/todos/999/snooze", json={"days": 1})
    assert status == 404


def test_snoozing_shows_in_the_history(tmp_path):
    app = _app(tmp_path / "z.db")
    todo_id = _todo(app, due="2024-06-20")
    call(app, "POST", f"/todos/{todo_id}/snooze", json={"days": 1})
    history = call(app, "GET", f"/todos/{todo_id}/history")[2]["history"]
    assert [(e["action"], e["fields"]) for e in history] == [("created", []), ("updated", ["due"])]

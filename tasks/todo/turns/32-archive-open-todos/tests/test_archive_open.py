from datetime import datetime, timedelta, timezone

from todo_hidden_http import call


def _app(path, clock=None):
    from todo.web import create_app

    return create_app(str(path), clock=clock)


def _titles(app, query=""):
    status, _, body = call(app, "GET", "/todos" + query)
    assert status == 200, body
    return [t["title"] for t in body["todos"]]


def _ticking_clock(start):
    state = {"now": start}

    def clock():
        state["now"] += timedelta(hours=1)
        return state["now"]

    return clock


def test_archiving_an_open_todo_completes_it(tmp_path):
    app = _app(tmp_path / "a.db", clock=_ticking_clock(datetime(2024, 6, 1, 8, 0, tzinfo=timezone.utc)))
    _, _, todo = call(app, "POST", "/todos", json={"title": "Old idea", "priority": "low", "tags": ["someday"]})
    status, _, body = call(app, "POST", f"/todos/{todo['id']}/archive")
    assert status == 200, body
    assert body["done"] is True and body["archived"] is True
    assert (body["title"], body["priority"], body["tags"]) == ("Old idea", "low", ["someday"])
    assert body["updated_at"] == "2024-06-01T10:00:00Z"
    fetched = call(app, "GET", f"/todos/{todo['id']}")[2]
    assert fetched["done"] is True and fetched["archived"] is True
    assert _titles(app) == [] and _titles(app, "?archived=true") == ["Old idea"]


def test_unarchiving_keeps_it_done(tmp_path):
    app = _app(tmp_path / "a.db")
    _, _, todo = call(app, "POST", "/todos", json={"title": "Learn the banjo"})
    call(app, "POST", f"/todos/{todo['id']}/archive")
    status, _, body = call(app, "POST", f"/todos/{todo['id']}/unarchive")
    assert status == 200 and body["archived"] is False and body["done"] is True
    assert _titles(app, "?done=true") == ["Learn the banjo"]
    assert _titles(app, "?done=false") == []


def test_open_todo_archived_is_kept_by_clear_completed(tmp_path):
    app = _app(tmp_path / "a.db")
    ids = {t: call(app, "POST", "/todos", json={"title": t})[2]["id"] for t in ["parked", "finished", "open"]}
    call(app, "POST", f"/todos/{ids['finished']}/complete")
    assert call(app, "POST", f"/todos/{ids['parked']}/archive")[0] == 200
    status, _, body = call(app, "POST", "/todos/clear-completed")
    assert status == 200 and body["deleted"] == 1
    assert _titles(app) == ["open"]
    assert _titles(app, "?archived=true") == ["parked"]
    summary = call(app, "GET", "/todos/summary")[2]
    assert summary == {"total": 2, "done": 1, "open": 1}


def test_archived_open_todo_is_no_longer_overdue(tmp_path):
    clock = lambda: datetime(2024, 6, 10, 12, 0, tzinfo=timezone.utc)  # noqa: E731
    app = _app(tmp_path / "a.db", clock=clock)
    ids = {t: call(app, "POST", "/todos", json={"title": t, "due": "2024-06-01"})[2]["id"] for t in ["late", "later"]}
    assert call(app, "GET", "/todos/stats")[2]["overdue"] == 2
    call(app, "POST", f"/todos/{ids['late']}/archive")
    assert call(app, "GET", "/todos/stats")[2]["overdue"] == 1
    assert _titles(app, "?overdue=true") == ["later"]

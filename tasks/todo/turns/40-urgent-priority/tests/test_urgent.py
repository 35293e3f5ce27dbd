import pytest
from todo_hidden_http import call


def _app(path):
    from todo.web import create_app

    return create_app(str(path))


def _titles(app, query=""):
    status, _, body = call(app, "GET", "/todos" + query)
    assert status == 200, body
    return [t["title"] for t in body["todos"]]


def test_urgent_is_a_valid_priority(tmp_path):
    app = _app(tmp_path / "u.db")
    status, _, todo = call(app, "POST", "/todos", json={"title": "server down", "priority": "urgent"})
    assert status == 201 and todo["priority"] == "urgent"
    _, _, other = call(app, "POST", "/todos", json={"title": "coffee"})
    status, _, body = call(app, "PATCH", f"/todos/{other['id']}", json={"priority": "urgent"})
    assert status == 200 and body["priority"] == "urgent"
    assert call(app, "GET", f"/todos/{other['id']}")[2]["priority"] == "urgent"


@pytest.mark.parametrize("bad", ["URGENT", "critical", "", 4, None, ["urgent"]])
def test_other_values_are_still_rejected(tmp_path, bad):
    app = _app(tmp_path / "u.db")
    status, _, body = call(app, "POST", "/todos", json={"title": "x", "priority": bad})
    assert status == 400 and body["field"] == "priority" and body["error"]
    _, _, todo = call(app, "POST", "/todos", json={"title": "keep me", "priority": "urgent"})
    status, _, body = call(app, "PATCH", f"/todos/{todo['id']}", json={"priority": bad})
    assert status == 400 and body["field"] == "priority"
    assert call(app, "GET", f"/todos/{todo['id']}")[2]["priority"] == "urgent"


def test_filter_by_urgent(tmp_path):
    app = _app(tmp_path / "u.db")
    for title, level in [("a", "urgent"), ("b", "high"), ("c", "urgent"), ("d", "low")]:
        call(app, "POST", "/todos", json={"title": title, "priority": level})
    assert _titles(app, "?priority=urgent") == ["c", "a"]
    assert _titles(app, "?priority=high") == ["b"]
    status, _, body = call(app, "GET", "/todos?priority=critical")
    assert status == 400 and body["field"] == "priority"


def test_sorting_ranks_urgent_highest(tmp_path):
    app = _app(tmp_path / "u.db")
    plan = [("n1", "normal"), ("u1", "urgent"), ("h1", "high"), ("l1", "low"), ("u2", "urgent"), ("h2", "high")]
    for title, level in plan:
        call(app, "POST", "/todos", json={"title": title, "priority": level})
    assert _titles(app, "?sort=priority") == ["l1", "n1", "h1", "h2", "u1", "u2"]
    assert _titles(app, "?sort=priority&order=desc") == ["u2", "u1", "h2", "h1", "n1", "l1"]


def test_stats_count_all_four_levels(tmp_path):
    app = _app(tmp_path / "u.db")
    status, _, body = call(app, "GET", "/todos/stats")
    assert status == 200 and body["open_by_priority"] == {"low": 0, "normal": 0, "high": 0, "urgent": 0}
    for title, level in [("a", "urgent"), ("b", "urgent"), ("c", "high"), ("d", "urgent")]:
        call(app, "POST", "/todos", json={"title": title, "priority": level})
    done_id = call(app, "GET", "/todos?priority=urgent")[2]["todos"][0]["id"]
    call(app, "POST", f"/todos/{done_id}/complete")
    assert call(app, "GET", "/todos/stats")[2]["open_by_priority"] == {"low": 0, "normal": 0, "high": 1, "urgent": 2}

import pytest
from todo_hidden_http import call


def _app(path):
    from todo.web import create_app

    return create_app(str(path))


def _seed(app):
    plan = [("a", "2024-06-09"), ("b", "2024-06-10"), ("c", "2024-06-13"), ("d", "2024-06-16"), ("e", "2024-06-17"), ("f", None)]
    return {title: call(app, "POST", "/todos", json={"title": title, "due": due})[2]["id"] for title, due in plan}


def _titles(app, query):
    status, _, body = call(app, "GET", "/todos?sort=title&" + query)
    assert status == 200, body
    return [t["title"] for t in body["todos"]]


def test_range_includes_both_ends(tmp_path):
    app = _app(tmp_path / "r.db")
    _seed(app)
    assert _titles(app, "due_from=2024-06-10&due_to=2024-06-16") == ["b", "c", "d"]
    assert _titles(app, "due_from=2024-06-13&due_to=2024-06-13") == ["c"]
    assert _titles(app, "due_from=2024-06-11&due_to=2024-06-12") == []


def test_one_sided_ranges(tmp_path):
    app = _app(tmp_path / "r.db")
    _seed(app)
    assert _titles(app, "due_from=2024-06-16") == ["d", "e"]
    assert _titles(app, "due_to=2024-06-10") == ["a", "b"]
    assert _titles(app, "") == ["a", "b", "c", "d", "e", "f"]


def test_range_combines_with_filters_sorting_and_paging(tmp_path):
    app = _app(tmp_path / "r.db")
    ids = _seed(app)
    call(app, "POST", f"/todos/{ids['c']}/complete")
    assert _titles(app, "due_from=2024-06-10&due_to=2024-06-17&done=false") == ["b", "d", "e"]
    status, _, body = call(app, "GET", "/todos?due_from=2024-06-10&sort=due&order=desc&limit=2")
    assert status == 200
    assert [t["title"] for t in body["todos"]] == ["e", "d"] and body["total"] == 4
    status, _, body = call(app, "GET", "/todos?due_to=2024-06-16&limit=2&offset=2&sort=due")
    assert [t["title"] for t in body["todos"]] == ["c", "d"] and body["total"] == 4


@pytest.mark.parametrize("name", ["due_from", "due_to"])
@pytest.mark.parametrize("bad", ["2024-13-01", "tomorrow", "2024-6-1", "2024-02-30", ""])
def test_bad_dates_are_input_errors(tmp_path, name, bad):
    app = _app(tmp_path / "r.db")
    _seed(app)
    status, _, body = call(app, "GET", f"/todos?{name}={bad}")
    assert status == 400 and body["field"] == name and body["error"]
    assert _titles(app, f"{name}=2024-06-13") in (["c", "d", "e"], ["a", "b", "c"])


def test_a_range_ending_before_it_starts_is_an_input_error(tmp_path):
    app = _app(tmp_path / "r.db")
    _seed(app)
    status, _, body = call(app, "GET", "/todos?due_from=2024-06-16&due_to=2024-06-10")
    assert status == 400 and body["field"] == "due_to"

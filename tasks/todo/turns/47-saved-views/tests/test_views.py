import pytest
from todo_hidden_http import call


def _app(path):
    from todo.web import create_app

    return create_app(str(path))


def _seed(app):
    plan = [("a", "work", "high", False), ("b", "work", "urgent", False), ("c", "home", "urgent", False),
            ("d", "work", "low", True), ("e", "work", "normal", False)]
    for title, tag, priority, done in plan:
        todo = call(app, "POST", "/todos", json={"title": title, "tags": [tag], "priority": priority})[2]
        if done:
            call(app, "POST", f"/todos/{todo['id']}/complete")


def _titles(app, query):
    status, _, body = call(app, "GET", "/todos?" + query)
    assert status == 200, body
    return [t["title"] for t in body["todos"]]


def _save(app, name, query):
    return call(app, "PUT", f"/todos/views/{name}", json={"query": query})


def test_save_list_and_replace_views(tmp_path):
    app = _app(tmp_path / "v.db")
    status, _, body = _save(app, "work", "tag=work&done=false")
    assert status == 200 and body == {"name": "work", "query": "tag=work&done=false"}
    assert _save(app, "all-urgent-2", "priority=urgent")[0] == 200
    status, _, body = call(app, "GET", "/todos/views")
    assert status == 200
    assert body["views"] == [{"name": "all-urgent-2", "query": "priority=urgent"}, {"name": "work", "query": "tag=work&done=false"}]
    assert _save(app, "work", "tag=work")[0] == 200
    assert call(app, "GET", "/todos/views")[2]["views"][1] == {"name": "work", "query": "tag=work"}


def test_listing_through_a_view(tmp_path):
    app = _app(tmp_path / "v.db")
    _seed(app)
    _save(app, "work", "tag=work&done=false&sort=priority&order=desc")
    assert _titles(app, "view=work") == ["b", "a", "e"]
    status, _, body = call(app, "GET", "/todos?view=work&limit=2")
    assert [t["title"] for t in body["todos"]] == ["b", "a"] and body["total"] == 3
    assert _titles(app, "view=work&done=true") == ["d"]
    assert _titles(app, "view=work&tag=home") == ["c"]


def test_delete_a_view(tmp_path):
    app = _app(tmp_path / "v.db")
    _save(app, "mine", "done=false")
    status, _, body = call(app, "DELETE", "/todos/views/mine")
    assert status == 204 and body is None
    assert call(app, "GET", "/todos/views")[2]["views"] == []
    status, _, body = call(app, "DELETE", "/todos/views/mine")
    assert status == 404 and body["error"]


def test_unknown_view_in_the_list_is_an_input_error(tmp_path):
    app = _app(tmp_path / "v.db")
    _seed(app)
    status, _, body = call(app, "GET", "/todos?view=nope")
    assert status == 400 and body["field"] == "view"
    _save(app, "nope", "tag=home")
    assert _titles(app, "view=nope") == ["c"]


@pytest.mark.parametrize("name", ["Work", "my_view", "a" * 41, "caf%C3%A9"])
def test_bad_names_are_input_errors(tmp_path, name):
    app = _app(tmp_path / "v.db")
    status, _, body = _save(app, name, "done=false")
    assert status == 400 and body["field"] == "name"
    assert call(app, "GET", "/todos/views")[2]["views"] == []
    assert _save(app, "a" * 40, "done=false")[0] == 200


@pytest.mark.parametrize("query", ["priority=critical", "done=maybe", "sort=colour", "limit=0", "view=other", 42, None])
def test_invalid_queries_are_not_saved(tmp_path, query):
    app = _app(tmp_path / "v.db")
    status, _, body = _save(app, "broken", query)
    assert status == 400 and body["field"] == "query" and body["error"]
    assert call(app, "GET", "/todos/views")[2]["views"] == []
    assert _save(app, "fine", "priority=urgent&limit=3")[0] == 200

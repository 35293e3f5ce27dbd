import pytest
from todo_hidden_http import call


def _app(path):
    from todo.web import create_app

    return create_app(str(path))


def _titles(app, query=""):
    status, _, body = call(app, "GET", "/todos" + query)
    assert status == 200, body
    return [t["title"] for t in body["todos"]]


def test_tags_are_trimmed_lowercased_deduplicated_and_sorted(tmp_path):
    app = _app(tmp_path / "a.db")
    status, _, body = call(app, "POST", "/todos", json={"title": "Quarterly report", "tags": [" Work", "finance ", "WORK", "q3"]})
    assert status == 201
    assert body["tags"] == ["finance", "q3", "work"]
    assert call(app, "GET", f"/todos/{body['id']}")[2]["tags"] == ["finance", "q3", "work"]


def test_todo_without_tags_has_an_empty_list(tmp_path):
    app = _app(tmp_path / "a.db")
    _, _, body = call(app, "POST", "/todos", json={"title": "untagged"})
    assert body["tags"] == []
    assert call(app, "GET", "/todos")[2]["todos"][0]["tags"] == []


def test_patch_replaces_tags_and_keeps_them_otherwise(tmp_path):
    app = _app(tmp_path / "a.db")
    _, _, todo = call(app, "POST", "/todos", json={"title": "Paint fence", "tags": ["home", "weekend"]})
    status, _, body = call(app, "PATCH", f"/todos/{todo['id']}", json={"title": "Paint the fence"})
    assert status == 200 and body["tags"] == ["home", "weekend"]
    call(app, "POST", f"/todos/{todo['id']}/complete")
    assert call(app, "GET", f"/todos/{todo['id']}")[2]["tags"] == ["home", "weekend"]
    status, _, body = call(app, "PATCH", f"/todos/{todo['id']}", json={"tags": ["Garden"]})
    assert status == 200 and body["tags"] == ["garden"]
    status, _, body = call(app, "PATCH", f"/todos/{todo['id']}", json={"tags": []})
    assert status == 200 and body["tags"] == []
    assert call(app, "GET", f"/todos/{todo['id']}")[2]["tags"] == []


def test_tags_survive_reopening_the_database(tmp_path):
    path = tmp_path / "persist.db"
    app = _app(path)
    _, _, todo = call(app, "POST", "/todos", json={"title": "Renew passport", "tags": ["admin", "travel"]})
    again = _app(path)
    assert call(again, "GET", f"/todos/{todo['id']}")[2]["tags"] == ["admin", "travel"]


def test_filter_by_tag_ignores_case_and_combines(tmp_path):
    app = _app(tmp_path / "a.db")
    plan = [("a", ["work"], "high"), ("b", ["home"], "high"), ("c", ["work", "home"], "low"), ("d", [], "high"), ("e", ["work"], "high")]
    ids = {t: call(app, "POST", "/todos", json={"title": t, "tags": tags, "priority": p})[2]["id"] for t, tags, p in plan}
    call(app, "POST", f"/todos/{ids['e']}/complete")
    assert _titles(app, "?tag=work") == ["e", "c", "a"]
    assert _titles(app, "?tag=HOME") == ["c", "b"]
    assert _titles(app, "?tag=work&done=false") == ["c", "a"]
    assert _titles(app, "?tag=work&priority=high") == ["e", "a"]
    assert _titles(app, "?tag=work&priority=high&done=true") == ["e"]
    assert _titles(app, "?tag=nothing") == []


@pytest.mark.parametrize("bad", ["work", [1, 2], ["ok", "  "], [""], {"work": True}, [None]])
def test_invalid_tags_are_rejected_without_changes(tmp_path, bad):
    app = _app(tmp_path / "a.db")
    status, _, body = call(app, "POST", "/todos", json={"title": "x", "tags": bad})
    assert status == 400 and body["field"] == "tags" and body["error"]
    assert call(app, "GET", "/todos")[2]["todos"] == []
    _, _, todo = call(app, "POST", "/todos", json={"title": "keep", "tags": ["one"]})
    status, _, body = call(app, "PATCH", f"/todos/{todo['id']}", json={"title": "changed", "tags": bad})
    assert status == 400 and body["field"] == "tags"
    fetched = call(app, "GET", f"/todos/{todo['id']}")[2]
    assert (fetched["title"], fetched["tags"]) == ("keep", ["one"])


def test_deleted_todos_take_their_tags_with_them(tmp_path):
    app = _app(tmp_path / "a.db")
    first = call(app, "POST", "/todos", json={"title": "one", "tags": ["x"]})[2]
    second = call(app, "POST", "/todos", json={"title": "two", "tags": ["x", "y"]})[2]
    third = call(app, "POST", "/todos", json={"title": "three", "tags": ["y"]})[2]
    call(app, "DELETE", f"/todos/{first['id']}")
    assert _titles(app, "?tag=x") == ["two"]
    call(app, "POST", f"/todos/{second['id']}/complete")
    call(app, "POST", "/todos/clear-completed")
    assert _titles(app, "?tag=x") == []
    assert _titles(app, "?tag=y") == ["three"]
    call(app, "POST", "/todos/bulk", json={"action": "delete", "ids": [third["id"]]})
    assert _titles(app, "?tag=y") == []

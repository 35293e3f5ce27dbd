import pytest
from todo_hidden_http import call


def _app(path):
    from todo.web import create_app

    return create_app(str(path))


def _todo(app, title="move flat"):
    return call(app, "POST", "/todos", json={"title": title})[2]["id"]


def _items(app, todo_id):
    status, _, body = call(app, "GET", f"/todos/{todo_id}")
    assert status == 200, body
    return [(item["text"], item["done"]) for item in body["items"]]


def test_new_todos_have_an_empty_checklist(tmp_path):
    app = _app(tmp_path / "c.db")
    status, _, body = call(app, "POST", "/todos", json={"title": "plain"})
    assert status == 201 and body["items"] == []
    assert call(app, "GET", "/todos")[2]["todos"][0]["items"] == []


def test_add_items_in_order(tmp_path):
    app = _app(tmp_path / "c.db")
    todo_id = _todo(app)
    other = _todo(app, "other")
    status, _, first = call(app, "POST", f"/todos/{todo_id}/items", json={"text": "  book van "})
    assert status == 201, first
    assert first["text"] == "book van" and first["done"] is False and isinstance(first["id"], int)
    _, _, second = call(app, "POST", f"/todos/{todo_id}/items", json={"text": "cancel internet"})
    assert second["id"] != first["id"]
    call(app, "POST", f"/todos/{other}/items", json={"text": "unrelated"})
    assert _items(app, todo_id) == [("book van", False), ("cancel internet", False)]
    body = call(app, "GET", f"/todos/{todo_id}")[2]
    assert [item["id"] for item in body["items"]] == [first["id"], second["id"]]
    listed = {t["id"]: t for t in call(app, "GET", "/todos")[2]["todos"]}
    assert [i["text"] for i in listed[todo_id]["items"]] == ["book van", "cancel internet"]
    assert [i["text"] for i in listed[other]["items"]] == ["unrelated"]


def test_tick_rename_and_reopen_items(tmp_path):
    app = _app(tmp_path / "c.db")
    todo_id = _todo(app)
    a = call(app, "POST", f"/todos/{todo_id}/items", json={"text": "book van"})[2]["id"]
    b = call(app, "POST", f"/todos/{todo_id}/items", json={"text": "pack"})[2]["id"]
    status, _, body = call(app, "PATCH", f"/todos/{todo_id}/items/{a}", json={"done": True})
    assert status == 200 and body == {"id": a, "text": "book van", "done": True}
    status, _, body = call(app, "PATCH", f"/todos/{todo_id}/items/{b}", json={"text": " pack the kitchen "})
    assert status == 200 and body["text"] == "pack the kitchen" and body["done"] is False
    assert _items(app, todo_id) == [("book van", True), ("pack the kitchen", False)]
    status, _, body = call(app, "PATCH", f"/todos/{todo_id}/items/{a}", json={"done": False, "text": "book a van"})
    assert status == 200 and body["done"] is False and body["text"] == "book a van"
    assert _items(app, todo_id) == [("book a van", False), ("pack the kitchen", False)]


def test_delete_an_item(tmp_path):
    app = _app(tmp_path / "c.db")
    todo_id = _todo(app)
    a = call(app, "POST", f"/todos/{todo_id}/items", json={"text": "one"})[2]["id"]
    call(app, "POST", f"/todos/{todo_id}/items", json={"text": "two"})
    status, _, body = call(app, "DELETE", f"/todos/{todo_id}/items/{a}")
    assert status == 204 and body is None
    assert _items(app, todo_id) == [("two", False)]
    status, _, body = call(app, "DELETE", f"/todos/{todo_id}/items/{a}")
    assert status == 404 and body["error"]


def test_unknown_todo_or_foreign_item_is_404(tmp_path):
    app = _app(tmp_path / "c.db")
    mine = _todo(app, "mine")
    theirs = _todo(app, "theirs")
    item = call(app, "POST", f"/todos/{theirs}/items", json={"text": "theirs only"})[2]["id"]
    status, _, body = call(app, "POST", "/todos/999/items", json={"text": "x"})
    assert status == 404 and body["error"]
    status, _, body = call(app, "PATCH", f"/todos/{mine}/items/{item}", json={"done": True})
    assert status == 404 and body["error"]
    status, _, body = call(app, "DELETE", f"/todos/{mine}/items/{item}")
    assert status == 404
    status, _, body = call(app, "PATCH", f"/todos/{theirs}/items/{item + 100}", json={"done": True})
    assert status == 404
    assert _items(app, theirs) == [("theirs only", False)]


@pytest.mark.parametrize("bad", ["", "   ", "x" * 81, None, 7])
def test_item_text_follows_the_title_rules(tmp_path, bad):
    app = _app(tmp_path / "c.db")
    todo_id = _todo(app)
    status, _, body = call(app, "POST", f"/todos/{todo_id}/items", json={"text": bad})
    assert status == 400 and body["field"] == "text" and body["error"]
    assert _items(app, todo_id) == []
    status, _, body = call(app, "POST", f"/todos/{todo_id}/items", json={"text": "  " + "y" * 80 + "  "})
    assert status == 201 and body["text"] == "y" * 80
    status, _, body = call(app, "PATCH", f"/todos/{todo_id}/items/{body['id']}", json={"text": bad})
    assert status == 400 and body["field"] == "text"
    assert _items(app, todo_id) == [("y" * 80, False)]


@pytest.mark.parametrize("bad", ["yes", 1, "true"])
def test_done_must_be_a_boolean(tmp_path, bad):
    app = _app(tmp_path / "c.db")
    todo_id = _todo(app)
    item = call(app, "POST", f"/todos/{todo_id}/items", json={"text": "one"})[2]["id"]
    status, _, body = call(app, "PATCH", f"/todos/{todo_id}/items/{item}", json={"done": bad, "text": "changed"})
    assert status == 400 and body["field"] == "done"
    assert _items(app, todo_id) == [("one", False)]

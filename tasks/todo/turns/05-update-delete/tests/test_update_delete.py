from todo_hidden_http import call


def _app_with_todo(tmp_path, title="Buy milk"):
    from todo.web import create_app

    app = create_app(str(tmp_path / "api.db"))
    _, _, todo = call(app, "POST", "/todos", json={"title": title})
    return app, todo


def test_patch_renames_todo(tmp_path):
    app, todo = _app_with_todo(tmp_path)
    status, _, body = call(app, "PATCH", f"/todos/{todo['id']}", json={"title": "Buy oat milk"})
    assert status == 200
    assert body["id"] == todo["id"]
    assert body["title"] == "Buy oat milk"
    _, _, fetched = call(app, "GET", f"/todos/{todo['id']}")
    assert fetched["title"] == "Buy oat milk"


def test_patch_unknown_is_404_but_known_works(tmp_path):
    app, todo = _app_with_todo(tmp_path)
    status, _, body = call(app, "PATCH", f"/todos/{todo['id'] + 100}", json={"title": "x"})
    assert status == 404
    assert isinstance(body["error"], str)
    status, _, _ = call(app, "PATCH", f"/todos/{todo['id']}", json={"title": "x"})
    assert status == 200


def test_delete_returns_204_and_removes(tmp_path):
    app, todo = _app_with_todo(tmp_path)
    status, _, body = call(app, "DELETE", f"/todos/{todo['id']}")
    assert status == 204
    assert body is None
    status, _, _ = call(app, "GET", f"/todos/{todo['id']}")
    assert status == 404
    status, _, body = call(app, "DELETE", f"/todos/{todo['id']}")
    assert status == 404
    assert isinstance(body["error"], str)


def test_unsupported_method_on_item_is_405(tmp_path):
    app, todo = _app_with_todo(tmp_path)
    status, _, body = call(app, "PUT", f"/todos/{todo['id']}", json={"title": "x"})
    assert status == 405
    assert isinstance(body["error"], str)


def test_unsupported_method_on_collection_is_405(tmp_path):
    app, todo = _app_with_todo(tmp_path)
    status, _, body = call(app, "DELETE", "/todos")
    assert status == 405
    assert isinstance(body["error"], str)
    _, _, listing = call(app, "GET", "/todos")
    assert [t["id"] for t in listing["todos"]] == [todo["id"]]

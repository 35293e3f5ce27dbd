from todo_hidden_http import call


def _app(tmp_path):
    from todo.web import create_app

    return create_app(str(tmp_path / "api.db"))


def test_post_with_json_array_is_400(tmp_path):
    app = _app(tmp_path)
    status, headers, body = call(app, "POST", "/todos", body='["Buy milk"]')
    assert status == 400
    assert headers["content-type"].startswith("application/json")
    assert isinstance(body["error"], str) and body["error"]
    assert call(app, "GET", "/todos")[2]["todos"] == []


def test_post_with_scalar_json_is_400(tmp_path):
    app = _app(tmp_path)
    for raw in ["null", '"Buy milk"', "17", "true"]:
        status, _, body = call(app, "POST", "/todos", body=raw)
        assert status == 400, raw
        assert isinstance(body["error"], str)
    assert call(app, "GET", "/todos")[2]["todos"] == []


def test_patch_with_non_object_is_400_and_keeps_todo(tmp_path):
    app = _app(tmp_path)
    _, _, todo = call(app, "POST", "/todos", json={"title": "Buy milk"})
    status, _, body = call(app, "PATCH", f"/todos/{todo['id']}", body='[{"title": "x"}]')
    assert status == 400
    assert isinstance(body["error"], str)
    fetched = call(app, "GET", f"/todos/{todo['id']}")[2]
    assert (fetched["title"], fetched["done"]) == ("Buy milk", False)


def test_bulk_with_non_object_is_400(tmp_path):
    app = _app(tmp_path)
    _, _, todo = call(app, "POST", "/todos", json={"title": "Buy milk"})
    status, _, body = call(app, "POST", "/todos/bulk", body=f"[{todo['id']}]")
    assert status == 400
    assert isinstance(body["error"], str)
    status, _, fetched = call(app, "GET", f"/todos/{todo['id']}")
    assert status == 200
    assert fetched["done"] is False

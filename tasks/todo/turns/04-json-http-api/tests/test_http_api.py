from todo_hidden_http import call


def _app(tmp_path):
    from todo.web import create_app

    return create_app(str(tmp_path / "api.db"))


def test_post_creates_todo_with_201(tmp_path):
    app = _app(tmp_path)
    status, headers, body = call(app, "POST", "/todos", json={"title": "Buy milk"})
    assert status == 201
    assert headers["content-type"].startswith("application/json")
    assert body["title"] == "Buy milk"
    assert body["done"] is False
    assert isinstance(body["id"], int)


def test_get_single_todo(tmp_path):
    app = _app(tmp_path)
    _, _, created = call(app, "POST", "/todos", json={"title": "Walk dog"})
    status, _, body = call(app, "GET", f"/todos/{created['id']}")
    assert status == 200
    assert body["id"] == created["id"]
    assert body["title"] == "Walk dog"
    assert body["done"] is False


def test_list_returns_todos_oldest_first(tmp_path):
    app = _app(tmp_path)
    for title in ["first", "second", "third"]:
        call(app, "POST", "/todos", json={"title": title})
    status, _, body = call(app, "GET", "/todos")
    assert status == 200
    assert [t["title"] for t in body["todos"]] == ["first", "second", "third"]


def test_list_wraps_todos_in_object(tmp_path):
    app = _app(tmp_path)
    _, _, created = call(app, "POST", "/todos", json={"title": "only one"})
    status, _, body = call(app, "GET", "/todos")
    assert status == 200
    assert isinstance(body, dict)
    assert [t["id"] for t in body["todos"]] == [created["id"]]


def test_missing_todo_is_404_json(tmp_path):
    app = _app(tmp_path)
    status, headers, body = call(app, "GET", "/todos/12345")
    assert status == 404
    assert headers["content-type"].startswith("application/json")
    assert isinstance(body["error"], str) and body["error"]


def test_unknown_route_is_404_json(tmp_path):
    app = _app(tmp_path)
    status, _, body = call(app, "GET", "/definitely/not/here")
    assert status == 404
    assert isinstance(body["error"], str)


def test_bad_json_and_missing_title_are_400(tmp_path):
    app = _app(tmp_path)
    status, _, body = call(app, "POST", "/todos", body="{not json")
    assert status == 400
    assert isinstance(body["error"], str)
    status, _, body = call(app, "POST", "/todos", json={"colour": "red"})
    assert status == 400
    assert isinstance(body["error"], str)
    _, _, listing = call(app, "GET", "/todos")
    assert listing["todos"] == []

import pytest
from todo_hidden_http import call


def _h1():
    return "h1"


def _h2():
    return "h2"


def test_router_matches_literal_and_int_params():
    from todo.routing import Router

    router = Router()
    router.add("GET", "/todos", _h1)
    router.add("GET", "/todos/<int:todo_id>", _h2)
    assert router.match("GET", "/todos") == (_h1, {})
    handler, params = router.match("GET", "/todos/42")
    assert handler is _h2
    assert params == {"todo_id": 42}
    assert isinstance(params["todo_id"], int)


def test_router_string_params_and_multiple_placeholders():
    from todo.routing import Router

    router = Router()
    router.add("POST", "/lists/<name>/items/<int:item_id>/move", _h1)
    handler, params = router.match("POST", "/lists/groceries/items/7/move")
    assert handler is _h1
    assert params == {"name": "groceries", "item_id": 7}


def test_router_not_found():
    from todo.routing import RouteNotFound, Router

    router = Router()
    router.add("GET", "/todos/<int:todo_id>", _h1)
    for path in ["/todos/abc", "/todos/1/extra", "/nothing"]:
        with pytest.raises(RouteNotFound):
            router.match("GET", path)


def test_router_method_not_allowed_lists_allowed_methods():
    from todo.routing import MethodNotAllowed, Router

    router = Router()
    router.add("POST", "/todos", _h1)
    router.add("GET", "/todos", _h2)
    router.add("DELETE", "/todos/<int:todo_id>", _h2)
    with pytest.raises(MethodNotAllowed) as info:
        router.match("PUT", "/todos")
    assert info.value.allowed == ["GET", "POST"]


def test_http_405_sends_allow_header(tmp_path):
    from todo.web import create_app

    app = create_app(str(tmp_path / "api.db"))
    _, _, todo = call(app, "POST", "/todos", json={"title": "Buy milk"})
    status, headers, body = call(app, "DELETE", "/todos")
    assert status == 405
    assert headers["allow"] == "GET, POST"
    assert isinstance(body["error"], str)
    status, headers, _ = call(app, "PUT", f"/todos/{todo['id']}")
    assert status == 405
    assert headers["allow"] == "DELETE, GET, PATCH"

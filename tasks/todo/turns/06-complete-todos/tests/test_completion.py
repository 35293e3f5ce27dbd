import pytest
from todo_hidden_http import call


def _app_with_todo(tmp_path):
    from todo.web import create_app

    app = create_app(str(tmp_path / "api.db"))
    _, _, todo = call(app, "POST", "/todos", json={"title": "Buy milk"})
    return app, todo


def test_service_complete_and_uncomplete(tmp_path):
    from todo.service import TodoService
    from todo.storage import TodoStore

    service = TodoService(TodoStore(tmp_path / "svc.db"))
    todo = service.create("Buy milk")
    assert service.complete(todo.id).done is True
    assert service.get(todo.id).done is True
    assert service.uncomplete(todo.id).done is False
    assert service.get(todo.id).done is False


def test_service_complete_unknown_raises(tmp_path):
    from todo.errors import TodoNotFound
    from todo.service import TodoService
    from todo.storage import TodoStore

    service = TodoService(TodoStore(tmp_path / "svc.db"))
    todo = service.create("Buy milk")
    with pytest.raises(TodoNotFound):
        service.complete(todo.id + 10)
    with pytest.raises(TodoNotFound):
        service.uncomplete(todo.id + 10)


def test_complete_endpoint(tmp_path):
    app, todo = _app_with_todo(tmp_path)
    status, _, body = call(app, "POST", f"/todos/{todo['id']}/complete")
    assert status == 200
    assert body["done"] is True
    assert call(app, "GET", f"/todos/{todo['id']}")[2]["done"] is True


def test_uncomplete_endpoint(tmp_path):
    app, todo = _app_with_todo(tmp_path)
    call(app, "POST", f"/todos/{todo['id']}/complete")
    status, _, body = call(app, "POST", f"/todos/{todo['id']}/uncomplete")
    assert status == 200
    assert body["done"] is False
    assert call(app, "GET", f"/todos/{todo['id']}")[2]["done"] is False


def test_complete_unknown_is_404_json(tmp_path):
    app, todo = _app_with_todo(tmp_path)
    call(app, "POST", f"/todos/{todo['id']}/complete")
    status, _, body = call(app, "POST", f"/todos/{todo['id'] + 100}/complete")
    assert status == 404
    assert isinstance(body["error"], str)
    assert call(app, "GET", f"/todos/{todo['id']}")[2]["done"] is True


def test_patch_can_set_done(tmp_path):
    app, todo = _app_with_todo(tmp_path)
    status, _, body = call(app, "PATCH", f"/todos/{todo['id']}", json={"done": True})
    assert status == 200
    assert body["done"] is True
    assert body["title"] == "Buy milk"
    status, _, body = call(app, "PATCH", f"/todos/{todo['id']}", json={"done": False, "title": "Buy bread"})
    assert status == 200
    assert (body["done"], body["title"]) == (False, "Buy bread")

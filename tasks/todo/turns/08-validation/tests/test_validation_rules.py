import pytest
from todo_hidden_http import call


def _service(tmp_path):
    from todo.service import TodoService
    from todo.storage import TodoStore

    return TodoService(TodoStore(tmp_path / "svc.db"))


def _app(tmp_path):
    from todo.web import create_app

    return create_app(str(tmp_path / "api.db"))


def test_service_rejects_blank_title_with_validation_error(tmp_path):
    from todo.errors import ValidationError

    service = _service(tmp_path)
    with pytest.raises(ValidationError) as info:
        service.create("   ")
    assert info.value.field == "title"
    assert isinstance(info.value, ValueError)
    assert service.list() == []


def test_service_enforces_max_length_on_create_and_rename(tmp_path):
    from todo.errors import ValidationError

    service = _service(tmp_path)
    ok = service.create("a" * 200)
    assert ok.title == "a" * 200
    with pytest.raises(ValidationError):
        service.create("b" * 201)
    with pytest.raises(ValidationError):
        service.rename(ok.id, "c" * 201)
    assert service.get(ok.id).title == "a" * 200


def test_http_blank_title_is_400_with_field(tmp_path):
    app = _app(tmp_path)
    for title in ["", "   \t "]:
        status, _, body = call(app, "POST", "/todos", json={"title": title})
        assert status == 400
        assert body["field"] == "title"
        assert isinstance(body["error"], str) and body["error"]
    assert call(app, "GET", "/todos")[2]["todos"] == []


def test_http_title_length_limit(tmp_path):
    app = _app(tmp_path)
    status, _, body = call(app, "POST", "/todos", json={"title": "x" * 201})
    assert status == 400
    assert body["field"] == "title"
    status, _, body = call(app, "POST", "/todos", json={"title": "  " + "x" * 200 + "  "})
    assert status == 201
    assert body["title"] == "x" * 200


def test_http_patch_blank_title_keeps_old_title(tmp_path):
    app = _app(tmp_path)
    _, _, todo = call(app, "POST", "/todos", json={"title": "Buy milk"})
    status, _, body = call(app, "PATCH", f"/todos/{todo['id']}", json={"title": " "})
    assert status == 400
    assert body["field"] == "title"
    assert call(app, "GET", f"/todos/{todo['id']}")[2]["title"] == "Buy milk"


def test_http_patch_done_must_be_boolean(tmp_path):
    app = _app(tmp_path)
    _, _, todo = call(app, "POST", "/todos", json={"title": "Buy milk"})
    status, _, body = call(app, "PATCH", f"/todos/{todo['id']}", json={"done": "yes"})
    assert status == 400
    assert body["field"] == "done"
    assert call(app, "GET", f"/todos/{todo['id']}")[2]["done"] is False

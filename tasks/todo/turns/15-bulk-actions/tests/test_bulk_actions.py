import pytest
from todo_hidden_http import call


def _app(tmp_path, titles=("a", "b", "c")):
    from todo.web import create_app

    app = create_app(str(tmp_path / "api.db"))
    ids = [call(app, "POST", "/todos", json={"title": t})[2]["id"] for t in titles]
    return app, ids


def _done_map(app):
    return {t["id"]: t["done"] for t in call(app, "GET", "/todos")[2]["todos"]}


def test_bulk_complete(tmp_path):
    app, ids = _app(tmp_path)
    status, _, body = call(app, "POST", "/todos/bulk", json={"action": "complete", "ids": [ids[0], ids[2]]})
    assert status == 200
    assert body["count"] == 2
    assert _done_map(app) == {ids[0]: True, ids[1]: False, ids[2]: True}


def test_bulk_uncomplete(tmp_path):
    app, ids = _app(tmp_path)
    call(app, "POST", "/todos/bulk", json={"action": "complete", "ids": ids})
    status, _, body = call(app, "POST", "/todos/bulk", json={"action": "uncomplete", "ids": [ids[1]]})
    assert status == 200
    assert body["count"] == 1
    assert _done_map(app) == {ids[0]: True, ids[1]: False, ids[2]: True}


def test_bulk_delete(tmp_path):
    app, ids = _app(tmp_path)
    status, _, body = call(app, "POST", "/todos/bulk", json={"action": "delete", "ids": [ids[1], ids[0]]})
    assert status == 200
    assert body["count"] == 2
    assert list(_done_map(app)) == [ids[2]]


def test_bulk_with_unknown_id_changes_nothing(tmp_path):
    app, ids = _app(tmp_path)
    missing = ids[-1] + 100
    status, _, body = call(app, "POST", "/todos/bulk", json={"action": "delete", "ids": [ids[0], missing]})
    assert status == 404
    assert body["missing"] == [missing]
    assert isinstance(body["error"], str)
    status, _, body = call(app, "POST", "/todos/bulk", json={"action": "complete", "ids": [missing, ids[1]]})
    assert status == 404
    assert _done_map(app) == {ids[0]: False, ids[1]: False, ids[2]: False}


def test_bulk_invalid_action_is_400(tmp_path):
    app, ids = _app(tmp_path)
    for payload in ({"action": "archive", "ids": [ids[0]]}, {"ids": [ids[0]]}):
        status, _, body = call(app, "POST", "/todos/bulk", json=payload)
        assert status == 400
        assert body["field"] == "action"
    assert len(_done_map(app)) == 3


def test_bulk_invalid_ids_is_400(tmp_path):
    app, ids = _app(tmp_path)
    for bad_ids in ([], "1,2", [ids[0], str(ids[1])]):
        status, _, body = call(app, "POST", "/todos/bulk", json={"action": "complete", "ids": bad_ids})
        assert status == 400
        assert body["field"] == "ids"
    assert not any(_done_map(app).values())


def test_service_bulk(tmp_path):
    from todo.errors import TodoNotFound
    from todo.service import TodoService
    from todo.storage import TodoStore

    service = TodoService(TodoStore(tmp_path / "svc.db"))
    a = service.create("a")
    b = service.create("b")
    assert service.bulk("complete", [a.id, b.id]) == 2
    assert service.get(a.id).done and service.get(b.id).done
    with pytest.raises(TodoNotFound):
        service.bulk("delete", [a.id, b.id + 50])
    assert len(service.list()) == 2

from todo_hidden_http import call


def _seeded_app(tmp_path):
    from todo.web import create_app

    app = create_app(str(tmp_path / "api.db"))
    ids = {}
    for title in ["milk", "bread", "eggs", "jam"]:
        ids[title] = call(app, "POST", "/todos", json={"title": title})[2]["id"]
    for title in ["bread", "jam"]:
        call(app, "POST", f"/todos/{ids[title]}/complete")
    return app


def test_filter_done_true(tmp_path):
    app = _seeded_app(tmp_path)
    status, _, body = call(app, "GET", "/todos?done=true")
    assert status == 200
    assert sorted(t["title"] for t in body["todos"]) == ["bread", "jam"]
    assert all(t["done"] is True for t in body["todos"])


def test_filter_done_false(tmp_path):
    app = _seeded_app(tmp_path)
    status, _, body = call(app, "GET", "/todos?done=false")
    assert status == 200
    assert sorted(t["title"] for t in body["todos"]) == ["eggs", "milk"]


def test_invalid_done_value_is_400(tmp_path):
    app = _seeded_app(tmp_path)
    status, _, body = call(app, "GET", "/todos?done=maybe")
    assert status == 400
    assert isinstance(body["error"], str)
    status, _, body = call(app, "GET", "/todos")
    assert len(body["todos"]) == 4


def test_service_and_store_list_accept_done(tmp_path):
    from todo.service import TodoService
    from todo.storage import TodoStore

    store = TodoStore(tmp_path / "svc.db")
    service = TodoService(store)
    a = service.create("a")
    b = service.create("b")
    service.complete(b.id)
    assert [t.id for t in service.list(done=True)] == [b.id]
    assert [t.id for t in service.list(done=False)] == [a.id]
    assert [t.id for t in store.list(done=True)] == [b.id]
    assert sorted(t.id for t in service.list()) == sorted([a.id, b.id])

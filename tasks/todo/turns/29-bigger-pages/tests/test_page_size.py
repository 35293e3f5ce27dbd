import pytest
from todo_hidden_http import call

MAX = 500


def _app(tmp_path, count):
    from todo.service import TodoService
    from todo.storage import TodoStore
    from todo.web import create_app

    path = tmp_path / "big.db"
    service = TodoService(TodoStore(path))
    service.import_todos([{"title": f"item {n:04d}", "done": n % 3 == 0} for n in range(1, count + 1)])
    return create_app(str(path))


@pytest.mark.parametrize(("count", "limit"), [(130, 120), (260, 250), (60, 101)])
def test_pages_above_the_old_maximum(tmp_path, count, limit):
    app = _app(tmp_path, count)
    status, _, body = call(app, "GET", f"/todos?limit={limit}")
    assert status == 200, body
    assert len(body["todos"]) == min(limit, count) and body["total"] == count
    assert body["todos"][0]["title"] == f"item {count:04d}"


def test_new_maximum_is_500(tmp_path):
    app = _app(tmp_path, 520)
    status, _, body = call(app, "GET", f"/todos?limit={MAX}&offset=10")
    assert status == 200 and len(body["todos"]) == MAX and body["total"] == 520
    assert body["todos"][-1]["title"] == "item 0011"
    for too_big in [MAX + 1, 1000]:
        status, _, body = call(app, "GET", f"/todos?limit={too_big}")
        assert status == 400 and body["field"] == "limit"


def test_filters_still_apply_to_big_pages(tmp_path):
    app = _app(tmp_path, 330)
    status, _, body = call(app, "GET", "/todos?done=true&limit=300")
    assert status == 200
    assert body["total"] == 110 and len(body["todos"]) == 110
    assert all(t["done"] for t in body["todos"])

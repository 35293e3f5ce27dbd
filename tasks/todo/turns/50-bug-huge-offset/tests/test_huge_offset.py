import pytest
from todo_hidden_http import call

HUGE = "99999999999999999999"


def _app(path):
    from todo.web import create_app

    app = create_app(str(path))
    for index, title in enumerate(["a", "b", "c", "d"]):
        todo = call(app, "POST", "/todos", json={"title": title})[2]
        if index % 2:
            call(app, "POST", f"/todos/{todo['id']}/complete")
    return app


@pytest.mark.parametrize("offset", [HUGE, str(2**63), "1" + "0" * 40])
def test_huge_offset_is_an_empty_page(tmp_path, offset):
    app = _app(tmp_path / "a.db")
    status, _, body = call(app, "GET", f"/todos?offset={offset}")
    assert status == 200, body
    assert body["todos"] == [] and body["total"] == 4
    status, _, body = call(app, "GET", f"/todos?limit=2&offset={offset}&sort=title")
    assert status == 200, body
    assert body["todos"] == [] and body["total"] == 4


def test_huge_offset_with_filters_keeps_the_total(tmp_path):
    app = _app(tmp_path / "a.db")
    status, _, body = call(app, "GET", f"/todos?done=true&limit=500&offset={HUGE}")
    assert status == 200 and body["todos"] == [] and body["total"] == 2
    status, _, body = call(app, "GET", f"/todos?q=c&offset={HUGE}")
    assert status == 200 and body["todos"] == [] and body["total"] == 1
    status, _, body = call(app, "GET", "/todos?limit=2&offset=3")
    assert [t["title"] for t in body["todos"]] == ["a"] and body["total"] == 4


def test_bad_offsets_are_still_input_errors(tmp_path):
    app = _app(tmp_path / "a.db")
    assert call(app, "GET", f"/todos?offset={HUGE}")[0] == 200
    for bad in ["-1", "abc", "1.5", "", "-" + HUGE]:
        status, _, body = call(app, "GET", f"/todos?offset={bad}")
        assert status == 400, (bad, body)
        assert body["field"] == "offset" and body["error"]


def test_service_list_page_with_huge_offset(tmp_path):
    from todo.service import TodoService
    from todo.storage import TodoStore

    service = TodoService(TodoStore(tmp_path / "s.db"))
    for title in ["x", "y", "z"]:
        service.create(title)
    assert service.list_page(offset=10**20) == ([], 3)
    assert service.list_page(limit=1, offset=10**20, search="y") == ([], 1)
    todos, total = service.list_page(limit=1, offset=1)
    assert [t.title for t in todos] == ["y"] and total == 3

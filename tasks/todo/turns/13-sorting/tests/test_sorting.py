from datetime import datetime, timezone

import pytest
from todo_hidden_http import call


def _app(tmp_path, titles, clock=None):
    from todo.web import create_app

    app = create_app(str(tmp_path / "api.db"), clock=clock)
    for title in titles:
        call(app, "POST", "/todos", json={"title": title})
    return app


def _titles(app, query):
    status, _, body = call(app, "GET", "/todos?" + query)
    assert status == 200, body
    return [t["title"] for t in body["todos"]]


def test_sort_by_title_ascending_case_insensitive(tmp_path):
    app = _app(tmp_path, ["banana", "Apple", "cherry"])
    assert _titles(app, "sort=title") == ["Apple", "banana", "cherry"]
    assert _titles(app, "sort=title&order=asc") == ["Apple", "banana", "cherry"]


def test_sort_by_title_descending(tmp_path):
    app = _app(tmp_path, ["banana", "Apple", "cherry"])
    assert _titles(app, "sort=title&order=desc") == ["cherry", "banana", "Apple"]


def test_sort_by_id_ascending_gives_oldest_first(tmp_path):
    app = _app(tmp_path, ["one", "two", "three"])
    assert _titles(app, "sort=id&order=asc") == ["one", "two", "three"]
    assert _titles(app, "order=asc") == ["one", "two", "three"]
    assert _titles(app, "") == ["three", "two", "one"]


def test_sort_by_created_at(tmp_path):
    times = iter([
        datetime(2024, 1, 1, 9, 0, tzinfo=timezone.utc),
        datetime(2024, 1, 1, 11, 0, tzinfo=timezone.utc),
        datetime(2024, 1, 1, 10, 0, tzinfo=timezone.utc),
    ])
    app = _app(tmp_path, ["nine", "eleven", "ten"], clock=lambda: next(times))
    assert _titles(app, "sort=created_at") == ["nine", "ten", "eleven"]
    assert _titles(app, "sort=created_at&order=desc") == ["eleven", "ten", "nine"]


def test_sort_combines_with_done_filter(tmp_path):
    app = _app(tmp_path, ["b", "a", "d", "c"])
    _, _, body = call(app, "GET", "/todos")
    by_title = {t["title"]: t["id"] for t in body["todos"]}
    call(app, "POST", f"/todos/{by_title['d']}/complete")
    assert _titles(app, "done=false&sort=title") == ["a", "b", "c"]


def test_invalid_sort_or_order_is_400(tmp_path):
    app = _app(tmp_path, ["x"])
    status, _, body = call(app, "GET", "/todos?sort=colour")
    assert status == 400
    assert body["field"] == "sort"
    status, _, body = call(app, "GET", "/todos?sort=title&order=sideways")
    assert status == 400
    assert body["field"] == "order"


def test_service_list_sort_arguments(tmp_path):
    from todo.errors import ValidationError
    from todo.service import TodoService
    from todo.storage import TodoStore

    service = TodoService(TodoStore(tmp_path / "svc.db"))
    for title in ["pear", "Fig", "apple"]:
        service.create(title)
    assert [t.title for t in service.list(sort="title")] == ["apple", "Fig", "pear"]
    assert [t.title for t in service.list(sort="id", order="asc")] == ["pear", "Fig", "apple"]
    with pytest.raises(ValidationError):
        service.list(sort="size")

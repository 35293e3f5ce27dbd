import pytest
from todo_hidden_http import call


def _app(tmp_path, count):
    from todo.web import create_app

    app = create_app(str(tmp_path / "pages.db"))
    for n in range(1, count + 1):
        call(app, "POST", "/todos", json={"title": f"todo {n:03d}", "tags": ["even" if n % 2 == 0 else "odd"]})
    return app


def _page(app, query):
    status, _, body = call(app, "GET", "/todos?" + query)
    assert status == 200, body
    return [t["title"] for t in body["todos"]], body["total"]


@pytest.mark.parametrize(("count", "limit", "offset"), [(7, 3, 0), (7, 3, 3), (7, 3, 6), (12, 5, 2), (12, 1, 11)])
def test_pages_cut_the_usual_order(tmp_path, count, limit, offset):
    app = _app(tmp_path, count)
    newest_first = [f"todo {n:03d}" for n in range(count, 0, -1)]
    titles, total = _page(app, f"limit={limit}&offset={offset}")
    assert titles == newest_first[offset : offset + limit]
    assert total == count


def test_total_counts_matches_of_the_filters(tmp_path):
    app = _app(tmp_path, 9)
    titles, total = _page(app, "tag=even&limit=2")
    assert titles == ["todo 008", "todo 006"] and total == 4
    listed = call(app, "GET", "/todos")[2]["todos"]
    for todo in listed[:3]:
        call(app, "POST", f"/todos/{todo['id']}/complete")
    titles, total = _page(app, "done=false&limit=4&offset=4")
    assert titles == ["todo 002", "todo 001"] and total == 6
    titles, total = _page(app, "q=00&sort=title&limit=3&offset=1")
    assert titles == ["todo 002", "todo 003", "todo 004"] and total == 9


def test_without_limit_everything_comes_back_with_a_total(tmp_path):
    app = _app(tmp_path, 6)
    titles, total = _page(app, "")
    assert len(titles) == 6 and total == 6
    titles, total = _page(app, "offset=4")
    assert titles == ["todo 002", "todo 001"] and total == 6
    titles, total = _page(app, "offset=50&limit=10")
    assert titles == [] and total == 6


def test_largest_page_is_100(tmp_path):
    app = _app(tmp_path, 3)
    titles, total = _page(app, "limit=100")
    assert len(titles) == 3 and total == 3
    for too_big in ["101", "250", "1000000"]:
        status, _, body = call(app, "GET", f"/todos?limit={too_big}")
        assert status == 400 and body["field"] == "limit" and body["error"]


@pytest.mark.parametrize(("query", "field"), [
    ("limit=0", "limit"), ("limit=-1", "limit"), ("limit=abc", "limit"), ("limit=2.5", "limit"), ("limit=", "limit"),
    ("offset=-3", "offset"), ("offset=x", "offset"), ("limit=5&offset=1e2", "offset"),
])
def test_bad_paging_values_are_input_errors(tmp_path, query, field):
    app = _app(tmp_path, 2)
    status, _, body = call(app, "GET", "/todos?" + query)
    assert status == 400
    assert body["field"] == field and isinstance(body["error"], str)

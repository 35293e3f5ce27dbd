import pytest
from todo_hidden_http import call

TODOS = [
    ("alpha", "high", "2024-05-03"),
    ("bravo", "normal", None),
    ("charlie", "high", "2024-05-01"),
    ("delta", "low", "2024-05-01"),
    ("Echo", "normal", "2024-05-02"),
    ("foxtrot", "high", None),
    ("golf", "high", "2024-05-01"),
]


@pytest.fixture
def app(tmp_path):
    from todo.web import create_app

    app = create_app(str(tmp_path / "sort.db"))
    for title, priority, due in TODOS:
        status, _, body = call(app, "POST", "/todos", json={"title": title, "priority": priority, "due": due})
        assert status == 201, body
    return app


def _titles(app, query):
    status, _, body = call(app, "GET", "/todos?" + query)
    assert status == 200, body
    return [t["title"] for t in body["todos"]]


def _error(app, query):
    status, _, body = call(app, "GET", "/todos?" + query)
    assert status == 400, (query, body)
    assert body["error"]
    return body["field"]


def test_several_fields_with_directions(app):
    assert _titles(app, "sort=priority,title") == ["delta", "bravo", "Echo", "alpha", "charlie", "foxtrot", "golf"]
    assert _titles(app, "sort=-priority,title") == ["alpha", "charlie", "foxtrot", "golf", "bravo", "Echo", "delta"]
    assert _titles(app, "sort=-priority,-title") == ["golf", "foxtrot", "charlie", "alpha", "Echo", "bravo", "delta"]
    assert _titles(app, "sort=-title") == ["golf", "foxtrot", "Echo", "delta", "charlie", "bravo", "alpha"]


def test_missing_due_dates_stay_last_in_both_directions(app):
    assert _titles(app, "sort=due,title") == ["charlie", "delta", "golf", "Echo", "alpha", "bravo", "foxtrot"]
    assert _titles(app, "sort=-due,title") == ["alpha", "Echo", "charlie", "delta", "golf", "bravo", "foxtrot"]
    assert _titles(app, "sort=-priority,due")[:4] == ["charlie", "golf", "alpha", "foxtrot"]


def test_ties_are_broken_oldest_first(app):
    assert _titles(app, "sort=-priority,due") == ["charlie", "golf", "alpha", "foxtrot", "Echo", "bravo", "delta"]
    assert _titles(app, "sort=-priority,-due") == ["alpha", "charlie", "golf", "foxtrot", "Echo", "bravo", "delta"]
    assert _titles(app, "sort=-priority") == ["alpha", "charlie", "foxtrot", "golf", "bravo", "Echo", "delta"]
    assert _titles(app, "sort=-due") == ["alpha", "Echo", "charlie", "delta", "golf", "bravo", "foxtrot"]


def test_at_most_three_fields(app):
    assert _titles(app, "sort=priority,-due,title") == ["delta", "Echo", "bravo", "alpha", "charlie", "golf", "foxtrot"]
    assert _error(app, "sort=priority,-due,title,id") == "sort"
    assert _error(app, "sort=priority,due,title,created_at,id") == "sort"


def test_a_field_may_appear_only_once(app):
    assert _titles(app, "sort=title,-id")[:2] == ["alpha", "bravo"]
    for query in ("sort=title,-title", "sort=due,priority,due", "sort=-id,id"):
        assert _error(app, query) == "sort"


def test_order_does_not_combine_with_a_list(app):
    assert _error(app, "sort=priority,title&order=desc") == "order"
    assert _error(app, "sort=-title&order=asc") == "order"
    assert _titles(app, "sort=title&order=desc") == ["golf", "foxtrot", "Echo", "delta", "charlie", "bravo", "alpha"]
    assert _titles(app, "sort=priority,title&priority=high&limit=2&offset=1") == ["charlie", "foxtrot"]
    assert call(app, "GET", "/todos?sort=priority,title&priority=high&limit=2")[2]["total"] == 4


PAYLOADS = [
    "title;DROP TABLE todos",
    "title,id;DELETE FROM todos",
    "title,(SELECT 1)",
    "priority,-due--",
    "title) UNION SELECT * FROM todo_tags --",
    "title COLLATE NOCASE",
    "title DESC",
    "-",
    "--title",
    "title,,due",
    "title,",
    ",title",
    "1,2",
    "Title,due",
    "-title\x00",
]


def test_anything_else_is_refused_and_harmless(app):
    from urllib.parse import quote

    assert _titles(app, "sort=due,-title")[:3] == ["golf", "delta", "charlie"]
    for payload in PAYLOADS:
        assert _error(app, "sort=" + quote(payload, safe="")) == "sort", payload
    assert sorted(_titles(app, "sort=id")) == sorted(t for t, _, _ in TODOS)
    assert call(app, "GET", "/todos/stats")[0] == 200
    assert call(app, "GET", "/health")[0] == 200

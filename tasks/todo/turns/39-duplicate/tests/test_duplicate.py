from datetime import datetime, timedelta, timezone

import pytest
from todo_hidden_http import call

SUFFIX = "{{ copy_suffix }}"


def _clock():
    moments = iter(datetime(2024, 6, 1, 9, 0, tzinfo=timezone.utc) + timedelta(hours=h) for h in range(100))
    return lambda: next(moments)


def _app(path, clock=None):
    from todo.web import create_app

    return create_app(str(path), clock=clock)


def test_duplicate_copies_the_details(tmp_path):
    app = _app(tmp_path / "d.db")
    _, _, todo = call(app, "POST", "/todos", json={
        "title": "Pack for trip", "priority": "high", "tags": ["travel", "home"], "due": "2024-07-01",
        "notes": "passport!", "repeat": "monthly",
    })
    for text in ("socks", "charger"):
        call(app, "POST", f"/todos/{todo['id']}/items", json={"text": text})
    status, _, copy = call(app, "POST", f"/todos/{todo['id']}/duplicate")
    assert status == 201, copy
    assert copy["id"] != todo["id"]
    assert copy["title"] == "Pack for trip" + SUFFIX
    assert copy["priority"] == "high" and copy["tags"] == ["home", "travel"]
    assert copy["due"] == "2024-07-01" and copy["notes"] == "passport!" and copy["repeat"] == "monthly"
    assert [(i["text"], i["done"]) for i in copy["items"]] == [("socks", False), ("charger", False)]
    fetched = call(app, "GET", f"/todos/{copy['id']}")[2]
    assert fetched["title"] == copy["title"] and [i["text"] for i in fetched["items"]] == ["socks", "charger"]
    assert call(app, "GET", "/todos")[2]["total"] == 2


def test_copy_starts_fresh(tmp_path):
    app = _app(tmp_path / "d.db", clock=_clock())
    _, _, todo = call(app, "POST", "/todos", json={"title": "Old one"})
    item = call(app, "POST", f"/todos/{todo['id']}/items", json={"text": "step"})[2]
    call(app, "PATCH", f"/todos/{todo['id']}/items/{item['id']}", json={"done": True})
    call(app, "POST", f"/todos/{todo['id']}/archive")
    status, _, copy = call(app, "POST", f"/todos/{todo['id']}/duplicate")
    assert status == 201, copy
    assert copy["done"] is False and copy["archived"] is False
    assert [(i["text"], i["done"]) for i in copy["items"]] == [("step", False)]
    assert copy["created_at"] == copy["updated_at"]
    assert copy["created_at"] > todo["created_at"]
    assert copy["created_at"].startswith("2024-06-01T") and copy["created_at"].endswith("Z")
    original = call(app, "GET", f"/todos/{todo['id']}")[2]
    assert original["title"] == "Old one" and original["archived"] is True and original["done"] is True
    assert [(i["text"], i["done"]) for i in original["items"]] == [("step", True)]
    assert [t["title"] for t in call(app, "GET", "/todos")[2]["todos"]] == ["Old one" + SUFFIX]


def test_duplicates_of_duplicates(tmp_path):
    app = _app(tmp_path / "d.db")
    _, _, todo = call(app, "POST", "/todos", json={"title": "Report"})
    first = call(app, "POST", f"/todos/{todo['id']}/duplicate")[2]
    second = call(app, "POST", f"/todos/{first['id']}/duplicate")[2]
    assert second["title"] == "Report" + SUFFIX + SUFFIX
    assert len({todo["id"], first["id"], second["id"]}) == 3


@pytest.mark.parametrize("length", [80, 79, 80 - len(SUFFIX) + 1])
def test_long_titles_are_cut_to_fit(tmp_path, length):
    app = _app(tmp_path / "d.db")
    title = "".join(chr(ord("a") + i % 26) for i in range(length))
    _, _, todo = call(app, "POST", "/todos", json={"title": title})
    status, _, copy = call(app, "POST", f"/todos/{todo['id']}/duplicate")
    assert status == 201, copy
    assert len(copy["title"]) == 80
    assert copy["title"] == title[: 80 - len(SUFFIX)] + SUFFIX


def test_short_enough_titles_are_kept_whole(tmp_path):
    app = _app(tmp_path / "d.db")
    title = "x" * (80 - len(SUFFIX))
    _, _, todo = call(app, "POST", "/todos", json={"title": title})
    copy = call(app, "POST", f"/todos/{todo['id']}/duplicate")[2]
    assert copy["title"] == title + SUFFIX


def test_unknown_todo_is_404(tmp_path):
    app = _app(tmp_path / "d.db")
    _, _, todo = call(app, "POST", "/todos", json={"title": "only one"})
    status, _, body = call(app, "POST", "/todos/42/duplicate")
    assert status == 404 and body["error"]
    assert call(app, "GET", "/todos")[2]["total"] == 1
    call(app, "DELETE", f"/todos/{todo['id']}")
    assert call(app, "POST", f"/todos/{todo['id']}/duplicate")[0] == 404
    assert call(app, "GET", "/todos")[2]["total"] == 0
    _, _, other = call(app, "POST", "/todos", json={"title": "another"})
    assert call(app, "POST", f"/todos/{other['id']}/duplicate")[0] == 201

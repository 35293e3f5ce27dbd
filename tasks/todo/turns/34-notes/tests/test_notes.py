import sqlite3

import pytest
from todo_hidden_http import call

MAX_NOTES = {{ max_notes }}


def _app(path):
    from todo.web import create_app

    return create_app(str(path))


def _create(app, **fields):
    status, _, body = call(app, "POST", "/todos", json={"title": "call the plumber", **fields})
    return status, body


def test_notes_are_saved_and_returned(tmp_path):
    app = _app(tmp_path / "n.db")
    status, body = _create(app, notes="Number: 555-0101\nAsk about the boiler too")
    assert status == 201, body
    assert body["notes"] == "Number: 555-0101\nAsk about the boiler too"
    fetched = call(app, "GET", f"/todos/{body['id']}")[2]
    assert fetched["notes"] == "Number: 555-0101\nAsk about the boiler too"
    listed = call(app, "GET", "/todos")[2]["todos"]
    assert listed[0]["notes"] == "Number: 555-0101\nAsk about the boiler too"


def test_todos_without_notes_have_an_empty_string(tmp_path):
    app = _app(tmp_path / "n.db")
    status, body = _create(app)
    assert status == 201 and body["notes"] == ""
    status, body = _create(app, notes=None)
    assert status == 201 and body["notes"] == ""


def test_patch_replaces_keeps_and_clears_notes(tmp_path):
    app = _app(tmp_path / "n.db")
    _, todo = _create(app, notes="first draft")
    status, _, body = call(app, "PATCH", f"/todos/{todo['id']}", json={"notes": "second draft"})
    assert status == 200 and body["notes"] == "second draft"
    status, _, body = call(app, "PATCH", f"/todos/{todo['id']}", json={"title": "call the electrician", "done": True})
    assert status == 200 and body["notes"] == "second draft" and body["title"] == "call the electrician"
    assert call(app, "GET", f"/todos/{todo['id']}")[2]["notes"] == "second draft"
    status, _, body = call(app, "PATCH", f"/todos/{todo['id']}", json={"notes": None})
    assert status == 200 and body["notes"] == ""
    assert call(app, "GET", f"/todos/{todo['id']}")[2]["notes"] == ""


def test_notes_are_trimmed_before_the_limit_is_checked(tmp_path):
    app = _app(tmp_path / "n.db")
    status, body = _create(app, notes="  \n  bring the ladder \n\n")
    assert status == 201 and body["notes"] == "bring the ladder"
    status, body = _create(app, notes="   " + "x" * MAX_NOTES + "\n")
    assert status == 201, body
    assert body["notes"] == "x" * MAX_NOTES


def test_notes_longer_than_the_limit_are_rejected(tmp_path):
    app = _app(tmp_path / "n.db")
    status, body = _create(app, notes="y" * (MAX_NOTES + 1))
    assert status == 400 and body["field"] == "notes" and body["error"]
    assert call(app, "GET", "/todos")[2]["todos"] == []
    _, todo = _create(app, notes="short")
    status, _, body = call(app, "PATCH", f"/todos/{todo['id']}", json={"notes": "z" * (MAX_NOTES + 1), "title": "renamed"})
    assert status == 400 and body["field"] == "notes"
    fetched = call(app, "GET", f"/todos/{todo['id']}")[2]
    assert fetched["notes"] == "short" and fetched["title"] == "call the plumber"


@pytest.mark.parametrize("bad", [42, ["a", "b"], {"text": "x"}, True])
def test_notes_must_be_a_string(tmp_path, bad):
    app = _app(tmp_path / "n.db")
    status, body = _create(app, notes=bad)
    assert status == 400 and body["field"] == "notes" and body["error"]
    _, todo = _create(app)
    status, _, body = call(app, "PATCH", f"/todos/{todo['id']}", json={"notes": bad})
    assert status == 400 and body["field"] == "notes"


def test_old_database_gets_empty_notes(tmp_path):
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE todos (id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT NOT NULL, done INTEGER NOT NULL DEFAULT 0)")
    conn.execute("INSERT INTO todos (title, done) VALUES ('legacy', 0)")
    conn.commit()
    conn.close()
    app = _app(path)
    todos = call(app, "GET", "/todos")[2]["todos"]
    assert [(t["title"], t["notes"]) for t in todos] == [("legacy", "")]
    status, _, body = call(app, "PATCH", f"/todos/{todos[0]['id']}", json={"notes": "still here"})
    assert status == 200 and body["notes"] == "still here"

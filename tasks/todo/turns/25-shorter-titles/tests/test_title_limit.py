import json
import sqlite3

import pytest
from todo_hidden_http import call

LIMIT = 80


def _app(tmp_path):
    from todo.web import create_app

    return create_app(str(tmp_path / "limit.db"))


@pytest.mark.parametrize("length", [LIMIT + 1, LIMIT + 20, 150, 200])
def test_longer_titles_are_rejected_on_create(tmp_path, length):
    app = _app(tmp_path)
    status, _, body = call(app, "POST", "/todos", json={"title": "t" * length})
    assert status == 400 and body["field"] == "title"
    assert call(app, "GET", "/todos")[2]["todos"] == []
    title = ("Plan the trip to the coast " * 4)[:LIMIT]
    status, _, body = call(app, "POST", "/todos", json={"title": title})
    assert status == 201 and body["title"] == title


def test_limit_counts_after_trimming(tmp_path):
    app = _app(tmp_path)
    status, _, body = call(app, "POST", "/todos", json={"title": "   " + "w" * LIMIT + "\t "})
    assert status == 201 and body["title"] == "w" * LIMIT
    status, _, body = call(app, "POST", "/todos", json={"title": " " + "w" * (LIMIT + 1) + " "})
    assert status == 400 and body["field"] == "title"


def test_rename_uses_the_new_limit(tmp_path):
    from todo.errors import ValidationError
    from todo.service import TodoService
    from todo.storage import TodoStore

    service = TodoService(TodoStore(tmp_path / "svc.db"))
    todo = service.create("short")
    with pytest.raises(ValidationError):
        service.rename(todo.id, "r" * (LIMIT + 1))
    assert service.get(todo.id).title == "short"
    assert service.rename(todo.id, "r" * LIMIT).title == "r" * LIMIT
    app = _app(tmp_path)
    _, _, created = call(app, "POST", "/todos", json={"title": "short"})
    status, _, body = call(app, "PATCH", f"/todos/{created['id']}", json={"title": "p" * (LIMIT + 5)})
    assert status == 400 and body["field"] == "title"


def test_existing_long_titles_stay_usable(tmp_path):
    path = tmp_path / "old.db"
    app = _app(tmp_path)  # creates the schema in limit.db; build old.db by hand like an older release
    from todo.web import create_app

    old = create_app(str(path))
    call(old, "POST", "/todos", json={"title": "placeholder"})
    long_title = "An old todo with a title written before the limit was tightened " * 2
    conn = sqlite3.connect(path)
    conn.execute("UPDATE todos SET title = ?", (long_title.strip(),))
    conn.commit()
    conn.close()
    old = create_app(str(path))
    todo = call(old, "GET", "/todos")[2]["todos"][0]
    assert todo["title"] == long_title.strip()
    status, _, body = call(old, "POST", f"/todos/{todo['id']}/complete")
    assert status == 200 and body["title"] == long_title.strip()
    status, _, body = call(old, "PATCH", f"/todos/{todo['id']}", json={"title": long_title})
    assert status == 400 and body["field"] == "title"
    assert call(app, "POST", "/todos", json={"title": long_title})[0] == 400


def test_import_applies_the_new_limit(tmp_path, capsys):
    from todo.cli import main

    db = str(tmp_path / "cli.db")
    source = tmp_path / "in.json"
    source.write_text(json.dumps([{"title": "fine"}, {"title": "i" * (LIMIT + 1)}]))
    assert main(["--db", db, "import", str(source)]) == 1
    assert capsys.readouterr().err.startswith("Error:")
    main(["--db", db, "list"])
    assert capsys.readouterr().out.strip() == "No todos."
    source.write_text(json.dumps([{"title": "i" * LIMIT}]))
    assert main(["--db", db, "import", str(source)]) == 0

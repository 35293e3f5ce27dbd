import json
import subprocess
import sys
from datetime import datetime, timezone

from todo_hidden_http import call


def _app(path, clock=None):
    from todo.web import create_app

    return create_app(str(path), clock=clock)


def _titles(app, query=""):
    status, _, body = call(app, "GET", "/todos" + query)
    assert status == 200, body
    return [t["title"] for t in body["todos"]]


def _seed(app, titles, done=()):
    ids = {}
    for title in titles:
        ids[title] = call(app, "POST", "/todos", json={"title": title})[2]["id"]
        if title in done:
            call(app, "POST", f"/todos/{ids[title]}/complete")
    return ids


def test_archive_and_unarchive_a_done_todo(tmp_path):
    moments = iter([datetime(2024, 3, 1, 9, 0, tzinfo=timezone.utc), datetime(2024, 3, 2, 9, 0, tzinfo=timezone.utc),
                    datetime(2024, 3, 3, 9, 0, tzinfo=timezone.utc), datetime(2024, 3, 4, 9, 0, tzinfo=timezone.utc)])
    app = _app(tmp_path / "a.db", clock=lambda: next(moments))
    _, _, todo = call(app, "POST", "/todos", json={"title": "File taxes"})
    assert todo["archived"] is False
    call(app, "POST", f"/todos/{todo['id']}/complete")
    status, _, body = call(app, "POST", f"/todos/{todo['id']}/archive")
    assert status == 200, body
    assert body["archived"] is True and body["done"] is True and body["title"] == "File taxes"
    assert body["updated_at"] == "2024-03-03T09:00:00Z"
    assert call(app, "GET", f"/todos/{todo['id']}")[2]["archived"] is True
    status, _, body = call(app, "POST", f"/todos/{todo['id']}/unarchive")
    assert status == 200 and body["archived"] is False and body["done"] is True
    assert call(app, "GET", f"/todos/{todo['id']}")[2]["archived"] is False
    for action in ("archive", "unarchive"):
        status, _, body = call(app, "POST", f"/todos/99/{action}")
        assert status == 404 and body["error"]


def test_open_todos_cannot_be_archived(tmp_path):
    app = _app(tmp_path / "a.db")
    ids = _seed(app, ["still open"])
    status, _, body = call(app, "POST", f"/todos/{ids['still open']}/archive")
    assert status == 400 and body["field"] == "done" and body["error"]
    fetched = call(app, "GET", f"/todos/{ids['still open']}")[2]
    assert fetched["archived"] is False and fetched["done"] is False
    assert _titles(app) == ["still open"]


def test_archived_todos_are_hidden_from_the_list_unless_asked(tmp_path):
    app = _app(tmp_path / "a.db")
    ids = _seed(app, ["a", "b", "c", "d"], done={"a", "b", "c"})
    for title in ("a", "c"):
        assert call(app, "POST", f"/todos/{ids[title]}/archive")[0] == 200
    assert _titles(app) == ["d", "b"]
    assert _titles(app, "?archived=false") == ["d", "b"]
    assert _titles(app, "?archived=true") == ["c", "a"]
    assert _titles(app, "?archived=true&sort=title&order=desc") == ["c", "a"]
    status, _, body = call(app, "GET", "/todos?archived=true&limit=1")
    assert status == 200 and [t["title"] for t in body["todos"]] == ["c"] and body["total"] == 2
    status, _, body = call(app, "GET", "/todos?limit=1")
    assert body["total"] == 2
    call(app, "POST", f"/todos/{ids['a']}/unarchive")
    assert _titles(app) == ["d", "b", "a"]
    assert _titles(app, "?archived=true") == ["c"]


def test_archived_filter_combines_with_other_filters(tmp_path):
    app = _app(tmp_path / "a.db")
    plan = [("report", ["work"]), ("garden", ["home"]), ("slides", ["work"])]
    ids = {t: call(app, "POST", "/todos", json={"title": t, "tags": tags})[2]["id"] for t, tags in plan}
    for title in ids:
        call(app, "POST", f"/todos/{ids[title]}/complete")
        call(app, "POST", f"/todos/{ids[title]}/archive")
    call(app, "POST", f"/todos/{ids['slides']}/unarchive")
    assert _titles(app, "?archived=true&tag=work") == ["report"]
    assert _titles(app, "?tag=work") == ["slides"]
    assert _titles(app, "?archived=true&q=gard") == ["garden"]


def test_clear_completed_keeps_archived_todos(tmp_path):
    app = _app(tmp_path / "a.db")
    ids = _seed(app, ["archived one", "done one", "open one"], done={"archived one", "done one"})
    call(app, "POST", f"/todos/{ids['archived one']}/archive")
    status, _, body = call(app, "POST", "/todos/clear-completed")
    assert status == 200 and body["deleted"] == 1
    assert _titles(app) == ["open one"]
    assert _titles(app, "?archived=true") == ["archived one"]


def test_export_includes_archived_todos(tmp_path):
    db = tmp_path / "cli.db"
    app = _app(db)
    ids = _seed(app, ["kept", "archived"], done={"archived"})
    call(app, "POST", f"/todos/{ids['archived']}/archive")
    result = subprocess.run([sys.executable, "-m", "todo", "--db", str(db), "export"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    exported = json.loads(result.stdout)
    assert [item["title"] for item in exported] == ["kept", "archived"]
    assert [item["archived"] for item in exported] == [False, True]


def test_archive_survives_an_old_database(tmp_path):
    import sqlite3

    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE todos (id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT NOT NULL, done INTEGER NOT NULL DEFAULT 0)")
    conn.execute("INSERT INTO todos (title, done) VALUES ('legacy', 1)")
    conn.commit()
    conn.close()
    app = _app(path)
    assert call(app, "GET", "/todos/1")[2]["archived"] is False
    assert call(app, "POST", "/todos/1/archive")[0] == 200
    assert _titles(app) == [] and _titles(app, "?archived=true") == ["legacy"]

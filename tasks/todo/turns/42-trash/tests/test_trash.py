import json
import subprocess
import sys
from datetime import datetime, timedelta, timezone

from todo_hidden_http import call

TRASH_DAYS = {{ trash_days }}


class Clock:
    def __init__(self):
        self.now = datetime(2024, 3, 1, 9, 0, tzinfo=timezone.utc)

    def __call__(self):
        return self.now


def _app(path, clock=None):
    from todo.web import create_app

    return create_app(str(path), clock=clock or Clock())


def _trash(app):
    status, _, body = call(app, "GET", "/todos/trash")
    assert status == 200, body
    return body["todos"]


def _titles(app, query=""):
    return [t["title"] for t in call(app, "GET", "/todos" + query)[2]["todos"]]


def test_deleted_todos_go_to_the_trash(tmp_path):
    clock = Clock()
    app = _app(tmp_path / "t.db", clock)
    assert _trash(app) == []
    _, _, todo = call(app, "POST", "/todos", json={"title": "old plan", "tags": ["work"], "notes": "v1"})
    call(app, "POST", "/todos", json={"title": "keep"})
    clock.now = datetime(2024, 3, 2, 10, 30, tzinfo=timezone.utc)
    status, _, body = call(app, "DELETE", f"/todos/{todo['id']}")
    assert status == 204 and body is None
    assert call(app, "GET", f"/todos/{todo['id']}")[0] == 404
    assert _titles(app) == ["keep"]
    trashed = _trash(app)
    assert len(trashed) == 1
    entry = trashed[0]
    assert entry["id"] == todo["id"] and entry["title"] == "old plan"
    assert entry["tags"] == ["work"] and entry["notes"] == "v1"
    assert entry["deleted_at"] == "2024-03-02T10:30:00Z"


def test_restore_brings_the_todo_back_as_it_was(tmp_path):
    app = _app(tmp_path / "t.db")
    _, _, todo = call(app, "POST", "/todos", json={
        "title": "trip", "priority": "high", "tags": ["travel"], "due": "2024-04-01", "notes": "passport",
    })
    item = call(app, "POST", f"/todos/{todo['id']}/items", json={"text": "tickets"})[2]
    call(app, "POST", f"/todos/{todo['id']}/items", json={"text": "hotel"})
    call(app, "PATCH", f"/todos/{todo['id']}/items/{item['id']}", json={"done": True})
    call(app, "POST", f"/todos/{todo['id']}/complete")
    before = call(app, "GET", f"/todos/{todo['id']}")[2]
    history = call(app, "GET", f"/todos/{todo['id']}/history")[2]["history"]
    call(app, "DELETE", f"/todos/{todo['id']}")
    status, _, body = call(app, "POST", f"/todos/trash/{todo['id']}/restore")
    assert status == 200, body
    after = call(app, "GET", f"/todos/{todo['id']}")[2]
    for key in ("id", "title", "done", "priority", "tags", "due", "notes", "archived", "created_at"):
        assert after[key] == before[key] == body[key], key
    assert [(i["text"], i["done"]) for i in after["items"]] == [("tickets", True), ("hotel", False)]
    assert call(app, "GET", f"/todos/{todo['id']}/history")[2]["history"][: len(history)] == history
    assert _titles(app, "?tag=travel") == ["trip"]
    assert _trash(app) == []
    status, _, body = call(app, "POST", f"/todos/trash/{todo['id']}/restore")
    assert status == 404 and body["error"]


def test_restoring_something_not_in_the_trash_is_404(tmp_path):
    app = _app(tmp_path / "t.db")
    _, _, todo = call(app, "POST", "/todos", json={"title": "alive"})
    assert call(app, "POST", f"/todos/trash/{todo['id']}/restore")[0] == 404
    assert call(app, "POST", "/todos/trash/999/restore")[0] == 404
    assert _titles(app) == ["alive"]
    call(app, "DELETE", f"/todos/{todo['id']}")
    assert call(app, "POST", f"/todos/trash/{todo['id'] + 1}/restore")[0] == 404
    assert call(app, "POST", f"/todos/trash/{todo['id']}/restore")[0] == 200
    assert _titles(app) == ["alive"]


def test_bulk_delete_and_clear_completed_use_the_trash(tmp_path):
    clock = Clock()
    app = _app(tmp_path / "t.db", clock)
    ids = {t: call(app, "POST", "/todos", json={"title": t})[2]["id"] for t in ["a", "b", "c", "d", "e"]}
    for title in ("c", "d"):
        call(app, "POST", f"/todos/{ids[title]}/complete")
    call(app, "POST", f"/todos/{ids['d']}/archive")
    status, _, body = call(app, "POST", "/todos/bulk", json={"action": "delete", "ids": [ids["a"], ids["b"]]})
    assert status == 200 and body["count"] == 2
    clock.now += timedelta(hours=1)
    status, _, body = call(app, "POST", "/todos/clear-completed")
    assert status == 200 and body["deleted"] == 1
    assert _titles(app) == ["e"]
    trashed = _trash(app)
    assert [t["title"] for t in trashed][0] == "c"
    assert sorted(t["title"] for t in trashed) == ["a", "b", "c"]
    assert call(app, "POST", f"/todos/trash/{ids['a']}/restore")[0] == 200
    assert _titles(app) == ["e", "a"]


def test_trash_keeps_todos_for_a_limited_time(tmp_path):
    clock = Clock()
    app = _app(tmp_path / "t.db", clock)
    first = call(app, "POST", "/todos", json={"title": "first"})[2]["id"]
    second = call(app, "POST", "/todos", json={"title": "second"})[2]["id"]
    call(app, "DELETE", f"/todos/{first}")
    clock.now += timedelta(days=1)
    call(app, "DELETE", f"/todos/{second}")
    clock.now += timedelta(days=TRASH_DAYS - 1)
    assert [t["title"] for t in _trash(app)] == ["second", "first"]
    clock.now += timedelta(minutes=1)
    assert [t["title"] for t in _trash(app)] == ["second"]
    assert call(app, "POST", f"/todos/trash/{first}/restore")[0] == 404
    assert call(app, "POST", f"/todos/trash/{second}/restore")[0] == 200
    assert _titles(app) == ["second"]


def test_emptying_the_trash(tmp_path):
    app = _app(tmp_path / "t.db")
    ids = [call(app, "POST", "/todos", json={"title": t})[2]["id"] for t in ("x", "y", "z")]
    call(app, "DELETE", f"/todos/{ids[0]}")
    call(app, "DELETE", f"/todos/{ids[1]}")
    status, _, body = call(app, "DELETE", "/todos/trash")
    assert status == 200 and body["deleted"] == 2
    assert _trash(app) == []
    assert call(app, "POST", f"/todos/trash/{ids[0]}/restore")[0] == 404
    assert call(app, "GET", f"/todos/{ids[0]}/history")[0] == 404
    assert _titles(app) == ["z"]
    assert call(app, "DELETE", "/todos/trash")[2]["deleted"] == 0


def test_trashed_todos_are_out_of_sight(tmp_path):
    db = tmp_path / "t.db"
    app = _app(db)
    gone = call(app, "POST", "/todos", json={"title": "gone", "tags": ["secret"]})[2]["id"]
    call(app, "POST", "/todos", json={"title": "here", "tags": ["home"]})
    call(app, "POST", f"/todos/{gone}/complete")
    call(app, "DELETE", f"/todos/{gone}")
    assert call(app, "GET", "/todos/summary")[2] == {"total": 1, "done": 0, "open": 1}
    assert call(app, "GET", "/todos/stats")[2]["by_tag"] == {"home": 1}
    assert [t["tag"] for t in call(app, "GET", "/todos/tags")[2]["tags"]] == ["home"]
    assert _titles(app, "?q=gone") == []
    assert _titles(app, "?archived=true") == []
    result = subprocess.run([sys.executable, "-m", "todo", "--db", str(db), "export"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert [item["title"] for item in json.loads(result.stdout)] == ["here"]
    assert [t["title"] for t in _trash(app)] == ["gone"]

from datetime import datetime, timezone

from todo_hidden_http import call


class Clock:
    def __init__(self):
        self.now = datetime(2024, 4, 1, 8, 0, tzinfo=timezone.utc)

    def set(self, day, hour):
        self.now = datetime(2024, 4, day, hour, 0, tzinfo=timezone.utc)

    def __call__(self):
        return self.now


def _app(path, clock=None):
    from todo.web import create_app

    return create_app(str(path), clock=clock)


def _history(app, todo_id):
    status, _, body = call(app, "GET", f"/todos/{todo_id}/history")
    assert status == 200, body
    return [(event["action"], event["fields"]) for event in body["history"]]


def test_a_new_todo_starts_with_created(tmp_path):
    clock = Clock()
    app = _app(tmp_path / "h.db", clock)
    clock.set(2, 9)
    _, _, todo = call(app, "POST", "/todos", json={"title": "plan party", "tags": ["home"]})
    status, _, body = call(app, "GET", f"/todos/{todo['id']}/history")
    assert status == 200
    assert body["history"] == [{"at": "2024-04-02T09:00:00Z", "action": "created", "fields": []}]


def test_one_patch_is_one_updated_event(tmp_path):
    clock = Clock()
    app = _app(tmp_path / "h.db", clock)
    todo_id = call(app, "POST", "/todos", json={"title": "plan party", "priority": "low"})[2]["id"]
    clock.set(3, 10)
    status, _, _ = call(app, "PATCH", f"/todos/{todo_id}", json={"title": "plan a party", "priority": "high", "notes": ""})
    assert status == 200
    clock.set(4, 11)
    call(app, "PATCH", f"/todos/{todo_id}", json={"title": "plan a party", "priority": "high"})
    call(app, "PATCH", f"/todos/{todo_id}", json={})
    clock.set(5, 12)
    call(app, "PATCH", f"/todos/{todo_id}", json={"due": "2024-05-01", "tags": ["Fun"], "repeat": "weekly"})
    body = call(app, "GET", f"/todos/{todo_id}/history")[2]["history"]
    assert [(e["at"], e["action"], e["fields"]) for e in body] == [
        ("2024-04-01T08:00:00Z", "created", []),
        ("2024-04-03T10:00:00Z", "updated", ["priority", "title"]),
        ("2024-04-05T12:00:00Z", "updated", ["due", "repeat", "tags"]),
    ]


def test_done_and_archive_changes(tmp_path):
    app = _app(tmp_path / "h.db", Clock())
    todo_id = call(app, "POST", "/todos", json={"title": "taxes"})[2]["id"]
    call(app, "POST", f"/todos/{todo_id}/complete")
    call(app, "POST", f"/todos/{todo_id}/complete")
    call(app, "POST", f"/todos/{todo_id}/uncomplete")
    call(app, "PATCH", f"/todos/{todo_id}", json={"notes": "receipts in the drawer", "done": True})
    call(app, "POST", f"/todos/{todo_id}/archive")
    call(app, "POST", f"/todos/{todo_id}/unarchive")
    call(app, "PATCH", f"/todos/{todo_id}", json={"done": False})
    assert _history(app, todo_id) == [
        ("created", []),
        ("completed", []),
        ("reopened", []),
        ("updated", ["notes"]),
        ("completed", []),
        ("archived", []),
        ("unarchived", []),
        ("reopened", []),
    ]


def test_bulk_actions_and_tag_renames_are_recorded(tmp_path):
    app = _app(tmp_path / "h.db", Clock())
    a = call(app, "POST", "/todos", json={"title": "a", "tags": ["shop"]})[2]["id"]
    b = call(app, "POST", "/todos", json={"title": "b", "tags": ["home"]})[2]["id"]
    call(app, "POST", f"/todos/{b}/complete")
    status, _, body = call(app, "POST", "/todos/bulk", json={"action": "complete", "ids": [a, b]})
    assert status == 200, body
    call(app, "POST", "/todos/bulk", json={"action": "add-tags", "ids": [a, b], "tags": ["home"]})
    status, _, body = call(app, "POST", "/todos/tags/rename", json={"from": "shop", "to": "shopping"})
    assert status == 200, body
    assert _history(app, a) == [("created", []), ("completed", []), ("updated", ["tags"]), ("updated", ["tags"])]
    assert _history(app, b) == [("created", []), ("completed", [])]


def test_repeating_todos(tmp_path):
    app = _app(tmp_path / "h.db", Clock())
    todo_id = call(app, "POST", "/todos", json={"title": "water plants", "repeat": "daily", "due": "2024-04-01"})[2]["id"]
    call(app, "POST", f"/todos/{todo_id}/complete")
    todos = call(app, "GET", "/todos?sort=id")[2]["todos"]
    assert len(todos) == 2
    assert _history(app, todo_id) == [("created", []), ("completed", [])]
    assert _history(app, todos[1]["id"]) == [("created", [])]


def test_checklist_changes_are_not_in_the_history(tmp_path):
    app = _app(tmp_path / "h.db", Clock())
    todo_id = call(app, "POST", "/todos", json={"title": "move"})[2]["id"]
    item = call(app, "POST", f"/todos/{todo_id}/items", json={"text": "book van"})[2]
    call(app, "PATCH", f"/todos/{todo_id}/items/{item['id']}", json={"done": True})
    assert _history(app, todo_id) == [("created", [])]


def test_history_of_unknown_or_deleted_todos_is_404(tmp_path):
    app = _app(tmp_path / "h.db", Clock())
    todo_id = call(app, "POST", "/todos", json={"title": "short-lived"})[2]["id"]
    assert _history(app, todo_id) == [("created", [])]
    assert call(app, "DELETE", f"/todos/{todo_id}")[0] == 204
    status, _, body = call(app, "GET", f"/todos/{todo_id}/history")
    assert status == 404 and body["error"]
    status, _, body = call(app, "GET", "/todos/999/history")
    assert status == 404

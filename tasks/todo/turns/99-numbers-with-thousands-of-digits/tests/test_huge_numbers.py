from datetime import datetime, timezone

import pytest
from todo_hidden_http import call

NOW = datetime(2025, 8, 1, 9, 0, tzinfo=timezone.utc)
HUGE = "9" * 5000


@pytest.fixture(autouse=True)
def _cheap_password_hashing(monkeypatch):
    """These tests register and log in: hash passwords with few iterations."""
    try:
        monkeypatch.setattr("todo.auth.HASH_ITERATIONS", 1000, raising=False)
    except ImportError:
        pass


@pytest.fixture
def app(tmp_path):
    from todo.web import create_app

    return create_app(str(tmp_path / "n.db"), clock=lambda: NOW)


def _todo(app, title="water plants"):
    status, _, body = call(app, "POST", "/todos", json={"title": title})
    assert status == 201, body
    return body["id"]


@pytest.mark.parametrize(
    "method, suffix, payload",
    [
        ("GET", "", None),
        ("PATCH", "", {"title": "renamed"}),
        ("DELETE", "", None),
        ("POST", "/complete", None),
        ("GET", "/history", None),
        ("POST", "/items", {"text": "step"}),
        ("POST", "/time", {"minutes": 5}),
    ],
)
def test_todo_ids_with_thousands_of_digits_are_not_found(app, method, suffix, payload):
    _todo(app)
    status, _, body = call(app, method, f"/todos/{HUGE}{suffix}", json=payload)
    assert status == 404, body
    assert body["error"]
    assert call(app, "GET", "/todos")[2]["total"] == 1


def test_checklist_item_and_trash_ids_with_thousands_of_digits(app):
    todo_id = _todo(app)
    call(app, "POST", f"/todos/{todo_id}/items", json={"text": "step"})
    for method, path in (
        ("PATCH", f"/todos/{todo_id}/items/{HUGE}"),
        ("DELETE", f"/todos/{todo_id}/items/{HUGE}"),
        ("DELETE", f"/todos/{todo_id}/items/{'9' * 25}"),
        ("POST", f"/todos/trash/{HUGE}/restore"),
    ):
        status, _, body = call(app, method, path, json={"done": True})
        assert status == 404, (method, path[:40], body)
    assert [item["done"] for item in call(app, "GET", f"/todos/{todo_id}")[2]["items"]] == [False]


def test_leading_zeros_do_not_matter_however_many(app):
    todo_id = _todo(app)
    status, _, body = call(app, "GET", "/todos/" + "0" * 5000 + str(todo_id))
    assert status == 200, body
    assert body["id"] == todo_id and body["title"] == "water plants"
    status, _, body = call(app, "GET", "/todos?limit=" + "0" * 5000 + "2")
    assert status == 200 and len(body["todos"]) == 1


def test_a_limit_with_thousands_of_digits_is_just_too_big(app):
    _todo(app)
    status, _, body = call(app, "GET", f"/todos?limit={HUGE}")
    assert status == 400, body
    assert body["field"] == "limit"
    status, _, body = call(app, "GET", f"/todos?done=false&sort=title&limit={HUGE}")
    assert status == 400 and body["field"] == "limit"


def test_an_offset_with_thousands_of_digits_is_past_the_end(app):
    for n in range(3):
        _todo(app, f"todo {n}")
    status, _, body = call(app, "GET", f"/todos?offset={HUGE}")
    assert status == 200, body
    assert body["todos"] == [] and body["total"] == 3
    status, _, body = call(app, "GET", f"/todos?offset={HUGE}&limit=2")
    assert status == 200 and body["todos"] == [] and body["total"] == 3


def test_session_ids_with_thousands_of_digits_are_not_found(app):
    password = "S3cret-password-long"
    assert call(app, "POST", "/users", json={"username": "zoe", "password": password})[0] == 201
    token = call(app, "POST", "/users/login", json={"username": "zoe", "password": password})[2]["token"]
    auth = {"Authorization": f"Bearer {token}"}
    status, _, body = call(app, "DELETE", f"/users/me/sessions/{HUGE}", headers=auth)
    assert status == 404, body
    assert call(app, "GET", "/users/me", headers=auth)[0] == 200

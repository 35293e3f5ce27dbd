import pytest
from todo_hidden_http import call

MAX_TAGS = {{ max_tags }}
PASSWORD = "pa55word-{{ min_password_length }}-long-enough"


@pytest.fixture(autouse=True)
def _cheap_password_hashing(monkeypatch):
    """These tests register and log in a lot: hash passwords with few iterations."""
    try:
        monkeypatch.setattr("todo.auth.HASH_ITERATIONS", 1000, raising=False)
    except ImportError:  # no todo/auth.py at all: the behaviour is graded all the same
        pass


def _app(path):
    from todo.web import create_app

    return create_app(str(path))


def _user(app, username):
    assert call(app, "POST", "/users", json={"username": username, "password": PASSWORD})[0] == 201
    status, _, body = call(app, "POST", "/users/login", json={"username": username, "password": PASSWORD})
    assert status == 200, body
    return {"Authorization": f"Bearer {body['token']}"}


def _set_defaults(app, auth, tags):
    return call(app, "PATCH", "/users/me", json={"default_tags": tags}, headers=auth)


def _new_todo(app, auth=None, **fields):
    status, _, body = call(app, "POST", "/todos", json={"title": "t", **fields}, headers=auth)
    assert status == 201, body
    return body


def test_default_tags_are_part_of_the_user(tmp_path):
    app = _app(tmp_path / "d.db")
    alice = _user(app, "alice")
    assert call(app, "GET", "/users/me", headers=alice)[2]["default_tags"] == []
    status, _, body = _set_defaults(app, alice, [" Work", "work", "HOME"])
    assert status == 200, body
    assert body["username"] == "alice" and body["default_tags"] == ["home", "work"]
    assert call(app, "GET", "/users/me", headers=alice)[2]["default_tags"] == ["home", "work"]


def test_new_todos_without_tags_get_the_defaults(tmp_path):
    app = _app(tmp_path / "d.db")
    alice, bob = _user(app, "alice"), _user(app, "bob")
    assert _set_defaults(app, alice, ["inbox"])[0] == 200
    assert _new_todo(app, alice)["tags"] == ["inbox"]
    assert _new_todo(app, alice, tags=["Errands"])["tags"] == ["errands"]
    assert _new_todo(app, alice, tags=[])["tags"] == []
    assert _new_todo(app, bob)["tags"] == []
    assert _new_todo(app)["tags"] == []
    status, _, body = call(app, "GET", "/todos?tag=inbox", headers=alice)
    assert body["total"] == 1
    again = {"Authorization": "Bearer " + call(app, "POST", "/users/login", json={"username": "alice", "password": PASSWORD})[2]["token"]}
    assert _new_todo(app, again)["tags"] == ["inbox"]


def test_changing_defaults_leaves_existing_todos_alone(tmp_path):
    app = _app(tmp_path / "d.db")
    alice = _user(app, "alice")
    _set_defaults(app, alice, ["old"])
    todo = _new_todo(app, alice)
    assert _set_defaults(app, alice, ["new"])[2]["default_tags"] == ["new"]
    assert call(app, "GET", f"/todos/{todo['id']}", headers=alice)[2]["tags"] == ["old"]
    assert _new_todo(app, alice)["tags"] == ["new"]
    assert _set_defaults(app, alice, [])[2]["default_tags"] == []
    assert _new_todo(app, alice)["tags"] == []


def test_defaults_respect_the_tag_limit(tmp_path):
    app = _app(tmp_path / "d.db")
    alice = _user(app, "alice")
    too_many = [f"tag{i}" for i in range(MAX_TAGS + 1)]
    status, _, body = _set_defaults(app, alice, too_many)
    assert status == 400, body
    assert body["field"] == "default_tags" and body["error"]
    assert call(app, "GET", "/users/me", headers=alice)[2]["default_tags"] == []
    just_enough = too_many[:MAX_TAGS] + [too_many[0].upper()]
    status, _, body = _set_defaults(app, alice, just_enough)
    assert status == 200, body
    assert body["default_tags"] == sorted(too_many[:MAX_TAGS])
    assert _new_todo(app, alice)["tags"] == sorted(too_many[:MAX_TAGS])


@pytest.mark.parametrize("bad", ["work", [1], [""], ["  "], {"a": "b"}, None])
def test_bad_default_tags_are_input_errors(tmp_path, bad):
    app = _app(tmp_path / "d.db")
    alice = _user(app, "alice")
    _set_defaults(app, alice, ["keep"])
    status, _, body = _set_defaults(app, alice, bad)
    assert status == 400, body
    assert body["field"] == "default_tags"
    assert call(app, "GET", "/users/me", headers=alice)[2]["default_tags"] == ["keep"]


def test_changing_settings_needs_a_token(tmp_path):
    app = _app(tmp_path / "d.db")
    alice = _user(app, "alice")
    for auth in (None, {"Authorization": "Bearer forged"}):
        status, _, body = call(app, "PATCH", "/users/me", json={"default_tags": ["x"]}, headers=auth)
        assert status == 401, body
    assert call(app, "GET", "/users/me", headers=alice)[2]["default_tags"] == []

import pytest
from todo_hidden_http import call

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


def _add(app, title, auth=None, **fields):
    status, _, body = call(app, "POST", "/todos", json={"title": title, **fields}, headers=auth)
    assert status == 201, body
    return body["id"]


def _titles(app, auth=None):
    return [todo["title"] for todo in call(app, "GET", "/todos?sort=id", headers=auth)[2]["todos"]]


def _claim(app, ids, auth):
    return call(app, "POST", "/todos/claim", json={"ids": ids}, headers=auth)


def test_claiming_moves_unowned_todos_into_the_account(tmp_path):
    app = _app(tmp_path / "c.db")
    alice = _user(app, "alice")
    one, two = _add(app, "one", tags=["home"]), _add(app, "two")
    _add(app, "three")
    _add(app, "mine", alice)
    status, _, body = _claim(app, [two, one, one], alice)
    assert status == 200, body
    assert body["claimed"] == 2
    assert _titles(app, alice) == ["one", "two", "mine"]
    assert _titles(app) == ["three"]
    status, _, todo = call(app, "GET", f"/todos/{one}", headers=alice)
    assert status == 200 and todo["tags"] == ["home"]
    assert call(app, "GET", f"/todos/{one}")[0] == 404


def test_only_todos_of_nobody_can_be_claimed(tmp_path):
    app = _app(tmp_path / "c.db")
    alice, bob = _user(app, "alice"), _user(app, "bob")
    loose = _add(app, "loose")
    bobs = _add(app, "bob's", bob)
    mine = _add(app, "mine", alice)
    status, _, body = _claim(app, [loose, bobs, 999, mine], alice)
    assert status == 404, body
    assert body["missing"] == [bobs, 999, mine]
    assert _titles(app) == ["loose"]
    assert _titles(app, bob) == ["bob's"]
    assert _titles(app, alice) == ["mine"]


def test_claiming_needs_a_login(tmp_path):
    app = _app(tmp_path / "c.db")
    loose = _add(app, "loose")
    for auth in (None, {"Authorization": "Bearer bogus"}):
        status, _, body = _claim(app, [loose], auth)
        assert status == 401, body
    assert _titles(app) == ["loose"]


@pytest.mark.parametrize("ids", [[], "1", [1, "2"], None, [True]])
def test_bad_ids_are_input_errors(tmp_path, ids):
    app = _app(tmp_path / "c.db")
    alice = _user(app, "alice")
    _add(app, "loose")
    payload = {} if ids is None else {"ids": ids}
    status, _, body = call(app, "POST", "/todos/claim", json=payload, headers=alice)
    assert status == 400, body
    assert body["field"] == "ids"
    assert _titles(app) == ["loose"]


def test_claimed_todos_count_in_the_users_stats(tmp_path):
    app = _app(tmp_path / "c.db")
    alice = _user(app, "alice")
    done = _add(app, "done one", priority="high")
    call(app, "POST", f"/todos/{done}/complete")
    open_one = _add(app, "open one", priority="high")
    assert _claim(app, [done, open_one], alice)[0] == 200
    mine = call(app, "GET", "/todos/summary", headers=alice)[2]
    assert (mine["total"], mine["done"], mine["open"]) == (2, 1, 1)
    loose = call(app, "GET", "/todos/summary")[2]
    assert (loose["total"], loose["done"], loose["open"]) == (0, 0, 0)

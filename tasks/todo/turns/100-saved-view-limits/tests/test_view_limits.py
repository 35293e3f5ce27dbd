import pytest
from todo_hidden_http import call

PASSWORD = "pa55word-{{ min_password_length }}-long-enough"
LIMIT = {{ views_per_owner }}
LONGEST_QUERY = 500


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


def _put(app, name, query, auth=None):
    return call(app, "PUT", f"/todos/views/{name}", json={"query": query}, headers=auth)


def _save(app, name, query, auth=None):
    status, _, body = _put(app, name, query, auth)
    assert status == 200, body
    assert body == {"name": name, "query": query}


def _refused(app, name, query, field, auth=None):
    status, _, body = _put(app, name, query, auth)
    assert status == 400, (status, body)
    assert body["field"] == field, body
    assert isinstance(body["error"], str) and body["error"]


def _views(app, auth=None):
    status, _, body = call(app, "GET", "/todos/views", headers=auth)
    assert status == 200, body
    return [(view["name"], view["query"]) for view in body["views"]]


def _titles(app, query, auth=None):
    status, _, body = call(app, "GET", "/todos?" + query, headers=auth)
    assert status == 200, body
    return [todo["title"] for todo in body["todos"]]


def _padded(query, length):
    """``query`` followed by form-encoded spaces up to ``length`` characters."""
    assert len(query) <= length
    return query + "+" * (length - len(query))


def _names(prefix="view"):
    """LIMIT valid view names, in a scrambled order."""
    return [f"{prefix}-{(index * 7) % LIMIT:02d}" for index in range(LIMIT)]


def _fill(app, auth=None, prefix="view"):
    """Save views up to the limit; return them as the listing must show them."""
    saved = []
    for name in _names(prefix):
        query = f"tag={name}"
        _save(app, name, query, auth)
        saved.append((name, query))
    return sorted(saved)


def test_a_query_of_500_characters_is_fine_but_no_more(tmp_path):
    app = _app(tmp_path / "v.db")
    call(app, "POST", "/todos", json={"title": "find the needle"})
    call(app, "POST", "/todos", json={"title": "haystack"})
    longest = _padded("q=needle", LONGEST_QUERY)
    _save(app, "longest", longest)
    assert _titles(app, "view=longest") == ["find the needle"]
    _refused(app, "too-long", _padded("q=needle", LONGEST_QUERY + 1), "query")
    _refused(app, "huge", _padded("q=needle", 20_000), "query")
    assert _views(app) == [("longest", longest)]


def test_the_length_counts_characters_not_bytes(tmp_path):
    app = _app(tmp_path / "v.db")
    accented = "q=" + "\u00e9" * (LONGEST_QUERY - 2)
    _save(app, "accents", accented)
    _refused(app, "more-accents", accented + "\u00e9", "query")
    assert _views(app) == [("accents", accented)]


def test_a_long_query_must_still_be_a_valid_list_query(tmp_path):
    app = _app(tmp_path / "v.db")
    _refused(app, "broken", _padded("priority=critical", LONGEST_QUERY), "query")
    _refused(app, "broken", _padded("priority=urgent&q=task", LONGEST_QUERY + 1), "query")
    _refused(app, "broken", 42, "query")
    assert _views(app) == []
    _save(app, "broken", _padded("priority=urgent&q=task", LONGEST_QUERY))


def test_a_too_long_query_keeps_the_old_one(tmp_path):
    app = _app(tmp_path / "v.db")
    alice = _user(app, "alice")
    call(app, "POST", "/todos", json={"title": "work item", "tags": ["work"]}, headers=alice)
    call(app, "POST", "/todos", json={"title": "home item", "tags": ["home"]}, headers=alice)
    _save(app, "work", "tag=work", alice)
    _refused(app, "work", _padded("tag=home", LONGEST_QUERY + 1), "query", alice)
    assert _views(app, alice) == [("work", "tag=work")]
    assert _titles(app, "view=work", alice) == ["work item"]


def test_an_owner_has_at_most_the_limit_of_views(tmp_path):
    app = _app(tmp_path / "v.db")
    alice = _user(app, "alice")
    saved = _fill(app, alice)
    _refused(app, "one-too-many", "done=false", "name", alice)
    assert _views(app, alice) == saved
    status, _, body = call(app, "GET", "/todos?view=one-too-many", headers=alice)
    assert status == 400 and body["field"] == "view"


def test_replacing_a_view_at_the_limit_is_fine(tmp_path):
    app = _app(tmp_path / "v.db")
    alice = _user(app, "alice")
    saved = _fill(app, alice)
    name = saved[LIMIT // 2][0]
    _save(app, name, "priority=urgent&done=false", alice)
    _save(app, name, "priority=urgent&done=false", alice)
    listed = _views(app, alice)
    assert len(listed) == LIMIT
    assert listed[LIMIT // 2] == (name, "priority=urgent&done=false")
    _refused(app, "one-too-many", "done=false", "name", alice)


def test_deleting_a_view_frees_a_place(tmp_path):
    app = _app(tmp_path / "v.db")
    saved = _fill(app)
    _refused(app, "extra", "done=true", "name")
    assert call(app, "DELETE", f"/todos/views/{saved[0][0]}")[0] == 204
    _save(app, "extra", "done=true")
    _refused(app, "another", "done=true", "name")
    assert _views(app) == sorted([*saved[1:], ("extra", "done=true")])


def test_the_limit_counts_per_owner(tmp_path):
    app = _app(tmp_path / "v.db")
    alice, bob = _user(app, "alice"), _user(app, "bob")
    alices = _fill(app, alice)
    _refused(app, "alice-extra", "done=false", "name", alice)
    _save(app, alices[0][0], "done=true", bob)
    _save(app, "bob-own", "done=false", bob)
    _save(app, "nobodys", "done=false")
    for name in _names("anon")[1:]:
        _save(app, name, "done=true")
    _refused(app, "anon-extra", "done=false", "name")
    _save(app, "bob-second", "done=true", bob)
    assert _views(app, bob) == [("bob-own", "done=false"), ("bob-second", "done=true"), (alices[0][0], "done=true")]
    assert _views(app, alice) == alices
    nobodys = _views(app)
    assert len(nobodys) == LIMIT and ("nobodys", "done=false") in nobodys


def test_a_new_account_starts_with_room_for_views(tmp_path):
    app = _app(tmp_path / "v.db")
    alice = _user(app, "alice")
    _fill(app, alice)
    _refused(app, "extra", "done=false", "name", alice)
    status, _, body = call(app, "DELETE", "/users/me", json={"password": PASSWORD}, headers=alice)
    assert status == 204, body
    again = _user(app, "alice")
    assert _views(app, again) == []
    assert _fill(app, again, prefix="again") == sorted((name, f"tag={name}") for name in _names("again"))
    _refused(app, "extra", "done=false", "name", again)

from todo_hidden_http import call


def _app(path):
    from todo.web import create_app

    return create_app(str(path))


def _add(app, title, tags, done=False):
    todo_id = call(app, "POST", "/todos", json={"title": title, "tags": tags})[2]["id"]
    if done:
        call(app, "POST", f"/todos/{todo_id}/complete")
    return todo_id


def _tags(app):
    status, _, body = call(app, "GET", "/todos/tags")
    assert status == 200, body
    return [(entry["tag"], entry["count"], entry["open"]) for entry in body["tags"]]


def test_no_todos_no_tags(tmp_path):
    app = _app(tmp_path / "t.db")
    status, _, body = call(app, "GET", "/todos/tags")
    assert status == 200 and body["tags"] == []
    _add(app, "untagged", [])
    assert _tags(app) == []


def test_counts_and_open_counts(tmp_path):
    app = _app(tmp_path / "t.db")
    _add(app, "a", ["work", "home"])
    _add(app, "b", ["work"], done=True)
    _add(app, "c", ["work", "errands"], done=True)
    _add(app, "d", ["home"])
    assert _tags(app) == [("work", 3, 1), ("home", 2, 2), ("errands", 1, 0)]


def test_ties_are_alphabetical(tmp_path):
    app = _app(tmp_path / "t.db")
    _add(app, "a", ["zoo", "bank"])
    _add(app, "b", ["zoo", "bank", "mail"])
    _add(app, "c", ["apple"])
    assert _tags(app) == [("bank", 2, 2), ("zoo", 2, 2), ("apple", 1, 1), ("mail", 1, 1)]


def test_tags_typed_differently_are_one_tag(tmp_path):
    app = _app(tmp_path / "t.db")
    _add(app, "a", ["Work"])
    _add(app, "b", ["  work "])
    _add(app, "c", ["WORK", "work"])
    assert _tags(app) == [("work", 3, 3)]


def test_archived_todos_do_not_count(tmp_path):
    app = _app(tmp_path / "t.db")
    _add(app, "a", ["work", "old"])
    archived = _add(app, "b", ["work", "old", "gone"])
    _add(app, "c", ["work"])
    assert call(app, "POST", f"/todos/{archived}/archive")[0] == 200
    assert _tags(app) == [("work", 2, 2), ("old", 1, 1)]
    call(app, "POST", f"/todos/{archived}/unarchive")
    assert _tags(app) == [("work", 3, 2), ("old", 2, 1), ("gone", 1, 0)]


def test_deleted_and_retagged_todos_update_the_list(tmp_path):
    app = _app(tmp_path / "t.db")
    first = _add(app, "a", ["home"])
    second = _add(app, "b", ["home", "garden"])
    call(app, "DELETE", f"/todos/{first}")
    call(app, "PATCH", f"/todos/{second}", json={"tags": ["garden", "weekend"]})
    assert _tags(app) == [("garden", 1, 1), ("weekend", 1, 1)]
    status, _, todo = call(app, "GET", f"/todos/{second}")
    assert status == 200 and todo["tags"] == ["garden", "weekend"]

import pytest
from todo_hidden_http import call


def _app(path):
    from todo.web import create_app

    return create_app(str(path))


def _add(app, title, tags):
    return call(app, "POST", "/todos", json={"title": title, "tags": tags})[2]["id"]


def _tags_of(app, todo_id):
    return call(app, "GET", f"/todos/{todo_id}")[2]["tags"]


def _rename(app, old, new):
    return call(app, "POST", "/todos/tags/rename", json={"from": old, "to": new})


def test_rename_a_tag_everywhere(tmp_path):
    app = _app(tmp_path / "r.db")
    a = _add(app, "a", ["shop", "home"])
    b = _add(app, "b", ["shop"])
    c = _add(app, "c", ["home"])
    status, _, body = _rename(app, "shop", "shopping")
    assert status == 200 and body["count"] == 2
    assert _tags_of(app, a) == ["home", "shopping"]
    assert _tags_of(app, b) == ["shopping"]
    assert _tags_of(app, c) == ["home"]
    titles = [t["title"] for t in call(app, "GET", "/todos?tag=shopping&sort=title")[2]["todos"]]
    assert titles == ["a", "b"]
    assert call(app, "GET", "/todos?tag=shop")[2]["todos"] == []


def test_merging_into_an_existing_tag(tmp_path):
    app = _app(tmp_path / "r.db")
    both = _add(app, "both", ["job", "work", "urgent"])
    only_job = _add(app, "only job", ["job"])
    only_work = _add(app, "only work", ["work"])
    status, _, body = _rename(app, "job", "work")
    assert status == 200 and body["count"] == 2
    assert _tags_of(app, both) == ["urgent", "work"]
    assert _tags_of(app, only_job) == ["work"]
    assert _tags_of(app, only_work) == ["work"]
    assert call(app, "GET", "/todos?tag=work")[2]["total"] == 3


def test_archived_todos_are_renamed_too(tmp_path):
    app = _app(tmp_path / "r.db")
    kept = _add(app, "kept", ["old"])
    archived = _add(app, "archived", ["old"])
    call(app, "POST", f"/todos/{archived}/archive")
    status, _, body = _rename(app, "old", "new")
    assert status == 200 and body["count"] == 2
    assert _tags_of(app, kept) == ["new"] and _tags_of(app, archived) == ["new"]


def test_names_are_cleaned_up_like_tags(tmp_path):
    app = _app(tmp_path / "r.db")
    a = _add(app, "a", ["groceries", "zzz"])
    status, _, body = _rename(app, "  Groceries ", " FOOD")
    assert status == 200 and body["count"] == 1
    assert _tags_of(app, a) == ["food", "zzz"]


def test_unknown_tag_is_404_and_changes_nothing(tmp_path):
    app = _app(tmp_path / "r.db")
    a = _add(app, "a", ["home"])
    status, _, body = _rename(app, "garden", "home")
    assert status == 404 and body["error"]
    assert _tags_of(app, a) == ["home"]
    assert _rename(app, "home", "house")[0] == 200
    status, _, body = _rename(app, "home", "house")
    assert status == 404
    assert _tags_of(app, a) == ["house"]


@pytest.mark.parametrize("body, field", [
    ({"to": "x"}, "from"),
    ({"from": "  ", "to": "x"}, "from"),
    ({"from": 3, "to": "x"}, "from"),
    ({"from": "home"}, "to"),
    ({"from": "home", "to": ""}, "to"),
    ({"from": "home", "to": ["x"]}, "to"),
])
def test_missing_or_blank_names_are_input_errors(tmp_path, body, field):
    app = _app(tmp_path / "r.db")
    a = _add(app, "a", ["home"])
    status, _, reply = call(app, "POST", "/todos/tags/rename", json=body)
    assert status == 400 and reply["field"] == field and reply["error"]
    assert _tags_of(app, a) == ["home"]


def test_renaming_to_the_same_name_keeps_the_tag(tmp_path):
    app = _app(tmp_path / "r.db")
    a = _add(app, "a", ["home"])
    status, _, body = _rename(app, "home", "HOME")
    assert status == 200 and body["count"] == 1
    assert _tags_of(app, a) == ["home"]

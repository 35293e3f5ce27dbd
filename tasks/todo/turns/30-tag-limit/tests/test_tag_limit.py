from todo_hidden_http import call

MAX_TAGS = {{ max_tags }}


def _app(path):
    from todo.web import create_app

    return create_app(str(path))


def _tags(n, prefix="t"):
    return [f"{prefix}{i:02d}" for i in range(n)]


def test_exactly_the_maximum_is_allowed_and_one_more_is_not(tmp_path):
    app = _app(tmp_path / "a.db")
    status, _, body = call(app, "POST", "/todos", json={"title": "busy", "tags": _tags(MAX_TAGS)})
    assert status == 201, body
    assert body["tags"] == _tags(MAX_TAGS)
    assert call(app, "GET", f"/todos/{body['id']}")[2]["tags"] == _tags(MAX_TAGS)
    status, _, body = call(app, "POST", "/todos", json={"title": "busier", "tags": _tags(MAX_TAGS + 1)})
    assert status == 400 and body["field"] == "tags"


def test_too_many_tags_on_create_is_an_input_error(tmp_path):
    app = _app(tmp_path / "a.db")
    for count in (MAX_TAGS + 1, MAX_TAGS + 5):
        status, _, body = call(app, "POST", "/todos", json={"title": "overloaded", "tags": _tags(count)})
        assert status == 400, body
        assert body["field"] == "tags" and body["error"]
    assert call(app, "GET", "/todos")[2]["todos"] == []


def test_too_many_tags_on_patch_changes_nothing(tmp_path):
    app = _app(tmp_path / "a.db")
    _, _, todo = call(app, "POST", "/todos", json={"title": "keep me", "tags": ["home"]})
    status, _, body = call(app, "PATCH", f"/todos/{todo['id']}", json={"title": "renamed", "tags": _tags(MAX_TAGS + 1)})
    assert status == 400 and body["field"] == "tags"
    fetched = call(app, "GET", f"/todos/{todo['id']}")[2]
    assert (fetched["title"], fetched["tags"]) == ("keep me", ["home"])
    status, _, body = call(app, "PATCH", f"/todos/{todo['id']}", json={"tags": _tags(MAX_TAGS)})
    assert status == 200 and body["tags"] == _tags(MAX_TAGS)


def test_limit_counts_tags_after_normalising(tmp_path):
    app = _app(tmp_path / "a.db")
    names = _tags(MAX_TAGS)
    sloppy = names + [name.upper() for name in names] + [f" {name} " for name in names]
    status, _, body = call(app, "POST", "/todos", json={"title": "sloppy", "tags": sloppy})
    assert status == 201, body
    assert body["tags"] == names
    status, _, body = call(app, "POST", "/todos", json={"title": "one more", "tags": sloppy + ["Extra"]})
    assert status == 400 and body["field"] == "tags"


def test_service_enforces_the_limit(tmp_path):
    import pytest
    from todo.errors import ValidationError
    from todo.service import TodoService
    from todo.storage import TodoStore

    service = TodoService(TodoStore(tmp_path / "s.db"))
    with pytest.raises(ValidationError) as info:
        service.create("too many", tags=_tags(MAX_TAGS + 1))
    assert info.value.field == "tags"
    todo = service.create("fine", tags=_tags(MAX_TAGS))
    with pytest.raises(ValidationError):
        service.set_tags(todo.id, _tags(MAX_TAGS + 2))
    assert service.get(todo.id).tags == _tags(MAX_TAGS)

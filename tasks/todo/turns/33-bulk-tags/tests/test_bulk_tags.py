import pytest
from todo_hidden_http import call

MAX_TAGS = {{ max_tags }}


def _app(path):
    from todo.web import create_app

    return create_app(str(path))


def _tags_of(app, todo_id):
    return call(app, "GET", f"/todos/{todo_id}")[2]["tags"]


def _seed(app, plan):
    return {title: call(app, "POST", "/todos", json={"title": title, "tags": tags})[2]["id"] for title, tags in plan}


def test_add_tags_to_several_todos(tmp_path):
    app = _app(tmp_path / "a.db")
    ids = _seed(app, [("a", ["home"]), ("b", []), ("c", ["work"])])
    status, _, body = call(app, "POST", "/todos/bulk", json={"action": "add-tags", "ids": [ids["a"], ids["b"]], "tags": [" Urgent", "HOME"]})
    assert status == 200, body
    assert body == {"action": "add-tags", "count": 2}
    assert _tags_of(app, ids["a"]) == ["home", "urgent"]
    assert _tags_of(app, ids["b"]) == ["home", "urgent"]
    assert _tags_of(app, ids["c"]) == ["work"]
    status, _, body = call(app, "GET", "/todos?tag=urgent")
    assert [t["title"] for t in body["todos"]] == ["b", "a"]


def test_remove_tags_from_several_todos(tmp_path):
    app = _app(tmp_path / "a.db")
    ids = _seed(app, [("a", ["home", "urgent"]), ("b", ["urgent"]), ("c", ["urgent", "work"])])
    status, _, body = call(app, "POST", "/todos/bulk", json={"action": "remove-tags", "ids": [ids["a"], ids["b"]], "tags": ["URGENT", "garden"]})
    assert status == 200 and body == {"action": "remove-tags", "count": 2}
    assert _tags_of(app, ids["a"]) == ["home"]
    assert _tags_of(app, ids["b"]) == []
    assert _tags_of(app, ids["c"]) == ["urgent", "work"]
    assert call(app, "GET", "/todos/stats")[2]["by_tag"] == {"home": 1, "urgent": 1, "work": 1}


def test_missing_ids_change_nothing(tmp_path):
    app = _app(tmp_path / "a.db")
    ids = _seed(app, [("a", ["home"])])
    status, _, body = call(app, "POST", "/todos/bulk", json={"action": "add-tags", "ids": [ids["a"], 41, 42], "tags": ["x"]})
    assert status == 404 and body["missing"] == [41, 42]
    assert _tags_of(app, ids["a"]) == ["home"]
    status, _, body = call(app, "POST", "/todos/bulk", json={"action": "remove-tags", "ids": [ids["a"], 7], "tags": ["home"]})
    assert status == 404 and body["missing"] == [7]
    assert _tags_of(app, ids["a"]) == ["home"]


def test_going_over_the_tag_limit_changes_nothing(tmp_path):
    app = _app(tmp_path / "a.db")
    full = [f"t{i:02d}" for i in range(MAX_TAGS - 1)]
    ids = _seed(app, [("roomy", []), ("almost full", full)])
    both = [ids["roomy"], ids["almost full"]]
    status, _, body = call(app, "POST", "/todos/bulk", json={"action": "add-tags", "ids": both, "tags": ["one", "two"]})
    assert status == 400 and body["field"] == "tags" and body["error"]
    assert _tags_of(app, ids["roomy"]) == []
    assert _tags_of(app, ids["almost full"]) == full
    status, _, body = call(app, "POST", "/todos/bulk", json={"action": "add-tags", "ids": both, "tags": ["one", "ONE ", full[0]]})
    assert status == 200, body
    assert _tags_of(app, ids["almost full"]) == sorted(full + ["one"])
    assert _tags_of(app, ids["roomy"]) == sorted([full[0], "one"])


@pytest.mark.parametrize("bad", [None, "work", [""], [3], {"a": 1}])
def test_bad_tags_are_input_errors(tmp_path, bad):
    app = _app(tmp_path / "a.db")
    ids = _seed(app, [("a", ["home"])])
    for action in ("add-tags", "remove-tags"):
        payload = {"action": action, "ids": [ids["a"]]}
        if bad is not None:
            payload["tags"] = bad
        status, _, body = call(app, "POST", "/todos/bulk", json=payload)
        assert status == 400 and body["field"] == "tags", (action, body)
    assert _tags_of(app, ids["a"]) == ["home"]


def test_service_bulk_tags(tmp_path):
    from todo.errors import ValidationError
    from todo.service import TodoService
    from todo.storage import TodoStore

    service = TodoService(TodoStore(tmp_path / "s.db"))
    first = service.create("first", tags=["a"])
    second = service.create("second")
    assert service.bulk("add-tags", [first.id, second.id], ["b"]) == 2
    assert service.get(first.id).tags == ["a", "b"] and service.get(second.id).tags == ["b"]
    assert service.bulk("remove-tags", [first.id], ["a"]) == 1
    assert service.get(first.id).tags == ["b"]
    with pytest.raises(ValidationError):
        service.bulk("add-tags", [first.id], [f"x{i}" for i in range(MAX_TAGS)])
    assert service.get(first.id).tags == ["b"]

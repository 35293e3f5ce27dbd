import pytest
from todo_hidden_http import call

HUGE = 17329011234567890123
HUGER = 10**30


def _app(path):
    from todo.web import create_app

    app = create_app(str(path))
    for title in ["one", "two"]:
        call(app, "POST", "/todos", json={"title": title})
    return app


@pytest.mark.parametrize(
    "method, suffix, payload",
    [
        ("GET", "", None),
        ("PATCH", "", {"title": "renamed"}),
        ("DELETE", "", None),
        ("POST", "/complete", None),
        ("POST", "/uncomplete", None),
        ("POST", "/archive", None),
        ("POST", "/unarchive", None),
    ],
)
def test_huge_id_routes_are_not_found(tmp_path, method, suffix, payload):
    app = _app(tmp_path / "a.db")
    for todo_id in (HUGE, HUGER):
        status, _, body = call(app, method, f"/todos/{todo_id}{suffix}", json=payload)
        assert status == 404, (method, suffix, body)
        assert body["error"]
    assert [t["title"] for t in call(app, "GET", "/todos")[2]["todos"]] == ["two", "one"]


def test_bulk_with_huge_ids_is_a_404_listing_them(tmp_path):
    app = _app(tmp_path / "a.db")
    for action in ("complete", "delete"):
        status, _, body = call(app, "POST", "/todos/bulk", json={"action": action, "ids": [1, HUGE, 2, -HUGER]})
        assert status == 404, body
        assert body["missing"] == [HUGE, -HUGER]
    status, _, body = call(app, "POST", "/todos/bulk", json={"action": "add-tags", "ids": [HUGE], "tags": ["x"]})
    assert status == 404 and body["missing"] == [HUGE]
    todos = call(app, "GET", "/todos")[2]["todos"]
    assert [(t["title"], t["done"], t["tags"]) for t in todos] == [("two", False, []), ("one", False, [])]
    status, _, body = call(app, "POST", "/todos/bulk", json={"action": "complete", "ids": [1, 2**63 - 1]})
    assert status == 404 and body["missing"] == [2**63 - 1]
    status, _, body = call(app, "POST", "/todos/bulk", json={"action": "complete", "ids": [2, 1]})
    assert status == 200 and body["count"] == 2


def test_service_raises_not_found(tmp_path):
    from todo.errors import TodoNotFound
    from todo.service import TodoService
    from todo.storage import TodoStore

    service = TodoService(TodoStore(tmp_path / "s.db"))
    kept = service.create("kept")
    for action in (service.get, service.complete, service.delete, service.archive):
        with pytest.raises(TodoNotFound):
            action(HUGE)
    with pytest.raises(TodoNotFound) as caught:
        service.bulk("complete", [kept.id, HUGE])
    assert caught.value.todo_ids == (HUGE,)
    assert service.get(kept.id).done is False


def test_cli_reports_an_error(tmp_path, capsys):
    from todo.cli import main

    db = str(tmp_path / "cli.db")
    main(["--db", db, "add", "Buy milk"])
    capsys.readouterr()
    for command in (["done", str(HUGE)], ["delete", str(HUGE)], ["edit", str(HUGE), "x"]):
        assert main(["--db", db, *command]) == 1
        assert capsys.readouterr().err.startswith("Error:")
    main(["--db", db, "list"])
    assert capsys.readouterr().out.splitlines() == ["[ ] #1 Buy milk"]

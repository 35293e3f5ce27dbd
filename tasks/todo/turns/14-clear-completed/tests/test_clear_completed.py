from todo_hidden_http import call


def test_service_clear_completed_returns_count(tmp_path):
    from todo.service import TodoService
    from todo.storage import TodoStore

    service = TodoService(TodoStore(tmp_path / "svc.db"))
    keep = service.create("keep")
    for title in ["x", "y"]:
        service.complete(service.create(title).id)
    assert service.clear_completed() == 2
    assert [t.id for t in service.list()] == [keep.id]
    assert service.clear_completed() == 0


def test_http_clear_completed(tmp_path):
    from todo.web import create_app

    app = create_app(str(tmp_path / "api.db"))
    ids = [call(app, "POST", "/todos", json={"title": t})[2]["id"] for t in ["a", "b", "c"]]
    call(app, "POST", f"/todos/{ids[0]}/complete")
    call(app, "POST", f"/todos/{ids[2]}/complete")
    status, _, body = call(app, "POST", "/todos/clear-completed")
    assert status == 200
    assert body == {"deleted": 2}
    _, _, listing = call(app, "GET", "/todos")
    assert [t["title"] for t in listing["todos"]] == ["b"]


def test_http_clear_completed_with_nothing_done(tmp_path):
    from todo.web import create_app

    app = create_app(str(tmp_path / "api.db"))
    call(app, "POST", "/todos", json={"title": "open"})
    status, _, body = call(app, "POST", "/todos/clear-completed")
    assert status == 200
    assert body == {"deleted": 0}
    assert len(call(app, "GET", "/todos")[2]["todos"]) == 1


def test_cli_clear(tmp_path, capsys):
    from todo.cli import main

    db = str(tmp_path / "cli.db")
    for title in ["a", "b", "c"]:
        main(["--db", db, "add", title])
    main(["--db", db, "done", "1"])
    main(["--db", db, "done", "3"])
    capsys.readouterr()
    assert main(["--db", db, "clear"]) == 0
    assert capsys.readouterr().out.strip() == "Cleared 2 completed todo(s)."
    main(["--db", db, "list"])
    assert capsys.readouterr().out.strip() == "[ ] #2 b"

from todo_hidden_http import call


def test_service_summary(tmp_path):
    from todo.service import TodoService
    from todo.storage import TodoStore

    service = TodoService(TodoStore(tmp_path / "svc.db"))
    ids = [service.create(t).id for t in ["a", "b", "c", "d"]]
    service.complete(ids[1])
    assert service.summary() == {"total": 4, "done": 1, "open": 3}
    service.delete(ids[0])
    assert service.summary() == {"total": 3, "done": 1, "open": 2}


def test_http_summary(tmp_path):
    from todo.web import create_app

    app = create_app(str(tmp_path / "api.db"))
    ids = [call(app, "POST", "/todos", json={"title": t})[2]["id"] for t in ["a", "b", "c"]]
    call(app, "POST", f"/todos/{ids[0]}/complete")
    call(app, "POST", f"/todos/{ids[2]}/complete")
    status, headers, body = call(app, "GET", "/todos/summary")
    assert status == 200
    assert headers["content-type"].startswith("application/json")
    assert body == {"total": 3, "done": 2, "open": 1}


def test_http_summary_of_empty_database(tmp_path):
    from todo.web import create_app

    app = create_app(str(tmp_path / "api.db"))
    status, _, body = call(app, "GET", "/todos/summary")
    assert status == 200
    assert body == {"total": 0, "done": 0, "open": 0}


def test_cli_stats(tmp_path, capsys):
    from todo.cli import main

    db = str(tmp_path / "cli.db")
    for title in ["a", "b", "c"]:
        main(["--db", db, "add", title])
    main(["--db", db, "done", "2"])
    capsys.readouterr()
    assert main(["--db", db, "stats"]) == 0
    assert capsys.readouterr().out.strip() == "3 todos: 1 done, 2 open"

from todo_hidden_http import call


def test_api_lists_newest_first(tmp_path):
    from todo.web import create_app

    app = create_app(str(tmp_path / "api.db"))
    for title in ["first", "second", "third"]:
        call(app, "POST", "/todos", json={"title": title})
    status, _, body = call(app, "GET", "/todos")
    assert status == 200
    assert [t["title"] for t in body["todos"]] == ["third", "second", "first"]


def test_api_filtered_list_is_newest_first_too(tmp_path):
    from todo.web import create_app

    app = create_app(str(tmp_path / "api.db"))
    ids = [call(app, "POST", "/todos", json={"title": t})[2]["id"] for t in ["a", "b", "c", "d"]]
    call(app, "POST", f"/todos/{ids[2]}/complete")
    _, _, body = call(app, "GET", "/todos?done=false")
    assert [t["title"] for t in body["todos"]] == ["d", "b", "a"]


def test_service_list_newest_first(tmp_path):
    from todo.service import TodoService
    from todo.storage import TodoStore

    service = TodoService(TodoStore(tmp_path / "svc.db"))
    a = service.create("a")
    b = service.create("b")
    assert [t.id for t in service.list()] == [b.id, a.id]


def test_cli_list_newest_first(tmp_path, capsys):
    from todo.cli import main

    db = str(tmp_path / "cli.db")
    main(["--db", db, "add", "Buy milk"])
    main(["--db", db, "add", "Walk dog"])
    main(["--db", db, "done", "1"])
    capsys.readouterr()
    assert main(["--db", db, "list"]) == 0
    assert capsys.readouterr().out.splitlines() == ["[ ] #2 Walk dog", "[x] #1 Buy milk"]

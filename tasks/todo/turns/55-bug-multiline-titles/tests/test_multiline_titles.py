import json

from todo_hidden_http import call


def _app(path):
    from todo.web import create_app

    return create_app(str(path))


def _cli(db, *args):
    from todo.cli import main

    return main(["--db", str(db), *args])


def test_api_cleans_titles(tmp_path):
    app = _app(tmp_path / "a.db")
    status, _, body = call(app, "POST", "/todos", json={"title": "  Buy milk\nand eggs\r\n"})
    assert status == 201 and body["title"] == "Buy milk and eggs"
    status, _, body = call(app, "POST", "/todos", json={"title": "Call\tthe   landlord"})
    assert status == 201 and body["title"] == "Call the landlord"
    status, _, body = call(app, "PATCH", f"/todos/{body['id']}", json={"title": "Call \n\n the\t\tplumber "})
    assert status == 200 and body["title"] == "Call the plumber"
    assert call(app, "GET", f"/todos/{body['id']}")[2]["title"] == "Call the plumber"


def test_limits_apply_to_the_cleaned_title(tmp_path):
    app = _app(tmp_path / "a.db")
    fits = "a" + " \n\t " * 30 + "b" * 78
    status, _, body = call(app, "POST", "/todos", json={"title": fits})
    assert status == 201, body
    assert body["title"] == "a " + "b" * 78
    status, _, body = call(app, "POST", "/todos", json={"title": "a\n\n" + "b" * 79})
    assert status == 400 and body["field"] == "title"
    status, _, body = call(app, "POST", "/todos", json={"title": " \n\t\r\n "})
    assert status == 400 and body["field"] == "title"
    assert call(app, "GET", "/todos")[2]["total"] == 1


def test_service_and_import_clean_titles(tmp_path):
    from todo.service import TodoService
    from todo.storage import TodoStore

    service = TodoService(TodoStore(tmp_path / "s.db"))
    todo = service.create("Pay\n rent")
    assert todo.title == "Pay rent"
    assert service.rename(todo.id, "Pay\t\trent  now").title == "Pay rent now"
    imported = service.import_todos([{"title": "from\nbackup"}, {"title": "x\u2028y"}])
    assert [t.title for t in imported] == ["from backup", "x y"]


def test_cli_add_and_edit_clean_titles(tmp_path, capsys):
    db = tmp_path / "cli.db"
    assert _cli(db, "add", "Buy milk\nand eggs") == 0
    assert capsys.readouterr().out.splitlines() == ["Added #1: Buy milk and eggs"]
    assert _cli(db, "edit", "1", "Buy\toat  milk") == 0
    assert capsys.readouterr().out.splitlines() == ["Renamed #1: Buy oat milk"]
    source = tmp_path / "in.json"
    source.write_text(json.dumps([{"title": "Walk\n\ndog"}]))
    assert _cli(db, "import", str(source)) == 0
    capsys.readouterr()
    _cli(db, "list")
    assert capsys.readouterr().out.splitlines() == ["[ ] #2 Walk dog", "[ ] #1 Buy oat milk"]


def test_cli_prints_one_line_per_todo(tmp_path, capsys):
    from todo.models import Todo
    from todo.storage import TodoStore

    db = tmp_path / "old.db"
    with TodoStore(db) as store:  # written before titles were cleaned
        store.add(Todo(title="Water the plants"))
        store.add(Todo(title="Buy milk\nand eggs", done=True))
        store.add(Todo(title="Call\tthe   landlord"))
    assert _cli(db, "list") == 0
    assert capsys.readouterr().out.splitlines() == [
        "[ ] #3 Call the landlord",
        "[x] #2 Buy milk and eggs",
        "[ ] #1 Water the plants",
    ]
    assert _cli(db, "undo", "2") == 0
    assert capsys.readouterr().out.splitlines() == ["Reopened #2: Buy milk and eggs"]
    assert _cli(db, "done", "3") == 0
    assert capsys.readouterr().out.splitlines() == ["Completed #3: Call the landlord"]

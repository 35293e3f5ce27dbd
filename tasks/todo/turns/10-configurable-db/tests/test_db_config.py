from todo_hidden_http import call


def test_get_db_path_from_mapping():
    from todo.config import get_db_path

    assert get_db_path({"TODO_DB": "/srv/todos.sqlite"}) == "/srv/todos.sqlite"
    assert get_db_path({}) == "todo.db"
    assert get_db_path({"TODO_DB": ""}) == "todo.db"


def test_get_db_path_reads_process_environment(monkeypatch, tmp_path):
    from todo.config import get_db_path

    monkeypatch.setenv("TODO_DB", str(tmp_path / "x.db"))
    assert get_db_path() == str(tmp_path / "x.db")
    monkeypatch.delenv("TODO_DB")
    assert get_db_path() == "todo.db"


def test_cli_uses_env_and_db_flag_wins(monkeypatch, tmp_path, capsys):
    from todo.cli import main
    from todo.storage import TodoStore

    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    env_db = tmp_path / "env.db"
    flag_db = tmp_path / "flag.db"
    monkeypatch.setenv("TODO_DB", str(env_db))
    assert main(["add", "via env"]) == 0
    assert main(["--db", str(flag_db), "add", "via flag"]) == 0
    with TodoStore(env_db) as store:
        assert [t.title for t in store.list()] == ["via env"]
    with TodoStore(flag_db) as store:
        assert [t.title for t in store.list()] == ["via flag"]


def test_create_app_without_path_uses_env(monkeypatch, tmp_path):
    from todo.storage import TodoStore
    from todo.web import create_app

    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    db = tmp_path / "app.db"
    monkeypatch.setenv("TODO_DB", str(db))
    app = create_app()
    status, _, _ = call(app, "POST", "/todos", json={"title": "from the app"})
    assert status == 201
    with TodoStore(db) as store:
        assert [t.title for t in store.list()] == ["from the app"]

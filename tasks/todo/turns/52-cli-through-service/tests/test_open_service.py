from datetime import datetime, timezone

import pytest


def test_open_service_yields_a_service_on_the_database(tmp_path, capsys):
    from todo.cli import main
    from todo.service import TodoService, open_service

    db = tmp_path / "a.db"
    with open_service(db) as service:
        assert isinstance(service, TodoService)
        first = service.create("Buy milk")
        service.create("Walk dog", priority="high")
        service.complete(first.id)
    with open_service(str(db)) as service:
        assert [(t.title, t.done) for t in service.list()] == [("Walk dog", False), ("Buy milk", True)]
    assert main(["--db", str(db), "list"]) == 0
    assert capsys.readouterr().out.splitlines() == ["[ ] #2 Walk dog", "[x] #1 Buy milk"]


def test_open_service_passes_the_clock_on(tmp_path):
    from todo.service import open_service

    moment = datetime(2024, 5, 1, 12, 30, tzinfo=timezone.utc)
    with open_service(tmp_path / "c.db", clock=lambda: moment) as service:
        todo = service.create("Pay rent")
        assert todo.created_at == "2024-05-01T12:30:00Z"
        assert service.today() == "2024-05-01"
    with open_service(tmp_path / "c.db") as service:
        assert service.get(todo.id).updated_at == "2024-05-01T12:30:00Z"


def test_database_is_closed_after_the_block(tmp_path):
    from todo.service import open_service

    with open_service(tmp_path / "d.db") as service:
        service.create("inside")
    with pytest.raises(Exception):
        service.create("outside")
    with open_service(tmp_path / "d.db") as service:
        assert [t.title for t in service.list()] == ["inside"]


def test_unopenable_database_raises_a_todo_error(tmp_path):
    from todo.errors import TodoError
    from todo.service import open_service

    with pytest.raises(TodoError):
        with open_service(tmp_path / "missing" / "x.db"):
            pass
    assert not (tmp_path / "missing").exists()

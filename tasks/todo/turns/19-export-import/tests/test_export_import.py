import json

import pytest


def _cli(db, *args):
    from todo.cli import main

    return main(["--db", str(db), *args])


def test_export_prints_json_array_in_id_order(tmp_path, capsys):
    db = tmp_path / "a.db"
    _cli(db, "add", "Buy milk")
    _cli(db, "add", "Walk dog")
    _cli(db, "done", "2")
    capsys.readouterr()
    assert _cli(db, "export") == 0
    data = json.loads(capsys.readouterr().out)
    assert [(t["id"], t["title"], t["done"]) for t in data] == [(1, "Buy milk", False), (2, "Walk dog", True)]
    assert all(t["created_at"] for t in data)


def test_import_creates_todos(tmp_path, capsys):
    db = tmp_path / "b.db"
    source = tmp_path / "in.json"
    source.write_text(json.dumps([{"title": "Buy milk"}, {"title": "Walk dog", "done": True, "id": 99}]))
    assert _cli(db, "import", str(source)) == 0
    assert capsys.readouterr().out.strip() == "Imported 2 todo(s)."
    _cli(db, "list")
    assert capsys.readouterr().out.splitlines() == ["[x] #2 Walk dog", "[ ] #1 Buy milk"]


def test_import_is_all_or_nothing(tmp_path, capsys):
    db = tmp_path / "c.db"
    _cli(db, "add", "existing")
    source = tmp_path / "in.json"
    source.write_text(json.dumps([{"title": "fine"}, {"title": "   "}]))
    capsys.readouterr()
    assert _cli(db, "import", str(source)) == 1
    captured = capsys.readouterr()
    assert captured.err.startswith("Error:")
    _cli(db, "list")
    assert capsys.readouterr().out.strip() == "[ ] #1 existing"


def test_import_rejects_unreadable_or_wrong_shape(tmp_path, capsys):
    db = tmp_path / "d.db"
    bad = tmp_path / "bad.json"
    for content in ["{oops", json.dumps({"title": "not a list"}), json.dumps(["just a string"])]:
        bad.write_text(content)
        assert _cli(db, "import", str(bad)) == 1
        assert capsys.readouterr().err.startswith("Error:")
    assert _cli(db, "import", str(tmp_path / "nope.json")) == 1
    assert capsys.readouterr().err.startswith("Error:")
    _cli(db, "list")
    assert capsys.readouterr().out.strip() == "No todos."


def test_export_to_file_and_import_elsewhere(tmp_path, capsys):
    first, second = tmp_path / "one.db", tmp_path / "two.db"
    backup = tmp_path / "backup.json"
    for title in ["a", "b", "c"]:
        _cli(first, "add", title)
    _cli(first, "done", "3")
    assert _cli(first, "export", "--output", str(backup)) == 0
    assert _cli(second, "import", str(backup)) == 0
    data = json.loads(backup.read_text())
    assert [t["title"] for t in data] == ["a", "b", "c"]
    capsys.readouterr()
    _cli(second, "export")
    copied = json.loads(capsys.readouterr().out)
    assert [(t["title"], t["done"]) for t in copied] == [("a", False), ("b", False), ("c", True)]


def test_service_import_todos(tmp_path):
    from todo.errors import ValidationError
    from todo.service import TodoService
    from todo.storage import TodoStore

    service = TodoService(TodoStore(tmp_path / "svc.db"))
    created = service.import_todos([{"title": " x "}, {"title": "y", "done": True}])
    assert [(t.title, t.done) for t in created] == [("x", False), ("y", True)]
    assert all(isinstance(t.id, int) for t in created)
    with pytest.raises(ValidationError):
        service.import_todos([{"title": "z"}, {"title": "w", "done": "yes"}])
    assert len(service.list()) == 2

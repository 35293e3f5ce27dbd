import csv
import io
import json

import pytest


def _cli(db, *args):
    from todo.cli import main

    return main(["--db", str(db), *args])


def _seed(db):
    from todo.service import TodoService
    from todo.storage import TodoStore

    with TodoStore(db) as store:
        service = TodoService(store)
        service.create('Say "hi", then leave', priority="high", tags=["b", "a"], due="2025-01-31")
        second = service.create("Second, with a comma")
        service.complete(second.id)
        archived = service.create("Café ☕")
        service.archive(archived.id)
        return service.list(sort="id", order="asc", archived=None)


def test_todos_to_json_matches_the_export(tmp_path, capsys):
    from todo.transfer import todos_to_json

    db = tmp_path / "a.db"
    todos = _seed(db)
    text = todos_to_json(todos)
    assert isinstance(text, str)
    data = json.loads(text)
    assert [(t["id"], t["title"], t["done"], t["tags"], t["archived"]) for t in data] == [
        (1, 'Say "hi", then leave', False, ["a", "b"], False),
        (2, "Second, with a comma", True, [], False),
        (3, "Café ☕", True, [], True),
    ]
    assert data[0]["due"] == "2025-01-31" and data[0]["priority"] == "high"
    # today's export: indented by two spaces, non-ASCII characters written as they are
    assert text.rstrip("\n") == json.dumps(data, indent=2, ensure_ascii=False)
    capsys.readouterr()
    assert _cli(db, "export") == 0
    assert capsys.readouterr().out.rstrip("\n") == text.rstrip("\n")
    assert todos_to_json([]).strip() == "[]"


def test_todos_to_csv_matches_the_export(tmp_path, capsys):
    from todo.transfer import todos_to_csv

    db = tmp_path / "a.db"
    text = todos_to_csv(_seed(db))
    rows = list(csv.reader(io.StringIO(text)))
    assert rows == [
        ["id", "title", "done", "priority", "due", "tags"],
        ["1", 'Say "hi", then leave', "false", "high", "2025-01-31", "a;b"],
        ["2", "Second, with a comma", "true", "normal", "", ""],
        ["3", "Café ☕", "true", "normal", "", ""],
    ]
    capsys.readouterr()
    assert _cli(db, "export", "--format", "csv") == 0
    assert capsys.readouterr().out.rstrip("\n") == text.rstrip("\n")
    assert list(csv.reader(io.StringIO(todos_to_csv([])))) == [["id", "title", "done", "priority", "due", "tags"]]


def test_items_from_json(tmp_path, capsys):
    from todo.errors import ValidationError
    from todo.transfer import items_from_json

    assert items_from_json('[{"title": "a", "done": true}, {"title": "b"}]') == [{"title": "a", "done": True}, {"title": "b"}]
    assert items_from_json("{}") == {}
    for bad in ["{oops", "", "[1, 2", "nope"]:
        with pytest.raises(ValidationError):
            items_from_json(bad)
    source = tmp_path / "in.json"
    source.write_text("[{\"title\": \"x\"},")
    assert _cli(tmp_path / "b.db", "import", str(source)) == 1
    assert capsys.readouterr().err.startswith("Error:")


def test_export_then_import_through_the_module(tmp_path, capsys):
    from todo.transfer import items_from_json, todos_to_json

    first, second = tmp_path / "one.db", tmp_path / "two.db"
    backup = tmp_path / "backup.json"
    backup.write_text(todos_to_json(_seed(first)), encoding="utf-8")
    assert _cli(second, "import", str(backup)) == 0
    assert capsys.readouterr().out.strip() == "Imported 3 todo(s)."
    _cli(second, "export")
    copied = items_from_json(capsys.readouterr().out)
    assert [(t["title"], t["done"], t["archived"]) for t in copied] == [
        ('Say "hi", then leave', False, False),
        ("Second, with a comma", True, False),
        ("Café ☕", True, True),
    ]

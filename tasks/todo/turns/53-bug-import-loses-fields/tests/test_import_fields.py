import json

import pytest

MAX_TAGS = {{ max_tags }}
KEYS = ("title", "done", "priority", "tags", "due", "archived")


def _cli(db, *args):
    from todo.cli import main

    return main(["--db", str(db), *args])


def _service(path):
    from todo.service import TodoService
    from todo.storage import TodoStore

    return TodoService(TodoStore(path))


def _exported(db, capsys):
    capsys.readouterr()
    assert _cli(db, "export") == 0
    return [tuple(todo[key] for key in KEYS) for todo in json.loads(capsys.readouterr().out)]


def test_export_import_round_trip(tmp_path, capsys):
    old, new, backup = tmp_path / "old.db", tmp_path / "new.db", tmp_path / "backup.json"
    service = _service(old)
    service.create("File taxes", priority="high", tags=["money", "home"], due="2025-04-30")
    service.create("Someday", priority="low")
    done = service.create("Old project", tags=["work"])
    service.archive(done.id)
    finished = service.create("Call mom", due="2024-01-02")
    service.complete(finished.id)
    assert _cli(old, "export", "-o", str(backup)) == 0
    assert _cli(new, "import", str(backup)) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "Imported 4 todo(s)."
    assert _exported(new, capsys) == [
        ("File taxes", False, "high", ["home", "money"], "2025-04-30", False),
        ("Someday", False, "low", [], None, False),
        ("Old project", True, "normal", ["work"], None, True),
        ("Call mom", True, "normal", [], "2024-01-02", False),
    ]
    _cli(new, "list")
    assert capsys.readouterr().out.splitlines() == ["[x] #4 Call mom", "[ ] #2 Someday", "[ ] #1 File taxes"]


def test_missing_fields_get_defaults(tmp_path, capsys):
    db, source = tmp_path / "a.db", tmp_path / "in.json"
    source.write_text(json.dumps([{"title": "bare"}, {"title": "tagged", "tags": [" Home", "HOME", "x"]},
                                  {"title": "gone", "archived": True, "done": False}]))
    assert _cli(db, "import", str(source)) == 0
    assert _exported(db, capsys) == [
        ("bare", False, "normal", [], None, False),
        ("tagged", False, "normal", ["home", "x"], None, False),
        ("gone", True, "normal", [], None, True),
    ]


@pytest.mark.parametrize(
    "bad",
    [
        {"priority": "critical"},
        {"priority": "HIGH"},
        {"tags": "work"},
        {"tags": [""]},
        {"tags": [f"t{i}" for i in range(MAX_TAGS + 1)]},
        {"due": "2025-02-30"},
        {"due": "tomorrow"},
        {"archived": "yes"},
    ],
)
def test_invalid_values_import_nothing(tmp_path, capsys, bad):
    db, source = tmp_path / "a.db", tmp_path / "in.json"
    _cli(db, "add", "existing")
    source.write_text(json.dumps([{"title": "fine", "priority": "high"}, {"title": "broken", **bad}]))
    capsys.readouterr()
    assert _cli(db, "import", str(source)) == 1
    assert capsys.readouterr().err.startswith("Error:")
    assert [row[0] for row in _exported(db, capsys)] == ["existing"]


def test_service_import_todos_keeps_fields(tmp_path):
    from todo.errors import ValidationError

    service = _service(tmp_path / "s.db")
    created = service.import_todos([
        {"id": 50, "title": "a", "priority": "high", "tags": ["Work"], "due": "2030-01-01", "created_at": "1999-01-01T00:00:00Z"},
        {"title": "b", "archived": True},
        {"title": "c", "tags": [f"t{i}" for i in range(MAX_TAGS)]},
    ])
    assert [(t.title, t.priority, t.tags, t.due, t.done, t.archived) for t in created[:2]] == [
        ("a", "high", ["work"], "2030-01-01", False, False),
        ("b", "normal", [], None, True, True),
    ]
    assert created[0].id != 50 and created[0].created_at != "1999-01-01T00:00:00Z"
    assert len(service.get(created[2].id).tags) == MAX_TAGS
    assert [t.title for t in service.list(archived=True)] == ["b"]
    for field, bad in [("priority", "asap"), ("tags", [1]), ("due", "2030-13-01"), ("archived", 1)]:
        with pytest.raises(ValidationError) as caught:
            service.import_todos([{"title": "ok"}, {"title": "x", field: bad}])
        assert caught.value.field == field
    assert len(service.list(archived=None)) == 3

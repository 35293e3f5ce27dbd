import csv
import io
import json

import pytest
from todo_hidden_http import call

HEADER = ["id", "title", "done", "priority", "due", "tags"]


def _fill(db):
    from todo.web import create_app

    app = create_app(str(db))
    rows = [
        {"title": "Buy milk", "tags": ["shopping"]},
        {"title": 'Say "hi", then leave', "priority": "high", "due": "2024-12-24", "tags": ["home", "family"]},
        {"title": "Ünïcödé ✓ todo", "priority": "low"},
    ]
    ids = [call(app, "POST", "/todos", json=row)[2]["id"] for row in rows]
    call(app, "POST", f"/todos/{ids[1]}/complete")
    return ids


def _cli(db, *args):
    from todo.cli import main

    return main(["--db", str(db), *args])


def test_csv_to_stdout(tmp_path, capsys):
    db = tmp_path / "a.db"
    ids = _fill(db)
    capsys.readouterr()
    assert _cli(db, "export", "--format", "csv") == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert rows == [
        HEADER,
        [str(ids[0]), "Buy milk", "false", "normal", "", "shopping"],
        [str(ids[1]), 'Say "hi", then leave', "true", "high", "2024-12-24", "family;home"],
        [str(ids[2]), "Ünïcödé ✓ todo", "false", "low", "", ""],
    ]


def test_csv_to_file(tmp_path, capsys):
    db = tmp_path / "b.db"
    out = tmp_path / "todos.csv"
    ids = _fill(db)
    capsys.readouterr()
    assert _cli(db, "export", "--format", "csv", "--output", str(out)) == 0
    assert capsys.readouterr().out.strip() == f"Exported 3 todo(s) to {out}"
    with open(out, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [row["id"] for row in rows] == [str(i) for i in ids]
    assert rows[1]["title"] == 'Say "hi", then leave' and rows[1]["tags"] == "family;home"
    assert list(rows[0]) == HEADER


def test_empty_database_gives_only_the_header(tmp_path, capsys):
    db = tmp_path / "c.db"
    assert _cli(db, "export", "--format", "csv") == 0
    assert capsys.readouterr().out.strip() == ",".join(HEADER)
    for fmt in ["xml", "CSVX"]:
        with pytest.raises(SystemExit) as info:
            _cli(db, "export", "--format", fmt)
        assert info.value.code == 2


def test_json_stays_the_default(tmp_path, capsys):
    db = tmp_path / "d.db"
    _fill(db)
    capsys.readouterr()
    assert _cli(db, "export", "--format", "json") == 0
    as_json = json.loads(capsys.readouterr().out)
    assert _cli(db, "export") == 0
    assert json.loads(capsys.readouterr().out) == as_json
    assert [t["title"] for t in as_json][0] == "Buy milk"

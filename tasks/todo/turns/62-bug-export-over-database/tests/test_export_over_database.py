import os

import pytest


def _cli(*args):
    from todo.cli import main

    return main(list(args))


def _seed(db, capsys):
    _cli("--db", str(db), "add", "Renew passport")
    _cli("--db", str(db), "add", "Call the bank")
    capsys.readouterr()
    return db.read_bytes()


def _list(db, capsys):
    assert _cli("--db", str(db), "list") == 0
    return capsys.readouterr().out.splitlines()


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_export_onto_the_database_is_refused(tmp_path, capsys, fmt):
    db = tmp_path / "todo.db"
    before = _seed(db, capsys)
    assert _cli("--db", str(db), "export", "--format", fmt, "-o", str(db)) == 1
    captured = capsys.readouterr()
    assert captured.err.startswith("Error:")
    assert "Exported" not in captured.out
    assert db.read_bytes() == before
    assert _list(db, capsys) == ["[ ] #2 Call the bank", "[ ] #1 Renew passport"]


def test_other_spellings_of_the_same_path(tmp_path, capsys, monkeypatch):
    (tmp_path / "sub").mkdir()
    db = tmp_path / "todo.db"
    before = _seed(db, capsys)
    monkeypatch.chdir(tmp_path)
    for output in ["todo.db", "./todo.db", os.path.join("sub", "..", "todo.db"), str(db)]:
        assert _cli("--db", "todo.db", "export", "-o", output) == 1, output
        assert capsys.readouterr().err.startswith("Error:")
        assert _cli("--db", str(db), "export", "--output", output) == 1, output
        assert capsys.readouterr().err.startswith("Error:")
    assert db.read_bytes() == before


def test_database_from_the_environment(tmp_path, capsys, monkeypatch):
    db = tmp_path / "env.db"
    before = _seed(db, capsys)
    monkeypatch.setenv("TODO_DB", str(db))
    assert _cli("export", "-o", str(db)) == 1
    assert capsys.readouterr().err.startswith("Error:")
    assert db.read_bytes() == before
    other = tmp_path / "backup.json"
    other.write_text("old backup")
    assert _cli("export", "-o", str(other)) == 0
    assert capsys.readouterr().out.strip() == f"Exported 2 todo(s) to {other}"
    assert '"Renew passport"' in other.read_text(encoding="utf-8")
    assert len(_list(db, capsys)) == 2

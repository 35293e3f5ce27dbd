import json

import pytest


def _cli(db, *args):
    from todo.cli import main

    return main(["--db", str(db), *args])


def _db(tmp_path, capsys):
    db = tmp_path / "todo.db"
    _cli(db, "add", "Renew passport")
    capsys.readouterr()
    return db


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_export_into_a_missing_folder(tmp_path, capsys, fmt):
    db = _db(tmp_path, capsys)
    target = tmp_path / "backups" / f"todos.{fmt}"
    assert _cli(db, "export", "--format", fmt, "-o", str(target)) == 1
    captured = capsys.readouterr()
    assert captured.err.startswith("Error:") and str(target) in captured.err
    assert "Exported" not in captured.out
    assert not (tmp_path / "backups").exists()


def test_export_onto_a_directory(tmp_path, capsys):
    db = _db(tmp_path, capsys)
    folder = tmp_path / "backups"
    folder.mkdir()
    assert _cli(db, "export", "--output", str(folder)) == 1
    captured = capsys.readouterr()
    assert captured.err.startswith("Error:") and str(folder) in captured.err
    assert captured.out == ""
    assert list(folder.iterdir()) == []


def test_export_still_writes_good_files(tmp_path, capsys):
    db = _db(tmp_path, capsys)
    assert _cli(db, "export", "-o", str(tmp_path / "missing" / "x.json")) == 1
    capsys.readouterr()
    target = tmp_path / "todos.json"
    assert _cli(db, "export", "-o", str(target)) == 0
    assert capsys.readouterr().out.strip() == f"Exported 1 todo(s) to {target}"
    assert [t["title"] for t in json.loads(target.read_text(encoding="utf-8"))] == ["Renew passport"]

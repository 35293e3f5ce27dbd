import os
import subprocess
import sys
from pathlib import Path


def _run(db, *args):
    from todo.cli import main

    return main(["--db", str(db), *args])


def test_add_prints_confirmation(tmp_path, capsys):
    db = tmp_path / "cli.db"
    assert _run(db, "add", "Buy milk") == 0
    out = capsys.readouterr().out
    assert out.strip() == "Added #1: Buy milk"


def test_add_and_list_oldest_first(tmp_path, capsys):
    db = tmp_path / "cli.db"
    _run(db, "add", "Buy milk")
    _run(db, "add", "Walk dog")
    capsys.readouterr()
    assert _run(db, "list") == 0
    assert capsys.readouterr().out.splitlines() == ["[ ] #1 Buy milk", "[ ] #2 Walk dog"]


def test_done_marks_todo(tmp_path, capsys):
    db = tmp_path / "cli.db"
    _run(db, "add", "Buy milk")
    capsys.readouterr()
    assert _run(db, "done", "1") == 0
    assert capsys.readouterr().out.strip() == "Completed #1: Buy milk"
    _run(db, "list")
    assert capsys.readouterr().out.strip() == "[x] #1 Buy milk"


def test_delete_and_empty_list(tmp_path, capsys):
    db = tmp_path / "cli.db"
    _run(db, "add", "Buy milk")
    capsys.readouterr()
    assert _run(db, "delete", "1") == 0
    assert capsys.readouterr().out.strip() == "Deleted #1"
    assert _run(db, "list") == 0
    assert capsys.readouterr().out.strip() == "No todos."


def test_unknown_id_and_invalid_title_exit_1(tmp_path, capsys):
    db = tmp_path / "cli.db"
    _run(db, "add", "Buy milk")
    capsys.readouterr()
    assert _run(db, "done", "42") == 1
    captured = capsys.readouterr()
    assert captured.err.startswith("Error:")
    assert captured.out == ""
    assert _run(db, "add", "   ") == 1
    assert capsys.readouterr().err.startswith("Error:")
    _run(db, "list")
    assert capsys.readouterr().out.strip() == "[ ] #1 Buy milk"


def test_python_dash_m_todo(tmp_path):
    import todo

    root = Path(todo.__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=str(root))
    db = str(tmp_path / "sub.db")
    added = subprocess.run(
        [sys.executable, "-m", "todo", "--db", db, "add", "Buy milk"],
        capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=60,
    )
    assert added.returncode == 0, added.stderr
    assert added.stdout.strip() == "Added #1: Buy milk"
    listed = subprocess.run(
        [sys.executable, "-m", "todo", "--db", db, "list"],
        capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=60,
    )
    assert listed.returncode == 0
    assert listed.stdout.strip() == "[ ] #1 Buy milk"

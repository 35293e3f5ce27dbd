import os
import subprocess
import sys

import pytest


def _main(*args):
    from todo.cli import main

    return main(list(args))


def test_missing_folder_is_a_cli_error(tmp_path, capsys):
    db = tmp_path / "missing" / "todo.db"
    assert _main("--db", str(db), "add", "Buy milk") == 1
    captured = capsys.readouterr()
    assert captured.err.startswith("Error:")
    assert str(db) in captured.err
    assert captured.out == ""
    assert not (tmp_path / "missing").exists()
    assert _main("--db", str(db), "list") == 1
    assert capsys.readouterr().err.startswith("Error:")


def test_directory_as_database(tmp_path, capsys):
    assert _main("--db", str(tmp_path), "list") == 1
    captured = capsys.readouterr()
    assert captured.err.startswith("Error:") and str(tmp_path) in captured.err


def test_file_that_is_not_a_database_is_left_alone(tmp_path, capsys):
    notes = tmp_path / "notes.txt"
    text = "shopping list\n- milk\n- eggs\n" * 20
    notes.write_text(text)
    assert _main("--db", str(notes), "add", "Buy milk") == 1
    captured = capsys.readouterr()
    assert captured.err.startswith("Error:") and str(notes) in captured.err
    assert notes.read_text() == text
    good = tmp_path / "good.db"
    assert _main("--db", str(good), "add", "Buy milk") == 0
    assert capsys.readouterr().out.strip() == "Added #1: Buy milk"


def test_serve_with_an_unopenable_database(tmp_path, capsys):
    db = tmp_path / "nope" / "todo.db"
    assert _main("--db", str(db), "serve", "--port", "0") == 1
    assert capsys.readouterr().err.startswith("Error:")


def test_todo_db_in_a_missing_folder(tmp_path):
    db = tmp_path / "typo" / "todo.db"
    env = {**os.environ, "TODO_DB": str(db)}
    result = subprocess.run([sys.executable, "-m", "todo", "list"], capture_output=True, text=True, env=env, check=False)
    assert result.returncode == 1
    assert result.stderr.startswith("Error:")
    assert "Traceback" not in result.stderr


def test_store_raises_a_todo_error(tmp_path):
    from todo.errors import TodoError
    from todo.storage import TodoStore

    with pytest.raises(TodoError):
        TodoStore(tmp_path / "missing" / "todo.db")
    notes = tmp_path / "notes.txt"
    notes.write_text("not a database at all, just text " * 10)
    with pytest.raises(TodoError):
        TodoStore(notes)

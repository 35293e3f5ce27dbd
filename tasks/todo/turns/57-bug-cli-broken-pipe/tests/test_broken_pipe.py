import subprocess
import sys

import pytest

COUNT = 3000


@pytest.fixture(scope="module")
def big_db(tmp_path_factory):
    from todo.service import TodoService
    from todo.storage import TodoStore

    db = tmp_path_factory.mktemp("pipe") / "big.db"
    with TodoStore(db) as store:
        TodoService(store).import_todos([{"title": f"Imported task number {n}", "done": n % 3 == 0} for n in range(1, COUNT + 1)])
    return str(db)


def _head(db, *args, lines=2):
    process = subprocess.Popen([sys.executable, "-m", "todo", "--db", db, *args], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    first = [process.stdout.readline() for _ in range(lines)]
    process.stdout.close()
    errors = process.stderr.read()
    process.stderr.close()
    return first, errors, process.wait(timeout=30)


def test_list_into_a_closed_pipe_is_quiet(big_db, capsys):
    from todo.cli import main

    first, errors, code = _head(big_db, "list")
    assert first == [f"[x] #{COUNT} Imported task number {COUNT}\n", f"[ ] #{COUNT - 1} Imported task number {COUNT - 1}\n"]
    assert errors == ""
    assert code == 1
    assert main(["--db", big_db, "list"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and len(captured.out.splitlines()) == COUNT


def test_export_into_a_closed_pipe_is_quiet(big_db):
    first, errors, code = _head(big_db, "export", lines=1)
    assert first[0].startswith("[")
    assert errors == ""
    assert code == 1

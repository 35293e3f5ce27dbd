import json
import os
import subprocess
import sys
from datetime import datetime, timezone

import pytest

VAR = "{{ clock_env }}"


def _cli(monkeypatch, capsys, db, *args, value=None):
    from todo.cli import main

    if value is None:
        monkeypatch.delenv(VAR, raising=False)
    else:
        monkeypatch.setenv(VAR, value)
    code = main(["--db", str(db), *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_environment_pins_the_cli_clock(tmp_path, monkeypatch, capsys):
    db = tmp_path / "a.db"
    assert _cli(monkeypatch, capsys, db, "add", "Pay rent", value="2024-05-01T12:00:00Z")[0] == 0
    assert _cli(monkeypatch, capsys, db, "done", "1", value="2024-06-02T08:30:15Z")[0] == 0
    code, out, err = _cli(monkeypatch, capsys, db, "export", value="")
    assert code == 0, err
    todo = json.loads(out)[0]
    assert (todo["created_at"], todo["updated_at"]) == ("2024-05-01T12:00:00Z", "2024-06-02T08:30:15Z")


def test_python_m_todo_reads_the_variable(tmp_path):
    db = str(tmp_path / "p.db")
    env = {**os.environ, VAR: "2022-02-22T22:22:22Z"}
    command = [sys.executable, "-m", "todo", "--db", db]
    subprocess.run([*command, "add", "Stamp me"], capture_output=True, text=True, env=env, check=True)
    result = subprocess.run([*command, "export"], capture_output=True, text=True, env=env, check=True)
    assert json.loads(result.stdout)[0]["created_at"] == "2022-02-22T22:22:22Z"


@pytest.mark.parametrize("bad", ["yesterday", "2024-05-01", "2024-13-01T00:00:00Z", "2024-05-01 12:00:00"])
def test_malformed_value_is_a_cli_error(tmp_path, monkeypatch, capsys, bad):
    db = tmp_path / "a.db"
    code, out, err = _cli(monkeypatch, capsys, db, "add", "Pay rent", value=bad)
    assert code == 1
    assert err.startswith("Error:")
    assert _cli(monkeypatch, capsys, db, "list")[1].strip() == "No todos."


def test_main_takes_a_clock(tmp_path, capsys):
    from todo.cli import main

    db = str(tmp_path / "m.db")
    moment = datetime(2023, 12, 31, 23, 59, 59, tzinfo=timezone.utc)
    assert main(["--db", db, "add", "New year"], clock=lambda: moment) == 0
    assert main(["--db", db, "export"], clock=lambda: moment) == 0
    out = capsys.readouterr().out
    todo = json.loads(out[out.index("["):])[0]
    assert todo["created_at"] == "2023-12-31T23:59:59Z" and todo["updated_at"] == "2023-12-31T23:59:59Z"


def test_get_clock_reads_the_environment():
    from todo.config import get_clock
    from todo.errors import TodoError

    assert get_clock({}) is None
    assert get_clock({VAR: ""}) is None
    assert get_clock({"TODO_DB": "x.db"}) is None
    clock = get_clock({VAR: "2024-02-29T06:07:08Z"})
    assert clock() == datetime(2024, 2, 29, 6, 7, 8, tzinfo=timezone.utc)
    assert clock() == clock()
    with pytest.raises(TodoError):
        get_clock({VAR: "2024-02-30T06:07:08Z"})
    with pytest.raises(TodoError):
        get_clock({VAR: "soon"})

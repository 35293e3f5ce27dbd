"""Tasks are data checked by a schema; every task shipped is valid."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from stamina_gym.errors import ConfigError, TaskError
from stamina_gym.task import find_tasks, load_task, load_task_dir
from stamina_gym.validate import validate_task
from tests.conftest import MINI
from tests.validation_record import read_record, record_key, write_record


def copy_mini(tmp_path):
    root = tmp_path / "mini"
    shutil.copytree(MINI, root)
    return root


def test_unknown_key_in_task_yaml_is_named_with_the_file(tmp_path):
    root = copy_mini(tmp_path)
    (root / "task.yaml").write_text((root / "task.yaml").read_text() + "colour: red\n")
    with pytest.raises(TaskError, match=r"task\.yaml: colour: unknown key"):
        load_task_dir(root)


def test_unknown_key_in_turn_yaml_is_named_with_the_file(tmp_path):
    root = copy_mini(tmp_path)
    turn = root / "turns" / "02-mul" / "turn.yaml"
    turn.write_text(turn.read_text() + "promts: [x]\n")
    with pytest.raises(TaskError, match=r"02-mul/turn\.yaml: promts: unknown key"):
        load_task_dir(root)


def test_unknown_task_gets_did_you_mean():
    with pytest.raises(ConfigError, match="did you mean 'todo'"):
        load_task("tood")


def test_outside_task_folders_get_env_ids_of_their_own(tmp_path):
    copy_mini(tmp_path)
    code = "import gymnasium as gym, stamina_gym; env = gym.make('Stamina-mini-v1'); print(len(env.unwrapped.turns)); env.close()"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"STAMINA_GYM_TASKS": str(tmp_path), "PATH": "/usr/bin:/bin"})  # fmt: skip
    assert out.stdout.strip() == "2"


def test_validator_catches_a_test_that_does_not_discriminate(tmp_path):
    root = copy_mini(tmp_path)
    (root / "turns/02-mul/tests/test_always.py").write_text("def test_always():\n    assert True\n")
    problems = [str(p) for p in validate_task(load_task_dir(root))]
    assert any("test_always passes before its reference patch" in p for p in problems), problems


def test_validator_catches_a_patch_that_breaks_earlier_tests(tmp_path):
    root = copy_mini(tmp_path)
    patch = root / "turns/02-mul/reference.patch"
    patch.write_text(patch.read_text().replace("+def mul(a, b):", "+add = None\n+\n+\n+def mul(a, b):"))
    problems = [str(p) for p in validate_task(load_task_dir(root))]
    broken = [p for p in problems if "breaks" in p]
    assert len(broken) == 1 and broken[0].startswith("turn 2: the reference patch breaks 2 earlier test(s): "
                                                     "01-add/test_add.py::test_add_small, 01-add/test_add.py::test_add_negative"), problems
    assert "add them to its retires: [01-add/test_add.py::test_add_small, 01-add/test_add.py::test_add_negative]" in broken[0]


def test_validator_catches_a_retire_of_nothing(tmp_path):
    root = copy_mini(tmp_path)
    turn = root / "turns/02-mul/turn.yaml"
    turn.write_text(turn.read_text() + "retires: ['01-add/test_add.py::test_gone']\n")
    problems = [str(p) for p in validate_task(load_task_dir(root))]
    assert problems == ["turn 2: retires '01-add/test_add.py::test_gone', which is no earlier turn's test"]


def test_retired_tests_leave_the_regression_set(tmp_path):
    root = copy_mini(tmp_path)
    turn = root / "turns/02-mul/turn.yaml"
    turn.write_text(turn.read_text() + "retires: ['01-add/test_add.py::test_add_negative']\n")
    task = load_task_dir(root)
    assert task.regression_ids(2) == ("01-add/test_add.py::test_add_small",)


@pytest.mark.slow
@pytest.mark.timeout(1500)
@pytest.mark.parametrize("task_id", sorted(find_tasks()))
def test_every_shipped_task_is_valid(task_id):
    """Every state of the reference replayed and checked (``validate_task``), unless a
    record obtained under the same task files, validation code and interpreter says so
    (``tests/validation_record.py``); the last two states are checked in full every
    time. A full validation of the todo task takes about ten minutes on a 2-core machine
    (every state reruns every earlier test, sealed and as written: sealed judging's
    equivalence check) and writes the record to commit."""
    task = load_task(task_id)
    key = record_key(task)  # of the code as this run imported it, not as the files are when it ends
    record = read_record(task)
    if record is None:
        problems = [str(p) for p in validate_task(task)]
        if not problems:
            print(f"validated in full; record written to {write_record(task, problems, key)}: commit it")
    else:
        problems = record["problems"] + [str(p) for p in validate_task(task, first=len(task.turns))]
    assert not problems, "\n".join(problems)


def test_validator_counts_what_the_todo_task_holds():
    from stamina_gym.validate import task_counts

    counts = task_counts(load_task("todo"))
    assert counts["turns"] == len(load_task("todo").turns) == sum(counts["kinds"].values())
    assert counts["consistency rules"] >= 5 and counts["memory probes"] >= 2
    assert counts["retired tests"] >= 2 and counts["prompt variants"] >= 2 * counts["turns"]


def test_turn_folders_sort_by_number_so_a_hundredth_turn_comes_last(tmp_path):
    from stamina_gym.task import turn_folders

    for name in ["100-last", "9-ninth", "10-tenth", "99-almost", "01-first"]:
        (tmp_path / "turns" / name).mkdir(parents=True)
    assert [p.name for p in turn_folders(tmp_path)] == ["01-first", "9-ninth", "10-tenth", "99-almost", "100-last"]


def test_a_turn_may_name_which_tests_of_its_files_are_its_own(tmp_path):
    """A project's test file at a commit holds older tests that passed before the turn:
    only the named ones are the turn's, and the validator holds them to fail before."""
    root = copy_mini(tmp_path)
    tests = root / "turns/02-mul/tests/test_mul.py"
    tests.write_text(tests.read_text() + "\n\ndef test_add_still_works():\n    import calc\n\n    assert calc.add(1, 1) == 2\n")
    turn = root / "turns/02-mul/turn.yaml"
    problems = [str(p) for p in validate_task(load_task_dir(root))]
    assert any("test_add_still_works passes before its reference patch" in p for p in problems), problems
    turn.write_text(turn.read_text() + "tests: [test_mul.py::test_mul]\n")
    task = load_task_dir(root)
    assert task.turns[1].test_ids == ("02-mul/test_mul.py::test_mul",)
    assert "02-mul/test_mul.py::test_add_still_works" in task.turns[1].collected
    assert validate_task(task) == []
    turn.write_text(turn.read_text().replace("test_mul.py::test_mul]", "test_mul.py::test_mull]"))
    with pytest.raises(TaskError, match=r"02-mul/turn\.yaml: tests names what its files do not hold: \['test_mul\.py::test_mull'\]"):
        load_task_dir(root)


def test_the_validator_names_tests_pytest_collects_that_the_task_does_not_count(tmp_path):
    root = copy_mini(tmp_path)
    tests = root / "turns/02-mul/tests/test_mul.py"
    tests.write_text("import unittest\n\n" + tests.read_text() + "\n\nBase = type('Base', (unittest.TestCase,), "
                     "{'test_made_at_run_time': lambda self: None})\n\n\nclass TestMade(Base):\n    pass\n")  # fmt: skip
    problems = [str(p) for p in validate_task(load_task_dir(root))]
    assert "turn 2: pytest collects 2 test(s) the task does not count: 02-mul/test_mul.py::Base::test_made_at_run_time, " \
           "02-mul/test_mul.py::TestMade::test_made_at_run_time; base classes it could not read: " \
           "test_mul.py: class TestMade: base Base" in problems, problems


def test_the_validator_says_when_a_reference_patch_undoes_a_source_fix(tmp_path):
    root = copy_mini(tmp_path)
    (root / "task.yaml").write_text((root / "task.yaml").read_text()
                                    + "fixes:\n  - {path: 'calc/*.py', old: 'a + b', new: 'b + a'}\n")  # fmt: skip
    problems = [str(p) for p in validate_task(load_task_dir(root))]
    assert "turn 1: calc/__init__.py holds 'a + b' again: the source fix for calc/*.py is undone" in problems, problems

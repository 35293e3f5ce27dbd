"""The exact-output check (``stamina_gym.exact_text``, ``validate --exact-text``): a test
that compares printed output with wording no prompt gave is named; the same test passes the
check once every paraphrase of a turn gives the wording; the test's own inputs, numbers and
f-string values are not wording to give."""

from __future__ import annotations



from stamina_gym import exact_text
from tests.conftest import mini_task

PLANTED = '''import calc


def test_add_prints_the_sum(capsys):
    calc.show(calc.add(2, 3), "apples")
    assert capsys.readouterr().out == "Total of apples: 5\\n"


def test_the_sum_of_a_title(capsys):
    name = "pears"
    calc.show(calc.add(1, 1), name)
    out = capsys.readouterr().out
    assert out == f"Total of {name}: 2\\n"
    assert "Total of pears" in out
'''


def _mini(tmp_path, prompts):
    return mini_task(tmp_path, {"test_add.py": PLANTED}, prompts=prompts)


def test_output_wording_no_paraphrase_gives_is_named(tmp_path):
    task = _mini(tmp_path, ["Add calc.add(a, b) and calc.show(n, what), which prints the total.",
                            "calc.add(a, b) returns the sum; calc.show(n, what) prints it: `Total of <what>: <n>`."])  # fmt: skip
    missing = exact_text.check_turn(task, task.turns[0], {})
    assert {(d.line, d.text) for d in missing} == {(6, "total of"), (13, "total of"), (14, "total of")}
    assert all(d.file == "01-add/test_add.py" for d in missing)


def test_wording_every_paraphrase_gives_passes(tmp_path):
    task = _mini(tmp_path, ["Add calc.add(a, b) and calc.show(n, what), which prints `Total of <what>: <n>`.",
                            "calc.show(n, what) prints a line such as 'Total of apples: 5'; calc.add(a, b) returns a + b."])  # fmt: skip
    assert exact_text.check_turn(task, task.turns[0], {}) == []

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
    assert {(d.line, d.text) for d in missing} == {(6, "Total of"), (13, "Total of"), (14, "Total of")}
    assert all(d.file == "01-add/test_add.py" for d in missing)


def test_wording_every_paraphrase_gives_passes(tmp_path):
    task = _mini(tmp_path, ["Add calc.add(a, b) and calc.show(n, what), which prints `Total of <what>: <n>`.",
                            "calc.show(n, what) prints a line such as 'Total of apples: 5'; calc.add(a, b) returns a + b."])  # fmt: skip
    assert exact_text.check_turn(task, task.turns[0], {}) == []


#: Error messages a test compares: a pattern of ``raises(match=...)`` (read as the text it
#: asks for), ``assertRaisesRegex``'s, and an exception's ``str``.
ERRORS = '''import unittest

import pytest

import calc


def test_add_refuses_text():
    with pytest.raises(TypeError, match=r"add\\(\\) needs numbers, got \\w+$"):
        calc.add("a", 1)


def test_add_names_the_argument():
    with pytest.raises(TypeError) as info:
        calc.add(1, None)
    assert "Argument b is None" in str(info.value)


class TestAdd(unittest.TestCase):
    def test_overflow(self):
        self.assertRaisesRegex(OverflowError, "sums? past the limit", calc.add, 10**9, 10**9)
'''


def test_error_wording_no_paraphrase_gives_is_named_and_a_regex_is_read_as_its_text(tmp_path):
    """Fails where only printed output was wording: a test that checks an error's message
    grades the wording as much."""
    task = mini_task(tmp_path, {"test_add.py": ERRORS}, prompts=["Add calc.add(a, b): it refuses what is not a number.",
                                                                  "calc.add(a, b) returns a + b, numbers only."])  # fmt: skip
    missing = exact_text.check_turn(task, task.turns[0], {})
    assert sorted((d.line, d.original) for d in missing) == [
        (9, "add() needs numbers, got"), (16, "Argument b is None"), (21, "past the limit"), (21, "sum")]  # "sums?"
    told = mini_task(tmp_path / "told", {"test_add.py": ERRORS}, prompts=[
        "Add calc.add(a, b); a text argument raises TypeError('add() needs numbers, got str'), None raises TypeError "
        "'Argument b is None', a total over 10**9 raises OverflowError('sum past the limit')."] * 2)  # fmt: skip
    assert exact_text.check_turn(told, told.turns[0], {}) == []


WARNINGS = '''import unittest
import warnings

import calc


class TestOld(unittest.TestCase):
    def test_old_add_warns(self):
        with warnings.catch_warnings(record=True) as w:
            calc.old_add(1, 2)
        self.assertEqual(str(w[-1].message), "old_add is deprecated, use add")

    def test_add_reports(self):
        out = calc.report(1, 2)
        self.assertIn("Total: 3", out)
        self.assertEqual(calc.add(1, 2), 3)
'''


def test_a_warnings_message_and_unittests_comparisons_are_wording(tmp_path):
    """Fails where only ``assert`` statements and an error's message were read: cachetools'
    tests compare a recorded warning's message through ``self.assertEqual``."""
    task = mini_task(tmp_path, {"test_add.py": WARNINGS}, prompts=["Deprecate calc.old_add and add calc.report(a, b)."] * 2)
    missing = exact_text.check_turn(task, task.turns[0], {})
    assert sorted((d.line, d.original) for d in missing) == [(11, "old_add is deprecated, use add"), (15, "Total:")]


def test_wording_told_in_another_case_is_not_told(tmp_path):
    """Fails on a check that folded case: ``== "Total of apples: 5"`` grades the capital T,
    and a prompt that says "total of" told a solution to write what fails."""
    task = _mini(tmp_path, ["Add calc.add(a, b) and calc.show(n, what), which prints `total of <what>: <n>`."] * 2)
    assert {(d.line, d.text) for d in exact_text.check_turn(task, task.turns[0], {})} == {(6, "Total of"), (13, "Total of"), (14, "Total of")}


KEYS = '''import pytest

import schema


def test_missing_key():
    with pytest.raises(schema.SchemaError) as info:
        schema.Schema({"key": int}).validate({})
    assert info.value.args[0] == "Missing key: 'key'"
    with pytest.raises(schema.SchemaError, match=r"^Wrong key \\S+ in"):
        schema.Schema({}).validate({"n": 5})
'''


def test_a_piece_is_of_the_whole_text_the_test_compares(tmp_path):
    """Fails on a check that kept only the pieces: ``"Missing key: 'key'"`` is cut at the
    test's own ``"key"``: a prompt that showed the piece ``Missing key: '`` showed a fragment,
    and one that says "Missing keys" told it. A short input of the test's is its own only
    where quoted (the word "key" is wording, ``'key'`` a value). A pattern's syntax is one
    ``…``, its anchors nothing."""
    task = mini_task(tmp_path, {"test_keys.py": KEYS}, prompts=["Missing keys are refused. Wrong keys too."] * 2)
    missing = exact_text.check_turn(task, task.turns[0], {})
    assert sorted((d.line, d.original, d.whole) for d in missing) == [
        (9, "Missing key: '", "Missing key: 'key'"), (10, "Wrong key", "Wrong key … in")]  # fmt: skip
    told = mini_task(tmp_path / "told", {"test_keys.py": KEYS}, prompts=[
        "Name what is wrong: `Missing key: '<key>'`, and `Wrong key <key> in <data>`."] * 2)  # fmt: skip
    assert exact_text.check_turn(told, told.turns[0], {}) == []
    plural = mini_task(tmp_path / "plural", {"test_keys.py": KEYS}, prompts=[
        "Name what is wrong: `Missing keys: '<key>'`, and `Wrong keys <key> in <data>`."] * 2)  # fmt: skip
    assert {d.line for d in exact_text.check_turn(plural, plural.turns[0], {})} == {9, 10}


ONE_OF = '''import schema


def test_wrong_keys():
    try:
        schema.Schema({}).validate({"bad": 5})
    except schema.SchemaError as e:
        assert e.args[0].startswith("Wrong keys 'bad' in")
    try:
        schema.Schema({}).validate({"n": 5, "m": 1})
    except schema.SchemaError as e:
        assert e.args[0] in ["Wrong keys 'n', 'm' in {}", "Wrong keys 'm', 'n' in {}"]
'''


def test_a_message_checked_for_its_start_or_against_a_list_is_wording(tmp_path):
    """Fails where only ``==`` and ``"text" in out`` were read: schema's test checks
    ``e.args[0].startswith("Wrong keys 'abc', 1 in")`` and ``e.args[0] in [...]``, and those
    texts, read as the test's inputs, made every "Wrong" of the module the test's own."""
    task = mini_task(tmp_path, {"test_keys.py": ONE_OF}, prompts=["Refuse keys a schema does not name."] * 2)
    missing = exact_text.check_turn(task, task.turns[0], {})
    assert sorted({(d.line, d.whole) for d in missing}) == [
        (8, "Wrong keys 'bad' in"), (12, "Wrong keys 'm', 'n' in {}"), (12, "Wrong keys 'n', 'm' in {}")]

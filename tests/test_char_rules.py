"""The stated-character-rule check (``stamina_gym.char_rules``, part of ``validate``): a
test case the prompt's own rule classifies the other way is named (U+0085 is a line
break, which the prompt turns into a space, yet a test expects it refused); the same
turn passes with a case the rules do refuse; cases refused for reasons the rules do not
speak to are left alone."""

from __future__ import annotations



from stamina_gym import char_rules
from stamina_gym.validate import check_data
from tests.conftest import mini_task

TESTS = '''import pytest

import calc


@pytest.mark.parametrize("bad", ["nul\\x00byte", "escape\\x1b[1m red", "CASE", "c1\\x85control"])
def test_bad_labels_are_refused(bad):
    with pytest.raises(ValueError):
        calc.label(bad)


@pytest.mark.parametrize("good", ["two words", "tab\\tbed", "bell\\x07"])
def test_good_labels_are_kept(good):
    assert calc.label(good)
'''

RULES = {
    "char_rules": [
        {"says": "line breaks and tabs become single spaces", "chars": "whitespace", "verdict": "accepted"},
        {"says": "control characters are refused", "chars": "control", "verdict": "refused"},
    ],
    "char_cases": {"refused": ["test_label.py::test_bad_labels_are_refused"],
                   "accepted": ["test_label.py::test_good_labels_are_kept"]},
}


def _mini(tmp_path, tests=TESTS, rules=RULES):
    return mini_task(tmp_path, {"test_label.py": tests}, **rules)


def test_a_case_the_stated_rules_classify_the_other_way_is_named(tmp_path):
    task = _mini(tmp_path)
    found = char_rules.check_turn(task, task.turns[0], {})
    assert [(m.case, m.expected) for m in found] == [("bell\x07", "accepted"), ("c1\x85control", "refused")]
    assert "U+0007 is control" in str(found[0]) and "U+0085 is whitespace" in str(found[1])
    assert [p.message for p in check_data(task)] == [f"{m}: a stated character rule classifies it the other way" for m in found]


def test_cases_the_rules_agree_with_pass(tmp_path):
    task = _mini(tmp_path, TESTS.replace("c1\\x85control", "c1\\x9bcontrol").replace(', "bell\\x07"', ""))
    assert char_rules.check_turn(task, task.turns[0], {}) == []
    assert check_data(task) == []


def test_a_named_test_that_does_not_exist_is_a_problem(tmp_path):
    rules = RULES | {"char_cases": {"refused": ["test_label.py::test_gone"]}}
    task = _mini(tmp_path, rules=rules)
    assert [p.message for p in check_data(task)] == ["char_cases: no test 'test_gone'"]

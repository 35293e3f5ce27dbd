"""The paraphrase report (``stamina_gym.paraphrases``, ``validate --paraphrases``): a fact
the tests check that one paraphrase states and another lacks is named, with the
paraphrase that lacks it; paraphrases that state the same facts differ in nothing."""

from __future__ import annotations



from stamina_gym import paraphrases
from tests.conftest import mini_task

TEST = '''import calc


def test_sums_are_capped():
    assert calc.add(60, 50) == 100
    assert calc.add(2, 3) == 5
'''


def _mini(tmp_path, prompts):
    return mini_task(tmp_path, {"test_add.py": TEST}, prompts=prompts)


def test_a_checked_fact_one_paraphrase_lacks_is_named(tmp_path):
    task = _mini(tmp_path, ["Add `calc.add(a, b)`: the sum, capped at 100.", "I need `calc.add(a, b)`; big sums get capped."])
    found = paraphrases.check_turn(task, task.turns[0], {})
    assert [(d.kind, d.value, d.stated_by, d.lacking) for d in found] == [("number", "100", (1,), (2,))]
    assert str(found[0]) == "01-add: number '100' is stated by paraphrase 1, not by 2"


def test_paraphrases_stating_the_same_facts_differ_in_nothing(tmp_path):
    task = _mini(tmp_path, ["Add `calc.add(a, b)`: the sum, capped at 100.", "I need `calc.add(a, b)`; sums over 100 give 100."])
    assert paraphrases.check_turn(task, task.turns[0], {}) == []

"""The reward module: each term as its docstring says, the voiding rule, and a term added
the way docs/concepts/reward.md's "Adding a reward term" says (one function, one entry, one weight)."""

from __future__ import annotations

import pytest

from stamina_gym import reward
from stamina_gym.config import RewardConfig
from stamina_gym.grading.grade import VOIDING, Grade, voids_reward
from tests.conftest import act, mini_env

W = RewardConfig()


def judged(failure: str | None = None, *, passed: int = 2, broken: int = 0, relative_delta: float = 0.0,
           rules_broken: int = 0, in_force: int = 1, outside: int = 0, mode: str = "free") -> reward.Judged:  # fmt: skip
    tests = {f"t{i}": "passed" if i < passed else "failed" for i in range(2)}
    regression = {f"r{i}": "failed" if i < broken else "passed" for i in range(4)}
    grade = Grade(3, tests, regression, tuple(f"r{i}" for i in range(broken)), failure, "")
    review = {
        "quality": {"relative_delta": relative_delta},
        "rules": {"in_force": [f"rule{i}" for i in range(in_force)], "broken": [f"rule{i}" for i in range(rules_broken)]},
        "scope": {"mode": mode, "outside": [f"f{i}.py" for i in range(outside)]},
        "memory": None,
    }
    return reward.Judged(grade, review, {"clarification": 0.5, "planning": None, "generation": 0.8})


def test_each_term_pays_what_the_docstring_says():
    terms = reward.submit_terms(W, judged("functional", passed=1, broken=1, relative_delta=-0.02, rules_broken=1, outside=2, mode="strict"))
    assert terms == {
        "tests": 0.5, "bonus": 0.0, "regression": -0.25, "quality": -0.02, "rules": -0.1, "scope": -0.1,
        "clarification": pytest.approx(0.15), "planning": 0.0, "generation": 0.0,
    }  # fmt: skip
    assert list(terms) == list(reward.TERMS)


def test_a_quality_gain_pays_only_on_a_solved_turn():
    assert reward.submit_terms(W, judged(passed=2, relative_delta=0.03))["quality"] == 0.03
    assert reward.submit_terms(W, judged("functional", passed=1, relative_delta=0.03))["quality"] == 0.0


def test_a_broken_sandbox_voids_every_term_and_forgery_pays_below_the_worst_honest_outcome():
    assert voids_reward("infrastructure") and voids_reward("violation") and set(VOIDING) == {"infrastructure", "violation"}
    assert not any(voids_reward(c) for c in ("functional", "build", "regression", "timeout", "resource", None))
    void = reward.submit_terms(W, judged("infrastructure"))
    assert void == dict.fromkeys(reward.TERMS, 0.0)
    worst_honest = sum(reward.submit_terms(W, judged("functional", passed=0, broken=4, relative_delta=-1.0, rules_broken=3,
                                                     in_force=3)).values())  # fmt: skip
    forged = reward.submit_terms(W, judged("violation", passed=2, in_force=3, outside=1, mode="strict"))
    assert forged["scope"] == -0.05 and forged["tamper"] == -(1 + 0.5 + 1 + 1 + 0.1 * 3 + 1)
    assert sum(forged.values()) < worst_honest
    assert Grade(1, {}, {}, (), "violation", "").voids_reward and not Grade(1, {}, {}, (), None, "").voids_reward


def test_adding_a_reward_term_is_one_function_one_entry_and_one_weight(monkeypatch):
    """The worked example of docs/concepts/reward.md, as written there: a weight on the lines changed."""

    class Weights(RewardConfig):  # stands for the one field added to RewardConfig
        churn: float = 0.5
        """Charged per thousand lines added or deleted over the turn."""

    def churn(w: RewardConfig, j: reward.Judged) -> float:
        lines = sum(added + deleted for added, deleted in (j.review["quality"] or {}).get("churn", {}).values())
        return -w.churn * lines / 1000

    monkeypatch.setitem(reward.TERMS, "churn", churn)
    env = mini_env()
    env.config = env.config.model_copy(update={"reward": Weights()})
    try:
        env.reset(seed=0)
        act(env, tool="apply_patch", patch=env.turns[0].reference_patch)
        _, paid, info = act(env, tool="submit")
    finally:
        env.close()
    changed = sum(a + d for a, d in info["grade"]["quality"]["churn"].values())
    assert changed > 0 and info["reward_terms"]["churn"] == pytest.approx(-0.5 * changed / 1000)
    assert paid == pytest.approx(sum(info["reward_terms"].values()) - W.step_cost)

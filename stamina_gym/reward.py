"""The reward of a submit, term by term: every term, its weight and the voiding rule in
one place. ``StaminaEnv.step`` adds the per-step costs (``step_cost`` on every step,
``invalid_action`` on a refused one) and pays ``sum(submit_terms(...).values())`` at a
submit. Weights are ``RewardConfig`` (the env spec's ``reward``)::

    tests          test_pass (1.0) x fraction of this turn's hidden tests passing
    bonus          turn_bonus (0.5) if every one passes
    regression     - regression (1.0) x fraction of the earlier tests run that passed when
                   last run and fail now
    quality        quality (1.0) x change over the turn of the code-quality score relative
                   to the reference's at the same turn; a loss is paid at every submit, a
                   gain only when every test of the turn passes (``quality.review``)
    rules          - rule_violation (0.1) x consistency rules in force that the code breaks
    scope          - out_of_scope (0.05) x files changed outside the turn's paths (strict
                   mode only)
    clarification  clarification (0.3) x C, the clarification score (turns with a hidden spec)
    planning       planning (0.2) x P, the planning score (turns with key decisions)
    generation     generation (0.0) x G, the generation score (``user.scoring``)

Voiding (``Grade.voids_reward``, ``grading.grade.VOIDING``): a submit whose grade is ``infrastructure`` (the sandbox broke before
the agent's code ran) pays 0 on every term: the sample is void. One proven to have forged
its outcomes (``violation``) pays only its scope term and ``tamper = -(test_pass +
turn_bonus + regression + quality + rule_violation x rules in force + tamper)``, below
every honest outcome of the turn; neither moves the record of which tests pass.

Adding a term is one function here, taking ``(weights, Judged)`` and returning a float,
one entry in ``TERMS``, and one weight field in ``RewardConfig`` (docs/concepts/reward.md,
"Adding a reward term", walks through one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

from stamina_gym.config import RewardConfig
from stamina_gym.grading.grade import Grade


@dataclass(frozen=True)
class Judged:
    """Everything a submit was judged on: the grade of its tests, the review of its tree
    (``quality.review.Review.to_info()``: quality, rules, memory, scope) and the dialogue
    scores (C, P, G; ``None`` where not measured)."""

    grade: Grade
    review: Mapping
    scores: Mapping[str, float | None]


def tests(w: RewardConfig, j: Judged) -> float:
    return w.test_pass * j.grade.pass_fraction


def bonus(w: RewardConfig, j: Judged) -> float:
    return w.turn_bonus if j.grade.solved else 0.0


def regression(w: RewardConfig, j: Judged) -> float:
    return -w.regression * j.grade.regression_fraction


def quality(w: RewardConfig, j: Judged) -> float:
    change = j.review["quality"]["relative_delta"] if j.review["quality"] else 0.0
    return round(w.quality * change, 6) if change < 0 or j.grade.solved else 0.0


def rules(w: RewardConfig, j: Judged) -> float:
    return -w.rule_violation * len(j.review["rules"]["broken"])


def scope(w: RewardConfig, j: Judged) -> float:
    found = j.review["scope"]
    return -w.out_of_scope * len(found["outside"]) if found["mode"] == "strict" else 0.0


def clarification(w: RewardConfig, j: Judged) -> float:
    return w.clarification * (j.scores["clarification"] or 0.0)


def planning(w: RewardConfig, j: Judged) -> float:
    return w.planning * (j.scores["planning"] or 0.0)


def generation(w: RewardConfig, j: Judged) -> float:
    return w.generation * j.scores["generation"]


#: Every term of a submit's reward, in the order ``info["reward_terms"]`` lists them.
TERMS: dict[str, Callable[[RewardConfig, Judged], float]] = {
    "tests": tests,
    "bonus": bonus,
    "regression": regression,
    "quality": quality,
    "rules": rules,
    "scope": scope,
    "clarification": clarification,
    "planning": planning,
    "generation": generation,
}


def submit_terms(w: RewardConfig, judged: Judged) -> dict[str, float]:
    """The reward of a submit, term by term, the voiding rule applied."""
    failure = judged.grade.failure_class
    if failure == "infrastructure":
        return dict.fromkeys(TERMS, 0.0)
    terms = {name: term(w, judged) for name, term in TERMS.items()}
    if failure == "violation":
        in_force = len(judged.review["rules"]["in_force"])
        worst = w.test_pass + w.turn_bonus + w.regression + w.quality + w.rule_violation * in_force
        return {**dict.fromkeys(TERMS, 0.0), "scope": terms["scope"], "tamper": -(worst + w.tamper)}
    return terms

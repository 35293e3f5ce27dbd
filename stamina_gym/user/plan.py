"""Plans: the ``plan`` tool's argument checked against the ``Plan`` schema, and which key
decisions a plan settles. Pure functions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from pydantic import ValidationError

from stamina_gym.config import format_validation_error
from stamina_gym.errors import ToolError
from stamina_gym.task import Alternative, Decision, Plan
from stamina_gym.user.text import has_phrase, tokens

PLAN_USAGE = (
    'send {"tool": "plan", "steps": [{"description": "...", "details": "...", "depends_on": [1]}, ...]}; '
    "a step may also be a plain string"
)


def parse_plan(steps: Any) -> Plan:
    """The agent's steps as a ``Plan``; raises ToolError naming what is wrong."""
    if not isinstance(steps, list) or not steps:
        raise ToolError(f"plan: steps must be a non-empty list; {PLAN_USAGE}")
    normal = [{"description": step} if isinstance(step, str) else step for step in steps]
    try:
        plan = Plan.model_validate({"steps": normal})
    except ValidationError as exc:
        raise ToolError(f"plan: {format_validation_error(exc)}; {PLAN_USAGE}") from None
    for number, step in enumerate(plan.steps, start=1):
        bad = [d for d in step.depends_on if not 1 <= d < number]
        if bad:
            raise ToolError(f"plan: step {number} depends on {bad}: a step may depend only on earlier steps (1..{number - 1})")
    return plan


def plan_text(plan: Plan) -> str:
    """The plan as numbered lines, the way a person reads it."""
    lines = []
    for number, step in enumerate(plan.steps, start=1):
        after = f" (after {', '.join(map(str, step.depends_on))})" if step.depends_on else ""
        lines.append(f"{number}. {step.description}{after}")
        if step.details:
            lines.append(f"   {step.details}")
    return "\n".join(lines)


@dataclass(frozen=True)
class DecisionVerdict:
    decision: str
    verdict: str
    """``accepted`` (names an acceptable alternative), ``rejected`` (names only wrong
    ones) or ``absent`` (names none)."""
    named: tuple[str, ...]
    """Alternatives the plan names, acceptable first."""


def _named(alternatives: Sequence[Alternative], plan_words: tuple[str, ...]) -> list[Alternative]:
    return [alt for alt in alternatives if any(has_phrase(plan_words, m) for m in alt.mentions)]


def judge_decisions(decisions: Sequence[Decision], plan: Plan | None) -> list[DecisionVerdict]:
    """Per decision: does the plan settle it, and how. Naming an acceptable alternative wins
    over naming a wrong one too (``not md5 but bcrypt`` settles it)."""
    plan_words = tokens(plan_text(plan)) if plan else ()
    verdicts = []
    for decision in decisions:
        good, bad = _named(decision.accept, plan_words), _named(decision.reject, plan_words)
        verdict = "accepted" if good else "rejected" if bad else "absent"
        verdicts.append(DecisionVerdict(decision.id, verdict, tuple(a.name for a in good + bad)))
    return verdicts


def planning_f1(verdicts: Sequence[DecisionVerdict]) -> float:
    """F1 of key decisions: precision over the decisions the plan settles (rightly or
    wrongly), recall over all key decisions."""
    right = sum(v.verdict == "accepted" for v in verdicts)
    named = sum(v.verdict != "absent" for v in verdicts)
    if not right:
        return 0.0
    precision, recall = right / named, right / len(verdicts)
    return 2 * precision * recall / (precision + recall)

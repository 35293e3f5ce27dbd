"""Checks of a task's dialogue data, run by ``stamina-gym validate`` beside the test replay:
every example phrasing reaches its own key point, every reference plan settles every key
decision and is followed by the reference code, prompt templates use only names they
define, and a reproduction script fails before its turn's reference patch and passes after.
"""

from __future__ import annotations

from typing import Mapping

from stamina_gym.config import UserConfig
from stamina_gym.run_result import RunResult
from stamina_gym.task import Task
from stamina_gym.user.adherence import adherence
from stamina_gym.user.match import KeyPointMatcher
from stamina_gym.user.plan import judge_decisions, planning_f1
from stamina_gym.user.templates import template_names

Found = list[tuple[int, str]]


def check_dialogue_data(task: Task, config: UserConfig | None = None) -> Found:
    config = config or UserConfig()
    found: Found = []
    for turn in task.turns:
        spec = turn.spec
        if spec.spec:
            matcher = KeyPointMatcher(spec.spec.key_points, spec.prompts, config.match_threshold)
            ids = [p.id for p in spec.spec.key_points]
            if len(set(ids)) != len(ids):
                found.append((turn.index, f"key point ids repeat: {ids}"))
            for point in spec.spec.key_points:
                for phrasing in point.phrasings:
                    reached = [m.point for m in matcher.match(phrasing)[: config.max_points_per_question]]
                    if point.id not in reached:
                        found.append((turn.index, f"key point {point.id!r}: its phrasing {phrasing!r} reaches {reached or 'nothing'}"))
        if spec.decisions and not spec.reference_plans:
            found.append((turn.index, "has key decisions but no reference plan"))
        for number, plan in enumerate(spec.reference_plans, start=1):
            verdicts = judge_decisions(spec.decisions, plan)
            if spec.decisions and planning_f1(verdicts) < 1.0:
                unsettled = [v.decision for v in verdicts if v.verdict != "accepted"]
                found.append((turn.index, f"reference plan {number} does not settle {unsettled} with an acceptable choice"))
        defined = set(spec.variables) | ({"repro_output", "repro_script"} if spec.repro else set())
        if defined:
            for prompt in spec.prompts:
                unknown = template_names(prompt) - defined
                if unknown:
                    found.append((turn.index, f"a prompt uses undefined template variable(s) {sorted(unknown)}"))
        for name, variable in spec.variables.items():
            if isinstance(variable, tuple) and not variable:
                found.append((turn.index, f"template variable {name!r} has no values"))
    return found


def check_dialogue_state(task: Task, state: int, sources: Mapping[str, str], repro: Mapping[int, RunResult]) -> Found:
    """At the state after turn ``state``: the reference code (``sources``: the text of its
    ``.py`` files) follows the reference plan, and the next turn's reproduction script
    fails while this turn's passes (``repro``: turn index -> the script's run at this
    state, for both turns that have one; the caller runs them, ``stamina_gym.reproduce``)."""
    found: Found = []
    if state > 0:
        turn = task.turns[state - 1]
        if turn.spec.decisions and turn.spec.reference_plans:
            verdicts = judge_decisions(turn.spec.decisions, turn.spec.reference_plans[0])
            _, followed = adherence(turn.spec.decisions, verdicts, sources)
            missed = sorted(d for d, ok in followed.items() if not ok)
            if missed:
                found.append((turn.index, f"the reference code does not follow the reference plan on {missed}"))
        if turn.spec.repro:
            result = repro[turn.index]
            if not result.ok:
                found.append((turn.index, f"the reproduction script still fails after the reference patch:\n{result.output[-1000:]}"))
    if state < len(task.turns) and task.turns[state].spec.repro:
        turn = task.turns[state]
        result = repro[turn.index]
        if result.ok:
            found.append((turn.index, "the reproduction script succeeds before the reference patch: it reproduces nothing"))
    return found




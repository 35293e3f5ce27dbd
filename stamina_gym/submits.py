"""What a step's ``info`` says of submits, the same whether grading is synchronous or
deferred (``EnvConfig.deferred_grading``): whether the step ended its turn, and which
submits were graded at it. Every reader of rollouts (the runner's records, collect, the
chat env, the trainer adapters) asks these rather than looking for ``info["grade"]``."""

from __future__ import annotations

from typing import Any, Mapping

#: The entries of a graded submit, in ``info`` and in each of ``info["grades"]``.
GRADED_KEYS = ("grade", "reward_terms", "scores", "dialogue", "commit", "grading_cache")


def turn_ended(info: Mapping[str, Any]) -> bool:
    """Whether the step that gave ``info`` submitted its turn (graded at once, or later)."""
    return "submitted" in info or ("grade" in info and "grades" not in info)


def graded_submits(info: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The submits graded at this step, in turn order, each with its ``turn`` (1-based),
    the ``GRADED_KEYS`` it has and, under deferred grading, its ``reward`` (the submit's
    own terms: the step's reward holds them beside the step's own cost)."""
    if "grades" in info:
        return [dict(graded) for graded in info["grades"]]
    if "grade" in info:
        return [{"turn": info["turn"], **{key: info[key] for key in GRADED_KEYS if key in info}}]
    return []


def carried_reward(info: Mapping[str, Any]) -> float:
    """The reward a step carries for earlier submits graded at it (deferred grading): a
    reader that sums rewards per turn moves it to those submits' own turns."""
    return sum(graded.get("reward", 0.0) for graded in graded_submits(info))

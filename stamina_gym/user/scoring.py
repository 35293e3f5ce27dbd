"""The dialogue scores of one turn. Pure functions of what was recorded; weights come from
``ScoreConfig``. A part that was not measured is ``None`` and drops out of a weighted
sum, whose other weights are then scaled to sum to 1::

    C = 0.6 x coverage + 0.4 x relevance                      (turns with a hidden spec)
    P = F1 of key decisions settled by the plan                (turns with key decisions)
    G = 0.7 x test pass rate + 0.2 x quality x test pass rate + 0.1 x adherence (every turn)
    composite = 0.3 x C + 0.2 x P + 0.5 x G

Quality is read from ``grade["quality"]`` (a number in 0..1, or a dict with ``score``).
It counts in proportion to the pass rate: untouched or broken code earns no quality
credit (otherwise an agent that does nothing would be paid for the seed's clean code).
When a grade carries no quality (``quality.enabled: false``) the part drops out.
"""

from __future__ import annotations

from typing import Any, Mapping

from stamina_gym.config import ScoreConfig


def weighted(parts: Mapping[str, float | None], weights: Mapping[str, float]) -> float:
    """Weighted mean of the measured parts (``None`` parts drop out); 0 when none is."""
    measured = {k: v for k, v in parts.items() if v is not None and weights[k] > 0}
    total = sum(weights[k] for k in measured)
    if not total:
        return 0.0
    return sum(weights[k] * v for k, v in measured.items()) / total


def clarification_score(coverage: float, relevance: float, w: ScoreConfig) -> float:
    return weighted({"coverage": coverage, "relevance": relevance}, w.model_dump())


def quality_of(grade: Mapping[str, Any]) -> float | None:
    """Quality in 0..1 from a grade, or None when the grade has none."""
    quality = grade.get("quality")
    if isinstance(quality, Mapping):
        quality = quality.get("score")
    if isinstance(quality, bool) or not isinstance(quality, (int, float)):
        return None
    return min(max(float(quality), 0.0), 1.0)


def generation_score(pass_rate: float, quality: float | None, adherence: float | None, w: ScoreConfig) -> float:
    return weighted({"tests": pass_rate, "quality": quality, "adherence": adherence}, w.model_dump())


def composite_score(c: float | None, p: float | None, g: float, w: ScoreConfig) -> float:
    return weighted({"clarification": c, "planning": p, "generation": g}, w.model_dump())


def turn_scores(
    *,
    coverage: float | None,
    relevance: float | None,
    planning: float | None,
    grade: Mapping[str, Any],
    adherence: float | None,
    weights: ScoreConfig,
) -> dict[str, float | None]:
    """``info["scores"]`` of a submit: clarification, planning, generation, composite."""
    c = None if coverage is None else clarification_score(coverage, relevance or 0.0, weights)
    pass_rate = grade["passed"] / grade["total"] if grade.get("total") else 0.0
    quality = quality_of(grade)
    g = generation_score(pass_rate, None if quality is None else quality * pass_rate, adherence, weights)
    scores = {"clarification": c, "planning": planning, "generation": g, "composite": composite_score(c, planning, g, weights)}
    return {k: None if v is None else round(v, 6) for k, v in scores.items()}

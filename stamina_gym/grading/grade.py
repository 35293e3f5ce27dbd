"""Turn captured test outcomes into a grade with one failure class. Pure functions."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

from stamina_gym.grading.report import Outcome, base_id
from stamina_gym.sandbox import RunResult

FAILURE_CLASSES = (
    "functional",  # the turn's tests fail
    "build",  # the code does not import or compile
    "regression",  # the turn passes but earlier tests broke
    "timeout",  # the test run hit its wall-clock limit
    "resource",  # a memory, CPU, file-size or output limit stopped it
    "framework",  # the agent broke the protocol (budget spent without submitting, ...)
    "infrastructure",  # the sandbox failed: the sample is invalid and should be rerun
    "violation",  # tampering: canaries lied, or the run faked its report
)
_BUILD_MARKERS = ("ImportError", "ModuleNotFoundError", "SyntaxError", "IndentationError", "collection failure")


@dataclass(frozen=True)
class Grade:
    """The result of one submit. ``failure_class`` is None when the turn fully passes."""

    turn: int
    turn_tests: Mapping[str, str]
    """Test id -> ``passed``/``failed``/``error``/``skipped``/``missing`` for this turn."""
    regression_tests: Mapping[str, str]
    """The same for earlier turns' tests still in force."""
    newly_broken: tuple[str, ...]
    """Regression tests that passed at the previous submit and do not pass now."""
    failure_class: str | None
    detail: str
    canaries_ok: bool = True

    @property
    def passed(self) -> int:
        return sum(status == "passed" for status in self.turn_tests.values())

    @property
    def total(self) -> int:
        return len(self.turn_tests)

    @property
    def pass_fraction(self) -> float:
        return self.passed / self.total if self.total else 0.0

    @property
    def regression_fraction(self) -> float:
        return len(self.newly_broken) / len(self.regression_tests) if self.regression_tests else 0.0

    @property
    def solved(self) -> bool:
        return self.failure_class is None

    def summary(self) -> str:
        """What the agent may see: counts and the failure class, never test names."""
        kept = sum(status == "passed" for status in self.regression_tests.values())
        verdict = "all requirements met" if self.solved else f"failure class: {self.failure_class}"
        return (
            f"Turn {self.turn} graded: {self.passed}/{self.total} new checks passed; "
            f"{kept}/{len(self.regression_tests)} earlier checks still pass "
            f"({len(self.newly_broken)} newly broken); {verdict}."
        )

    def to_info(self) -> dict:
        return {
            "turn": self.turn,
            "passed": self.passed,
            "total": self.total,
            "regression_total": len(self.regression_tests),
            "newly_broken": list(self.newly_broken),
            "failure_class": self.failure_class,
            "detail": self.detail,
            "canaries_ok": self.canaries_ok,
            "tests": dict(self.turn_tests),
            "regression_tests": dict(self.regression_tests),
        }


@dataclass(frozen=True)
class Canaries:
    """Tests the grader adds with random names, run first and last: each pair has one
    that must pass and one that must fail, so forging before or after is seen."""

    expected: Mapping[str, str]
    """Canary test id -> the status an honest run reports (``passed`` or ``failed``)."""
    source: Mapping[str, str] = field(default_factory=dict)
    """Module path (relative to the hidden tests folder) -> code, in run order."""


def by_base_id(outcomes: Mapping[str, Outcome], wanted: Iterable[str]) -> dict[str, Outcome]:
    """Fold parametrised cases into their test: passed only if every case passed."""
    folded: dict[str, Outcome] = {}
    for test_id, outcome in outcomes.items():
        key = base_id(test_id)
        if key not in folded or folded[key].status == "passed":
            folded[key] = outcome
    # A module that failed to collect reports under its file name: its tests share that outcome.
    return {tid: folded.get(tid) or outcomes.get(tid.split("::")[0]) or Outcome("missing") for tid in wanted}


def grade_run(
    *,
    turn: int,
    turn_ids: Iterable[str],
    regression_ids: Iterable[str],
    previously_passing: frozenset[str],
    outcomes: Mapping[str, Outcome] | None,
    run: RunResult | None,
    canaries: Canaries,
    report_problem: str = "",
) -> Grade:
    turn_ids, regression_ids = list(turn_ids), list(regression_ids)
    if run is None or outcomes is None:
        return _no_report(turn, turn_ids, regression_ids, previously_passing, run, report_problem)
    mine = by_base_id(outcomes, turn_ids)
    earlier = by_base_id(outcomes, regression_ids)
    turn_status = {tid: o.status for tid, o in mine.items()}
    regression_status = {tid: o.status for tid, o in earlier.items()}
    broken = tuple(t for t in regression_ids if t in previously_passing and regression_status[t] != "passed")

    def make(failure: str | None, detail: str, canaries_ok: bool = True) -> Grade:
        return Grade(turn, turn_status, regression_status, broken, failure, detail, canaries_ok)

    canary = by_base_id(outcomes, canaries.expected)
    lies = sum(canary[tid].status != status for tid, status in canaries.expected.items())
    if lies:
        return make("violation", f"{lies} canary test(s) reported the wrong outcome: the run was tampered with", False)
    failing = [o for o in mine.values() if o.status != "passed"]
    if run.timed_out:
        return make("timeout", "the hidden-test run hit its wall-clock limit")
    if failing and run.limit:
        return make("resource", f"the hidden-test run hit the {run.limit} limit")
    if failing and all(o.status == "missing" or any(m in o.message for m in _BUILD_MARKERS) for o in failing):
        return make("build", "the code under test does not import or compile")
    if failing:
        return make("functional", f"{len(failing)} of {len(mine)} new checks fail")
    if broken:
        return make("regression", f"{len(broken)} earlier checks broke")
    return make(None, "all checks pass")


def _no_report(
    turn: int,
    turn_ids: list[str],
    regression_ids: list[str],
    previously_passing: frozenset[str],
    run: RunResult | None,
    problem: str,
) -> Grade:
    """The run left no usable report: everything counts as failed; say why."""
    broken = tuple(t for t in regression_ids if t in previously_passing)
    if run is None:
        failure, detail = "infrastructure", f"the sandbox could not run the tests: {problem}"
    elif run.timed_out:
        failure, detail = "timeout", "the hidden-test run hit its wall-clock limit"
    elif run.limit:
        failure, detail = "resource", f"the hidden-test run hit the {run.limit} limit"
    elif run.exit_code == 0:
        failure, detail = "violation", f"the test process exited 0 without a valid report ({problem})"
    else:
        failure, detail = "build", f"the test process died (exit {run.exit_code}) without a report ({problem})"
    return Grade(
        turn,
        dict.fromkeys(turn_ids, "missing"),
        dict.fromkeys(regression_ids, "missing"),
        broken,
        failure,
        detail,
        canaries_ok=failure != "violation",
    )

"""Turn captured test outcomes into a grade with one failure class. Pure functions."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from stamina_gym.grading.report import Outcome, base_id
from stamina_gym.run_result import RunResult

FAILURE_CLASSES = (
    "functional",  # the turn's tests fail
    "build",  # the code does not import or compile
    "regression",  # the turn passes but earlier tests broke
    "timeout",  # the test run hit its wall-clock limit
    "resource",  # a memory, CPU, file-size or output limit stopped it
    "framework",  # the agent broke the protocol (budget spent without submitting, ...)
    "infrastructure",  # the sandbox failed before the graded code ran: the sample is invalid, rerun it
    "violation",  # tampering: proof that outcomes were forged (a must-fail canary passed, ...)
)
#: Failure classes that void a submit's reward (``stamina_gym.reward``) and leave the
#: record of which tests pass as it was: an invalid sample, and proven forgery.
VOIDING = ("infrastructure", "violation")
_BUILD_MARKERS = ("ImportError", "ModuleNotFoundError", "SyntaxError", "IndentationError", "collection failure")


def voids_reward(failure_class: str | None) -> bool:
    """Whether a grade (or a record of one) of this failure class voids the reward: the one
    rule every reader of grades and records applies."""
    return failure_class in VOIDING


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

    @property
    def voids_reward(self) -> bool:
        """The reward of this submit is void (``stamina_gym.reward``): the sandbox broke, or
        the outcomes were forged."""
        return voids_reward(self.failure_class)

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
    """Tests the grader adds among the hidden tests (``canaries.py``): one that must pass
    and some that must fail per pytest process."""

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
    evidence: Sequence[str] = (),
    complete: bool = True,
) -> Grade:
    """One failure class, in this order: ``violation`` on proof of forgery (``evidence``
    from the harness, or a must-fail canary that passed); then a run whose outcomes cannot
    all be trusted (no report, a timeout, a resource limit, a test process that ended
    early, a must-pass canary that did not pass) counts every selected test as failed, so
    that stopping the run early never pays; then build, functional, regression."""
    turn_ids, regression_ids = list(turn_ids), list(regression_ids)
    if run is None or outcomes is None:
        return _no_report(turn, turn_ids, regression_ids, previously_passing, run, report_problem)
    canary = by_base_id(outcomes, canaries.expected)
    lies = [tid for tid, status in canaries.expected.items() if status == "failed" and canary[tid].status == "passed"]
    if evidence or lies:
        proof = [*evidence, *(f"a canary that must fail passed ({tid})" for tid in lies)]
        broken = tuple(t for t in regression_ids if t in previously_passing)
        return Grade(turn, dict.fromkeys(turn_ids, "forged"), dict.fromkeys(regression_ids, "forged"), broken,
                     "violation", "the run was tampered with: " + "; ".join(proof[:5]), canaries_ok=False)  # fmt: skip
    controls = [tid for tid, status in canaries.expected.items() if status == "passed" and canary[tid].status != "passed"]
    if run.timed_out or run.limit or not complete or controls:
        problem = report_problem or "a control test that must pass did not"
        return _no_report(turn, turn_ids, regression_ids, previously_passing, run, problem)
    mine = by_base_id(outcomes, turn_ids)
    earlier = by_base_id(outcomes, regression_ids)
    turn_status = {tid: o.status for tid, o in mine.items()}
    regression_status = {tid: o.status for tid, o in earlier.items()}
    broken = tuple(t for t in regression_ids if t in previously_passing and regression_status[t] != "passed")

    def make(failure: str | None, detail: str) -> Grade:
        return Grade(turn, turn_status, regression_status, broken, failure, detail)

    failing = [o for o in mine.values() if o.status != "passed"]
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
    """No outcome of the run can be trusted: every selected test counts as failed. Only a
    sandbox that could not run at all (before any graded code ran) voids the sample."""
    broken = tuple(t for t in regression_ids if t in previously_passing)
    if run is None:
        failure, detail = "infrastructure", f"the sandbox could not run the tests: {problem}"
    elif run.timed_out:
        failure, detail = "timeout", "the hidden-test run hit its wall-clock limit"
    elif run.limit:
        failure, detail = "resource", f"the hidden-test run hit the {run.limit} limit"
    else:
        failure, detail = "build", f"the test process ended without reporting every test (exit {run.exit_code}): {problem}"
    return Grade(turn, dict.fromkeys(turn_ids, "missing"), dict.fromkeys(regression_ids, "missing"), broken, failure, detail)

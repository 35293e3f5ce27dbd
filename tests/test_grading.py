"""Grading is a pure function of captured output: tested on a recorded JUnit report."""

from __future__ import annotations

import pytest

from stamina_gym.grading.grade import Canaries, grade_run
from stamina_gym.grading.report import Outcome, parse_junit
from stamina_gym.sandbox import RunResult
from tests.conftest import DATA

RECORDED = (DATA / "junit_sample.xml").read_text(encoding="utf-8")
OK_RUN = RunResult(exit_code=1, output="", output_bytes=0)


def test_parse_recorded_report():
    outcomes = parse_junit(RECORDED)
    assert outcomes["01-x/test_a.py::test_ok"].status == "passed"
    assert outcomes["01-x/test_a.py::test_bad"].status == "failed"
    assert outcomes["01-x/test_a.py::test_param[1]"].status == "passed"
    assert outcomes["01-x/test_a.py::test_param[2]"].status == "failed"
    assert outcomes["01-x/test_a.py::TestGroup::test_method"].status == "failed"
    assert "ModuleNotFoundError" in outcomes["01-x/test_a.py::TestGroup::test_method"].message
    assert outcomes["01-x/test_a.py::test_setup_error"].status == "error"
    assert outcomes["02-y/test_b.py"].status == "error"


@pytest.mark.parametrize("bad", ["<html/>", "not xml at all", "<testsuites></testsuites>"])
def test_parse_rejects_what_is_not_a_report(bad):
    with pytest.raises(Exception):
        parse_junit(bad)


def grade(outcomes, turn_ids, regression_ids=(), previously=frozenset(), run=OK_RUN, **kw):
    canaries = Canaries({"c/test_c.py::test_p": "passed", "c/test_c.py::test_f": "failed"})
    outcomes = {**outcomes, "c/test_c.py::test_p": Outcome("passed"), "c/test_c.py::test_f": Outcome("failed")} if outcomes is not None else None
    return grade_run(turn=1, turn_ids=turn_ids, regression_ids=regression_ids, previously_passing=previously,
                     outcomes=outcomes, run=run, canaries=canaries, **kw)  # fmt: skip


def test_parametrised_test_passes_only_if_every_case_passes():
    outcomes = parse_junit(RECORDED)
    g = grade(outcomes, ["01-x/test_a.py::test_ok", "01-x/test_a.py::test_param"])
    assert g.turn_tests == {"01-x/test_a.py::test_ok": "passed", "01-x/test_a.py::test_param": "failed"}
    assert g.failure_class == "functional" and g.pass_fraction == 0.5


def test_collection_error_fails_every_test_of_the_module_as_build():
    g = grade(parse_junit(RECORDED), ["02-y/test_b.py::test_anything", "02-y/test_b.py::test_other"])
    assert set(g.turn_tests.values()) == {"error"}
    assert g.failure_class == "build"


def test_regression_counts_only_tests_that_passed_before():
    outcomes = {"t2/test.py::test_new": Outcome("passed"), "t1/test.py::test_a": Outcome("failed"), "t1/test.py::test_b": Outcome("failed")}
    g = grade(outcomes, ["t2/test.py::test_new"], ["t1/test.py::test_a", "t1/test.py::test_b"], frozenset({"t1/test.py::test_a"}))
    assert g.newly_broken == ("t1/test.py::test_a",)
    assert g.failure_class == "regression" and g.regression_fraction == 0.5


def test_lying_canary_is_a_violation():
    canaries = Canaries({"c/test_c.py::test_p": "passed", "c/test_c.py::test_f": "failed"})
    outcomes = {"t/test.py::test_x": Outcome("passed"), "c/test_c.py::test_p": Outcome("passed"), "c/test_c.py::test_f": Outcome("passed")}
    g = grade_run(turn=1, turn_ids=["t/test.py::test_x"], regression_ids=[], previously_passing=frozenset(),
                  outcomes=outcomes, run=OK_RUN, canaries=canaries)  # fmt: skip
    assert g.failure_class == "violation" and not g.canaries_ok


@pytest.mark.parametrize(
    "run, expected",
    [
        (RunResult(exit_code=0, output="", output_bytes=0), "violation"),
        (RunResult(exit_code=-9, output="", output_bytes=0, timed_out=True), "timeout"),
        (RunResult(exit_code=1, output="", output_bytes=0, limit="memory"), "resource"),
        (RunResult(exit_code=139, output="", output_bytes=0), "build"),
        (None, "infrastructure"),
    ],
)
def test_missing_report_is_classified(run, expected):
    g = grade(None, ["t/test.py::test_x"], run=run, report_problem="no report was written")
    assert g.failure_class == expected
    assert g.turn_tests == {"t/test.py::test_x": "missing"}


def test_summary_never_names_tests():
    g = grade({"t/test.py::test_secret_name": Outcome("failed", "assert 'hidden' == 'x'")}, ["t/test.py::test_secret_name"])
    assert "secret" not in g.summary() and "hidden" not in g.summary()
    assert "0/1" in g.summary() and "functional" in g.summary()

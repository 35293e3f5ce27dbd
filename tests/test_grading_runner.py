"""The hidden-test runner's speed-ups keep grades exact: a run split over several pytest
processes reports what one process reports, each part keeps its own canaries, and the
assertion-rewritten pycs the env plants are the code pytest actually runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stamina_gym.config import SandboxConfig
from stamina_gym import hidden_runner as runner
from stamina_gym.grading import seal
from stamina_gym.grading.grade import grade_run
from stamina_gym.hidden_runner import run_hidden_tests, shard_turns
from stamina_gym.sandbox.local import LocalSandbox
from stamina_gym.task import load_task_dir
from stamina_gym.workspace import Workspace
from tests.conftest import DATA

TASK = load_task_dir(DATA / "mini")


@pytest.fixture
def solved(tmp_path) -> Path:
    """The mini task's reference state after both turns."""
    workspace = Workspace(tmp_path / "ws", TASK.seed_dir)
    workspace.reset()
    for turn in TASK.turns:
        workspace.apply_patch(turn.reference_patch)
    return workspace.path


@pytest.fixture
def sandbox():
    sandbox = LocalSandbox(SandboxConfig(), hidden=[TASK.root])
    yield sandbox
    sandbox.close()


def run(source, sandbox, tmp_path, workers):
    sandbox.prepare(source)
    return run_hidden_tests(source=source, task=TASK, turns=TASK.turns, sandbox=sandbox, scratch=tmp_path, timeout=120,
                            workers=workers)  # fmt: skip


def ours(hidden):
    """The outcomes of the task's own tests (canaries left out)."""
    real = {tid for turn in TASK.turns for tid in turn.test_ids}
    return {tid: o.status for tid, o in hidden.outcomes.items() if tid.split("[")[0] in real}


def test_turns_are_split_by_test_count_and_kept_in_order():
    assert [[t.id for t in g] for g in shard_turns(TASK.turns, 2)] == [["01-add"], ["02-mul"]]  # 2 tests, 1 test
    assert [[t.id for t in g] for g in shard_turns(TASK.turns, 1)] == [["01-add", "02-mul"]]
    assert len(shard_turns(TASK.turns, 8)) == 2  # never more parts than turns


def test_a_split_run_reports_what_one_process_reports(solved, sandbox, tmp_path):
    one = run(solved, sandbox, tmp_path, workers=1)
    two = run(solved, sandbox, tmp_path, workers=2)
    assert ours(one) == ours(two) and set(ours(one).values()) == {"passed"}
    assert len(one.canaries.expected) == 3 and len(two.canaries.expected) == 6  # three per process
    for hidden in (one, two):
        grade = grade_run(turn=2, turn_ids=TASK.turns[1].test_ids, regression_ids=TASK.regression_ids(2),
                          previously_passing=frozenset(TASK.turns[0].test_ids), outcomes=hidden.outcomes,
                          run=hidden.run, canaries=hidden.canaries)  # fmt: skip
        assert grade.failure_class is None and grade.canaries_ok


def test_forging_the_reports_of_a_split_run_is_caught(solved, sandbox, tmp_path):
    forge = '''
from _pytest.reports import TestReport

_original = TestReport.from_item_and_call.__func__


def _forged(cls, item, call):
    report = _original(cls, item, call)
    report.outcome = "passed"
    return report


TestReport.from_item_and_call = classmethod(_forged)


def add(a, b):
    return 0


def mul(a, b):
    return 0
'''
    (solved / "calc" / "__init__.py").write_text(forge)
    hidden = run(solved, sandbox, tmp_path, workers=2)
    assert hidden.evidence, "both processes forged, and both were seen"
    grade = grade_run(turn=2, turn_ids=TASK.turns[1].test_ids, regression_ids=TASK.regression_ids(2),
                      previously_passing=frozenset(TASK.turns[0].test_ids), outcomes=hidden.outcomes,
                      run=hidden.run, canaries=hidden.canaries, evidence=hidden.evidence)  # fmt: skip
    assert grade.failure_class == "violation" and not grade.canaries_ok


def test_canaries_cannot_be_told_apart_on_disk(solved, sandbox, tmp_path):
    """Code run at grading time lists the hidden tests with their sizes, times and pycs:
    the canaries sit among them, in the turn folders, with the same kind of names."""
    probe = '''
import os

modules, files = {}, set()
for folder, dirs, names in os.walk("/grade/tests"):
    for name in names:
        path = os.path.relpath(os.path.join(folder, name), "/grade/tests")
        files.add(path)
        if name.endswith(".py"):
            modules[path] = int(os.stat(os.path.join(folder, name)).st_mtime)
ONE_TIME = len(set(modules.values())) == 1
ALL_PLANTED = all(
    any(f.startswith(path.rsplit("/", 1)[0] + "/__pycache__/" + path.rsplit("/", 1)[1][:-3] + ".") for f in files)
    for path in modules
)
MODULES = len(modules)


def add(a, b):
    return a + b if ONE_TIME and ALL_PLANTED else None


def mul(a, b):
    return a * b if MODULES == 5 else None  # two real modules and three canaries
'''
    (solved / "calc" / "__init__.py").write_text(probe)
    hidden = run(solved, sandbox, tmp_path, workers=1)
    assert not hidden.evidence and hidden.complete
    # what the graded code saw: one modification time, a planted pyc beside every module
    assert set(ours(hidden).values()) == {"passed"}, ours(hidden)
    canary_paths = {tid.split("::")[0] for tid in hidden.canaries.expected}
    assert all(path.split("/")[0] in {t.id for t in TASK.turns} for path in canary_paths)


def test_pytest_runs_the_planted_pyc(solved, sandbox, tmp_path, monkeypatch):
    """Proof that the planted file is the one pytest loads: swap the cached pyc's code for
    code that fails, keep its source hash, and the honest solution now fails."""
    import importlib.util
    import io

    from _pytest.assertion.rewrite import _write_pyc_fp

    monkeypatch.setattr(runner, "_REWRITTEN", {})
    assert set(ours(run(solved, sandbox, tmp_path, workers=1)).values()) == {"passed"}
    assert runner._REWRITTEN, "the run planted no pyc"
    for key in list(runner._REWRITTEN):
        inside, _ = key
        if inside.endswith("01-add/test_add.py"):
            written = (TASK.turns[0].dir / "tests" / "test_add.py").read_text(encoding="utf-8")
            source = seal.compiled(written, "01-add/test_add.py").probe.encode()  # what is staged: the probe
            buffer = io.BytesIO()
            fake = compile("def test_add_small():\n    assert False\n\n\ndef test_add_negative():\n    assert False\n", inside, "exec")
            _write_pyc_fp(buffer, importlib.util.source_hash(source), fake)
            runner._REWRITTEN[key] = buffer.getvalue()
    after = ours(run(solved, sandbox, tmp_path, workers=1))
    assert after["01-add/test_add.py::test_add_small"] == "failed"
    assert after["02-mul/test_mul.py::test_mul[case0]"] == "passed"  # sealed: its cases have ids that say nothing


def test_only_the_chosen_tests_run_and_unchosen_turns_are_not_staged(solved, sandbox, tmp_path, monkeypatch):
    staged = []
    planting = runner.plant_rewritten

    def seen(tests, folders):  # what was staged, looked at just before the run
        staged.append(sorted(path.name for path in tests.iterdir()))
        planting(tests, folders)

    monkeypatch.setattr(runner, "plant_rewritten", seen)
    sandbox.prepare(solved)
    chosen = {"02-mul/test_mul.py::test_mul"}
    hidden = run_hidden_tests(source=solved, task=TASK, turns=TASK.turns, sandbox=sandbox, scratch=tmp_path, timeout=120,
                              workers=1, only=chosen)  # fmt: skip
    assert ours(hidden) == {"02-mul/test_mul.py::test_mul[case0]": "passed", "02-mul/test_mul.py::test_mul[case1]": "passed"}
    assert "01-add" not in staged[0] and "02-mul" in staged[0]
    one_of_two = {"01-add/test_add.py::test_add_negative"}
    hidden = run_hidden_tests(source=solved, task=TASK, turns=TASK.turns, sandbox=sandbox, scratch=tmp_path, timeout=120,
                              workers=2, only=one_of_two)  # fmt: skip
    assert ours(hidden) == {"01-add/test_add.py::test_add_negative": "passed"}

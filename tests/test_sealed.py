"""Sealed judging end to end: the hidden tests go into the sandbox as probes, their expected
values stay on the host, and the host judges what the probes observed. Each attack is made
for real, through the harness in a real sandbox, against every backend: once with the
tests staged as written (the attack works there, or it proves nothing) and once sealed."""

from __future__ import annotations

import ast
import json
import linecache
import shutil
import sys
import types
from pathlib import Path

import pytest

from stamina_gym.config import SandboxConfig
from stamina_gym.grading import harness, seal
from stamina_gym.grading.grade import grade_run
from stamina_gym.hidden_runner import run_hidden_tests, stage_tests
from stamina_gym.sandbox import SANDBOXES
from stamina_gym.task import load_task_dir
from stamina_gym.validate import validate_task
from stamina_gym.workspace import Workspace
from tests.conftest import DATA, act

TASK = load_task_dir(DATA / "mini")
REAL = {tid for turn in TASK.turns for tid in turn.test_ids}

#: The product reads what the running test expects: it finds the test's frame, parses
#: the line being run and answers with the other side of the comparison (a literal, or a
#: parametrize value from the frame's locals). No pytest object is touched and no audited
#: event is raised; where the line holds no expected value it answers 0.
READS_THE_RUNNING_TEST = '''
import ast
import sys


def _answer():
    frame = sys._getframe(2)
    while frame is not None and not frame.f_code.co_name.startswith("test"):
        frame = frame.f_back
    if frame is None:
        return 0
    try:
        with open(frame.f_code.co_filename, encoding="utf-8") as handle:
            line = handle.read().splitlines()[frame.f_lineno - 1].strip()
        tree = ast.parse(line)
    except (OSError, IndexError, SyntaxError):
        return 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            other = node.comparators[0]
            try:
                return ast.literal_eval(other)
            except ValueError:
                if isinstance(other, ast.Name) and other.id in frame.f_locals:
                    return frame.f_locals[other.id]
    return 0


def add(a, b):
    return _answer()


def mul(a, b):
    return _answer()
'''

HONEST = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"
#: Right on one turn, wrong on the other.
HALF = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a + b\n"


@pytest.fixture
def sandbox(backend):
    sandbox = SANDBOXES.load(backend)(SandboxConfig(kind=backend), hidden=[TASK.root])
    yield sandbox
    sandbox.close()


def graded(task, turns, content: str, sandbox, folder: Path, **options):
    """The hidden-test run of ``turns`` on the task's seed with ``calc/__init__.py`` set to
    ``content`` (``options``: ``run_hidden_tests``'s), in a new ``folder``."""
    workspace = Workspace(folder / "ws", task.seed_dir)
    workspace.reset()
    (workspace.path / "calc" / "__init__.py").write_text(content, encoding="utf-8")
    sandbox.prepare(workspace.path)
    (folder / "scratch").mkdir()
    return run_hidden_tests(source=workspace.path, task=task, turns=turns, sandbox=sandbox, scratch=folder / "scratch",
                            timeout=120, **options)  # fmt: skip


def outcomes(content: str, sandbox, tmp_path: Path, *, sealed: bool) -> list[tuple[str, str]]:
    """(test id without its parameters, status) of each of the mini task's own tests
    (canaries left out) for a product of ``content``, its tests staged sealed or as
    written (a sealed parametrized test's cases have ids that say nothing)."""
    hidden = graded(TASK, TASK.turns, content, sandbox, tmp_path / f"sealed-{sealed}", sealed_judging=sealed)
    assert hidden.outcomes is not None, hidden.problem
    return sorted((tid.split("[")[0], o.status) for tid, o in hidden.outcomes.items() if tid.split("[")[0] in REAL)


def test_answers_read_from_the_running_test_pass_only_where_the_expected_values_are(sandbox, tmp_path):
    """As written, every test's expected value is on the line being run (or in its
    frame), and the product that reads it passes all of them. Sealed, the line holds no
    expected value and the frame no expected column: the same product passes none."""
    written = outcomes(READS_THE_RUNNING_TEST, sandbox, tmp_path, sealed=False)
    assert len(written) == 4 and {status for _, status in written} == {"passed"}, written
    sealed = outcomes(READS_THE_RUNNING_TEST, sandbox, tmp_path, sealed=True)
    assert sealed == [(tid, "failed") for tid, _ in written], sealed


@pytest.mark.parametrize("content", [HONEST, HALF], ids=["honest", "half"])
def test_honest_code_gets_the_same_outcomes_sealed_or_not(sandbox, tmp_path, content):
    written = outcomes(content, sandbox, tmp_path, sealed=False)
    assert outcomes(content, sandbox, tmp_path, sealed=True) == written
    assert ("02-mul/test_mul.py::test_mul", "failed") in written if content == HALF else {s for _, s in written} == {"passed"}


def test_the_staged_tests_hold_no_expected_value(tmp_path):
    """What enters the sandbox: the literals each test compares with, its parametrize
    table's expected column included, are in no staged test module; the points on the host
    hold them. (Canary modules are left out of the text: their random literals may be
    anything, "-9" included.)"""
    staged = stage_tests(task=TASK, turns=TASK.turns, scratch=tmp_path, workers=1)
    try:
        tests = staged.folder / "grade" / "tests"
        real = [path for path in tests.rglob("*.py") if path.relative_to(tests).as_posix() not in staged.canaries.source]
        text = "".join(path.read_text(encoding="utf-8") for path in real)
        assert "_stamina_probe" in text and "assert" not in text
        expected = {
            value
            for module, points in staged.sealed.items()
            if module not in staged.canaries.source
            for point in points.values()
            for value in (point.expected if point.cases else [point.expected])
        }
        assert {5, -9, 6, -5} <= expected
        for value in ("== 5", "-9", "6)", "-5)"):
            assert value not in text, value
    finally:
        staged.discard()


def test_reading_the_running_test_earns_nothing_through_the_env(sandboxed_env):
    """Through the env's own tools, on both turns: no test passes and the reward is what
    doing nothing pays."""
    env = sandboxed_env
    _, null, _ = act(env, tool="submit")
    env.reset(seed=0)
    act(env, tool="write_file", path="calc/__init__.py", content=READS_THE_RUNNING_TEST)
    for turn in range(2):
        _, reward, info = act(env, tool="submit")
        assert info["grade"]["passed"] == 0, info["grade"]
        assert reward <= null + 0.05, (turn, reward, null)


def test_the_ladders_reader_passes_todo_tests_as_written_and_none_sealed(backend, tmp_path):
    """The ladder's ``attack-reader`` rung (``ATTACKS["reader"]``, whose stubs import as
    every module the turn has not written) is a real attack on a real task: on todo's first
    turn, staged as written, it passes real tests by reading their expected values, and
    the canaries catch it; sealed, it passes none and proves nothing."""
    from stamina_gym.agents.ladder import ATTACKS
    from stamina_gym.task import load_task

    task = load_task("todo")
    turn = task.turns[0]
    sandbox = SANDBOXES.load(backend)(SandboxConfig(kind=backend), hidden=[task.root])
    try:
        runs = {}
        for sealed in (False, True):
            folder = tmp_path / f"sealed-{sealed}"
            workspace = Workspace(folder / "ws", task.seed_dir)
            workspace.reset()
            init = workspace.path / "todo" / "__init__.py"
            init.write_text(init.read_text(encoding="utf-8") + ATTACKS["reader"], encoding="utf-8")
            sandbox.prepare(workspace.path)
            (folder / "scratch").mkdir()
            runs[sealed] = run_hidden_tests(source=workspace.path, task=task, turns=[turn], sandbox=sandbox,
                                            scratch=folder / "scratch", timeout=120, sealed_judging=sealed)  # fmt: skip
    finally:
        sandbox.close()
    grades = {sealed: grade_run(turn=1, turn_ids=turn.test_ids, regression_ids=(), previously_passing=frozenset(),
                                outcomes=run.outcomes, run=run.run, canaries=run.canaries, evidence=run.evidence)
              for sealed, run in runs.items()}  # fmt: skip
    passed = {sealed: sorted(tid for tid, o in run.outcomes.items() if tid in turn.test_ids and o.status == "passed")
              for sealed, run in runs.items()}  # fmt: skip
    assert len(passed[False]) >= 2, passed  # the values it read were right
    assert grades[False].failure_class == "violation" and "canary" in grades[False].detail, grades[False].detail
    assert passed[True] == [] and grades[True].failure_class == "functional", (passed, grades[True].detail)


def test_validate_catches_a_mistranslated_test(monkeypatch):
    """A compiler that turned ``==`` into ``!=`` would fail honest code where the test as
    written passes it: validate's equivalence check names the tests it changed."""
    monkeypatch.setitem(seal._OPS, ast.Eq, "!=")
    seal.compiled.cache_clear()
    try:
        problems = validate_task(TASK)
    finally:
        seal.compiled.cache_clear()
    changed = [problem for problem in problems if "sealed judging must not change a verdict" in str(problem)]
    assert changed and "passed as written but failed sealed" in str(changed[0]), [str(p) for p in problems]
    monkeypatch.undo()
    assert not [problem for problem in validate_task(TASK) if "sealed" in str(problem)]


#: A hidden test with a check in a loop over its own literal: the judge counts it twice.
LOOPED = '''def test_add_many():
    import calc

    assert calc.add(1, 1) == 2
    for a, b, total in [(2, 3, 5), (10, 20, 30)]:
        assert calc.add(a, b) == total
'''

#: Returns 2 whatever it is asked, which passes the check straight in the body, and
#: drops what the probe observes inside a block: at its first call it finds the test
#: module's observer in the frame's globals and puts a filter in its place that forwards
#: only calls made from the body's own indentation.
DROPS_LOOP_CHECKS = '''
import linecache
import sys


def _filter():
    frame = sys._getframe(2)
    namespace = frame.f_globals
    real = namespace.get("_stamina_observe")
    if real is None or getattr(real, "filtered", False):
        return

    def observe(point, value):
        caller = sys._getframe(1)
        line = linecache.getline(caller.f_code.co_filename, caller.f_lineno)
        if len(line) - len(line.lstrip()) <= 4:
            real(point, value)

    observe.filtered = True
    namespace["_stamina_observe"] = observe


def add(a, b):
    _filter()
    return 2


def mul(a, b):
    return a * b
'''


#: Puts its own ``_stamina_probe`` in place, whose observers observe nothing, for every
#: probe imported after the product.
FAKE_PROBE_MODULE = '''
import contextlib
import sys
import types

_fake = types.ModuleType("_stamina_probe")
_fake.bind = lambda key: ((lambda point, value: None), (lambda point, base=False: contextlib.suppress(Exception)))
sys.modules["_stamina_probe"] = _fake


def add(a, b):
    return 2


def mul(a, b):
    return a * b
'''

#: What each way of dropping observations leaves as evidence.
DROPPERS = {"filter": (DROPS_LOOP_CHECKS, "observes through another function"),
            "module": (FAKE_PROBE_MODULE, "_stamina_probe was replaced")}  # fmt: skip


@pytest.fixture
def looped_task(tmp_path):
    root = tmp_path / "mini"
    shutil.copytree(DATA / "mini", root)
    (root / "turns/01-add/tests/test_add_many.py").write_text(LOOPED, encoding="utf-8")
    return load_task_dir(root)


def test_dropping_what_a_probe_observes_in_a_loop_fails_the_judge():
    """With the observer filtered, the judge sees only the check in the body, which holds;
    the loop's check was reached 0 times, not twice, and the test fails (before loops were
    counted it passed), as it does unfiltered, where the answers are wrong."""
    module = seal.compile_module(LOOPED, "test_add_many.py", "k")
    for product, passes in ((DROPS_LOOP_CHECKS, False), ("def add(a, b):\n    return 2\n", False)):
        sent: list = []
        sys.modules["_stamina_probe"] = harness._probe_module(lambda key, point, text: sent.append((point, json.loads(text))))
        calc = types.ModuleType("calc")
        exec(compile(product, "calc", "exec"), calc.__dict__)  # noqa: S102 - the product under test
        sys.modules["calc"] = calc
        try:
            namespace: dict = {"__name__": "probe"}
            path = "/tmp/probe_test_add_many.py"  # where linecache reads the probe's lines
            Path(path).write_text(module.probe, encoding="utf-8")
            linecache.checkcache(path)
            exec(compile(module.probe, path, "exec"), namespace)  # noqa: S102 - the compiled test
            namespace["test_add_many"]()
        finally:
            sys.modules.pop("_stamina_probe", None)
            sys.modules.pop("calc", None)
        assert seal.judge(module.points, "test_add_many", sent)[0] is passes, sent
        assert len(sent) == (1 if product is DROPS_LOOP_CHECKS else 3)


@pytest.mark.parametrize("task", ["todo", "clarify"])
def test_a_forger_that_owns_the_stream_passes_no_test_holding_a_sealed_point(task):
    """The in-sandbox defences fallen: the forger (``stamina_gym.grading.guess``) reads the
    staged probes, says every test passed and sends its first guess at every point as
    often as the judge counts, a universal exception in every ``raises`` block. It passes
    some guessable tests of the first ten turns (the attack is real), and none whose own
    body holds a sealed point."""
    from stamina_gym.grading import guess
    from stamina_gym.hidden_runner import _staged_tests, seal_modules
    from stamina_gym.task import load_task

    shipped = load_task(task)
    turns = shipped.turns[:10]
    probes, sealed = seal_modules(_staged_tests(shipped, turns, turns[0].example_params))
    ids = [tid for turn in turns for tid in turn.test_ids]
    judged = seal.judge_run(*guess.forge_run(probes, ids), sealed)
    passed = [tid for tid, (status, _) in judged.items() if status == "passed"]
    assert passed
    for tid in passed:
        path, function, _ = seal.test_function(tid)
        assert seal.test_status(sealed[path], function) != "sealed", tid


@pytest.mark.parametrize("dropper", sorted(DROPPERS))
def test_dropping_what_a_probe_observes_is_a_violation(backend, looped_task, tmp_path, dropper):
    """Through the harness: the observer a probe was given, and the probe module, are
    checked as each test returns, after collection and at the end; a filter or a module
    in their place is tampering. A product that returns 2 without either fails the looped
    test as any wrong one."""
    attack, evidence = DROPPERS[dropper]
    sandbox = SANDBOXES.load(backend)(SandboxConfig(kind=backend), hidden=[looped_task.root])
    try:
        for content, expect in ((attack, "violation"), ("def add(a, b):\n    return 2\n", "failed")):
            hidden = graded(looped_task, looped_task.turns[:1], content, sandbox, tmp_path / expect)
            if expect == "violation":
                assert any(evidence in line for line in hidden.evidence), hidden.evidence
            else:
                assert not hidden.evidence and hidden.outcomes["01-add/test_add_many.py::test_add_many"].status == "failed"
    finally:
        sandbox.close()


#: Right answers, each sent with a flood of observations of its own: 64 values of a MiB
#: through the probe's own module, past every bound on what a test and a shard may send.
FLOODS_THE_STREAM = '''
_observe, _ = __import__("_stamina_probe").bind("flood")


def _flood():
    for point in range(64):
        _observe(point, "x" * (1 << 20))


def add(a, b):
    _flood()
    return a + b


def mul(a, b):
    _flood()
    return a * b
'''


def test_flooding_the_observation_stream_earns_nothing_and_voids_nothing(sandboxed_env):
    """What a test and a shard may send is bounded in the harness, and an observation of a
    module no probe has fails its test: the flood costs the tests it ran in, the run still
    reports (never ``infrastructure``, which would void the sample), and the reward is no
    more than doing nothing."""
    env = sandboxed_env
    _, null, _ = act(env, tool="submit")
    env.reset(seed=0)
    act(env, tool="write_file", path="calc/__init__.py", content=FLOODS_THE_STREAM)
    _, reward, info = act(env, tool="submit")
    grade = info["grade"]
    # Binding the probe module from the product is itself seen (a violation); either way
    # nothing passes and the sample counts.
    assert grade["failure_class"] in ("functional", "violation") and grade["passed"] == 0, grade["detail"]
    assert reward <= null + 1e-9, (reward, null)

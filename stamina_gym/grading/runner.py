"""Run hidden tests on a copy of the agent's source, in the sandbox. The side-effect half
of grading; ``grade.py`` is the pure half.

The copy leaves out every file through which code could steer a pytest run (conftest.py,
pytest/tox/setup.cfg/pyproject configuration, sitecustomize/usercustomize, .pth files), and
pytest is started isolated (``python -I``), with our own ini file, without conftest loading
or plugin autoload, so the agent's configuration has no say. Two canary tests with random
names (one must pass, one must fail) reveal a run whose outcomes were forged.
"""

from __future__ import annotations

import secrets
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Sequence

from stamina_gym.errors import SandboxError
from stamina_gym.grading.grade import Canaries
from stamina_gym.grading.report import Outcome, parse_junit
from stamina_gym.sandbox import REPO_MOUNT, Mount, RunResult, Sandbox
from stamina_gym.task import Task, Turn

if TYPE_CHECKING:
    from stamina_gym.grading.cache import GradingCache

GRADE_MOUNT = "/grade"
STEERING_FILES = frozenset(
    {"conftest.py", "pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml", "sitecustomize.py", "usercustomize.py"}
)
_CACHE_DIRS = {"__pycache__", ".pytest_cache", ".git"}


@dataclass(frozen=True)
class HiddenRun:
    """Captured output of one hidden-test run."""

    run: RunResult | None
    outcomes: dict[str, Outcome] | None
    canaries: Canaries
    problem: str = ""
    cache: str | None = None
    """``hit`` or ``miss`` when a grading cache was asked; None without one."""


def _ignore(directory: str, names: list[str]) -> set[str]:
    return {n for n in names if n in STEERING_FILES or n in _CACHE_DIRS or n.endswith(".pth")}


def copy_source(src: Path, dst: Path) -> None:
    """Copy the work tree without steering files; symlinks are copied as links, so they
    resolve inside the sandbox's own view, never on the host."""
    shutil.copytree(src, dst, symlinks=True, ignore=_ignore)


def make_canaries() -> Canaries:
    """Two canary modules with random names: one collected first, one last."""
    expected, source = {}, {}
    for _ in range(2):
        a, b = secrets.randbelow(10_000) + 1, secrets.randbelow(10_000) + 1
        pass_name, fail_name = (f"test_{secrets.token_hex(6)}" for _ in range(2))
        module = f"{secrets.token_hex(4)}/test_{secrets.token_hex(4)}.py"
        source[module] = (
            f"def {pass_name}():\n    assert {a} + {b} == {a + b}\n\n\n"
            f"def {fail_name}():\n    assert {a} * {b} == {a * b + 1}\n"
        )
        expected[f"{module}::{pass_name}"] = "passed"
        expected[f"{module}::{fail_name}"] = "failed"
    return Canaries(expected, source)


def pytest_argv(report_path: str, pythonpath: Sequence[str], test_paths: Sequence[str], python: str = sys.executable) -> list[str]:
    return [
        python, "-I", "-B", "-m", "pytest",
        "-c", f"{GRADE_MOUNT}/pytest.ini", "--rootdir", GRADE_MOUNT,
        "-p", "no:cacheprovider", "--noconftest", "--import-mode=importlib", "--continue-on-collection-errors",
        "-q", "--no-header", "-o", "junit_family=xunit1", "-o", "console_output_style=classic",
        "-o", f"pythonpath={' '.join(pythonpath)}", f"--junitxml={report_path}", *test_paths,
    ]  # fmt: skip


def run_hidden_tests(
    *,
    source: Path,
    task: Task,
    turns: Sequence[Turn],
    sandbox: Sandbox,
    scratch: Path,
    timeout: float,
    cache: GradingCache | None = None,
    params: Mapping[str, str | int] | None = None,
) -> HiddenRun:
    """Copy ``source``, add the hidden tests of ``turns`` (rendered with the episode's
    ``params`` when the task has any) and canaries, run, parse. With a ``cache``
    (``grading/cache.py``) a stored run of the same state is reused."""
    params = dict(params or {})
    if cache is not None:
        return cache.run(run_hidden_tests, source=source, task=task, turns=turns, sandbox=sandbox, scratch=scratch,
                         timeout=timeout, params=params)  # fmt: skip
    canaries = make_canaries()
    stage = scratch / f"grade-{secrets.token_hex(4)}"
    try:
        copy_source(source, stage / "src")
        tests = stage / "grade" / "tests"
        for turn in turns:
            shutil.copytree(turn.dir / "tests", tests / turn.id, ignore=shutil.ignore_patterns("__pycache__"))
        for rel, body in canaries.source.items():
            (tests / rel).parent.mkdir(parents=True)
            (tests / rel).write_text(body, encoding="utf-8")
        if task.support_dir:
            shutil.copytree(task.support_dir, stage / "grade" / "support", ignore=shutil.ignore_patterns("__pycache__"))
        if task.meta.params:
            for path in [*tests.rglob("*.py"), *(stage / "grade" / "support").rglob("*.py")]:
                path.write_text(task.render(path.read_text(encoding="utf-8"), params, str(path.name)), encoding="utf-8")
        (stage / "grade" / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        (stage / "grade" / "report").mkdir()
        sandbox.prepare(stage / "src")
        sandbox.prepare(stage / "grade" / "report")
        mounts = [
            Mount(stage / "src", REPO_MOUNT, writable=True, ephemeral=True),
            Mount(stage / "grade", GRADE_MOUNT, ephemeral=True),
            Mount(stage / "grade" / "report", f"{GRADE_MOUNT}/report", writable=True, ephemeral=True),
        ]
        first, last = list(canaries.source)
        order = [first, *(turn.id for turn in turns), last]  # pytest keeps argument order
        argv = pytest_argv(
            f"{GRADE_MOUNT}/report/junit.xml",
            [REPO_MOUNT, f"{GRADE_MOUNT}/support"],
            [f"{GRADE_MOUNT}/tests/{path}" for path in order],
            python=sandbox.python,
        )
        try:
            run = sandbox.run(argv, mounts=mounts, timeout=timeout, env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
        except SandboxError as exc:
            return HiddenRun(None, None, canaries, str(exc))
        report = stage / "grade" / "report" / "junit.xml"
        if not report.is_file() or report.is_symlink():
            return HiddenRun(run, None, canaries, "no report was written")
        try:
            outcomes = parse_junit(report.read_text(encoding="utf-8", errors="replace"))
        except (ValueError, SyntaxError) as exc:
            return HiddenRun(run, None, canaries, f"the report does not parse: {exc}")
        return HiddenRun(run, outcomes, canaries)
    finally:
        shutil.rmtree(stage, ignore_errors=True)

"""Run hidden tests on a copy of the agent's source, in the sandbox. The side-effect half
of grading; ``grade.py`` is the pure half.

The copy leaves out every file through which code could steer a pytest run (conftest.py,
pytest/tox/setup.cfg/pyproject configuration, sitecustomize/usercustomize, .pth files), and
pytest is started isolated (``python -I``), with our own ini file, without conftest loading
or plugin autoload, so the agent's configuration has no say. Two canary tests with random
names (one must pass, one must fail) reveal a run whose outcomes were forged.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import io
import json
import secrets
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Collection, Mapping, Sequence

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


_REWRITTEN: dict[tuple[str, bytes], bytes] = {}
_REWRITTEN_MAX = 20_000


def plant_rewritten(tests: Path, folders: Sequence[str]) -> None:
    """Put beside each hidden test module the pyc with pytest's assertion rewriting that
    pytest would otherwise build on every run (about a fifth of a run's time). The pycs are
    made here, by the env, from our own test files, and kept per (path in the sandbox,
    source); the folder is mounted read-only, so the graded code cannot swap them. pytest
    checks each pyc against its source's hash and rewrites afresh on any mismatch,
    including another pytest version in the sandbox."""
    try:
        from _pytest.assertion.rewrite import PYC_TAIL, _write_pyc_fp, rewrite_asserts
    except ImportError:  # another pytest: it simply rewrites as usual
        return
    for folder in folders:
        for path in (tests / folder).rglob("test_*.py"):
            source = path.read_bytes()
            inside = f"{GRADE_MOUNT}/tests/{path.relative_to(tests).as_posix()}"
            key = (inside, hashlib.sha256(source).digest())
            data = _REWRITTEN.get(key)
            if data is None:
                try:
                    tree = ast.parse(source, filename=inside)
                except SyntaxError:
                    continue  # pytest reports it
                rewrite_asserts(tree, source, inside, None)
                buffer = io.BytesIO()
                _write_pyc_fp(buffer, importlib.util.source_hash(source), compile(tree, inside, "exec", dont_inherit=True))
                data = buffer.getvalue()
                if len(_REWRITTEN) >= _REWRITTEN_MAX:
                    _REWRITTEN.clear()
                _REWRITTEN[key] = data
            cache = path.parent / "__pycache__"
            cache.mkdir(exist_ok=True)
            (cache / (path.name[:-3] + PYC_TAIL)).write_bytes(data)


def shard_turns(
    turns: Sequence[Turn], workers: int, size: Callable[[Turn], int] = lambda t: len(t.test_ids)
) -> list[list[Turn]]:
    """Split ``turns`` into at most ``workers`` groups of about equal test counts (``size``;
    largest first onto the lightest group), each group kept in turn order."""
    groups: list[list[Turn]] = [[] for _ in range(max(1, min(workers, len(turns))))]
    sizes = [0] * len(groups)
    for turn in sorted(turns, key=lambda t: -size(t)):
        lightest = sizes.index(min(sizes))
        groups[lightest].append(turn)
        sizes[lightest] += size(turn)
    return [sorted(group, key=lambda t: t.index) for group in groups if group]


def _chosen(turn: Turn, only: Collection[str] | None) -> list[str] | None:
    """The pytest arguments (under the tests folder) that run ``turn``'s tests in ``only``:
    None for the whole folder, [] for none of them."""
    if only is None:
        return None
    picked = [tid for tid in turn.test_ids if tid in only]
    return None if len(picked) == len(turn.test_ids) else picked


#: Runs the pytest command lines given as JSON in argv[1] at once, each with its output in a
#: file, then prints the outputs in order; exits with the largest exit status.
_DRIVER = """\
import json, subprocess, sys, tempfile
commands = json.loads(sys.argv[1])
logs = [tempfile.TemporaryFile() for _ in commands]
procs = [subprocess.Popen(c, stdout=log, stderr=subprocess.STDOUT) for c, log in zip(commands, logs)]
codes = [p.wait() for p in procs]
for i, log in enumerate(logs):
    log.seek(0)
    sys.stdout.buffer.write(b"--- shard %d ---\\n" % i + log.read())
sys.exit(max(codes))
"""


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
    workers: int | None = None,
    only: Collection[str] | None = None,
) -> HiddenRun:
    """Copy ``source``, add the hidden tests of ``turns`` (rendered with the episode's
    ``params`` when the task has any) and canaries, run, parse. With a ``cache``
    (``grading/cache.py``) a stored run of the same state is reused. With ``workers`` > 1
    the turns are split into that many pytest processes that run at once in the one
    sandbox call, each with its own canaries, report and temporary folder (default: the
    sandbox config's ``workers()``). With ``only``, just the tests with those ids run, and
    only the folders of turns with a chosen test are staged."""
    params = dict(params or {})
    workers = sandbox.config.workers() if workers is None else workers
    if cache is not None:
        return cache.run(run_hidden_tests, source=source, task=task, turns=turns, sandbox=sandbox, scratch=scratch,
                         timeout=timeout, params=params, workers=workers, only=only)  # fmt: skip
    wanted = None if only is None else frozenset(only)
    chosen = {turn.id: _chosen(turn, wanted) for turn in turns}
    turns = [turn for turn in turns if chosen[turn.id] != []]
    shards = shard_turns(turns, workers, lambda t: len(t.test_ids) if chosen[t.id] is None else len(chosen[t.id]))
    shard_canaries = [make_canaries() for _ in shards]
    canaries = Canaries({k: v for c in shard_canaries for k, v in c.expected.items()},
                        {k: v for c in shard_canaries for k, v in c.source.items()})  # fmt: skip
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
        plant_rewritten(tests, [turn.id for turn in turns])
        (stage / "grade" / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        (stage / "grade" / "report").mkdir()
        sandbox.prepare(stage / "src")
        sandbox.prepare(stage / "grade" / "report")
        mounts = [
            Mount(stage / "src", REPO_MOUNT, writable=True, ephemeral=True),
            Mount(stage / "grade", GRADE_MOUNT, ephemeral=True),
            Mount(stage / "grade" / "report", f"{GRADE_MOUNT}/report", writable=True, ephemeral=True),
        ]
        commands = []
        for number, (group, own) in enumerate(zip(shards, shard_canaries)):
            first, last = list(own.source)
            paths = [path for turn in group for path in chosen[turn.id] or [turn.id]]
            order = [first, *paths, last]  # pytest keeps argument order
            argv = pytest_argv(
                f"{GRADE_MOUNT}/report/junit-{number}.xml",
                [REPO_MOUNT, f"{GRADE_MOUNT}/support"],
                [f"{GRADE_MOUNT}/tests/{path}" for path in order],
                python=sandbox.python,
            )
            commands.append([*argv, f"--basetemp=/tmp/pytest-shard-{number}"] if len(shards) > 1 else argv)
        if len(commands) > 1:
            command = [sandbox.python, "-I", "-c", _DRIVER, json.dumps(commands)]
        else:
            command = commands[0]
        try:
            run = sandbox.run(command, mounts=mounts, timeout=timeout, env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
        except SandboxError as exc:
            return HiddenRun(None, None, canaries, str(exc))
        outcomes: dict[str, Outcome] = {}
        for number in range(len(commands)):
            report = stage / "grade" / "report" / f"junit-{number}.xml"
            if not report.is_file() or report.is_symlink():
                return HiddenRun(run, None, canaries, "no report was written")
            try:
                outcomes.update(parse_junit(report.read_text(encoding="utf-8", errors="replace")))
            except (ValueError, SyntaxError) as exc:
                return HiddenRun(run, None, canaries, f"the report does not parse: {exc}")
        return HiddenRun(run, outcomes, canaries)
    finally:
        shutil.rmtree(stage, ignore_errors=True)

"""What each hidden test costs to run, measured once per task version and stored with the
task (``costs.json`` beside ``task.yaml``), so that the regression sample of a submit is
sized by the tests' cost, not their number, and a replay draws what the live episode drew
(a clock would draw differently on every machine and every run).

    stamina-gym costs todo            # measure and print a summary
    stamina-gym costs todo --write    # ... and store it as tasks/todo/costs.json

A test's cost is the time pytest spends in its setup, call and teardown (all its
parametrised cases), in milliseconds, measured with the reference solution of its own turn
in place, on plain pytest without a sandbox: what matters is how tests compare with one
another, not the machine's speed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable, Mapping

from stamina_gym.errors import TaskError
from stamina_gym.grading.report import base_id
from stamina_gym.task import Task
from stamina_gym.workspace import Workspace

FILE_NAME = "costs.json"

_PLUGIN = '''
import json, os

durations = {}

def pytest_runtest_logreport(report):
    durations[report.nodeid] = durations.get(report.nodeid, 0.0) + report.duration

def pytest_sessionfinish(session):
    with open(os.environ["STAMINA_GYM_COSTS_OUT"], "w", encoding="utf-8") as handle:
        json.dump(durations, handle)
'''


def load(task: Task) -> dict[str, float] | None:
    """Test id -> milliseconds from the task's ``costs.json``; None when it has none. A
    file for another version of the task, or one that misses a test, is a ``TaskError``
    naming what is wrong."""
    path = task.root / FILE_NAME
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        version, costs = data["task_version"], data["ms"]
        if not isinstance(costs, dict) or not all(isinstance(v, (int, float)) and v >= 0 for v in costs.values()):
            raise ValueError("'ms' must map test ids to non-negative numbers")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise TaskError(f"{path}: not a costs file ({exc})") from None
    if version != task.meta.version:
        raise TaskError(f"{path} was measured on version {version} of the task, which is now version "
                        f"{task.meta.version}: measure again with `stamina-gym costs {task.meta.id} --write`")  # fmt: skip
    missing = sorted({tid for turn in task.turns for tid in turn.test_ids} - costs.keys())
    if missing:
        raise TaskError(f"{path} has no cost for {len(missing)} test(s), e.g. {missing[:3]}: "
                        f"measure again with `stamina-gym costs {task.meta.id} --write`")  # fmt: skip
    return {tid: float(ms) for tid, ms in costs.items()}


def measure(task: Task, progress: Callable[[int, int], None] = lambda done, total: None) -> dict[str, float]:
    """Every hidden test's cost in milliseconds, each turn's tests run once with the
    reference solution up to that turn applied (params at their first values)."""
    params = task.choose_params(lambda n: 0)
    costs: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="stamina-gym-costs-") as tmp:
        root = Path(tmp)
        (root / "plugin").mkdir()
        (root / "plugin" / "stamina_gym_costs.py").write_text(_PLUGIN, encoding="utf-8")
        workspace = Workspace(root / "ws", task.seed_dir)
        workspace.reset()
        for done, turn in enumerate(task.turns):
            workspace.apply_patch(task.reference_patch(turn, params))
            costs.update(_run_turn(task, turn, params, workspace.path, root))
            progress(done + 1, len(task.turns))
    return costs


def _run_turn(task: Task, turn, params: Mapping, source: Path, root: Path) -> dict[str, float]:
    stage = root / "stage"
    shutil.rmtree(stage, ignore_errors=True)
    shutil.copytree(source, stage / "src", symlinks=True)
    tests = stage / "tests" / turn.id
    shutil.copytree(turn.dir / "tests", tests, ignore=shutil.ignore_patterns("__pycache__"))
    for path in tests.rglob("*.py"):
        path.write_text(task.render(path.read_text(encoding="utf-8"), params, path.name), encoding="utf-8")
    paths = [str(stage / "src")] + ([str(task.support_dir)] if task.support_dir else [])
    out = stage / "durations.json"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "stamina_gym_costs", "--noconftest",
         "--import-mode=importlib", "-o", f"pythonpath={' '.join(paths)}", "--rootdir", str(stage), str(stage / "tests")],
        cwd=stage / "src", capture_output=True, text=True, check=False,
        env={"PATH": "/usr/bin:/bin", "HOME": str(stage), "PYTHONPATH": str(root / "plugin"),
             "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0", "STAMINA_GYM_COSTS_OUT": str(out),
             "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
    )  # fmt: skip
    if proc.returncode != 0 or not out.is_file():
        raise TaskError(f"turn {turn.index} ({turn.id}): its tests do not pass on its reference solution "
                        f"(pytest exit {proc.returncode}): {proc.stdout[-1500:]}{proc.stderr[-500:]}")  # fmt: skip
    seconds: dict[str, float] = {}
    for nodeid, spent in json.loads(out.read_text(encoding="utf-8")).items():  # parametrised cases add up
        test = base_id(nodeid.removeprefix("tests/"))
        seconds[test] = seconds.get(test, 0.0) + spent
    missing = set(turn.test_ids) - seconds.keys()
    if missing:
        raise TaskError(f"turn {turn.index} ({turn.id}): no timing for {sorted(missing)[:3]}")
    return {tid: round(seconds[tid] * 1000, 2) for tid in turn.test_ids}


def write(task: Task, costs: Mapping[str, float]) -> Path:
    path = task.root / FILE_NAME
    data = {"task_version": task.meta.version, "unit": "milliseconds of setup, call and teardown per test",
            "python": f"{sys.version_info.major}.{sys.version_info.minor}", "ms": dict(sorted(costs.items()))}  # fmt: skip
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return path

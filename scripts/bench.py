"""Per-step and per-submit overhead of StaminaTodo-v2, against floors measured in the same run.

    .venv/bin/python scripts/bench.py [--repeat N] [--env StaminaTodo-v2] [--goals] [--no-docker]

First a table of the speed goals: the submits of an oracle episode at sampled turns
(41-49, 51-59) and at full-regression turns (10, 50, 100), each against bare ``python -m
pytest`` of the same tests on a copy of the same tree, run right after it; the whole
episode; ``run_tests`` on the 20-turn state against bare pytest on the same tree; a
``run`` step of ``python -c pass`` against that command without a sandbox; a reset of
the same env back to the seed state against the git restore it needs; a reset that
starts at turn 50 against a plain reset (both of a new env with a new seed); the resident
memory of one process holding 1 and 4 envs (``--goals`` stops there). Then one table: medians of reset, a read_file step, a submit (grading) and a whole
oracle episode (with the env's settings, and again rerunning every earlier test and pylint
at every submit), next to what they are compared with (copying the seed with
shutil.copytree; bare ``python -m pytest`` on the same tests and source in a temp dir),
the quality measurement at submit (incremental, all cached, cold) against running
pylint, bandit and radon as command lines on the same files, the floors (interpreter
start, pytest import, a git restore), and the simulated user's ask step on
StaminaClarify-v3 against a read_file step. Measurements are
interleaved so that noise on this shared machine hits both sides of a ratio alike.

Where a Docker engine answers and the sandbox image is built, a second table puts the
docker backend beside the local one: reset, a read_file step, a run step, a submit and
the grading of all turns, interleaved (``--no-docker`` skips it).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from xml.etree import ElementTree

import gymnasium as gym

import stamina_gym  # noqa: F401 - registers the env ids
from stamina_gym.agents import make_agent
from stamina_gym import hidden_runner as runner
from stamina_gym.hidden_runner import copy_source, run_hidden_tests
from stamina_gym.harness import run_episode
from stamina_gym.agents.view import view_for
from stamina_gym.quality.measure import AnalysisCache
from stamina_gym.quality.review import Reviewer
from stamina_gym.workspace import Workspace


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def bare_pytest(source: Path, task, ids, params: dict, own: list[float] | None = None) -> float:
    """The baseline: seconds of plain ``python -m pytest`` on a copy of ``source`` running
    the hidden tests ``ids`` (test ids, or turn folders for all of a turn's tests) as the
    episode's params render them, no sandbox; the copying is not timed. ``own`` gets the
    tests' own seconds in that run (setup, call and teardown of each, from pytest's JUnit
    report): what no runner can save, only spread over cores."""
    folders = {tid.split("/")[0] for tid in ids}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        shutil.copytree(source, root / "src", symlinks=True)
        for turn in task.turns:
            if turn.id in folders:
                shutil.copytree(turn.dir / "tests", root / "tests" / turn.id, ignore=shutil.ignore_patterns("__pycache__"))
        for path in (root / "tests").rglob("*.py"):
            path.write_text(task.render(path.read_text(), params, path.name))
        paths = [str(root / "src")] + ([str(task.support_dir)] if task.support_dir else [])
        report = root / "junit.xml"
        argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--import-mode=importlib", f"--junitxml={report}",
                "-o", f"pythonpath={' '.join(paths)}", "--rootdir", str(root), *(f"{root}/tests/{tid}" for tid in sorted(ids))]
        # without plugin autoload, as the harness runs the hidden tests
        environment = {**SANDBOX_LIKE, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
        took = timed(lambda: subprocess.run(argv, cwd=root / "src", capture_output=True, check=False, env=environment))
        if own is not None:
            own.append(sum(float(case.get("time", 0)) for case in ElementTree.parse(report).iter("testcase")))
        return took


#: The environment the sandbox gives commands, for baselines run without it; temporary
#: files in memory, as the sandbox's /tmp is (SQLite's syncs on a disk would slow the baseline).
_MEMORY_TMP = "/dev/shm" if Path("/dev/shm").is_dir() and os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()
SANDBOX_LIKE = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": _MEMORY_TMP, "TMPDIR": _MEMORY_TMP, "LANG": "C.UTF-8",
                "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0"}  # fmt: skip
SAMPLED_TURNS = (*range(41, 50), *range(51, 60))
FULL_TURNS = (10, 50, 100)


def grading_pair(inner, source: Path, ids, sealed_first: bool) -> tuple[float, float]:
    """Seconds to grade the tests ``ids`` on ``source`` with sealed judging and with the
    tests staged as written (the harness, sandbox and shards of a submit), in the order
    ``sealed_first`` says (alternated over a run, so that a warm cache favours neither)."""
    turns = [turn for turn in inner.task.turns if any(tid in ids for tid in turn.test_ids)]
    scratch = Path(tempfile.mkdtemp())
    inner._sandbox.prepare(source)
    times = {}
    for sealed in (True, False) if sealed_first else (False, True):
        times[sealed] = timed(lambda: run_hidden_tests(source=source, task=inner.task, turns=turns, sandbox=inner._sandbox,
                                                       scratch=scratch, timeout=600, params=inner.params, only=ids,
                                                       sealed_judging=sealed))  # fmt: skip
    shutil.rmtree(scratch, ignore_errors=True)
    return times[True], times[False]


def goal_rows(env_id: str, n: int) -> list[tuple[str, float, str, float | None]]:
    """The speed goals: submits of the oracle episode (sampled and full-regression turns)
    against bare pytest on the same tests at the same state, measured right after each
    submit; the episode; run_tests against bare pytest; a run step against a bare
    interpreter start."""
    env = gym.make(env_id)
    inner = env.unwrapped
    cores = inner.config.sandbox.workers()  # the shards a submit's tests are spread over
    sampled: list[tuple[float, float, float]] = []
    full: list[tuple[float, float, float]] = []
    sealing: list[tuple[float, float]] = []  # (sealed, as written) grading of the same tests and tree
    kept: list[tuple[Path, set[str]]] = []  # each sampled submit's tree and tests, graded both ways after the episode
    original_step = env.step
    snapshot = Path(tempfile.mkdtemp()) / "src"
    aside = [0.0]  # seconds spent on baselines inside the episode, not part of it

    def step(action):
        submitting = isinstance(action, dict) and action.get("tool") == "submit"
        turn = inner._turn + 1 if inner._turn is not None else None
        measured = submitting and turn in (*SAMPLED_TURNS, *FULL_TURNS)
        if measured:
            aside[0] += timed(lambda: (shutil.rmtree(snapshot, ignore_errors=True), copy_source(inner.workspace.path, snapshot)))
        start = time.perf_counter()
        out = original_step(action)
        took = time.perf_counter() - start
        if measured:
            grade = out[4]["grade"]
            ids = {*grade["tests"], *grade["regression_tests"]}
            start = time.perf_counter()
            own: list[float] = []
            bare = bare_pytest(snapshot, inner.task, ids, inner.params, own)
            aside[0] += time.perf_counter() - start
            (sampled if turn in SAMPLED_TURNS else full).append((took, bare, own[0] / cores))
            if turn in SAMPLED_TURNS:
                start = time.perf_counter()
                kept.append((snapshot.parent / f"turn-{turn}", ids))
                shutil.copytree(snapshot, kept[-1][0])
                aside[0] += time.perf_counter() - start
        return out

    env.step = step
    episode_s = timed(lambda: run_episode(env, make_agent("oracle"), seed=0)) - aside[0]
    env.close()
    # Graded both ways in another env's sandbox, after the episode: grading a snapshot in the
    # episode's own sandbox points its warm runner elsewhere and slows the next submit.
    env = gym.make(env_id)
    env.reset(seed=0)
    for tree, ids in kept:
        sealing.append(grading_pair(env.unwrapped, tree, ids, len(sealing) % 2 == 0))
    env.close()
    shutil.rmtree(snapshot.parent, ignore_errors=True)

    # run_tests on the 20-turn state against bare pytest on the same tree.
    env = gym.make(env_id)
    inner = env.unwrapped
    env.reset(seed=0)
    for index in range(20):
        inner.workspace.apply_patch(inner.reference_patch(index))
    inner._sandbox.prepare(inner.workspace.path)
    runs, bares, steps, starts, resets, restores = [], [], [], [], [], []
    for _ in range(n):
        runs.append(timed(lambda: env.step({"tool": "run_tests"})))
        bares.append(timed(lambda: subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--color=no"],
                                                  cwd=inner.workspace.path, capture_output=True, check=False, env=SANDBOX_LIKE)))  # fmt: skip
        steps.append(timed(lambda: env.step({"tool": "run", "command": f"{sys.executable} -c pass"})))
        starts.append(timed(lambda: subprocess.run([sys.executable, "-c", "pass"], check=True)))
    # A reset of the same env back to the seed state, against the git restore it needs.
    workspace = inner.workspace
    for _ in range(n):
        env.step({"tool": "write_file", "path": "scratch.txt", "content": "x"})  # each side has one file to undo
        resets.append(timed(lambda: env.reset(seed=0)))
        env.step({"tool": "write_file", "path": "scratch.txt", "content": "x"})
        restores.append(timed(lambda: (workspace.git("reset", "-q", "--hard", "seed"), workspace.git("clean", "-q", "-ffdx"))))
    env.close()
    # A start at turn 50 (a new env each time, a new seed: new params, nothing laid before)
    # against a plain reset of a new env.
    later, plain = [], []
    for i in range(n):
        for options, samples in (({"start_turn": 50}, later), (None, plain)):
            env = gym.make(env_id)
            samples.append(timed(lambda: env.reset(seed=1000 + i, options=options)))
            env.close()
    median_pair = lambda pairs, i: statistics.median(p[i] for p in pairs) * 1000  # noqa: E731
    return [
        (f"submit, sampled turns 41-49, 51-59 ({len(sampled)})", median_pair(sampled, 0), "bare pytest, same tests and tree", median_pair(sampled, 1)),
        (f"submit, full-regression turns {'/'.join(map(str, FULL_TURNS))}", median_pair(full, 0), "bare pytest, same tests and tree", median_pair(full, 1)),
        (f"  grading alone, sealed, sampled ({len(sealing)})", median_pair(sealing, 0), "the same tests staged as written", median_pair(sealing, 1)),
        (f"  floor: the tests' own time / {cores} shards, sampled", median_pair(sampled, 2), "bare pytest, same tests and tree", median_pair(sampled, 1)),
        (f"  floor: the tests' own time / {cores} shards, full", median_pair(full, 2), "bare pytest, same tests and tree", median_pair(full, 1)),
        ("run_tests step, 20-turn state", median_ms(runs), "bare python -m pytest, same tree", median_ms(bares)),
        ("whole oracle episode", episode_s * 1000, "the goal: one minute", 60_000.0),
        ("run step: python -c pass", median_ms(steps), "python -c pass, no sandbox", median_ms(starts)),
        ("reset, same env, back to the seed state", median_ms(resets), "git restore (reset --hard + clean)", median_ms(restores)),
        ("reset at start_turn 50, new env and seed", median_ms(later), "reset at turn 1, new env and seed", median_ms(plain)),
    ]  # fmt: skip


def resident_memory_rows() -> list[tuple[str, float, str, float | None]]:
    """Resident memory (MiB) of one process holding 1 and 4 reset envs that have stepped
    and submitted once, against the bare interpreter with the package imported."""
    code = (
        "import sys, gymnasium as gym, stamina_gym\n"
        "envs = [gym.make(sys.argv[1]) for _ in range(int(sys.argv[2]))]\n"
        "for env in envs:\n"
        "    env.reset(seed=0); env.step({'tool': 'read_file', 'path': 'README.md'}); env.step({'tool': 'submit'})\n"
        "print([l for l in open('/proc/self/status') if l.startswith('VmRSS')][0].split()[1])\n"
    )

    def rss(count: int) -> float:
        out = subprocess.run([sys.executable, "-c", code, "StaminaTodo-v2", str(count)], capture_output=True, text=True, check=True)
        return int(out.stdout.split()[-1]) / 1024

    return [("resident memory, 1 env (MiB)", rss(1), "4 envs in one process (MiB)", rss(4))]


def analysers_as_subprocesses(tree: Path, files: list[str]) -> None:
    """The alternative design: each analyser's command line on the changed files."""
    if not files:
        return
    for argv in (
        ["pylint", "--rcfile=/dev/null", "--persistent=n", "--score=n"],
        ["bandit", "-q", "--ignore-nosec"],
        ["radon", "cc", "-s"],
        ["radon", "mi", "-s"],
    ):
        subprocess.run([sys.executable, "-m", *argv, *files], cwd=tree, capture_output=True, check=False)


def quality_rows(task, repeat: int) -> list[tuple[str, float, str, float | None]]:
    """Quality at submit over the reference's turns: incremental (the previous state
    cached), cold (a new process), all hits; against the analysers' own command lines."""
    root = Path(tempfile.mkdtemp())
    # pylint at every submit, whatever the env spec says: the rows measure a full review
    config = gym.make("StaminaTodo-v2").unwrapped.config.quality.model_copy(update={"pylint_every": 1})
    incremental, subprocesses, hits = [], [], []
    params = task.choose_params(lambda n: 0)
    try:
        for _ in range(max(repeat // 5, 1)):
            workspace = Workspace(root / "ws", task.seed_dir)
            workspace.reset()
            reviewer = Reviewer(task, config, "free", root / "scratch", cache=AnalysisCache())
            for turn in task.turns:
                start = workspace.head()
                workspace.apply_patch(task.reference_patch(turn, params))
                changed = workspace.numstat(start)
                incremental.append(timed(lambda: reviewer.review(turn, workspace.path, changed, last=False)))
                hits.append(timed(lambda: reviewer.meter.measure(workspace.path)))
                files = [p for p in changed if p.endswith(".py") and (workspace.path / p).is_file()
                         and not p.startswith("tests/")]  # fmt: skip
                subprocesses.append(timed(lambda: analysers_as_subprocesses(workspace.path, files)))
                workspace.commit(f"turn {turn.index}")
        every = sorted(str(p.relative_to(workspace.path)) for p in workspace.path.rglob("*.py") if "tests" not in p.parts)
        code = (
            "import sys; from pathlib import Path; from stamina_gym.quality.measure import QualityMeter, AnalysisCache; "
            "QualityMeter(Path(sys.argv[2]), AnalysisCache(), exclude=('tests/**',)).measure(Path(sys.argv[1]))"
        )
        cold = [timed(lambda: subprocess.run([sys.executable, "-c", code, str(workspace.path), str(root / "cold")], check=True))
                for _ in range(3)]  # fmt: skip
        cold_cli = [timed(lambda: analysers_as_subprocesses(workspace.path, every)) for _ in range(3)]
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return [
        ("quality at submit, incremental", median_ms(incremental), "analysers' CLIs on changed files", median_ms(subprocesses)),
        ("quality, repeated state (all cached)", median_ms(hits), "", None),
        ("quality, cold full analysis (new process)", median_ms(cold), "analysers' CLIs on every file", median_ms(cold_cli)),
    ]


def dialogue_rows(n: int) -> list[tuple]:
    """The simulated user on StaminaClarify-v3's first turn: an ``ask`` step against a
    ``read_file`` step of the same env, and the per-turn BM25 matcher build."""
    from stamina_gym.user.match import KeyPointMatcher

    env = gym.make("StaminaClarify-v3")
    env.reset(seed=0)
    turn = env.unwrapped.turns[0]
    questions = [p.phrasings[0] for p in turn.spec.spec.key_points]
    asks, reads, builds = [], [], []
    for i in range(n):
        asks.append(timed(lambda: env.step({"tool": "ask", "question": questions[i % len(questions)]})))
        reads.append(timed(lambda: env.step({"tool": "read_file", "path": "README.md"})))
        builds.append(timed(lambda: KeyPointMatcher(turn.spec.spec.key_points, turn.spec.prompts)))
    env.close()
    return [
        ("ask step (rule user, BM25 match)", median_ms(asks), "read_file step, same env", median_ms(reads)),
        ("key-point matcher build (per turn)", median_ms(builds), "", None),
    ]
def compare_backends(env_id: str, n: int) -> list[tuple[str, float, float]]:
    """(measure, docker median ms, local median ms), measured side by side."""
    envs = {kind: gym.make(env_id, sandbox=kind) for kind in ("docker", "local")}
    samples: dict[tuple[str, str], list[float]] = {}

    def record(kind: str, name: str, fn) -> None:
        samples.setdefault((kind, name), []).append(timed(fn))

    try:
        for kind, env in envs.items():
            env.reset(seed=0)
            record(kind, "first command (docker: starts the container)", lambda: env.step({"tool": "run", "command": "true"}))
        for _ in range(n):
            for kind, env in envs.items():
                inner = env.unwrapped
                record(kind, "reset", lambda: env.reset(seed=0))
                record(kind, "read_file step", lambda: env.step({"tool": "read_file", "path": "README.md"}))
                record(kind, "run step (true)", lambda: env.step({"tool": "run", "command": "true"}))
                env.step({"tool": "apply_patch", "patch": inner.reference_patch(0)})
                record(kind, "submit, turn 1", lambda: env.step({"tool": "submit"}))
        for kind, env in envs.items():
            inner = env.unwrapped
            env.reset(seed=0)
            for index in range(len(inner.turns)):
                inner.workspace.apply_patch(inner.reference_patch(index))
            inner._sandbox.prepare(inner.workspace.path)
        scratch = Path(tempfile.mkdtemp())
        for _ in range(max(n // 3, 3)):
            for kind, env in envs.items():
                inner = env.unwrapped
                record(kind, f"grading, all {len(inner.turns)} turns' tests", lambda: run_hidden_tests(
                    source=inner.workspace.path, task=inner.task, turns=inner.turns, sandbox=inner._sandbox,
                    scratch=scratch, timeout=300, params=inner.params))  # fmt: skip
        shutil.rmtree(scratch, ignore_errors=True)
    finally:
        for env in envs.values():
            env.close()
    names = [name for kind, name in samples if kind == "docker"]
    return [(name, median_ms(samples["docker", name]), median_ms(samples["local", name])) for name in names]


def docker_unavailable() -> str | None:
    from stamina_gym.errors import SandboxError
    from stamina_gym.sandbox.docker import connect
    from stamina_gym.sandbox.image import image_present, image_tag

    try:
        client = connect()
    except SandboxError as exc:
        return str(exc)
    try:
        return None if image_present(client, image_tag()) else f"image {image_tag()} is not built (scripts/build_image.sh)"
    finally:
        client.close()


#: How long the policy thinks before each submit in the deferred-grading rows: a model's
#: next answer takes seconds, during which a deferred submit's grading runs.
THINK_S = 2.0


def deferred_rows(env_id: str) -> list[tuple[str, float, str, float | None]]:
    """A submit as the policy sees it (the step's own time), with grading deferred and
    synchronous, on the oracle's turns 41-50 after ``THINK_S`` of thought before each
    submit (not timed)."""
    medians = {}
    for deferred in (True, False):
        env = gym.make(env_id, deferred_grading=deferred)
        agent = make_agent("oracle")
        observation, _ = env.reset(seed=0, options={"start_turn": 41, "num_turns": 10})
        agent.reset(view_for(agent, env))
        submits, done = [], False
        while not done:
            action = agent.act(observation)
            submitting = isinstance(action, dict) and action.get("tool") == "submit"
            if submitting:
                time.sleep(THINK_S)
            start = time.perf_counter()
            observation, _, terminated, truncated, _ = env.step(action)
            if submitting:
                submits.append(time.perf_counter() - start)
            done = terminated or truncated
        agent.close()
        env.close()
        medians[deferred] = statistics.median(submits[:-1]) * 1000  # the last submit waits for every grade
    return [(f"submit, deferred grading, turns 41-49 (think {THINK_S:.0f} s)", medians[True],
             "synchronous submit, same turns", medians[False])]  # fmt: skip


def print_rows(rows) -> None:
    print(f"{'measure':<48} {'median ms':>10}   {'baseline':<38} {'median ms':>10} {'ratio':>6}")
    for name, ours, base_name, base in rows:
        ratio = f"{ours / base:6.2f}" if base else ""
        base_text = f"{base:10.1f}" if base else ""
        print(f"{name:<48} {ours:10.1f}   {base_name:<38} {base_text:>10} {ratio:>6}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="StaminaTodo-v2")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--no-docker", action="store_true", help="skip the docker-vs-local table")
    parser.add_argument("--goals", action="store_true", help="print only the table of the speed goals")
    args = parser.parse_args()
    n = args.repeat
    print(f"measuring the speed goals on {args.env} (an oracle episode, {n} repeats of each step) ...", file=sys.stderr)
    print_rows([*goal_rows(args.env, n), *deferred_rows(args.env), *resident_memory_rows()])
    if args.goals:
        return
    print()

    env = gym.make(args.env)
    inner = env.unwrapped
    env.reset(seed=0)
    seed_dir = inner.task.seed_dir

    print(f"measuring {args.env} ({len(inner.turns)} turns), {n} repeats each ...", file=sys.stderr)
    resets, copies = [], []
    for _ in range(n):
        resets.append(timed(lambda: env.reset(seed=0)))
        target = Path(tempfile.mkdtemp())
        copies.append(timed(lambda: shutil.copytree(seed_dir, target / "repo")))
        shutil.rmtree(target)
    reads = [timed(lambda: env.step({"tool": "read_file", "path": "README.md"})) for _ in range(n)]

    # Grading at the last turn (the largest test set) against bare pytest on the same files.
    workspace = inner.workspace
    for index in range(len(inner.turns)):
        workspace.apply_patch(inner.reference_patch(index))
    inner._sandbox.prepare(workspace.path)
    snapshot = Path(tempfile.mkdtemp()) / "src"
    copy_source(workspace.path, snapshot)
    grades, singles, plains, bares = [], [], [], []
    scratch = Path(tempfile.mkdtemp())
    workers = inner.config.sandbox.workers()

    def grade(workers: int, plant: bool) -> float:
        runner.plant_rewritten = planting if plant else (lambda *args: None)
        try:
            return timed(lambda: run_hidden_tests(source=workspace.path, task=inner.task, turns=inner.turns,
                                                  sandbox=inner._sandbox, scratch=scratch, timeout=300,
                                                  params=inner.params, workers=workers))  # fmt: skip
        finally:
            runner.plant_rewritten = planting

    planting = runner.plant_rewritten
    for _ in range(max(n // 3, 3)):
        grades.append(grade(workers, plant=True))
        singles.append(grade(1, plant=True))
        plains.append(grade(1, plant=False))
        bares.append(bare_pytest(snapshot, inner.task, [turn.id for turn in inner.turns], inner.params))
    floors = {
        "interpreter start (python -c pass)": [timed(lambda: subprocess.run([sys.executable, "-c", "pass"], check=True)) for _ in range(n)],
        "pytest import (python -c 'import pytest')": [timed(lambda: subprocess.run([sys.executable, "-c", "import pytest"], check=True)) for _ in range(n)],
        "git restore (reset --hard + clean)": [timed(lambda: (workspace.git("reset", "-q", "--hard", "seed"), workspace.git("clean", "-q", "-ffdx"))) for _ in range(n)],
        "sandbox round trip (bwrap true)": [timed(lambda: inner._sandbox.run(["true"], mounts=[], cwd="/")) for _ in range(n)],
    }  # fmt: skip

    submits: list[float] = []
    agent = make_agent("oracle")
    original_step = env.step

    def step_and_time(action):
        start = time.perf_counter()
        out = original_step(action)
        if isinstance(action, dict) and action.get("tool") == "submit":
            submits.append(time.perf_counter() - start)
        return out

    env.step = step_and_time
    episode_s = timed(lambda: run_episode(env, agent, seed=0))
    env.close()
    # The same episode with every earlier test rerun and pylint run at every submit.
    exhaustive = gym.make(args.env, regression={"budget_ms": None}, quality={"pylint_every": 1})
    exhaustive_s = timed(lambda: run_episode(exhaustive, make_agent("oracle"), seed=0))
    exhaustive.close()
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.rmtree(snapshot.parent, ignore_errors=True)

    rows = [
        ("reset", median_ms(resets), "shutil.copytree of the seed", median_ms(copies)),
        ("read_file step", median_ms(reads), "", None),
        (f"grading, all {len(inner.turns)} turns' tests", median_ms(grades), "bare python -m pytest, same tests", median_ms(bares)),
        (f"  the same in {workers} pytest process(es)", median_ms(grades), "one process", median_ms(singles)),
        ("  one process, planted rewritten pycs", median_ms(singles), "one process, pytest rewrites", median_ms(plains)),
        ("submit during the oracle episode", median_ms(submits), "", None),
        ("whole oracle episode", episode_s * 1000, "the 3-minute budget", 180_000.0),
        ("  the same", episode_s * 1000, "all earlier tests, pylint, each submit", exhaustive_s * 1000),
        *quality_rows(inner.task, n),
        *((name, median_ms(samples), "", None) for name, samples in floors.items()),
        *dialogue_rows(n),
    ]
    print_rows(rows)

    problem = "--no-docker was given" if args.no_docker else docker_unavailable()
    if problem:
        print(f"\ndocker backend not measured: {problem}")
        return
    print(f"measuring the docker backend beside the local one, {n} repeats each ...", file=sys.stderr)
    print(f"\n{'measure (docker vs local sandbox)':<46} {'docker ms':>10} {'local ms':>10} {'ratio':>6}")
    for name, docker_ms, local_ms in compare_backends(args.env, n):
        print(f"{name:<46} {docker_ms:10.1f} {local_ms:10.1f} {docker_ms / local_ms:6.2f}")


if __name__ == "__main__":
    main()

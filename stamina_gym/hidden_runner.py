"""Run hidden tests on a copy of the agent's source, in the sandbox: the side-effect half
of grading. ``stamina_gym.grading`` is the pure half (``grading/grade.py`` judges,
``grading/harness.py`` is the program run inside, ``grading/cache.py`` wraps this from
outside).

The copy leaves out every file through which code could steer a pytest run (conftest.py,
pytest/tox/setup.cfg/pyproject configuration, sitecustomize/usercustomize, .pth files), and
the harness starts pytest isolated (``python -I``), with our own ini file, without conftest
loading or plugin autoload, so the agent's configuration has no say. Canaries
(``canaries.py``) are written among the hidden tests, every test file in a random order
with one modification time, so nothing on disk tells them apart. Outcomes come back on the
harness's stdout, written only by its trusted parent (see ``stamina_gym.grading``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import os
import random
import secrets
import shutil
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Collection, Mapping, Sequence

from stamina_gym import collection, pyast, safetree
from stamina_gym.errors import SandboxError, TreeTooLarge
from stamina_gym.grading import canaries as canary_plan
from stamina_gym.grading import seal
from stamina_gym.grading.grade import Canaries
from stamina_gym.grading import HARNESS_PROGRAM
from stamina_gym.grading.harness import MARKER
from stamina_gym.grading.hidden import COPY_MAX_BYTES, COPY_MAX_FILES, HiddenRun, not_graded
from stamina_gym.grading.report import Outcome
from stamina_gym.sandbox import PYTEST_ENVIRONMENT, REPO_MOUNT, Mount, RunResult, Sandbox
from stamina_gym.sandbox.service import LineService
from stamina_gym.task import Task, Turn

GRADE_MOUNT = "/grade"


def copy_source(src: Path, dst: Path) -> None:
    """Copy the work tree without steering files into ``dst`` (which may exist, empty);
    symlinks are copied as links, so they resolve inside the sandbox's own view, never on
    the host; named pipes, sockets and devices are left out; sparse files count at their
    full size against the caps (``TreeTooLarge``)."""
    dst.mkdir(parents=True, exist_ok=True)
    fresh = dst / f".copy-{secrets.token_hex(4)}"
    safetree.copy_tree(src, fresh, not_graded, max_files=COPY_MAX_FILES, max_bytes=COPY_MAX_BYTES)
    for entry in os.listdir(fresh):
        os.rename(fresh / entry, dst / entry)
    os.rmdir(fresh)


def pytest_args(shard: int, files: Sequence[str]) -> list[str]:
    """pytest's arguments in one shard of the harness (the interpreter is already isolated);
    the harness puts the roots of the grading folder and the source for the placeholders.
    The task's test support comes first on the path: a module of the agent's by the same
    name is never imported in its place."""
    return [
        "-c", "{grade}/pytest.ini", "--rootdir", "{grade}",
        "-p", "no:cacheprovider", "-p", "no:junitxml", "--noconftest", "--import-mode=importlib",
        "--continue-on-collection-errors", "-q", "--no-header", "-o", "console_output_style=classic",
        # Python's own traceback: pytest's default style reads every frame's source, which
        # was about 8 ms per failing test (each run has its must-fail canaries).
        "--tb=native",
        "-o", "pythonpath={grade}/support {repo}", f"--basetemp=/tmp/pytest-shard-{shard}",
        *(f"{{grade}}/tests/{path}" for path in files),
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
        for path in collection.test_files(tests / folder):
            source = path.read_bytes()
            inside = f"{GRADE_MOUNT}/tests/{path.relative_to(tests).as_posix()}"
            key = (inside, hashlib.sha256(source).digest())
            data = _REWRITTEN.get(key)
            if data is None:
                try:
                    tree = pyast.parse(source, filename=inside)
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


#: What importing one test module costs, in the units of ``costs.json`` (milliseconds): a
#: shard of many cheap files is not a light shard.
_FILE_COST_MS = 10.0


def _cost(test_ids: Sequence[str], costs: Mapping[str, float] | None) -> float:
    """What running ``test_ids`` costs: their measured milliseconds and a file import each;
    without ``costs``, their number."""
    if costs is None:
        return float(len(test_ids))
    files = {tid.split("::")[0] for tid in test_ids}
    return sum(costs.get(tid, 0.0) for tid in test_ids) + _FILE_COST_MS * len(files)


def _chosen(turn: Turn, only: Collection[str] | None) -> list[str] | None:
    """The pytest arguments (under the tests folder) that run ``turn``'s tests in ``only``:
    None for the whole folder, [] for none of them."""
    if only is None:
        return None
    picked = [tid for tid in turn.test_ids if tid in only]
    return None if len(picked) == len(turn.test_ids) else picked


@dataclass
class StagedTests:
    """A grading folder made before the submit that runs it (``stage_tests``): the hidden
    tests of ``turns`` restricted to ``only``, the canaries, their planted pycs and the
    harness, in ``folder / "grade"``; everything but the agent's source."""

    folder: Path
    turns: tuple[str, ...]
    only: frozenset[str] | None
    canaries: Canaries
    shards: list[dict]
    """Each shard's pytest arguments and the test ids it keeps (the job's ``shards``)."""
    sealed: Mapping[str, Mapping[int, seal.Point]] = field(default_factory=dict)
    """The points of every staged module that went in as a probe (path under the tests
    folder -> its points): they stay here, on the host, and judge what the probes send."""

    def matches(self, turns: Sequence[Turn], only: Collection[str] | None) -> bool:
        return self.turns == tuple(t.id for t in turns) and self.only == (None if only is None else frozenset(only))

    def discard(self) -> None:
        safetree.rmtree(self.folder)


def stage_tests(
    *,
    task: Task,
    turns: Sequence[Turn],
    scratch: Path,
    workers: int,
    params: Mapping[str, str | int] | None = None,
    only: Collection[str] | None = None,
    costs: Mapping[str, float] | None = None,
    report_dropped: bool = False,
    sealed_judging: bool = True,
    plant_canaries: bool = True,
) -> StagedTests:
    """Write the grading folder of a run of ``turns``' hidden tests (see
    ``run_hidden_tests``) into a new folder under ``scratch``; the env makes it while the
    agent works, so that a submit only copies the source in. With ``sealed_judging`` (the
    default) the modules go in as probes and their points stay in the ``StagedTests``;
    without it, as written (what ``validate`` compares the probes with). Without
    ``plant_canaries``, none is planted: for runs whose canaries nothing reads (mining's, of a
    project's own history, which judges no agent)."""
    params = dict(params or {})
    wanted = None if only is None else frozenset(only)
    chosen = {turn.id: _chosen(turn, wanted) for turn in turns}
    running = [turn for turn in turns if chosen[turn.id] != []]
    shards = shard_turns(running, workers, lambda t: _cost(chosen[t.id] or t.test_ids, costs))
    folder = scratch / f"grade-{secrets.token_hex(4)}"
    grade_dir = folder / "grade"
    texts = _staged_tests(task, running, params)
    planned = _plan_canaries(task, shards, texts, params) if plant_canaries else [[] for _ in shards]
    canaries = Canaries({f"{c.path}::{c.test}": c.expected for group in planned for c in group},
                        {c.path: c.source for group in planned for c in group})  # fmt: skip
    probes, sealed = (seal_modules({**texts, **canaries.source}, _support_texts(task, params)) if sealed_judging
                      else ({**texts, **canaries.source}, {}))  # fmt: skip
    _write_tests(grade_dir / "tests", probes)
    if task.support_dir:
        shutil.copytree(task.support_dir, grade_dir / "support", ignore=shutil.ignore_patterns("__pycache__"))
        if task.meta.params:
            for path in (grade_dir / "support").rglob("*.py"):
                path.write_text(task.render(path.read_text(encoding="utf-8"), params, path.name), encoding="utf-8")
    plant_rewritten(grade_dir / "tests", [turn.id for turn in running])
    (grade_dir / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    shutil.copyfile(HARNESS_PROGRAM, grade_dir / "harness.py")
    job_shards = []
    for number, (group, own) in enumerate(zip(shards, planned)):
        keep = [tid for turn in group for tid in (chosen[turn.id] or turn.test_ids)]
        keep += [f"{c.path}::{c.test}" for c in own]
        files = sorted({tid.split("::")[0] for tid in keep})
        job_shards.append({"args": pytest_args(number, files), "keep": keep, "report_dropped": report_dropped})
    return StagedTests(folder, tuple(t.id for t in turns), wanted, canaries, job_shards, sealed)


def sealing(task: Task, turn: Turn, params: Mapping[str, str | int]) -> dict[str, int]:
    """How many of ``turn``'s tests are sealed, guessable or open (``seal.test_status``):
    what a forger that guesses could pass of them. From the compiled modules (kept by
    content), so a submit pays next to nothing for it."""
    counts = dict.fromkeys(seal.STATUSES, 0)
    texts = _staged_tests(task, [turn], params)
    available = _helper_templates(texts, _support_texts(task, params))
    modules = {}
    for path in turn.tests:
        rel = f"{turn.id}/{path.relative_to(turn.dir / 'tests').as_posix()}"
        modules[rel] = seal.compiled(texts[rel], rel, seal.helpers_for(texts[rel], rel, available))
    for test_id in turn.test_ids:
        path, function, _ = seal.test_function(test_id)
        module = modules.get(path)
        counts[seal.test_status(module.points, function) if module else "open"] += 1
    return counts


def seal_modules(texts: Mapping[str, str], support: Mapping[str, str] | None = None,
                 ) -> tuple[dict[str, str], dict[str, Mapping[int, seal.Point]]]:  # fmt: skip
    """The staged files with every Python module in as its probe, and the points of each
    (``seal.compiled``, kept by content): the expected values never enter the sandbox.
    ``support`` is the task's test support (dotted module name -> text): its assertion
    helpers, and the staged modules', are compiled where the tests call them."""
    probes, sealed = dict(texts), {}
    available = _helper_templates(texts, support or {})
    for rel, text in texts.items():
        module = seal.compiled(text, rel, seal.helpers_for(text, rel, available)) if rel.endswith(".py") else None
        if module is not None:
            probes[rel], sealed[rel] = module.probe, module.points
    return probes, sealed


def run_hidden_tests(
    *,
    source: Path,
    task: Task,
    turns: Sequence[Turn],
    sandbox: Sandbox,
    scratch: Path,
    timeout: float,
    params: Mapping[str, str | int] | None = None,
    workers: int | None = None,
    only: Collection[str] | None = None,
    costs: Mapping[str, float] | None = None,
    staged: StagedTests | None = None,
    started: Callable[[], None] | None = None,
    report_dropped: bool = False,
    sealed_judging: bool = True,
    plant_canaries: bool = True,
) -> HiddenRun:
    """Copy ``source``, add the hidden tests of ``turns`` (rendered with the episode's
    ``params`` when the task has any) and canaries, run, parse. (A grading cache wraps this
    from outside: ``GradingCache.run``.) With ``workers`` > 1
    the turns are split into that many pytest processes that run at once in the one
    sandbox call, each with its own canaries, report and temporary folder (default: the
    sandbox config's ``workers()``). With ``only``, just the tests with those ids run, and
    only the folders of turns with a chosen test are staged. With ``costs`` (test id ->
    milliseconds, the task's ``costs.json``) the shards are balanced by what their tests
    cost rather than by their number. ``staged`` is the grading folder made ahead by
    ``stage_tests`` (used when it is for these turns and tests, discarded either way).
    ``started`` is called once the run is handed to the sandbox. With ``report_dropped``
    the run names the tests pytest collected in the staged files that it did not keep;
    ``sealed_judging`` and ``plant_canaries`` are ``stage_tests``'s."""
    params = dict(params or {})
    workers = sandbox.config.workers() if workers is None else workers
    if staged is not None and not staged.matches(turns, only):
        staged.discard()
        staged = None
    try:
        warm = _warm_runner(sandbox, scratch)
    except SandboxError as exc:  # before any graded code ran: the sample is void
        if staged is not None:
            staged.discard()
        return HiddenRun(None, None, Canaries({}), str(exc))
    if staged is None:
        staged = stage_tests(task=task, turns=turns, scratch=scratch, workers=workers, params=params, only=only, costs=costs,
                             report_dropped=report_dropped, sealed_judging=sealed_judging,
                             plant_canaries=plant_canaries)  # fmt: skip
    stage = warm.root if warm else staged.folder
    try:
        if warm:
            _empty(stage)
            for entry in os.listdir(staged.folder / "grade"):  # into the folder the runner sees as /grade
                if entry != "harness.py":
                    os.rename(staged.folder / "grade" / entry, stage / "grade" / entry)
        try:
            copy_source(source, stage / "src")
        except TreeTooLarge as exc:  # the agent's tree: its fault, a resource failure
            message = f"[stamina-gym: the work tree was not graded: {exc}]"
            return HiddenRun(RunResult(1, message, len(message), limit="file_size"), None, Canaries({}), str(exc))
        job: dict = {"id": secrets.token_hex(8), "timeout_s": timeout, "cpu_s": sandbox.config.cpu_s, "shards": staged.shards}
        sandbox.prepare(stage / "src")
        if started is not None:
            started()
        try:
            if warm:
                run = warm.service.ask(json.dumps(job), timeout + 30)
            else:
                (stage / "grade" / "job.json").write_text(json.dumps(job), encoding="utf-8")
                command = [sandbox.python, "-I", "-B", f"{GRADE_MOUNT}/harness.py", f"{GRADE_MOUNT}/job.json",
                           GRADE_MOUNT, REPO_MOUNT]  # fmt: skip
                run = sandbox.run(command, mounts=_mounts(stage), timeout=timeout + 30, env=PYTEST_ENVIRONMENT,
                                  max_output_chars=_REPORT_CHARS)  # fmt: skip
        except SandboxError as exc:
            return HiddenRun(None, None, staged.canaries, str(exc))
        return _read_report(run, staged.canaries, job["id"], staged.sealed)
    finally:
        if warm:
            _empty(stage)
        staged.discard()


def _mounts(stage: Path) -> list[Mount]:
    return [Mount(stage / "src", REPO_MOUNT, writable=True, ephemeral=True), Mount(stage / "grade", GRADE_MOUNT, ephemeral=True)]


@dataclass
class _Warm:
    root: Path
    """Holds ``src`` and ``grade``, the folders the service sees as /repo and /grade."""
    service: LineService


_WARM: "weakref.WeakKeyDictionary[Sandbox, _Warm]" = weakref.WeakKeyDictionary()


def _warm_runner(sandbox: Sandbox, scratch: Path) -> _Warm | None:
    """The sandbox's warm harness (``harness.serve``), started on first use and again
    whenever the last one ended; None where grading starts a harness per run."""
    if not sandbox.config.warm_grading or sandbox.isolation not in ("bwrap", "docker"):
        return None
    warm = _WARM.get(sandbox)
    if warm is not None and warm.service.alive and warm.root.parent == scratch:
        return warm
    if warm is not None:
        warm.service.close()
        safetree.rmtree(warm.root)
    root = scratch / f"warm-{secrets.token_hex(4)}"
    (root / "src").mkdir(parents=True)
    (root / "grade").mkdir()
    shutil.copyfile(HARNESS_PROGRAM, root / "grade" / "harness.py")
    sandbox.prepare(root / "src")
    argv = [sandbox.python, "-I", "-B", f"{GRADE_MOUNT}/harness.py", "--serve", GRADE_MOUNT, REPO_MOUNT]
    service = sandbox.serve(argv, mounts=_mounts(root), prefix=MARKER, env=PYTEST_ENVIRONMENT)
    _WARM[sandbox] = warm = _Warm(root, service)
    return warm


def _empty(stage: Path) -> None:
    """Empty the warm runner's folders, keeping the folders (the sandbox holds them) and
    the harness (a starting service may not have read it yet)."""
    for folder in (stage / "src", stage / "grade"):
        for entry in list(os.scandir(folder)):
            if entry.path == str(stage / "grade" / "harness.py"):
                continue
            if entry.is_dir(follow_symlinks=False):
                safetree.rmtree(entry.path)
            else:
                os.unlink(entry.path)


#: The report is the last line of the harness's output: never cut.
_REPORT_CHARS = 40 * 1024 * 1024


def _read_report(run: RunResult, canaries: Canaries, job_id: str,
                 sealed: Mapping[str, Mapping[int, seal.Point]] | None = None) -> HiddenRun:  # fmt: skip
    """The harness parent's report on job ``job_id``, or why there is none; the outcomes
    of tests whose modules went in as probes are judged here (``seal.judge_run``)."""
    marker = run.output.rfind(MARKER)
    if marker < 0:
        return HiddenRun(run, None, canaries, "the harness wrote no report")
    try:
        report = json.loads(run.output[marker + len(MARKER) :].split("\n", 1)[0])
        judged = seal.judge_run({tid: (status, message) for tid, (status, message) in report["outcomes"].items()},
                                report.get("observations") or {}, sealed or {})  # fmt: skip
        outcomes = {tid: Outcome(status, message) for tid, (status, message) in judged.items()}
        shards = report["shards"]
    except (ValueError, KeyError, TypeError) as exc:
        return HiddenRun(run, None, canaries, f"the harness report does not parse: {exc}")
    if report.get("id") != job_id:
        return HiddenRun(None, None, canaries, f"the harness answered job {report.get('id')}, not {job_id}")
    if not all(shard["hello"] for shard in shards):
        return HiddenRun(run, None, canaries, "a harness child died before the tests started")
    evidence = []
    for shard in shards:
        evidence += shard["forged"]
        evidence += [f"pytest or pluggy was changed: {change}" for change in shard["integrity"]]
        if shard["alarm"]:
            evidence.append(f"the audit hook saw {shard['alarm']}")
    timed_out = any(shard["timed_out"] for shard in shards)
    if timed_out and not run.timed_out:
        run = RunResult(run.exit_code, run.output, run.output_bytes, run.truncated, True, run.limit, run.signal, run.duration_s)
    complete = all(shard["done"] is not None and not shard["timed_out"] for shard in shards)
    problem = "" if complete else "; ".join(
        f"shard {i} ended without finishing (exit {s['exit']}): {s['log'][-300:]}" for i, s in enumerate(shards) if s["done"] is None
    )
    dropped = tuple(name for shard in shards for name in shard.get("dropped", ()))
    return HiddenRun(run, outcomes, canaries, problem, evidence=tuple(evidence), complete=complete, dropped=dropped)


_RENDERED: dict[tuple[str, str], str] = {}


def _render(task: Task, path: Path, params: Mapping[str, str | int]) -> str:
    """A hidden test file as the episode's params render it, kept per (file, its size and
    time, params): a submit stages the same files again and again."""
    info = path.stat()
    key = (f"{path}:{info.st_size}:{info.st_mtime_ns}", json.dumps(params, sort_keys=True))
    text = _RENDERED.get(key)
    if text is None:
        text = path.read_text(encoding="utf-8")
        if task.meta.params and path.suffix == ".py":
            text = task.render(text, params, path.name)
        if len(_RENDERED) >= _REWRITTEN_MAX:
            _RENDERED.clear()
        _RENDERED[key] = text
    return text


def _support_texts(task: Task, params: Mapping[str, str | int]) -> dict[str, str]:
    """The task's test support as staged: dotted module name -> text, rendered."""
    if not task.support_dir:
        return {}
    root = Path(task.support_dir)
    texts = {}
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        if parts and all(part.isidentifier() for part in parts):
            texts[".".join(parts)] = _render(task, path, params)
    return texts


def _helper_templates(texts: Mapping[str, str], support: Mapping[str, str]) -> dict[str, tuple]:
    """Every assertion helper the staged modules (by path) and the support (``support:<name>``)
    define: what ``seal.helpers_for`` picks from."""
    available = {rel: seal.helper_templates(text) for rel, text in texts.items() if rel.endswith(".py")}
    available.update((f"support:{name}", seal.helper_templates(text)) for name, text in support.items())
    return {module: helpers for module, helpers in available.items() if helpers}


def _staged_tests(task: Task, turns: Sequence[Turn], params: Mapping[str, str | int]) -> dict[str, str]:
    """Every hidden test file of ``turns`` (path under the tests folder -> text, rendered)."""
    texts = {}
    for turn in turns:
        for path in sorted((turn.dir / "tests").rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                texts[f"{turn.id}/{path.relative_to(turn.dir / 'tests').as_posix()}"] = _render(task, path, params)
    return texts


def _plan_canaries(task: Task, shards: list[list[Turn]], staged: Mapping[str, str],
                   params: Mapping[str, str | int]) -> list[list[canary_plan.Canary]]:  # fmt: skip
    """Canaries for each shard, from a generator seeded by the system's randomness."""
    rng = random.Random(secrets.randbits(64))
    names = [tid.split("::") for turn in task.turns for tid in turn.test_ids]
    file_names = sorted({parts[0].rsplit("/", 1)[-1] for parts in names})
    test_names = sorted({parts[-1] for parts in names})
    staged_turns = {turn.id for group in shards for turn in group}
    in_run = {parts[-1] for parts in names if parts[0].split("/")[0] in staged_turns}
    unstaged = [turn for turn in task.turns if turn.id not in staged_turns and turn.index <= max(
        (t.index for g in shards for t in g), default=0)]  # fmt: skip
    modules = []
    for turn in rng.sample(unstaged, min(len(unstaged), 6)):
        for path in turn.tests:
            modules.append(_render(task, path, params))
    if not modules:  # every turn so far is staged: the run's own modules are the only ones
        modules = [text for rel, text in staged.items() if Path(rel).name.startswith("test_")]
    present: dict[str, set[str]] = {}
    for rel in staged:
        folder, _, name = rel.partition("/")
        present.setdefault(folder, set()).add(name)
    return [
        canary_plan.plan(rng, folders=[turn.id for turn in group], present=present, file_names=file_names,
                         test_names=test_names, in_run=in_run, modules=modules)  # fmt: skip
        for group in shards
    ]


def _write_tests(folder: Path, texts: Mapping[str, str]) -> None:
    """Write the hidden tests and the canaries in a random order, all with one mtime."""
    order = list(texts)
    random.Random(secrets.randbits(64)).shuffle(order)
    stamp = 1_600_000_000
    for rel in order:
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(texts[rel], encoding="utf-8")
        os.utime(path, (stamp, stamp))

"""Tasks are data: ``tasks/<task>/`` on disk, checked by a schema, loaded into frozen objects.

Layout of a task folder::

    task.yaml                  id, version, title, description, phases
    repo/                      the seed repository (plain files)
    support/                   optional helper modules the hidden tests import
    turns/NN-slug/turn.yaml    title, kind, prompts (paraphrases), context_files, retires
    turns/NN-slug/reference.patch
    turns/NN-slug/tests/test_*.py   the turn's hidden tests (``*_test.py`` too, at any depth)
    turns/NN-slug/repro.py     optional reproduction script of a bug report (``repro``)

A turn may also carry a hidden spec (``spec``), key decisions (``decisions``), reference
plans and template variables: see ``TurnSpec`` and ``stamina_gym.user``.

A hidden test id is ``<turn dir>/<file>::<function>`` (``::Class::method`` for methods),
collected as pytest collects them (``stamina_gym.collection``).
Tasks outside the package are found through STAMINA_GYM_TASKS (folders separated by
``os.pathsep``; each is a task folder or a folder of task folders).
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from stamina_gym import collection
from stamina_gym.config import format_validation_error, load_yaml
from stamina_gym.errors import ConfigError, TaskError
from stamina_gym.packaged import data_dir
from stamina_gym.rules import Rule
from stamina_gym.registry import unknown_name

BUILTIN_TASKS = data_dir("tasks")
TASKS_ENV_VAR = "STAMINA_GYM_TASKS"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class Phase(_Strict):
    """A named stretch of turns, shown to the agent in the ``phase`` observation."""

    name: str
    first: int = Field(ge=1)
    """First turn (1-based) of the phase."""
    last: int = Field(ge=1)
    """Last turn (inclusive)."""


def glob_matches(rel: str, pattern: str) -> bool:
    """``fnmatch`` of a repository path, where a leading ``**/`` also matches at the top."""
    return fnmatch.fnmatch(rel, pattern) or (pattern.startswith("**/") and fnmatch.fnmatch(rel, pattern[3:]))


class SourceFix(_Strict):
    """A substitution applied to every snapshot of a mined project (``stamina-gym mine
    --fix``): historical code that needs a small change to run on today's Python
    (``collections.MutableMapping`` -> ``collections.abc.MutableMapping``)."""

    path: str
    """Glob of the files it applies to (``**/`` also matches at the top)."""
    old: str = Field(min_length=1)
    new: str

    def covers(self, rel: str) -> bool:
        return glob_matches(rel, self.path)

    def apply(self, files: dict[str, str]) -> int:
        """Apply to ``files`` (path -> text) in place; the number of files changed."""
        changed = 0
        for rel, text in files.items():
            if self.old in text and self.covers(rel):
                files[rel] = text.replace(self.old, self.new)
                changed += 1
        return changed


class TaskMeta(_Strict):
    """``task.yaml``."""

    id: str
    version: int = Field(ge=1)
    """Bumped whenever turns, tests or patches change: results of different versions differ."""
    python: tuple[str, ...] = ()
    """The Python versions (``3.11``) the reference passed every hidden test on
    (``stamina-gym validate --sandbox``). An env whose sandbox runs another one warns, and
    every run records the sandbox's version."""
    title: str
    description: str
    phases: tuple[Phase, ...] = ()
    rules: tuple[Rule, ...] = ()
    """Consistency rules checked at every submit from their ``from_turn`` on
    (``stamina_gym.rules`` documents the kinds)."""
    fixes: tuple[SourceFix, ...] = ()
    """Source fixes a mined task's seed and reference patches were made with: declared
    once for the task, applied to every snapshot; the validator checks none is undone."""
    quality_exclude: tuple[str, ...] = ()
    """Globs of product files that are data, not code (a generated table): left out of the
    quality meter, besides the env's ``quality.exclude``. Mining lists the modules
    ``stamina_gym.mining.mine.is_data_module`` finds."""
    params: dict[str, tuple[str | int, ...]] = {}
    """Procedural variants: name -> possible values. The episode seed picks one value of
    each, rendered (``{{ name }}``, Jinja2, strict) into every prompt, reference patch and
    hidden test, so a solution memorised under one seed fails under another."""

    @field_validator("params")
    @classmethod
    def _values(cls, value: dict) -> dict:
        for name, values in value.items():
            if not name.isidentifier() or not values:
                raise ValueError(f"param {name!r} needs an identifier name and at least one value")
        return value


class MemoryProbe(_Strict):
    """Hidden tests of a turn that check a fact fixed at an earlier turn."""

    fact: str
    """The fact in words, e.g. ``the error codes agreed for validation failures``."""
    from_turn: int = Field(ge=1)
    """The turn (1-based) that fixed the fact."""
    tests: tuple[str, ...] = Field(min_length=1)
    """This turn's tests that check it: ``<file>`` or ``<file>::<test>``."""


class CharRule(_Strict):
    """A rule a prompt states about a class of characters, written down as data so that
    ``validate`` can check the tests against it (``stamina_gym.char_rules``)."""

    says: str
    """The prompt's rule in its words: ``line breaks and tabs become single spaces``."""
    chars: Literal["whitespace", "line-break", "control", "format", "non-ascii-digit", "non-ascii"]
    """The class (``stamina_gym.char_rules.CLASSES``)."""
    verdict: Literal["accepted", "refused"]
    """What the rule says happens to an input holding such a character."""


class CharCases(_Strict):
    """This turn's tests whose parametrized string inputs are expected accepted or refused."""

    accepted: tuple[str, ...] = ()
    refused: tuple[str, ...] = ()
    """``<file>::<test>``, file relative to the turn's ``tests/``."""


class KeyPoint(_Strict):
    """One requirement of a hidden spec: what the user knows and says only when asked."""

    id: str = Field(pattern=r"^[a-z0-9_-]+$")
    keywords: tuple[str, ...] = ()
    """Words or short phrases; a question holding every word of one of them (after
    stemming, any order) touches this point."""
    phrasings: tuple[str, ...] = Field(min_length=1)
    """Example questions about this point; a question close enough to one of them (BM25,
    see ``stamina_gym.user.match``) touches it too. The first is the one the oracle asks."""
    answer: str
    """What the user says when the point is asked about, in the user's voice."""
    value: tuple[str, ...] = ()
    """Words a requirement summary must state for this point (e.g. ``["5", "attempts"]``)."""


class HiddenSpec(_Strict):
    """The full requirements behind a deliberately vague request (a clarification turn)."""

    key_points: tuple[KeyPoint, ...] = Field(min_length=1)


class PlanStep(_Strict):
    """One step of a plan, as the ``plan`` tool takes it and as reference plans are written."""

    description: str = Field(min_length=1)
    details: str = ""
    depends_on: tuple[int, ...] = ()
    """1-based numbers of earlier steps this one needs."""


class Plan(_Strict):
    """An ordered plan."""

    steps: tuple[PlanStep, ...] = Field(min_length=1)


class Alternative(_Strict):
    """One way to settle a key decision."""

    name: str
    mentions: tuple[str, ...] = Field(min_length=1)
    """Words or phrases by which a plan names this alternative."""
    code: tuple[str, ...] = ()
    """What the decision's detector looks for in the code: regexes (``mentions``),
    called names (``calls``) or imported modules (``imports``). Required for acceptable
    alternatives; a wrong one without it cannot be confirmed in the code."""


class Decision(_Strict):
    """A key decision of a planning turn, with the alternatives that are acceptable."""

    id: str = Field(pattern=r"^[a-z0-9_-]+$")
    topic: str
    kind: Literal["mentions", "calls", "imports"]
    """Detector that checks the code follows the plan (``stamina_gym.user.adherence``)."""
    accept: tuple[Alternative, ...] = Field(min_length=1)
    reject: tuple[Alternative, ...] = ()
    """Alternatives a plan may name that are wrong for this request."""

    @model_validator(mode="after")
    def _acceptable_ones_are_detectable(self) -> "Decision":
        missing = [alt.name for alt in self.accept if not alt.code]
        if missing:
            raise ValueError(f"acceptable alternative(s) {', '.join(missing)} need code patterns for the {self.kind} detector")
        if self.kind == "mentions":
            for alt in (*self.accept, *self.reject):
                for pattern in alt.code:
                    try:
                        re.compile(pattern)
                    except re.error as exc:
                        raise ValueError(f"{alt.name}: code pattern {pattern!r} is not a regex: {exc}") from None
        return self


class RepoVariable(_Strict):
    """A template variable filled from the agent's own repository when the turn begins."""

    source: Literal["file", "function"]
    """``file``: the first file (sorted) matching ``glob`` and ``pattern``; ``function``:
    the first function defined in such a file whose name matches ``pattern``."""
    glob: str = "**/*.py"
    pattern: str = ".*"
    """A regex searched in the file path or the function name."""
    default: str
    """The value when nothing in the repository matches."""


class Repro(_Strict):
    """A reproduction script run on the agent's code when the turn begins; its real output
    fills ``{{ repro_output }}`` (and its text ``{{ repro_script }}``) in the prompt."""

    script: str = "repro.py"
    """File in the turn folder; it runs with the repository on ``PYTHONPATH``."""
    timeout_s: float = Field(30.0, gt=0)
    max_chars: int = Field(3000, ge=100)
    """Longest output pasted; the start is cut, the end (the traceback) kept."""


class TurnSpec(_Strict):
    """``turns/NN-slug/turn.yaml``."""

    title: str
    kind: Literal["setup", "feature", "change", "bugfix", "refactor"]
    prompts: tuple[str, ...] = Field(min_length=1)
    """Paraphrases of the same request; the episode seed picks one."""
    context_files: tuple[str, ...] = ()
    """Repository paths the request concerns (hints for agents that want them)."""
    retires: tuple[str, ...] = ()
    """Hidden tests of earlier turns that this turn's changed requirement contradicts:
    ``<turn dir>/<file>`` or ``<turn dir>/<file>::<test>``."""
    paths: tuple[str, ...] = ()
    """Glob patterns of the files the request concerns. In strict mode an edit outside
    them (and outside ``tests/``) is reported and costs reward; empty: no limit."""
    memory: tuple[MemoryProbe, ...] = ()
    """Facts from earlier turns that this turn's hidden tests check."""
    spec: HiddenSpec | None = None
    """Hidden requirements the user reveals through ``ask``: makes this a clarification turn."""
    decisions: tuple[Decision, ...] = ()
    """Key decisions a ``plan`` should settle: makes this a planning turn."""
    reference_plans: tuple[Plan, ...] = ()
    """Plans that settle every decision well; the oracle submits the first."""
    variables: dict[str, tuple[str, ...] | RepoVariable] = {}
    """Template variables of the prompts (``{{ name }}``, rendered strictly): a list of
    values (the episode seed picks one) or a value found in the agent's repository."""
    repro: Repro | None = None
    """A reproduction script whose output on the agent's code is pasted into the prompt."""
    noise: tuple[str, ...] = ()
    """What is deliberately wrong or untidy in the prompts (a typo, a wrong file or
    function name, a contradiction the user resolves when asked): documents a noisy request."""
    char_rules: tuple[CharRule, ...] = ()
    """Rules the prompts state about classes of characters, the exceptions first: the first
    rule whose class holds a character decides it."""
    char_cases: CharCases | None = None
    """The tests whose string cases those rules classify."""
    planted: tuple[str, ...] = ()
    """The noise's own text as it stands in the prompts (``todo/model.py``, ``?search=``):
    what it names is not told (the interface checks read the prompts without it)."""
    sequence: Literal["feature-fix", "implement-refactor", "fix-regression", "multi-module"] | None = None
    """The dependent sequence this turn closes, where one applies: a fix of an earlier
    turn's feature, a refactor of an earlier turn's code, a fix of a regression an earlier
    fix caused, or a change across several modules. The evaluation reports success per
    sequence type."""
    tests: tuple[str, ...] = ()
    """The turn's hidden tests when its test files hold others too (a project's test
    file at that commit, whose older tests passed before the turn): ``<file>::<test>``
    or ``<file>``, file relative to the turn's ``tests/``. Empty: every test they hold."""


@dataclass(frozen=True)
class Turn:
    index: int
    """1-based position in the task."""
    id: str
    """The turn's folder name, e.g. ``03-storage``."""
    spec: TurnSpec
    dir: Path
    example_params: Mapping[str, str | int] = field(default_factory=dict)
    """One value of each task param (the first), to read templated test files; test
    names themselves must not depend on params."""
    support: Path | None = None
    """The task's test support folder, where the tests' imports may resolve."""

    @property
    def tests(self) -> tuple[Path, ...]:
        return tuple(collection.test_files(self.dir / "tests"))

    @functools.cached_property
    def collected(self) -> tuple[str, ...]:
        """Every test id the turn's files hold, as pytest collects them."""
        return tuple(tid for path in self.tests for tid in self._collect(path).ids)

    @functools.cached_property
    def unresolved(self) -> tuple[str, ...]:
        """Base classes of the turn's test classes that could not be read (see ``collection``)."""
        return tuple(item for path in self.tests for item in self._collect(path).unresolved)

    @functools.cached_property
    def test_ids(self) -> tuple[str, ...]:
        if not self.spec.tests:
            return self.collected
        wanted = {f"{self.id}/{entry}" for entry in self.spec.tests}
        return tuple(tid for tid in self.collected if tid in wanted or tid.split("::")[0] in wanted)

    def _collect(self, path: Path) -> collection.Collected:
        info = path.stat()
        return _collect_file(self.id, self.dir / "tests", path, (info.st_mtime_ns, info.st_size), self.support,
                             tuple(sorted(self.example_params.items())))  # fmt: skip

    def memory_ids(self, probe: MemoryProbe) -> tuple[str, ...]:
        """This turn's test ids that ``probe`` names."""
        wanted = {f"{self.id}/{entry}" for entry in probe.tests}
        return tuple(tid for tid in self.test_ids if tid in wanted or tid.split("::")[0] in wanted)

    @property
    def reference_patch(self) -> str:
        return (self.dir / "reference.patch").read_text(encoding="utf-8")


@dataclass(frozen=True)
class Task:
    meta: TaskMeta
    root: Path
    turns: tuple[Turn, ...]

    @property
    def id(self) -> str:
        return self.meta.id

    @property
    def seed_dir(self) -> Path:
        return self.root / "repo"

    @property
    def support_dir(self) -> Path | None:
        support = self.root / "support"
        return support if support.is_dir() else None

    def choose_params(self, draw: Callable[[int], int]) -> dict[str, str | int]:
        """One value of every param; ``draw(n)`` returns an index below n."""
        return {name: values[draw(len(values))] for name, values in sorted(self.meta.params.items())}

    def render(self, text: str, params: Mapping[str, str | int], where: str) -> str:
        """``text`` with the episode's params filled in (unchanged for a task without params)."""
        if not self.meta.params:
            return text
        return render_params(text, params, where)

    def reference_patch(self, turn: Turn, params: Mapping[str, str | int]) -> str:
        return self.render(turn.reference_patch, params, f"{turn.dir}/reference.patch")

    def phase(self, index: int) -> str:
        for phase in self.meta.phases:
            if phase.first <= index <= phase.last:
                return phase.name
        return "main"

    def retired_by(self, index: int) -> frozenset[str]:
        """Test ids retired by turns 1..index (whole-file entries expanded)."""
        entries = {entry for turn in self.turns[:index] for entry in turn.spec.retires}
        known = {tid for turn in self.turns[:index] for tid in turn.test_ids}
        return frozenset(tid for tid in known if tid in entries or tid.split("::")[0] in entries)

    def regression_ids(self, index: int) -> tuple[str, ...]:
        """Tests of turns before ``index`` still in force at turn ``index``."""
        retired = self.retired_by(index)
        return tuple(tid for turn in self.turns[: index - 1] for tid in turn.test_ids if tid not in retired)


@functools.lru_cache(maxsize=1)
def _jinja():
    import jinja2

    return jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=True)


def render_params(text: str, params: Mapping[str, str | int], where: str) -> str:
    """Fill ``{{ name }}`` from ``params``; an unknown name is an error naming the file."""
    import jinja2

    try:
        return _jinja().from_string(text).render(**params)
    except jinja2.TemplateError as exc:
        raise TaskError(f"{where}: does not render with params {dict(params)}: {exc}") from None


@functools.lru_cache(maxsize=4096)
def _collect_file(turn_id: str, tests: Path, path: Path, stamp: tuple[int, int], support: Path | None,
                  params: tuple[tuple[str, str | int], ...]) -> collection.Collected:  # fmt: skip
    """The ids of one hidden test file (``<turn>/<file>::...``), found by reading syntax
    trees (nothing is imported); ``stamp`` (its time and size) keys the cache."""
    text = path.read_text(encoding="utf-8")
    if params:
        text = render_params(text, dict(params), str(path))
    try:
        found = collection.collect(path, text, [tests, *([support] if support else [])])
    except SyntaxError as exc:
        raise TaskError(f"{path}: hidden test file does not parse: {exc}") from None
    prefix = f"{turn_id}/{path.relative_to(tests).as_posix()}"
    return collection.Collected(tuple(f"{prefix}::{tid}" for tid in found.ids), found.unresolved)


def _validate(model: type[BaseModel], path: Path) -> BaseModel:
    data = load_yaml(path)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise TaskError(f"{path}: {format_validation_error(exc)}") from None


def turn_folders(root: Path) -> list[Path]:
    """The turn folders of a task in turn order: by their leading number (``9-x`` before
    ``10-y``, ``99-x`` before ``100-y``), then by name."""

    def order(path: Path) -> tuple[float, str]:
        number = re.match(r"\d+", path.name)
        return (int(number.group()) if number else float("inf"), path.name)

    return sorted((p for p in (root / "turns").glob("*") if p.is_dir()), key=order)


def load_task_dir(root: Path) -> Task:
    """Load and schema-check one task folder."""
    root = root.resolve()
    meta = _validate(TaskMeta, root / "task.yaml")
    assert isinstance(meta, TaskMeta)
    if not (root / "repo").is_dir():
        raise TaskError(f"{root}: missing the seed repository folder repo/")
    turn_dirs = turn_folders(root)
    if not turn_dirs:
        raise TaskError(f"{root}: no turns under turns/")
    turns = []
    for index, turn_dir in enumerate(turn_dirs, start=1):
        spec = _validate(TurnSpec, turn_dir / "turn.yaml")
        assert isinstance(spec, TurnSpec)
        if not (turn_dir / "reference.patch").is_file():
            raise TaskError(f"{turn_dir}: missing reference.patch")
        if spec.repro and not (turn_dir / spec.repro.script).is_file():
            raise TaskError(f"{turn_dir}: repro.script {spec.repro.script!r} is not a file in the turn folder")
        example = {name: values[0] for name, values in meta.params.items()}
        support = root / "support" if (root / "support").is_dir() else None
        turn = Turn(index=index, id=turn_dir.name, spec=spec, dir=turn_dir, example_params=example, support=support)
        if not turn.collected:
            raise TaskError(f"{turn_dir}: no hidden tests (tests/test_*.py or *_test.py with test functions or classes)")
        named = {tid.split("::")[0] for tid in turn.collected} | set(turn.collected)
        unknown = [entry for entry in spec.tests if f"{turn.id}/{entry}" not in named]
        if unknown:
            raise TaskError(f"{turn_dir}/turn.yaml: tests names what its files do not hold: {unknown}")
        turns.append(turn)
    return Task(meta=meta, root=root, turns=tuple(turns))


def task_roots() -> list[Path]:
    """Folders searched for tasks: the package's own, then STAMINA_GYM_TASKS."""
    extra = [Path(p) for p in os.environ.get(TASKS_ENV_VAR, "").split(os.pathsep) if p]
    return [BUILTIN_TASKS, *extra]


def find_tasks() -> dict[str, Path]:
    """Task id (folder name) -> folder, for every task the roots hold."""
    found: dict[str, Path] = {}
    for root in task_roots():
        if (root / "task.yaml").is_file():
            found.setdefault(root.name, root)
        elif root.is_dir():
            for child in sorted(root.iterdir()):
                if (child / "task.yaml").is_file():
                    found.setdefault(child.name, child)
    return found


@functools.lru_cache(maxsize=32)
def _load_cached(root: Path) -> Task:
    return load_task_dir(root)


def load_task(name: str) -> Task:
    """A task by id (``todo``) or by folder path."""
    path = Path(name)
    if (path / "task.yaml").is_file():
        return _load_cached(path.resolve())
    tasks = find_tasks()
    if name not in tasks:
        raise ConfigError(unknown_name("task", name, tasks))
    return _load_cached(tasks[name].resolve())

"""Tasks are data: ``tasks/<task>/`` on disk, checked by a schema, loaded into frozen objects.

Layout of a task folder::

    task.yaml                  id, version, title, description, phases
    repo/                      the seed repository (plain files)
    support/                   optional helper modules the hidden tests import
    turns/NN-slug/turn.yaml    title, kind, prompts (paraphrases), context_files, retires
    turns/NN-slug/reference.patch
    turns/NN-slug/tests/test_*.py   the turn's hidden tests

A hidden test id is ``<turn dir>/<file>::<function>`` (``::Class::method`` for methods).
Tasks outside the package are found through STAMINA_GYM_TASKS (folders separated by
``os.pathsep``; each is a task folder or a folder of task folders).
"""

from __future__ import annotations

import ast
import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from stamina_gym.config import format_validation_error, load_yaml
from stamina_gym.errors import ConfigError, TaskError
from stamina_gym.quality.rules import Rule
from stamina_gym.registry import unknown_name

BUILTIN_TASKS = Path(__file__).resolve().parents[1] / "tasks"
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


class TaskMeta(_Strict):
    """``task.yaml``."""

    id: str
    version: int = Field(ge=1)
    """Bumped whenever turns, tests or patches change: results of different versions differ."""
    title: str
    description: str
    phases: tuple[Phase, ...] = ()
    rules: tuple[Rule, ...] = ()
    """Consistency rules checked at every submit from their ``from_turn`` on
    (``stamina_gym.quality.rules`` documents the kinds)."""


class MemoryProbe(_Strict):
    """Hidden tests of a turn that check a fact fixed at an earlier turn."""

    fact: str
    """The fact in words, e.g. ``the error codes agreed for validation failures``."""
    from_turn: int = Field(ge=1)
    """The turn (1-based) that fixed the fact."""
    tests: tuple[str, ...] = Field(min_length=1)
    """This turn's tests that check it: ``<file>`` or ``<file>::<test>``."""


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


@dataclass(frozen=True)
class Turn:
    index: int
    """1-based position in the task."""
    id: str
    """The turn's folder name, e.g. ``03-storage``."""
    spec: TurnSpec
    dir: Path

    @property
    def tests(self) -> tuple[Path, ...]:
        return tuple(sorted((self.dir / "tests").glob("test_*.py")))

    @functools.cached_property
    def test_ids(self) -> tuple[str, ...]:
        return tuple(tid for path in self.tests for tid in _test_ids(self.id, path))

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


def _test_ids(turn_id: str, path: Path) -> list[str]:
    """Test ids found by reading the file's syntax tree (nothing is imported)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except SyntaxError as exc:
        raise TaskError(f"{path}: hidden test file does not parse: {exc}") from None
    prefix = f"{turn_id}/{path.name}"
    ids = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            ids.append(f"{prefix}::{node.name}")
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name.startswith("test"):
                    ids.append(f"{prefix}::{node.name}::{item.name}")
    return ids


def _validate(model: type[BaseModel], path: Path) -> BaseModel:
    data = load_yaml(path)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise TaskError(f"{path}: {format_validation_error(exc)}") from None


def load_task_dir(root: Path) -> Task:
    """Load and schema-check one task folder."""
    root = root.resolve()
    meta = _validate(TaskMeta, root / "task.yaml")
    assert isinstance(meta, TaskMeta)
    if not (root / "repo").is_dir():
        raise TaskError(f"{root}: missing the seed repository folder repo/")
    turn_dirs = sorted(p for p in (root / "turns").glob("*") if p.is_dir())
    if not turn_dirs:
        raise TaskError(f"{root}: no turns under turns/")
    turns = []
    for index, turn_dir in enumerate(turn_dirs, start=1):
        spec = _validate(TurnSpec, turn_dir / "turn.yaml")
        assert isinstance(spec, TurnSpec)
        if not (turn_dir / "reference.patch").is_file():
            raise TaskError(f"{turn_dir}: missing reference.patch")
        turn = Turn(index=index, id=turn_dir.name, spec=spec, dir=turn_dir)
        if not turn.test_ids:
            raise TaskError(f"{turn_dir}: no hidden tests (tests/test_*.py with test functions)")
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

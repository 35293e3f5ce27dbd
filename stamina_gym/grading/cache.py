"""An on-disk cache of hidden-test runs: identical states are graded once.

Key: sha256 of (the tree of the agent's source as grading copies it, the hidden test set,
the grader's identity). The source is hashed with the same rule ``copy_source`` applies
(steering files, caches and ``.pth`` files left out, symlinks not followed), straight
from the work tree, so what is hashed is exactly what would be graded: a ``.gitignore``
or an untracked file cannot make two different states share a key. The hidden test set is
the test files of the graded turns plus the task's support folder; the grader identity
is ``GRADER_VERSION``, the Python and pytest versions, the sandbox isolation and the
grading timeout.

A value is the captured run (exit status, per-test outcomes, the canaries' expected
outcomes), never a grade: the grade depends on what passed at the previous submit and is
recomputed from the run by the pure ``grade_run``. Runs without a usable report, runs
that timed out, ended early or were stopped by a resource limit are not stored: those may depend on
the machine's load, and an infrastructure fault must be rerun.

Several processes (vector envs, rollout workers) may share one root: an entry is written
to a private temporary file in the same folder and renamed into place, so a reader sees
a whole entry or none; an entry that does not parse counts as a miss.

The root must lie outside every workspace. The env adds it to the sandbox's hidden paths,
so no code the agent runs can read or write it.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
import tempfile
from dataclasses import asdict, replace
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Collection, Iterable, Mapping

from stamina_gym import safetree
from stamina_gym.errors import TreeTooLarge
from stamina_gym.grading.grade import Canaries
from stamina_gym.grading.hidden import COPY_MAX_BYTES, COPY_MAX_FILES, HiddenRun, not_graded
from stamina_gym.grading.report import Outcome
from stamina_gym.run_result import RunResult

#: Bump whenever the runner or the report parser changes what a run reports.
GRADER_VERSION = "15"
_CHUNK = 1 << 16


def tree_digest(root: Path, ignore: Callable[[str, list[str]], set[str]] | None = None) -> str:
    """sha256 over every entry below ``root``: relative path, kind, exec bit, content
    (link target for symlinks). Sorted, so the order of the walk does not matter.
    ``ignore`` has ``shutil.copytree``'s signature and meaning."""
    digest = hashlib.sha256()
    for folder, dirs, files in os.walk(root):
        skipped = ignore(folder, [*dirs, *files]) if ignore else set()
        dirs[:] = sorted(d for d in dirs if d not in skipped)
        rel_folder = os.path.relpath(folder, root)
        for name in [*dirs, *sorted(f for f in files if f not in skipped)]:
            path = os.path.join(folder, name)
            rel = os.path.normpath(os.path.join(rel_folder, name))
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                digest.update(f"L {rel}\0{os.readlink(path)}\0".encode("utf-8", "surrogateescape"))
            elif stat.S_ISDIR(info.st_mode):
                digest.update(f"D {rel}\0".encode("utf-8", "surrogateescape"))
            elif stat.S_ISREG(info.st_mode):
                digest.update(f"F {rel} {int(bool(info.st_mode & 0o111))}\0".encode("utf-8", "surrogateescape"))
                with open(path, "rb") as handle:
                    for chunk in iter(lambda: handle.read(_CHUNK), b""):
                        digest.update(hashlib.sha256(chunk).digest())
            else:
                digest.update(f"O {rel}\0".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def tests_digest(folders: Iterable[tuple[str, Path]]) -> str:
    """sha256 over named test folders (``(name, path)`` pairs), caches skipped."""
    digest = hashlib.sha256()
    for name, folder in folders:
        digest.update(f"{name}\0{tree_digest(folder) if folder.is_dir() else '-'}\0".encode())
    return digest.hexdigest()


def grader_identity(isolation: str, timeout: float) -> str:
    pytest_version = metadata.version("pytest")
    python = ".".join(map(str, sys.version_info[:3]))
    return f"grader{GRADER_VERSION}/python{python}/pytest{pytest_version}/{isolation}/timeout{timeout:g}"


class GradingCache:
    """Hidden-test runs by key, under ``root``; ``hits`` and ``misses`` count lookups
    made through this object (each process has its own counters)."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root).expanduser().resolve()
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(source_digest: str, tests: str, grader: str) -> str:
        return hashlib.sha256(f"{source_digest}\n{tests}\n{grader}".encode()).hexdigest()

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> HiddenRun | None:
        """The stored run (marked ``cache="hit"``), or None (a miss, counted)."""
        try:
            data = json.loads(self._path(key).read_text(encoding="utf-8"))
            hidden = _from_json(data, key)
        except (OSError, ValueError, KeyError, TypeError):
            self.misses += 1
            return None
        self.hits += 1
        return hidden

    def put(self, key: str, hidden: HiddenRun) -> bool:
        """Store ``hidden`` if it is worth keeping; True when it was written."""
        run = hidden.run
        if run is None or hidden.outcomes is None or run.timed_out or run.limit is not None or not hidden.complete:
            return False
        path = self._path(key)
        path.parent.mkdir(exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(_to_json(hidden, key), handle)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return True

    def run(self, grade: Callable[..., HiddenRun], *, source: Path, task: Any, turns: Any, sandbox: Any,
            scratch: Path, timeout: float, params: dict | None = None, workers: int | None = None,
            only: Collection[str] | None = None, costs: Mapping[str, float] | None = None,
            staged: Any = None, started: Callable[[], None] | None = None) -> HiddenRun:
        """``grade(...)`` (``run_hidden_tests`` without a cache) unless a run is stored
        (then the grading folder made ahead, ``staged``, is discarded unused)."""
        folders = [(turn.id, turn.dir / "tests") for turn in turns]
        if task.support_dir:
            folders.append(("support", task.support_dir))
        tests = tests_digest(folders) + json.dumps(params or {}, sort_keys=True)  # the tests as rendered
        if only is not None:  # and the ones chosen to run
            tests += json.dumps(sorted(only))
        try:
            source_digest = safetree.tree_digest(source, not_graded, max_files=COPY_MAX_FILES, max_bytes=COPY_MAX_BYTES)
        except TreeTooLarge:  # not graded, so nothing to store
            return grade(source=source, task=task, turns=turns, sandbox=sandbox, scratch=scratch, timeout=timeout,
                         params=params, workers=workers, only=only, costs=costs, staged=staged, started=started)  # fmt: skip
        key = self.key(source_digest, tests, grader_identity(sandbox.isolation, timeout))
        hit = self.get(key)
        if hit is not None:
            if staged is not None:
                staged.discard()
            return hit
        hidden = grade(source=source, task=task, turns=turns, sandbox=sandbox, scratch=scratch, timeout=timeout, params=params,
                       workers=workers, only=only, costs=costs, staged=staged, started=started)  # fmt: skip
        self.put(key, hidden)
        return replace(hidden, cache="miss")

    def stats(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses}


def _to_json(hidden: HiddenRun, key: str) -> dict:
    return {
        "key": key,
        "run": asdict(hidden.run),
        "outcomes": {tid: [o.status, o.message] for tid, o in hidden.outcomes.items()},
        "canaries": dict(hidden.canaries.expected),
        "problem": hidden.problem,
        "evidence": list(hidden.evidence),
    }


def _from_json(data: dict, key: str) -> HiddenRun:
    if data["key"] != key:
        raise ValueError("entry stored under the wrong key")
    outcomes = {tid: Outcome(status, message) for tid, (status, message) in data["outcomes"].items()}
    return HiddenRun(RunResult(**data["run"]), outcomes, Canaries(data["canaries"]), data["problem"], cache="hit",
                     evidence=tuple(data["evidence"]))  # fmt: skip

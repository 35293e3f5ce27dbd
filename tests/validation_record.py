"""Validation records: the outcome of replaying a shipped task's whole reference, kept in
``tests/validated/<task>.json`` with the key it was obtained under.

Validating the todo task replays 100 states and runs every earlier test at each: about
ten minutes of the suite. Its outcome depends only on the task's files, the code that
validation runs (the modules ``stamina_gym.validate`` reaches, and every file of each
subpackage among them, as the sandbox runs some of them as programs rather than imports)
and the interpreter and pytest that run the tests. The key is a digest of exactly those,
so a change to any of them makes the record stale without anyone bumping a version, and
the next run validates in full again and writes the new record (commit it with the
change). A fresh record is no blank cheque: the test still checks the last states in
full on this machine.
"""

from __future__ import annotations

import hashlib
import json
import platform
import sys
from pathlib import Path

import pytest

import stamina_gym

PACKAGE = Path(stamina_gym.__file__).parent
RECORDS = Path(__file__).parent / "validated"
ROOT_MODULE = "stamina_gym.validate"


def validation_code() -> list[Path]:
    """The files of the code validation runs: the modules ``ROOT_MODULE`` reaches in the
    package's import graph (``tests/test_layers.py``'s), the packages above each, and
    every ``.py`` file of each subpackage among them."""
    from tests.test_layers import import_graph, module_names

    names, graph = module_names(PACKAGE, "stamina_gym"), import_graph(PACKAGE, "stamina_gym")
    seen, todo = set(), [ROOT_MODULE]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += [".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)] + sorted(graph.get(name, ()))
    files = {names[module] for module in seen if module in names}
    folders = {path.parent for path in files} - {PACKAGE}
    return sorted(files | {path for folder in folders for path in folder.glob("*.py")})


def _digest_files(digest, root: Path, paths) -> None:
    for path in sorted(paths):
        digest.update(f"{path.relative_to(root).as_posix()}\0".encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())


def record_key(task) -> str:
    """sha256 of the task's files, the validation code's files and the versions of the
    interpreter and pytest that run the tests."""
    digest = hashlib.sha256()
    task_files = [p for p in task.root.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                  and p.relative_to(task.root).parts[0] not in ("audit", "cleanroom")]  # the fairness audit judges nothing  # fmt: skip
    _digest_files(digest, task.root, task_files)
    _digest_files(digest, PACKAGE, validation_code())
    digest.update(f"{sys.version}\0{platform.machine()}\0{pytest.__version__}".encode())
    return digest.hexdigest()


def read_record(task) -> dict | None:
    """The task's record when it was obtained under the current key, else None."""
    path = RECORDS / f"{task.id}.json"
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if record.get("key") == record_key(task) else None


def write_record(task, problems: list[str], key: str) -> Path:
    """Write the record under ``key``: the ``record_key`` taken before the validation ran
    (files changed while it ran are not what it validated)."""
    RECORDS.mkdir(exist_ok=True)
    path = RECORDS / f"{task.id}.json"
    record = {"task": task.id, "version": task.meta.version, "turns": len(task.turns), "key": key,
              "python": sys.version.split()[0], "pytest": pytest.__version__, "problems": problems}  # fmt: skip
    path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return path

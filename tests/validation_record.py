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

import ast
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


def _module_file(name: str) -> Path | None:
    """The file of module ``name`` of the package (a namespace package's folder), or None."""
    parts = name.split(".")[1:]
    for candidate in (PACKAGE.joinpath(*parts).with_suffix(".py"), PACKAGE.joinpath(*parts, "__init__.py")):
        if parts and candidate.is_file():
            return candidate
    if not parts:
        return PACKAGE / "__init__.py"
    return PACKAGE.joinpath(*parts) if PACKAGE.joinpath(*parts).is_dir() else None


def _imports(path: Path, name: str) -> set[str]:
    """The ``stamina_gym`` modules ``path`` (module ``name``) imports, lazily or not."""
    if path.is_dir():
        return set()
    here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_bytes())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(here[: len(here) - node.level + 1] + ([node.module] if node.module else [])) if node.level else node.module or ""
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {m for m in found if m.split(".")[0] == "stamina_gym" and _module_file(m) is not None}


def validation_code() -> list[Path]:
    """The files of the code validation runs: the modules ``ROOT_MODULE`` reaches (with
    the packages above each), and every ``.py`` file of each subpackage among them."""
    seen, todo = set(), [ROOT_MODULE]
    while todo:
        name = todo.pop()
        parents = [".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)]
        for module in [name, *parents]:
            if module not in seen:
                seen.add(module)
                todo += sorted(_imports(_module_file(module), module))
    files = {_module_file(module) for module in seen}
    folders = {path if path.is_dir() else path.parent for path in files} - {PACKAGE}
    return sorted({path for path in files if path.is_file()} | {path for folder in folders for path in folder.glob("*.py")})


def _digest_files(digest, root: Path, paths) -> None:
    for path in sorted(paths):
        digest.update(f"{path.relative_to(root).as_posix()}\0".encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())


def record_key(task) -> str:
    """sha256 of the task's files, the validation code's files and the versions of the
    interpreter and pytest that run the tests."""
    digest = hashlib.sha256()
    task_files = [p for p in task.root.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
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


def write_record(task, problems: list[str]) -> Path:
    RECORDS.mkdir(exist_ok=True)
    path = RECORDS / f"{task.id}.json"
    record = {"task": task.id, "version": task.meta.version, "turns": len(task.turns), "key": record_key(task),
              "python": sys.version.split()[0], "pytest": pytest.__version__, "problems": problems}  # fmt: skip
    path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return path

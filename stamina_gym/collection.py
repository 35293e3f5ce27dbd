"""Hidden test ids read the way pytest collects them, from syntax trees alone (nothing is
imported): the grader must know a turn's tests before any code runs.

pytest's defaults (the harness runs it with an empty ini file) decide what is a test:

* files named ``test_*.py`` or ``*_test.py``, at any depth of the turn's ``tests/``;
* module-level functions whose name starts with ``test``;
* classes named ``Test*`` without an ``__init__``, and ``unittest.TestCase`` subclasses of
  any name; their ``test*`` methods count, inherited ones included;
* a class that sets ``__test__ = False`` (or inherits it) holds no tests.

Definitions inside module-level ``if`` and ``try`` blocks count from every branch
(``if six.PY3: def test_x...``): which branch runs is known only when the module runs, so
the reading is the union, and a counted test that pytest does not collect is graded as
missing (``validate`` reports the reference failing it: a turn's ``tests:`` then leaves it
out, as mining does for every test that did not run).

Base classes are followed through the module itself and through modules it imports that
lie in the turn's tests folder or in the task's test support (``from .base import Mixin``,
``from helpers import Mixin``, ``import helpers``); a base found nowhere counts as a
``unittest.TestCase`` only when its name ends in ``TestCase``. What this cannot follow is
listed in ``Collected.unresolved``, so a validator can say why a test was missed.
Parametrised tests keep one id (their cases are folded into it when graded).
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from stamina_gym import pyast

TEST_FILE_PATTERNS = ("test_*.py", "*_test.py")
_TRY = (ast.Try, getattr(ast, "TryStar", ast.Try))  # ``try``, and ``try``/``except*`` from Python 3.11


@dataclass(frozen=True)
class Collected:
    ids: tuple[str, ...]
    """``<file>::<function>`` and ``<file>::<Class>::<method>``, file relative to the tests folder."""
    unresolved: tuple[str, ...] = ()
    """Base classes that were not found (``<file>: class X: base Y``)."""


@dataclass
class _Class:
    name: str
    bases: list[ast.expr]
    methods: list[str]
    test_flag: bool | None
    """The class's own ``__test__`` value, None when it sets none."""
    has_init: bool
    module: "_Module"


@dataclass
class _Module:
    path: Path
    names: dict[str, ast.AST] = field(default_factory=dict)
    """Module-level names in binding order: the last definition or import of each."""
    classes: dict[str, _Class] = field(default_factory=dict)
    imports: dict[str, tuple[str, str | None, int]] = field(default_factory=dict)
    """Local name -> (module name, attribute or None for a module, relative level)."""


def test_files(folder: Path) -> list[Path]:
    """The test files of a turn's tests folder, sorted, caches left out."""
    found = {p for pattern in TEST_FILE_PATTERNS for p in folder.rglob(pattern) if "__pycache__" not in p.parts}
    return sorted(p for p in found if p.is_file())


def collect(path: Path | None, text: str, roots: Sequence[Path]) -> Collected:
    """The test ids of the test file at ``path`` (whose rendered text is ``text``);
    ``roots`` are the folders its imports may resolve in (the turn's tests, the support).
    With ``path`` None, no import is followed (a text of no folder). Raises SyntaxError
    when the file does not parse."""
    roots = tuple(roots) if path is not None else ()
    module = _module(path or Path("<text>"), text)
    if path is None:
        module.imports = {name: found for name, found in module.imports.items() if found[2] == 0}
    ids: list[str] = []
    unresolved: list[str] = []
    for name, node in module.names.items():
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if name.startswith("test"):
                ids.append(name)
            continue
        cls = module.classes.get(name) if isinstance(node, ast.ClassDef) else _resolve(module, ast.Name(name), roots)
        if not isinstance(cls, _Class):
            continue  # an imported function or module, or a class we cannot read
        kind, methods = _class_tests(cls, roots, unresolved, set())
        if kind == "unittest" or (kind == "plain" and name.startswith("Test") and not _has_init(cls, roots)):
            ids.extend(f"{name}::{method}" for method in methods)
    return Collected(tuple(dict.fromkeys(ids)), tuple(dict.fromkeys(unresolved)))


def _class_tests(cls: _Class, roots: tuple[Path, ...], unresolved: list[str], seen: set[int]) -> tuple[str | None, list[str]]:
    """``("unittest" | "plain" | None, test methods in definition order, own first)``;
    None when ``__test__`` is false somewhere up the chain."""
    if id(cls) in seen:  # a cycle of imports: stop here
        return "plain", []
    seen = seen | {id(cls)}
    kind = "plain"
    methods = [m for m in cls.methods if m.startswith("test")]
    disabled = cls.test_flag is False
    for base in cls.bases:
        found = _resolve(cls.module, base, roots)
        if isinstance(found, _Class):
            base_kind, base_methods = _class_tests(found, roots, unresolved, seen)
            if base_kind is None and cls.test_flag is None:
                disabled = True
            if base_kind == "unittest":
                kind = "unittest"
            methods += [m for m in base_methods if m not in methods]
        elif found == "unittest":
            kind = "unittest"
        elif found is None:
            name = ast.unparse(base)
            if name.split(".")[-1].endswith("TestCase"):
                kind = "unittest"
            elif name not in ("object", "ABC", "abc.ABC", "Generic") and not name.startswith(("Generic[", "typing.")):
                unresolved.append(f"{cls.module.path.name}: class {cls.name}: base {name}")
    if disabled:
        return None, methods
    return kind, methods


def _has_init(cls: _Class, roots: tuple[Path, ...]) -> bool:
    if cls.has_init:
        return True
    for base in cls.bases:
        found = _resolve(cls.module, base, roots)
        if isinstance(found, _Class) and _has_init(found, roots):
            return True
    return False


def _resolve(module: _Module, base: ast.expr, roots: tuple[Path, ...]) -> _Class | str | None:
    """A base-class expression as a class we read, ``"unittest"`` for unittest's
    TestCase, or None."""
    if isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name):
        owner = module.imports.get(base.value.id)
        if owner is None:
            return None
        name, attr, level = owner
        if attr is not None:  # ``from pkg import mod`` then ``mod.Class``
            name, level = (f"{name}.{attr}" if name else attr), level
        if name == "unittest" and base.attr == "TestCase":
            return "unittest"
        target = _find_module(module.path, name, level, roots)
        return target.classes.get(base.attr) if target else None
    if not isinstance(base, ast.Name):
        return None
    if base.id in module.classes:
        return module.classes[base.id]
    imported = module.imports.get(base.id)
    if imported is None:
        return None
    name, attr, level = imported
    if attr is None:
        return None
    if name == "unittest" and attr == "TestCase":
        return "unittest"
    target = _find_module(module.path, name, level, roots)
    if target is not None and attr in target.classes:
        return target.classes[attr]
    if target is not None:  # ``from pkg import Class`` where pkg/__init__ re-exports it
        again = target.imports.get(attr)
        if again is not None and again[1] is not None:
            deeper = _find_module(target.path, again[0], again[2], roots)
            if deeper is not None:
                return deeper.classes.get(again[1])
    return None


def _find_module(origin: Path, name: str, level: int, roots: tuple[Path, ...]) -> _Module | None:
    """The module ``name`` (``level`` dots up from ``origin``'s folder, or absolute under
    one of ``roots``), when it is a file we can read. An absolute name is also tried
    without its first part: upstream's ``tests.base`` is the tests folder's ``base``."""
    parts = [p for p in name.split(".") if p]
    if level:
        base = origin.parent
        for _ in range(level - 1):
            base = base.parent
        options = [base.joinpath(*parts)] if parts else [base]
    else:
        options = [root.joinpath(*tail) for root in roots for tail in (parts, parts[1:]) if tail]
    for target in options:
        for file in (target.with_suffix(".py") if target.name else None, target / "__init__.py"):
            if file is not None and file.is_file():
                return _read(file)
    return None


@functools.lru_cache(maxsize=512)
def _read_cached(path: str, mtime: int, size: int) -> _Module | None:
    try:
        text = Path(path).read_text(encoding="utf-8")
        return _module(Path(path), text)
    except (OSError, UnicodeDecodeError, SyntaxError):
        return None


def _read(path: Path) -> _Module | None:
    info = path.stat()
    return _read_cached(str(path), info.st_mtime_ns, info.st_size)


def module_level(body: Sequence[ast.stmt]) -> list[ast.stmt]:
    """The statements of a module's ``body`` that run at its top level, those of every
    branch of its ``if`` and ``try`` blocks included, in source order."""
    found = []
    for node in body:
        if isinstance(node, ast.If):
            found += module_level(node.body) + module_level(node.orelse)
        elif isinstance(node, _TRY):
            found += module_level(node.body)
            for handler in node.handlers:
                found += module_level(handler.body)
            found += module_level(node.orelse) + module_level(node.finalbody)
        else:
            found.append(node)
    return found


def _module(path: Path, text: str) -> _Module:
    tree = pyast.parse(text, filename=str(path))
    module = _Module(path)
    for node in module_level(tree.body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            module.names.pop(node.name, None)
            module.names[node.name] = node
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                module.names.pop(local, None)
                module.names[local] = node
        if isinstance(node, ast.ClassDef):
            methods = [n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
            flag = None
            for item in node.body:
                if isinstance(item, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__test__" for t in item.targets):
                    flag = bool(item.value.value) if isinstance(item.value, ast.Constant) else None
            module.classes[node.name] = _Class(node.name, list(node.bases), methods, flag, "__init__" in methods, module)
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                module.imports[alias.asname or alias.name] = (node.module or "", alias.name, node.level)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                module.imports[local] = (alias.name if alias.asname else alias.name.split(".")[0], None, 0)
    return module

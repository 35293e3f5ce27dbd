"""Consistency rules: decisions of the project, declared in ``task.yaml`` and checked at
every submit from the turn they are made. Pure functions of the work tree's text.

Kinds::

    forbid_regex      pattern must not match in ``paths`` (minus ``exclude``)
    require_regex     pattern must match somewhere in ``paths`` (``each: true``: in every file)
    forbid_import     none of ``modules`` (or their submodules) is imported in ``paths``
    sql_only_in       SQL string literals appear only in ``paths`` (``scope`` is searched)
    no_formatted_sql  no ``execute``-like call gets SQL built (f-string, ``%``, ``+``,
                      ``.format``) from anything but literals and CONSTANT_CASE names
    calls_only_in     calls to ``calls`` (dotted names) appear only in ``paths``
    call_arg_prefix   in ``paths``, string literal argument ``arg`` of calls to ``calls``
                      starts with ``prefix`` (for instance every route under ``/api``)

``paths``, ``exclude`` and ``scope`` are glob patterns over repository paths (``**`` spans
folders). A rule binds from turn ``from_turn`` (1-based) on, up to ``until_turn`` when a
later decision replaces it.
"""

from __future__ import annotations

import ast
import hashlib
import re
import weakref
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Annotated, Literal, Mapping, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator

from stamina_gym import pyast

#: The start of an SQL statement as it is conventionally written (keywords in capitals):
#: "DELETE FROM todos" is SQL, "DELETE" alone (an HTTP method) and "delete from" are not.
_SQL = re.compile(
    r"^\s*(SELECT\s.*\bFROM\b|SELECT\s+(COUNT|MAX|MIN|SUM)\(|INSERT\s+(OR\s+\w+\s+)?INTO\s|UPDATE\s+\w+\s+SET\s"
    r"|DELETE\s+FROM\s|CREATE\s+(TABLE|INDEX|UNIQUE\s+INDEX|VIEW|TRIGGER)\s|DROP\s+(TABLE|INDEX|VIEW)\s"
    r"|ALTER\s+TABLE\s|PRAGMA\s)",
    re.S,
)
_EXECUTE = {"execute", "executemany", "executescript"}
#: Where the interpreter ends a line. ``str.splitlines`` also breaks at a form feed, which
#: Python reads as mere whitespace: ``import\fpickle`` imports pickle.
_LINE_END = re.compile(r"\r\n|\r|\n")


class _Rule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    """Short name shown in grades, e.g. ``sql-in-storage``."""
    description: str
    """The decision in words, for reports."""
    from_turn: int = Field(1, ge=1)
    """The turn (1-based) that makes the decision; the rule binds from it on."""
    until_turn: int | None = Field(None, ge=1)
    """The last turn the rule binds, when a later decision replaces it; none: to the end."""
    paths: tuple[str, ...] = ("**/*.py",)
    """Files the rule looks at (glob patterns)."""
    exclude: tuple[str, ...] = ()
    """Files left out of ``paths``."""

    def applies(self, path: str) -> bool:
        return matches(path, self.paths) and not matches(path, self.exclude)


class ForbidRegex(_Rule):
    kind: Literal["forbid_regex"]
    pattern: str
    """Python regular expression, searched line by line."""

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        re.compile(value)
        return value


class RequireRegex(ForbidRegex):
    kind: Literal["require_regex"]  # type: ignore[assignment]
    each: bool = False
    """Require a match in every file of ``paths`` rather than in at least one."""


class ForbidImport(_Rule):
    kind: Literal["forbid_import"]
    modules: tuple[str, ...] = Field(min_length=1)


class SqlOnlyIn(_Rule):
    kind: Literal["sql_only_in"]
    scope: tuple[str, ...] = ("**/*.py",)
    """Files searched for SQL literals; any outside ``paths`` is a violation."""


class NoFormattedSql(_Rule):
    kind: Literal["no_formatted_sql"]


class CallsOnlyIn(_Rule):
    kind: Literal["calls_only_in"]
    calls: tuple[str, ...] = Field(min_length=1)
    """Dotted names as written at the call, e.g. ``hashlib.pbkdf2_hmac``."""
    scope: tuple[str, ...] = ("**/*.py",)


class CallArgPrefix(_Rule):
    kind: Literal["call_arg_prefix"]
    calls: tuple[str, ...] = Field(min_length=1)
    """Called names (the last part of the dotted name), e.g. ``add`` for ``router.add``."""
    arg: int = Field(0, ge=0)
    """Position of the checked argument."""
    prefix: str


Rule = Annotated[
    Union[ForbidRegex, RequireRegex, ForbidImport, SqlOnlyIn, NoFormattedSql, CallsOnlyIn, CallArgPrefix],
    Field(discriminator="kind"),
]


@dataclass(frozen=True)
class Violation:
    rule: str
    file: str
    line: int
    message: str

    def to_info(self) -> dict:
        return {"rule": self.rule, "file": self.file, "line": self.line, "message": self.message}


def matches(path: str, patterns: tuple[str, ...]) -> bool:
    """Glob match where ``**/`` may also match nothing (``**/*.py`` matches ``a.py``)."""
    for pattern in patterns:
        if fnmatchcase(path, pattern) or (pattern.startswith("**/") and fnmatchcase(path, pattern[3:])):
            return True
    return False


def python_lines(text: str) -> list[str]:
    """``text`` split into lines where the interpreter splits it."""
    lines = _LINE_END.split(text)
    return lines[:-1] if lines[-1] == "" else lines


def check_rules(rules: tuple, files: Mapping[str, str], turn: int) -> tuple[list[str], list[Violation]]:
    """The ids of the rules in force at ``turn`` and their violations in ``files``
    (repository path -> text; a ``.py`` file's text decoded as the interpreter decodes it,
    which ``stamina_gym.quality.review.as_text`` does)."""
    active = [rule for rule in rules if rule.from_turn <= turn and (rule.until_turn is None or turn <= rule.until_turn)]
    found: list[Violation] = []
    trees: dict[str, ast.Module | None] = {}

    def tree(path: str) -> ast.Module | None:
        if path not in trees:
            try:
                trees[path] = pyast.parse(files[path])
            except (SyntaxError, ValueError, RecursionError, MemoryError):  # the interpreter could not run it either
                trees[path] = None
        return trees[path]

    digests = {path: hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
               for path, text in files.items()}  # fmt: skip
    for rule in active:
        if rule.kind == "require_regex":  # looks across files: checked whole
            found += _CHECKS[rule.kind](rule, files, tree)
            continue
        for path, text in files.items():  # every other kind judges each file on its own
            key = (rule, path, digests[path])
            hit = _PER_FILE.get(key)
            if hit is None:
                hit = tuple(_CHECKS[rule.kind](rule, {path: text}, tree))
                if len(_PER_FILE) >= _PER_FILE_MAX:
                    _PER_FILE.clear()
                _PER_FILE[key] = hit
            found += hit
    return [rule.id for rule in active], found


#: Violations of one per-file rule in one file's text (by digest), kept between submits: a submit
#: re-checks only the files it changed (the rules were a fifth of a submit's review).
_PER_FILE: dict[tuple, tuple[Violation, ...]] = {}
_PER_FILE_MAX = 50_000


def _forbid_regex(rule, files, tree):
    pattern = re.compile(rule.pattern)
    for path, text in files.items():
        if rule.applies(path):
            for number, line in enumerate(python_lines(text), start=1):
                if pattern.search(line):
                    yield Violation(rule.id, path, number, f"{rule.description}: forbidden here")


def _require_regex(rule, files, tree):
    pattern = re.compile(rule.pattern)
    chosen = [path for path in files if rule.applies(path)]
    hits = [path for path in chosen if pattern.search(files[path])]
    if rule.each:
        for path in chosen:
            if path not in hits:
                yield Violation(rule.id, path, 0, f"{rule.description}: missing in this file")
    elif not hits:
        yield Violation(rule.id, ",".join(rule.paths), 0, f"{rule.description}: found nowhere")


_NODES: "weakref.WeakKeyDictionary[ast.AST, tuple[ast.AST, ...]]" = weakref.WeakKeyDictionary()


def nodes(module: ast.Module) -> tuple[ast.AST, ...]:
    """Every node of ``module`` in ``ast.walk``'s order, walked once per tree: the rules
    that look at one file share the walk (five walks of each changed file were most of
    the rules' time)."""
    found = _NODES.get(module)
    if found is None:
        found = _NODES[module] = tuple(ast.walk(module))
    return found


def imported_modules(module: ast.Module):
    """(node, module name) of every absolute import in ``module``."""
    for node in nodes(module):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node, node.module


def is_within(name: str, modules) -> bool:
    """``name`` is one of ``modules`` or a submodule of one."""
    return any(name == m or name.startswith(m + ".") for m in modules)


def _forbid_import(rule, files, tree):
    for path in files:
        if not rule.applies(path) or (module := tree(path)) is None:
            continue
        for node, name in imported_modules(module):
            if is_within(name, rule.modules):
                yield Violation(rule.id, path, node.lineno, f"{rule.description}: imports {name}")


def _string_nodes(module: ast.Module):
    for node in nodes(module):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node, node.value
        elif isinstance(node, ast.JoinedStr):
            head = node.values[0] if node.values else None
            if isinstance(head, ast.Constant) and isinstance(head.value, str):
                yield node, head.value


def _sql_only_in(rule, files, tree):
    for path in files:
        if not matches(path, rule.scope) or rule.applies(path) or (module := tree(path)) is None:
            continue
        for node, text in _string_nodes(module):
            if _SQL.match(text):
                yield Violation(rule.id, path, node.lineno, f"{rule.description}: SQL outside {', '.join(rule.paths)}")


_CONSTANT_NAME = re.compile(r"^_*[A-Z][A-Z0-9_]*$")


def interpolated(node: ast.AST) -> list[ast.AST] | None:
    """The values spliced into a string built by an f-string, ``%``, ``+`` or
    ``.format()``; None when ``node`` builds no string."""
    if isinstance(node, ast.JoinedStr):
        return [v.value for v in node.values if isinstance(v, ast.FormattedValue)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        return list(node.right.elts) if isinstance(node.right, ast.Tuple) else [node.right]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        parts, sides = [], [node.right, node.left]
        while sides:  # a loop, not recursion: a chain of thousands of ``+`` is valid Python
            side = sides.pop()
            if isinstance(side, ast.BinOp) and isinstance(side.op, ast.Add):
                sides += [side.right, side.left]
                continue
            inner = interpolated(side)
            parts += inner if inner is not None else [side]
        return parts
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        return [*node.args, *(k.value for k in node.keywords)]
    return None


def _trusted(node: ast.AST) -> bool:
    """A literal, or a module constant by naming convention (``_COLUMNS``, ``cls.TABLE``)."""
    if isinstance(node, ast.Constant):
        return True
    name = dotted(node).rsplit(".", 1)[-1]
    return bool(name) and bool(_CONSTANT_NAME.match(name))


def _is_built_string(node: ast.AST) -> bool:
    """SQL text assembled from values that are neither literals nor named constants."""
    parts = interpolated(node)
    return parts is not None and not all(_trusted(part) for part in parts)


def _no_formatted_sql(rule, files, tree):
    for path in files:
        if not rule.applies(path) or (module := tree(path)) is None:
            continue
        for node in nodes(module):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in _EXECUTE
                and node.args
                and _is_built_string(node.args[0])
            ):
                yield Violation(rule.id, path, node.lineno, f"{rule.description}: SQL built from strings")


def dotted(node: ast.AST) -> str:
    """``a.b.c`` for a Name/Attribute chain, '' for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return ""


def _calls_only_in(rule, files, tree):
    wanted = set(rule.calls)
    for path in files:
        if not matches(path, rule.scope) or rule.applies(path) or (module := tree(path)) is None:
            continue
        for node in nodes(module):
            if isinstance(node, ast.Call) and dotted(node.func) in wanted:
                yield Violation(rule.id, path, node.lineno, f"{rule.description}: {dotted(node.func)} called here")


def _call_arg_prefix(rule, files, tree):
    wanted = set(rule.calls)
    for path in files:
        if not rule.applies(path) or (module := tree(path)) is None:
            continue
        for node in nodes(module):
            if not isinstance(node, ast.Call) or dotted(node.func).rsplit(".", 1)[-1] not in wanted:
                continue
            if len(node.args) > rule.arg:
                value = node.args[rule.arg]
                if isinstance(value, ast.Constant) and isinstance(value.value, str) and not value.value.startswith(rule.prefix):
                    yield Violation(rule.id, path, node.lineno, f"{rule.description}: {value.value!r} lacks {rule.prefix!r}")


_CHECKS = {
    "forbid_regex": _forbid_regex,
    "require_regex": _require_regex,
    "forbid_import": _forbid_import,
    "sql_only_in": _sql_only_in,
    "no_formatted_sql": _no_formatted_sql,
    "calls_only_in": _calls_only_in,
    "call_arg_prefix": _call_arg_prefix,
}

"""``ast.parse`` for code that may parse on several threads at once."""

from __future__ import annotations

import ast
import threading
from collections.abc import Iterator, Mapping

_LOCK = threading.Lock()


def parse(source: str | bytes, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse`` one thread at a time: CPython 3.11 fails with a SystemError ("AST
    constructor recursion depth mismatch", python/cpython#106905) when two threads build
    trees at once, and the env parses on several (the review, the staging of the next
    grading folder, the agent's own tools). Once more on that error, for a parse outside
    this lock (the text is never at fault)."""
    with _LOCK:
        try:
            return ast.parse(source, filename=filename)
        except SystemError:
            return ast.parse(source, filename=filename)


def modules(files: Mapping[str, str]) -> Iterator[tuple[str, ast.Module]]:
    """Each Python file of ``files`` (path -> text) that parses, with its tree, in the
    mapping's order; a file that does not parse is left out."""
    for rel, text in files.items():
        if rel.endswith(".py"):
            try:
                yield rel, parse(text)
            except SyntaxError:
                continue


def is_property(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether ``node`` is a property's function (``@property``, ``@cached_property``, a
    ``@name.setter``): reading the attribute runs it, so ``obj.name(...)`` calls what it
    returns, not it."""
    for decorator in node.decorator_list:
        name = decorator.attr if isinstance(decorator, ast.Attribute) else getattr(decorator, "id", "")
        if name in ("property", "cached_property", "setter", "getter", "deleter"):
            return True
    return False

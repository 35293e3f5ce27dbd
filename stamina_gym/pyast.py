"""``ast.parse`` for code that may parse on several threads at once."""

from __future__ import annotations

import ast
import threading

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

"""A workaround for the interpreter's own bug, installed once per process by the env.

CPython 3.11 and 3.12 keep one AST recursion counter per interpreter, not per thread
(python/cpython#106905): when two threads build trees at once, ``ast.parse`` in one of them
can fail with ``SystemError: AST constructor recursion depth mismatch``. The env builds
trees on several threads (the staging of the next grading folder seals its tests, the
review, the agent's tools, the quality analysers), and a loaded machine saw a staging
fail so. The text is never at fault: ``install`` makes ``ast.parse`` try again after a
short wait, a few times, on that error alone. Nothing it parses changes; no result differs.
"""

from __future__ import annotations

import ast
import functools
import sys
import time
from typing import Any, Callable

TRIES = 8


def retrying(parse: Callable[..., ast.AST]) -> Callable[..., ast.AST]:
    """``parse`` tried again on the recursion-depth ``SystemError``, up to ``TRIES`` times."""

    @functools.wraps(parse)
    def parse_retrying(*args: Any, **kwargs: Any) -> ast.AST:
        for attempt in range(TRIES):
            try:
                return parse(*args, **kwargs)
            except SystemError as exc:
                if "recursion depth mismatch" not in str(exc) or attempt == TRIES - 1:
                    raise
                time.sleep(0.005 * (attempt + 1))
        raise AssertionError("unreachable")

    parse_retrying.stamina_gym_retrying = True  # type: ignore[attr-defined]
    return parse_retrying


def install() -> None:
    """Wrap ``ast.parse`` once, on the Pythons with the bug."""
    if sys.version_info < (3, 13) and not getattr(ast.parse, "stamina_gym_retrying", False):
        ast.parse = retrying(ast.parse)

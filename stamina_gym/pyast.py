"""``ast.parse`` for code that may parse on several threads at once."""

from __future__ import annotations

import ast


def parse(source: str | bytes, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse``, once more when it fails with the SystemError by which CPython 3.11
    reports two threads building trees at once (the review, the grading stage and the
    reference's measurement share its recursion count, python/cpython#106905): the text
    is not at fault."""
    try:
        return ast.parse(source, filename=filename)
    except SystemError:
        return ast.parse(source, filename=filename)

"""A test's outcome as the grader records it. Pure."""

from __future__ import annotations

import re
from dataclasses import dataclass

_PARAMS = re.compile(r"\[.*\]$")


@dataclass(frozen=True)
class Outcome:
    status: str
    """``passed``, ``failed``, ``error``, ``skipped`` or ``missing``."""
    message: str = ""


def base_id(test_id: str) -> str:
    """``t/test_a.py::test_x[1-2]`` -> ``t/test_a.py::test_x``."""
    return _PARAMS.sub("", test_id)

"""Plan adherence: does the code do what the plan said? One detector per decision kind,
each a pure function of the repository's source files (path -> text).

Test files (under a ``tests`` folder or named ``test_*.py``) are left out: a plan is
followed by the code that runs, not by a test that mentions a library.
"""

from __future__ import annotations

import ast
import re
from pathlib import PurePosixPath
from typing import Callable, Mapping, Sequence

from stamina_gym import pyast
from stamina_gym.rules import imported_modules, is_within
from stamina_gym.task import Decision
from stamina_gym.user.plan import DecisionVerdict

Sources = Mapping[str, str]


def is_test_file(path: str) -> bool:
    pure = PurePosixPath(path)
    return "tests" in pure.parts[:-1] or pure.name.startswith("test_") or pure.name == "conftest.py"


def _trees(sources: Sources):
    for path, text in sources.items():
        try:
            yield pyast.parse(text, filename=path)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue


def mentions(sources: Sources, patterns: Sequence[str]) -> bool:
    """Some source file matches one of the regexes."""
    compiled = [re.compile(p) for p in patterns]
    return any(rx.search(text) for text in sources.values() for rx in compiled)


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def calls(sources: Sources, names: Sequence[str]) -> bool:
    """Some call's dotted name is one of ``names`` or ends with ``.name``."""
    for tree in _trees(sources):
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                called = _dotted(node.func)
                if any(called == n or called.endswith("." + n) for n in names):
                    return True
    return False


def imports(sources: Sources, modules: Sequence[str]) -> bool:
    """Some file imports one of ``modules`` (or a submodule of it)."""
    return any(is_within(name, modules) for tree in _trees(sources) for _, name in imported_modules(tree))


DETECTORS: dict[str, Callable[[Sources, Sequence[str]], bool]] = {
    "mentions": mentions,
    "calls": calls,
    "imports": imports,
}


def adherence(decisions: Sequence[Decision], verdicts: Sequence[DecisionVerdict], sources: Sources) -> tuple[float, dict[str, bool]]:
    """Share of the decisions the plan settles whose named alternative the code follows.
    A plan that settles no decision has nothing to adhere to: 0."""
    code = {path: text for path, text in sources.items() if not is_test_file(path)}
    by_id = {d.id: d for d in decisions}
    followed: dict[str, bool] = {}
    for verdict in verdicts:
        if verdict.verdict == "absent":
            continue
        decision = by_id[verdict.decision]
        detect = DETECTORS[decision.kind]
        named = [a for a in (*decision.accept, *decision.reject) if a.name in verdict.named]
        followed[decision.id] = any(detect(code, alt.code) for alt in named)
    share = sum(followed.values()) / len(followed) if followed else 0.0
    return share, followed

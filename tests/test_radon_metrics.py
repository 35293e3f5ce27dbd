"""``radon_metrics`` gives what radon's own entry points give, from one parse."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from radon.complexity import cc_visit
from radon.metrics import mi_visit
from radon.raw import analyze
from radon.visitors import Class

import stamina_gym
from stamina_gym.quality.analyzers import radon_metrics

SOURCES = sorted(Path(stamina_gym.__file__).parent.rglob("*.py"))[:40]


def by_the_book(source: str):
    functions = [(f"{b.classname}.{b.name}" if b.classname else b.name, b.lineno, b.complexity)
                 for b in cc_visit(source) if not isinstance(b, Class)]  # fmt: skip
    return analyze(source).sloc, functions, round(mi_visit(source, multi=True), 2)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_the_same_figures_as_radons_own_functions(path):
    source = path.read_text(encoding="utf-8")
    assert radon_metrics(source, ast.parse(source))[:3] == by_the_book(source)


def test_edge_texts():
    for source in ("", "x = 1\n", '"""doc"""\n', "# only a comment\n", "class A:\n    def f(self):\n        return 1 if self else 2\n"):
        assert radon_metrics(source, ast.parse(source))[:3] == by_the_book(source)

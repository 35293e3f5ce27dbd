"""Mutation check of hidden tests: small changes to the lines a reference patch adds, each
of which a good test set should notice ("kill").

Mutations of one line (only those that leave the file valid Python are kept):

* an operator swapped: ``==``/``!=``, ``<``/``>=``, ``>``/``<=``, ``+``/``-``, ``*``/``//``,
  ``and``/``or``, ``is``/``is not``, ``in``/``not in``
* a constant changed: ``True``/``False``, an integer ``n`` -> ``n + 1``
* a condition negated: ``if x:`` -> ``if not (x):``
* a statement removed: replaced by ``pass``
* a returned value dropped: ``return x`` -> ``return None``

A mutant is killed when at least one of the turn's hidden tests does not pass on it.
"""

from __future__ import annotations

import ast
import random
import re
from dataclasses import dataclass
from typing import Iterator

from stamina_gym import pyast

_SWAPS = [
    (r"==", "!="), (r"!=", "=="), (r"<=", ">"), (r">=", "<"), (r"(?<![<>=!-])<(?![<=])", ">="),
    (r"(?<![<>=!-])>(?![>=])", "<="), (r"(?<![+\-*/=])\+(?![+=])", "-"), (r"(?<![+\-*/=<>e])-(?![-=>])", "+"),
    (r"(?<!/)//(?!/)", "*"), (r"(?<!\*)\*(?![*=])", "//"), (r"\band\b", "or"), (r"\bor\b", "and"), (r"\bis not\b", "is"),
    (r"\bis\b(?! not)", "is not"), (r"\bnot in\b", "in"), (r"(?<!not )\bin\b", "not in"),
    (r"\bTrue\b", "False"), (r"\bFalse\b", "True"),
]  # fmt: skip
_INT = re.compile(r"(?<![\w.])(\d+)(?![\w.])")
_SKIP = re.compile(r"^\s*(#|def |class |import |from |@|\"\"\"|'''|else:|try:|finally:|except\b|elif .*:$|$)")
_STRING = re.compile(r"(\"[^\"]*\"|'[^']*')")


@dataclass(frozen=True)
class Mutant:
    path: str
    line: int
    """1-based line in the file after the reference patch."""
    original: str
    mutated: str
    kind: str

    def describe(self) -> str:
        return f"{self.path}:{self.line} {self.kind}: {self.original.strip()!r} -> {self.mutated.strip()!r}"


def added_lines(patch: str) -> dict[str, list[int]]:
    """Per file of a unified diff, the line numbers (in the new file) of added lines."""
    added: dict[str, list[int]] = {}
    path, number = None, 0
    for line in patch.splitlines():
        if line.startswith("+++ "):
            name = line[4:].strip()
            path = None if name == "/dev/null" else name.removeprefix("b/")
        elif line.startswith("@@"):
            match = re.match(r"@@ -\d+(?:,\d+)? \+(\d+)", line)
            number = int(match.group(1)) if match else 0
        elif path and line.startswith("+"):
            added.setdefault(path, []).append(number)
            number += 1
        elif path and not line.startswith("-") and not line.startswith("\\"):
            number += 1
    return added


def _outside_strings(line: str, start: int) -> bool:
    return not any(m.start() <= start < m.end() for m in _STRING.finditer(line))


def line_mutations(line: str) -> Iterator[tuple[str, str]]:
    """(mutated line, kind) for one source line; the caller checks the syntax."""
    if _SKIP.match(line):
        return
    body = line.strip()
    for pattern, replacement in _SWAPS:
        for match in re.finditer(pattern, line):
            if _outside_strings(line, match.start()):
                yield line[: match.start()] + replacement + line[match.end():], "operator"
    for match in _INT.finditer(line):
        if _outside_strings(line, match.start()):
            yield line[: match.start()] + str(int(match.group(1)) + 1) + line[match.end():], "constant"
    indent = line[: len(line) - len(line.lstrip())]
    condition = re.match(r"(if|while) (.+):$", body)
    if condition:
        yield f"{indent}{condition.group(1)} not ({condition.group(2)}):", "condition"
    if body.startswith("return ") and body != "return None":
        yield f"{indent}return None", "return"
    elif not body.endswith((":", "(", "[", "{", ",", "\\")) and not body.startswith((")", "]", "}")):
        yield f"{indent}pass", "removed"


def string_lines(source: str) -> set[int]:
    """Lines inside multi-line string literals (docstrings, SQL): text, not code."""
    inside = set()
    for node in ast.walk(pyast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.end_lineno != node.lineno:
            inside.update(range(node.lineno, node.end_lineno + 1))
    return inside


def mutants_of(patch: str, files: dict[str, str]) -> list[Mutant]:
    """Every valid single-line mutant of the Python lines ``patch`` adds (tests and the
    text of multi-line strings excluded); ``files`` holds each file after the patch."""
    found = []
    for path, numbers in added_lines(patch).items():
        if not path.endswith(".py") or path.startswith("tests/") or "/tests/" in path or path not in files:
            continue
        lines = files[path].split("\n")
        text_lines = string_lines(files[path])
        for number in numbers:
            if number in text_lines:
                continue
            original = lines[number - 1]
            for mutated, kind in dict.fromkeys(line_mutations(original)):
                if mutated == original:
                    continue
                candidate = "\n".join([*lines[: number - 1], mutated, *lines[number:]])
                try:
                    pyast.parse(candidate)
                except (SyntaxError, ValueError):
                    continue
                found.append(Mutant(path, number, original, mutated, kind))
    return found


def sample(mutants: list[Mutant], count: int, seed: int) -> list[Mutant]:
    """Up to ``count`` mutants, spread over kinds, chosen reproducibly."""
    rng = random.Random(seed)
    pool = list(mutants)
    rng.shuffle(pool)
    by_kind: dict[str, list[Mutant]] = {}
    for mutant in pool:
        by_kind.setdefault(mutant.kind, []).append(mutant)
    chosen: list[Mutant] = []
    while len(chosen) < count and any(by_kind.values()):
        for kind in sorted(by_kind):
            if by_kind[kind] and len(chosen) < count:
                chosen.append(by_kind[kind].pop())
    return chosen


def apply(mutant: Mutant, text: str) -> str:
    lines = text.split("\n")
    lines[mutant.line - 1] = mutant.mutated
    return "\n".join(lines)

"""Do the paraphrases of a turn state the same facts the tests check?

The episode shows one paraphrase of each turn, so each must carry every fact the tests
check. This compares what the paraphrases of one turn state in checkable form (numbers,
names in code spans, double-quoted strings) and keeps the facts the turn's tests also
hold (a number or string literal, a name they use): a fact one paraphrase states and
another lacks is named, with the paraphrases that lack it.

It is a reviewer's report (``stamina-gym validate TASK --paraphrases``), not a gate:
most differences it names are restatements ("the usual 400" against "400"), and a
reader decides (``docs/tasks/fair-turns.md``, the audit). What it names on a turn with a
real disagreement is the fact itself.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Mapping

from stamina_gym.interfaces import _CODE_SPAN, _WORD, _render
from stamina_gym.task import Task, Turn

_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?!\w|\.\d)")
_QUOTED = re.compile(r'"([^"\n]{1,80})"')


@dataclass(frozen=True)
class Difference:
    """A fact some paraphrases of a turn state and others lack."""

    turn: str
    kind: str
    """``number``, ``name`` or ``quoted``."""
    value: str
    stated_by: tuple[int, ...]
    lacking: tuple[int, ...]
    """1-based paraphrase numbers."""

    def __str__(self) -> str:
        said = ", ".join(map(str, self.stated_by))
        lack = ", ".join(map(str, self.lacking))
        return f"{self.turn}: {self.kind} {self.value!r} is stated by paraphrase {said}, not by {lack}"


def stated(text: str) -> set[tuple[str, str]]:
    """The checkable facts of a prompt: its numbers, the names in its code spans and its
    double-quoted strings."""
    facts = {("number", n) for n in _NUMBER.findall(text)}
    for span in _CODE_SPAN.findall(text):
        facts |= {("name", w) for w in _WORD.findall(span) if len(w) > 1}
    facts |= {("quoted", q) for q in _QUOTED.findall(_CODE_SPAN.sub(" ", text))}
    return facts


def checked(source: str) -> set[tuple[str, str]]:
    """What a test module holds in the same form: its number and string literals and the
    names it uses."""
    facts: set[tuple[str, str]] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            facts.add(("number", str(node.value)))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            facts.add(("quoted", node.value))
            facts |= {("name", w) for w in _WORD.findall(node.value)}
        elif isinstance(node, ast.Attribute):
            facts.add(("name", node.attr))
        elif isinstance(node, ast.Name):
            facts.add(("name", node.id))
        elif isinstance(node, ast.keyword) and node.arg:
            facts.add(("name", node.arg))
    return facts


def check_turn(task: Task, turn: Turn, params: Mapping[str, str | int]) -> list[Difference]:
    """The facts ``turn``'s tests hold that some of its paraphrases state and others lack.
    The turn's own variables and reproduction output are left blank."""
    blanks = {name: "" for name in turn.spec.variables} | {"repro_script": "", "repro_output": ""}
    facts = [stated(_render(prompt, {**params, **blanks})) for prompt in turn.spec.prompts]
    used: set[tuple[str, str]] = set()
    for path in turn.tests:
        used |= checked(task.render(path.read_text(encoding="utf-8"), params, str(path)))
    found = []
    for fact in sorted(set().union(*facts) & used):
        have = tuple(i for i, f in enumerate(facts, 1) if fact in f)
        if len(have) < len(facts):
            lack = tuple(i for i in range(1, len(facts) + 1) if i not in have)
            found.append(Difference(turn.id, fact[0], fact[1], have, lack))
    return found

"""Does a test expect a case the prompt's own rule classifies the other way?

A prompt can state a rule about a class of characters ("line breaks and tabs become
single spaces; other control characters are an input error"). Turn 86 of StaminaTodo-v1
expected ``"c1\\x85control"`` to be refused, but U+0085 is a line break, so by the prompt's
rule it becomes a space; the reference passed only because of the order of its checks.

A turn writes such rules down as data (``TurnSpec.char_rules``, the exceptions first) and
names the tests whose parametrized string cases they classify (``TurnSpec.char_cases``).
Every character of a case is decided by the first rule whose class holds it. A case the
test expects ``accepted`` may hold no character decided ``refused``; a case it expects
``refused`` whose decided characters are all decided ``accepted`` is misjudged (one with
no character any rule decides is refused for another reason, which these rules do not
speak to). Part of ``validate`` (no test runs).
"""

from __future__ import annotations

import ast
import unicodedata
from dataclasses import dataclass
from typing import Callable, Mapping

from stamina_gym.task import CharRule, Task, Turn

#: The character classes a rule can name, as Python decides them.
CLASSES: Mapping[str, Callable[[str], bool]] = {
    "whitespace": str.isspace,
    "line-break": lambda c: len(f"a{c}b".splitlines()) > 1,
    "control": lambda c: unicodedata.category(c) == "Cc",
    "format": lambda c: unicodedata.category(c) == "Cf",
    "non-ascii-digit": lambda c: c.isdigit() and not c.isascii(),
    "non-ascii": lambda c: not c.isascii(),
}


@dataclass(frozen=True)
class Misjudged:
    """A test case the stated rules classify the other way."""

    test: str
    case: str
    expected: str
    detail: str

    def __str__(self) -> str:
        return f"{self.test}[{self.case!r}]: expected {self.expected}, but {self.detail}"


def verdict(rules: tuple[CharRule, ...], char: str) -> CharRule | None:
    """The first rule whose class holds ``char``, or None."""
    return next((rule for rule in rules if CLASSES[rule.chars](char)), None)


def cases(source: str, test: str) -> list[str]:
    """The string values of ``test``'s ``pytest.mark.parametrize`` cases in ``source``."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == test:
            found = []
            for decorator in node.decorator_list:
                if isinstance(decorator, ast.Call) and ast.unparse(decorator.func).endswith("parametrize"):
                    for arg in decorator.args[1:2]:
                        found += [n.value for n in ast.walk(arg) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
            return found
    raise ValueError(f"no test {test!r}")


def check_turn(task: Task, turn: Turn, params: Mapping[str, str | int]) -> list[Misjudged]:
    """The cases of ``turn``'s named tests that its stated character rules classify the
    other way from what the test expects."""
    if not turn.spec.char_rules or turn.spec.char_cases is None:
        return []
    found = []
    for expected in ("accepted", "refused"):
        for test_id in getattr(turn.spec.char_cases, expected):
            file, _, name = test_id.partition("::")
            source = task.render((turn.dir / "tests" / file).read_text(encoding="utf-8"), params, file)
            for case in cases(source, name):
                decided = [(c, verdict(turn.spec.char_rules, c)) for c in case]
                against = [(c, r) for c, r in decided if r is not None and r.verdict != expected]
                if expected == "accepted" and against:
                    char, rule = against[0]
                    found.append(Misjudged(f"{turn.id}/{test_id}", case, expected,
                                           f"U+{ord(char):04X} is {rule.chars}: \"{rule.says}\" ({rule.verdict})"))  # fmt: skip
                elif expected == "refused" and against and len(against) == sum(r is not None for _, r in decided):
                    named = ", ".join(f"U+{ord(c):04X} is {r.chars}: \"{r.says}\"" for c, r in against)
                    found.append(Misjudged(f"{turn.id}/{test_id}", case, expected, f"the rules accept all it holds ({named})"))
    return found

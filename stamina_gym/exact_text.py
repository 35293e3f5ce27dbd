"""Is every piece of exact output or error text a hidden test demands one the agent was told?

A test that compares what the program printed with a fixed string (``assert out ==
"Exported 2 todo(s) to ..."``, ``assert "Added #1" in result.stdout``), or an error's
message (``assert "TODO_PORT" in str(info.value)``, ``e.args[0].startswith("...")``,
``e.args[0] in ["...", "..."]``, ``pytest.raises(E, match="...")`` and ``assertRaisesRegex``,
whose pattern is read as the literal text it asks for) or a warning's
(``str(w[0].message)``), by ``assert`` or by unittest's ``assertEqual``/``assertIn``, grades the
wording, so the wording must have been given: in every paraphrase of this turn or of an earlier one
(the episode shows one of them), in the seed repository or in the test support code.

The string is read from the test's syntax tree (nothing is imported). Its parts that the
test itself supplies are placeholders and need not be told: the values of an f-string,
the module's other string literals (its inputs, such as a title, wherever the test
module sets them, also where the program cleaned them: a piece found in them, whitespace
and case aside, is the test's own; one under five characters only where quoted: the word
in "Wrong key 'n'" is wording, ``'key'`` in "Missing key: 'key'" a value) and numbers. What is left, split at the placeholders, is the told text
to look for: a text with a piece of at least three letters or digits must appear whole,
whitespace aside, in what the agent was told, in the test's case (an exact comparison grades
"Wrong key" and "wrong key" apart), its parts in order with anything short in place of each
placeholder ("Missing key: '<key>'" tells ``"Missing key: 'key'"``; "Missing keys are
refused" does not, though it holds the piece ``Missing``). Program output is what a test reads from ``stdout``/``stderr``, pytest's
``capsys``/``capfd`` (``out``, ``err``, ``readouterr()``) or a name ``output``/``lines``.

``stamina-gym validate TASK --exact-text`` runs this check alone (seconds, no test runs).
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass
from typing import Iterable, Mapping

from stamina_gym.interfaces import _read_seed, _render, turn_cached
from stamina_gym.task import Task, Turn

_OUTPUT = re.compile(r"\b(?:stdout|stderr|out|err|output|lines|readouterr|caplog)\b"
                     r"|\bstr\((?:[\w\[\]-]+\.)*(?:value|exception|e|exc|error|ex|message)\)"
                     r"|\.args\b|\.message\b")  # printed or logged, or an error's or a warning's message
#: unittest's comparisons: the method -> whether its first argument is the expected side only
#: (``assertIn(member, container)``), else either side may be.
_UNITTEST = {"assertEqual": False, "assertEquals": False, "assertNotEqual": False, "assertMultiLineEqual": False,
             "assertIn": True, "assertNotIn": True}  # fmt: skip
_NUMBER = re.compile(r"\d+")
_PIECE = re.compile(r"[A-Za-z0-9]")
#: Stands for a part of the expected text that the test supplies.
_HOLE = "\0"


@dataclass(frozen=True)
class Demanded:
    """One fixed piece of output text a test compares with."""

    file: str
    line: int
    text: str
    """The piece, whitespace collapsed (as it is looked for: the case is the test's)."""
    original: str = ""
    """The piece as the test writes it, whitespace collapsed."""
    whole: str = ""
    """The whole text the piece is of, as the test writes it, whitespace collapsed: its
    values as ``{expression}``, a pattern's syntax as ``…`` (as a prompt shows it; a piece
    alone is a fragment: schema's ``"Missing key: 'key'"`` cut at the test's ``'key'``)."""
    told_as: str = ""
    """The whole text with the test's own parts as holes, whitespace collapsed: what was told
    holds its parts in order, whatever stands for each hole (``told``)."""

    def told(self, text: str) -> bool:
        """Whether ``text`` (whitespace collapsed) holds the whole text the piece is of: a
        prompt that says "Missing keys are refused" tells the piece ``Missing`` and not
        ``"Missing key: 'key'"``; ``Missing key: '<key>'`` tells it. Holes stand for at most
        ``_HOLE_WIDTH`` characters."""
        return _told_pattern(self.told_as).search(text) is not None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: exact output text {self.text!r}"


def demanded(source: str, file: str) -> list[Demanded]:
    """The pieces of exact output or error text the test functions of ``source`` compare with."""
    tree = ast.parse(source)
    compared = [(node.lineno, expected) for node in ast.walk(tree) if isinstance(node, ast.Assert)
                for expected in _expected_output(node.test)]  # fmt: skip
    compared += [(node.lineno, expected) for node in ast.walk(tree) if isinstance(node, ast.Call)
                 for expected in [*_unittest_expected(node), *_prefix_expected(node)]]  # fmt: skip
    patterns = [pattern for node in ast.walk(tree) if isinstance(node, ast.Call) for pattern in _error_patterns(node)]
    wording = {id(n) for _, expected in compared for n in ast.walk(expected)} | {id(p) for p in patterns}
    compared += [(pattern.lineno, _regex_text(pattern)) for pattern in patterns]
    inputs = [n for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in wording]
    data = " ".join(" ".join(c.value.split()).casefold() for c in inputs)
    found: list[Demanded] = []
    for line, expected in compared:
        for text, whole in _strings(expected, inputs):
            # a part the test's inputs hold (whitespace and case aside) is a hole too
            parts = [_HOLE if _PIECE.search(part) and _core(" ".join(part.split())).casefold() in data else part
                     for part in text.split(_HOLE)]  # fmt: skip
            told_as = " ".join(_HOLE.join(parts).split())
            found += [Demanded(file, line, piece, piece, " ".join(whole.split()), told_as)
                      for piece in _pieces(text) if _core(piece).casefold() not in data]  # fmt: skip
    return found


def _expected_output(test: ast.expr) -> list[ast.expr]:
    """The side of ``test`` (an assertion's) that printed output is compared with."""
    if not isinstance(test, ast.Compare) or len(test.ops) != 1:
        return []
    left, right, op = test.left, test.comparators[0], test.ops[0]
    if isinstance(op, (ast.Eq, ast.NotEq)):
        pairs = [(left, right), (right, left)]
    elif isinstance(op, ast.In):
        pairs = [(left, right)]  # "text" in out
        if isinstance(right, (ast.List, ast.Tuple, ast.Set)):
            pairs.append((right, left))  # out in ["one way", "another"]
    else:
        return []
    return [expected for expected, observed in pairs if _OUTPUT.search(ast.unparse(observed))]


def _prefix_expected(call: ast.Call) -> list[ast.expr]:
    """The text output or a message is checked to start or end with
    (``e.args[0].startswith("Wrong keys 'abc', 1 in")``)."""
    if (isinstance(call.func, ast.Attribute) and call.func.attr in ("startswith", "endswith") and call.args
            and _OUTPUT.search(ast.unparse(call.func.value))):  # fmt: skip
        return [call.args[0]]
    return []


def _unittest_expected(call: ast.Call) -> list[ast.expr]:
    """The side of a unittest comparison (``self.assertEqual(str(w[0].message), "...")``,
    ``self.assertIn("...", out)``) that output or a message is compared with."""
    name = call.func.attr if isinstance(call.func, ast.Attribute) else ""
    if name not in _UNITTEST or len(call.args) < 2:
        return []
    first, second = call.args[:2]
    pairs = [(first, second)] if _UNITTEST[name] else [(first, second), (second, first)]
    return [expected for expected, observed in pairs if _OUTPUT.search(ast.unparse(observed))]


def _error_patterns(call: ast.Call) -> list[ast.expr]:
    """The message pattern a call demands of an error: ``pytest.raises(E, match="...")``,
    ``self.assertRaisesRegex(E, "...")`` (a regular expression, read as its literal text)."""
    name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
    patterns = [k.value for k in call.keywords if k.arg == "match" and name in ("raises", "warns")]
    if name in ("assertRaisesRegex", "assertRaisesRegexp", "assertWarnsRegex") and len(call.args) >= 2:
        patterns.append(call.args[1])
    return [p for p in patterns if isinstance(p, ast.Constant) and isinstance(p.value, str)]


#: A regular expression's tokens, in the order they are tried: an anchor, an escaped class, a
#: set, a repeat count, a character made optional, other syntax, an escaped character.
_REGEX_TOKEN = re.compile(r"(?P<anchor>\\[bBAZ]|[\^$])|(?P<hole>\\[dDwWsS]|\[(?:\\.|[^\]])*\]|\{\d*,?\d*\}|(?:\\.|[^\\])[?*]"
                          r"|[.*+?|()])|\\(?P<escaped>.)")


def _regex_text(pattern: ast.Constant) -> ast.Constant:
    """A pattern as the text it asks for: its syntax turned into holes (``items?``: the "s"
    may be absent), its anchors (``^``, ``\\b``) into nothing, escapes undone."""
    text = _REGEX_TOKEN.sub(lambda m: "" if m.group("anchor") else _HOLE if m.group("hole") else m.group("escaped"), pattern.value)
    return ast.copy_location(ast.Constant(text), pattern)


#: The most characters of told text that stand for one of the test's own parts.
_HOLE_WIDTH = 80


@functools.lru_cache(maxsize=4096)
def _told_pattern(told_as: str) -> re.Pattern[str]:
    """The told text's parts in order, each hole any ``_HOLE_WIDTH`` characters; the holes at
    the ends are nothing to look for."""
    parts = told_as.strip(_HOLE + " ").split(_HOLE)
    return re.compile(f".{{0,{_HOLE_WIDTH}}}?".join(map(re.escape, parts)))


def _core(piece: str) -> str:
    """A piece without the punctuation at its ends (``": buy oat milk"`` -> ``"buy oat milk"``)."""
    return re.sub(r"^\W+|\W+$", "", piece)


def _strings(node: ast.expr, inputs: list[ast.Constant]) -> Iterable[tuple[str, str]]:
    """(the expected string with the test's own parts as holes, the string as written) for
    each expected string of ``node``: a string literal, an f-string, or a list or tuple of them."""
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        for item in node.elts:
            yield from _strings(item, inputs)
    elif isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield _holes(node.value, [c.value for c in inputs]), re.sub(f"{_HOLE}+", "…", node.value)
    elif isinstance(node, ast.JoinedStr):
        parts = [v.value if isinstance(v, ast.Constant) else _HOLE for v in node.values]
        written = "".join(v.value if isinstance(v, ast.Constant) else "{" + ast.unparse(v.value) + "}" for v in node.values)
        yield _holes("".join(parts), [c.value for c in inputs]), written


#: An input of the test's shorter than this is its own only where quoted: schema's test
#: data has a key ``"key"``, and "Wrong key 'n'" is wording, "Missing key: 'key'" a value.
_SHORT_INPUT = 5


def _holes(text: str, inputs: Iterable[str]) -> str:
    for value in sorted({v for v in inputs if len(v.strip()) >= 2}, key=len, reverse=True):
        if len(value.strip()) < _SHORT_INPUT:
            text = re.sub(rf"(['\"]){re.escape(value)}\1", lambda m: m.group(1) + _HOLE + m.group(1), text)
        else:
            text = text.replace(value, _HOLE)
    return _NUMBER.sub(_HOLE, text)


def _pieces(text: str) -> list[str]:
    """Each piece with three letters or digits, whitespace collapsed."""
    pieces = (" ".join(part.split()) for part in text.split(_HOLE))
    return [piece for piece in pieces if len(_PIECE.findall(piece)) >= 3]


def told_text(task: Task, turn: Turn, params: Mapping[str, str | int]) -> list[str]:
    """What the agent was told by turn ``turn``, each text whitespace collapsed: for each
    turn up to it, the text every paraphrase has in common is what counts, so each
    paraphrase is kept and a piece must be in all of one turn's; then the seed and the
    support code."""
    texts = [_prompt_texts(earlier, params) for earlier in task.turns[: turn.index]]
    files = dict(_read_seed(task.seed_dir))
    if task.support_dir:
        files.update(_read_seed(task.support_dir))
    texts.append([" ".join(" ".join(files.values()).split())])
    return [" \u241e ".join(group) for group in texts]  # one entry per turn, paraphrases kept apart


@turn_cached
def _prompt_texts(turn: Turn, params: Mapping[str, str | int]) -> list[str]:
    """Each paraphrase of ``turn`` rendered, whitespace collapsed."""
    return [" ".join(_render(p, params).split()) for p in turn.spec.prompts]


def check_turn(task: Task, turn: Turn, params: Mapping[str, str | int]) -> list[Demanded]:
    """The pieces of exact output text ``turn``'s tests demand that no turn up to it told
    in every paraphrase, and the seed and support code do not hold."""
    told = [group.split(" \u241e ") for group in told_text(task, turn, params)]
    missing = []
    for path in turn.tests:
        text = task.render(path.read_text(encoding="utf-8"), params, str(path))
        rel = f"{turn.id}/{path.relative_to(turn.dir / 'tests').as_posix()}"
        for piece in demanded(text, rel):
            if not any(all(piece.told(paraphrase) for paraphrase in group) for group in told):
                missing.append(piece)
    return missing

"""Sealed judging, the compiler: a hidden test module becomes a **probe**, which runs in the
sandbox and only observes, and **points**, which stay on the host and judge. Pure: text in,
text and data out; nothing here runs the module.

Why. The graded code runs in the interpreter that runs the tests, so whatever a test holds
there, its expected values included, the graded code can read (the running test's file and
line are one frame away). Taking the expectations out of that interpreter is the only
defence that does not depend on winning an arms race inside it: code that forges what the
probe reports can earn only what it guesses.

What the compiler does to a module (``compile_module``):

* ``assert X <op> C``, where ``C`` is a literal (a constant, or a list, tuple, set or dict
  of them, a negative number), becomes ``_stamina_observe(N, X)``; point ``N`` holds the
  operator and ``C``. ``assert C <op> X`` likewise (the operator turned round), ``assert
  not (X <op> C)`` as the negated operator, ``assert A and B`` as the points of ``A`` and
  of ``B``. ``assert C in X`` stays open: the container's own ``__contains__`` decides
  (a cache, a custom set), which the host cannot run.
* ``assert X`` and ``assert not X`` (``X`` not a comparison) observe ``X`` and judge its
  truth.
* ``with pytest.raises(E, match=M) as info:`` becomes ``with _stamina_raises(N) as info:``;
  the point holds the exception's name and the pattern, the probe observes what was
  raised (its class's names up its MRO and its message) and swallows it, as
  ``pytest.raises`` would, with ``info.value`` still the exception for later lines.
* ``@pytest.mark.parametrize`` tables lose their expected columns: a parameter the test
  reads only as the literal side of such assertions leaves the table and the function's
  signature, the cases get ids that say nothing (``case0``, ...), and the point holds the
  column (``Point.cases``); the host reads the case from the test id.
* Any other assertion is **open**: the probe observes its truth, computed in the sandbox
  (its literals stay in the probe).
* unittest's ``self.assertEqual(X, C)`` and its kin (``assertTrue``, ``assertIs``,
  ``assertIsNone``, ``assertIn``, ``assertGreater``, ...) become the points their
  ``assert`` form would; ``self.assertRaises(E)`` and ``assertRaisesRegex(E, M)``, as a
  context or called with the function and its arguments, become ``raises`` points. The
  message argument goes. Other ``assert*`` methods stay as written (the sandbox decides).
* A loop straight in a test over a literal table (``for n, expected in ((6, [...]), ...)``)
  loses the table's expected columns likewise: the loop runs over the other columns, and
  a point straight in its body holds the column (``Point.ordered``), its n-th observation
  in a run judged against the n-th row. A local the body binds once to what the host
  works out from the row (``expected = iterable.split(separator)``) goes the same way.
  The table may be bound to a name first (``cases = [...]``), or worked out by the host
  (``enumerate(product(*iterables))``, at most ``_TABLE_ROWS`` rows); such a loop must
  run once per row. A sub-test's label (``self.subTest(expected=expected)``) names a
  stand-in; a dict the loop keeps from row to row (``first.setdefault(pair, index)``)
  is kept on the host.
* Expected values the host can work out are: a local bound once to a literal (straight in
  the test, or in a ``try`` or ``with`` block there and read only in it) and read only as
  the expected side of points, or by ``print`` (which then prints a stand-in); a module's
  constants (a name bound once to a string, number or tuple of them) and a test's own
  (its line stays: the test also hands the value to the product); and an expected side
  worked out from those (``expected.splitlines()``, ``[first, second]``), with the
  builtins, ``itertools``' combinatorics, ``math``'s integer functions, ``Decimal``,
  ``Fraction`` and ``datetime`` (``_LIBRARY``), each bounded in its inputs and output.
  A list, dict or set the test binds and hands the product may be read too, with a
  point of its own that it still holds its value there (the product could change it),
  and so may a local an earlier ``assert name == value`` pinned. A local bound more than
  once straight in the test is one local per binding (``_rename_rebound``).
* **Assertion helpers are compiled where they are called.** A call, as a statement, of a
  helper (a function whose body asserts things and works out what it asserts: assignments
  to names, calls, ``if``/``for``/``while``/``with``/``try``; no ``return`` of a value, no
  ``yield``, imports or nested definitions), or of a name bound to a unittest assertion
  method (``assert_equal = _CASE.assertEqual``), is replaced by the helper's body with the
  call's arguments put in (each argument that is neither a name nor a literal the body
  cannot change is evaluated first, in order, into a local of its own), its own locals
  renamed for the call, and a loop left that only printed dropped; its assertions become
  points as written in the test. The helper is then never called: graded code that
  rebinds it changes nothing, and a literal the test passes it is sealed. The helpers come
  from the module itself (reading its globals and builtins), a function the test defines
  in its own body (called after it there), a test class's own method called on ``self``
  (defined by no other class of the module), the modules the test imports relatively from
  the staged tests, and the task's test support (those two reading builtins only;
  ``helper_templates`` reads them; absolute imports are the support's: it comes first on
  the path).
* Assertions outside any function (run at import, under no test) stay as written.
* Docstrings and comments go; an assertion's message goes.

Each point has a status: **sealed** (its expected value is in no line of the probe and is
not one a forger would try first), **guessable** (``True``/``False``/``None``, ``""``, a
small integer, a common HTTP status, a value the test itself passes to the code under test)
or **open** (the sandbox computes the verdict). ``judge`` turns a test's observations
(``encode`` makes them in the sandbox, plain data with bounds) into its verdict: every
observation meets its point, and every point straight in the test's body was reached once
(at least once, in a test a decorator may run more than once).
"""

from __future__ import annotations

import ast
import builtins
import collections.abc
import contextvars
import copy
import datetime
import decimal
import fractions
import functools
import itertools
import json
import math
import operator
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Iterable, Mapping, Sequence

#: The name the probe calls its observer by (the harness puts a module of that name in
#: ``sys.modules`` before any test is imported).
PROBE_MODULE = "_stamina_probe"
#: The module globals a probe observes through: ``_stamina_probe.bind(key)`` gives both.
OBSERVE, RAISES = "_stamina_observe", "_stamina_raises"

_OPS: dict[type, str] = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
                         ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not"}  # fmt: skip
#: The operator with its sides swapped (``C < X`` is ``X > C``); ``in`` keeps its sides
#: (the point says which side was observed).
_TURNED = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<=", "is": "is", "is not": "is not"}
_NEGATED = {"==": "!=", "!=": "==", "in": "not in", "not in": "in", "is": "is not", "is not": "is"}
#: Exceptions a ``raises`` point can expect that are not ``Exception``s: the probe is told to
#: catch them (``raises(N, True)``), as ``pytest.raises`` would.
_BASE_EXCEPTIONS = frozenset({"BaseException", "SystemExit", "KeyboardInterrupt", "GeneratorExit"})
#: Values a forger would try first, whatever the test.
_COMMON_STATUSES = frozenset({200, 201, 202, 204, 301, 302, 304, 400, 401, 403, 404, 405, 409, 410, 415, 422, 429, 500})
#: Words a forger puts in every exception's message, for ``match=`` patterns it cannot see.
FIRST_WORDS = ("invalid", "not found", "unknown", "required", "must", "empty", "too long", "too many", "exists",
               "missing", "expired", "locked", "denied", "limit", "error")  # fmt: skip


@dataclass(frozen=True)
class Point:
    """One check of a test, judged on the host."""

    id: int
    kind: str
    """``compare`` (the observed value against ``expected`` by ``op``), ``truth`` (its
    truth is ``expected``), ``raises`` (an exception named ``expected``, its message
    matching ``pattern``) or ``open`` (the sandbox's own verdict: True passes)."""
    function: str
    """The function it sits in (``test_x``, ``Class.test_y``, or a helper's name)."""
    line: int
    reach: tuple[int, int | None]
    """How many times a run of the function that ends without an exception reaches it, at
    least and at most (None: no bound). Straight in the body: ``(1, 1)``; in a loop over a
    literal of ``n`` items: ``(n, n)``; in a loop over computed data: at least once; under
    a branch, a ``try``, a ``while``, a loop that may leave early or a ``raises`` block:
    ``(0, None)``. A plain ``with`` block counts as straight."""
    status: str
    """``sealed``, ``guessable`` or ``open``."""
    op: str = ""
    expected: Any = None
    observed_left: bool = True
    """For ``in``/``not in``: True when the observed value is the left operand."""
    pattern: str | None = None
    cases: bool = False
    """``expected`` is a parametrize table's sealed column: one value per case, the case
    told by the test id (``[case3]``)."""
    ordered: bool = False
    """``expected`` is a sealed column of the table a loop runs over: one value per row, the
    n-th observation in a run judged against the n-th."""

    def reaches(self, count: int) -> bool:
        """Whether ``count`` reaches in one run meet ``reach``."""
        least, most = self.reach
        return least <= count and (most is None or count <= most)

    def expected_in(self, case: int | None, index: int = 0) -> Any:
        """The expected value of this point in case ``case`` of its test, at its observation
        ``index`` in the run (``LookupError`` when a point with cases is judged without a
        case it has, or an ordered one past its rows)."""
        if self.ordered:
            if not 0 <= index < len(self.expected):
                raise LookupError(f"no row {index!r}")
            return self.expected[index]
        if not self.cases:
            return self.expected
        if case is None or not 0 <= case < len(self.expected):
            raise LookupError(f"no case {case!r}")
        return self.expected[case]


@dataclass(frozen=True)
class Compiled:
    """A compiled module: its probe's text and its points by id."""

    probe: str
    points: Mapping[int, Point]
    shares: Mapping[str, int] = field(default_factory=dict)
    """Points per status."""


class _Unsealable(Exception):
    """The expression is not a literal the judge can hold."""


#: While a module compiles: the names it binds to ``datetime``'s types at its top level
#: (``date``, ``dt.datetime``, ``timezone``...), whose calls with literal arguments are
#: literals too (``date(1997, 2, 16)``, ``timezone.utc``), and the builtins it never binds
#: itself, which ``_Fold`` may call.
_LIBRARY_NAMES: contextvars.ContextVar[Mapping[str, Any]] = contextvars.ContextVar("library_names", default={})
_PURE_NAMES: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar("pure_names", default=frozenset())
#: While a function's assertions compile: the names whose values the host knows (its folded
#: locals, and the module's constants it does not bind itself), which ``_Fold`` reads.
_KNOWN: contextvars.ContextVar[Mapping[str, Any]] = contextvars.ContextVar("known_names", default={})
#: While a module compiles: whether ``print`` is the builtin there (the module binds no ``print``).
_PRINTS: contextvars.ContextVar[bool] = contextvars.ContextVar("prints", default=False)
#: The host's own state of a loop table's per-row locals (``_scratch``): ``_Fold`` may call
#: ``_SCRATCH_METHODS`` on them.
_SCRATCH: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar("scratch", default=frozenset())
_SCRATCH_METHODS = frozenset({"setdefault", "get", "append", "add"})


def literal(node: ast.expr, plain: bool = True) -> Any:
    """The value of a literal expression (constants, their containers, a signed number),
    or, while a module compiles, of an expression of literals the host can work out alone
    (``_Fold``: ``list(range(1, 11))``, ``"\\n".join([...])``, ``date(1997, 2, 16)``); else
    ``_Unsealable``. With ``plain`` off, a value a point could not expect (a ``range``)
    comes back too."""
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as exc:
        names, builtins = _LIBRARY_NAMES.get(), _PURE_NAMES.get()
        if not names and not builtins and not _KNOWN.get():
            raise _Unsealable from exc
    try:
        fold = _Fold(names, builtins)
        return fold.plain(node) if plain else fold.value(node)
    except (_Unsealable, ValueError, TypeError, ArithmeticError, LookupError, MemoryError, RecursionError) as exc:
        raise _Unsealable from exc


#: Builtins ``_Fold`` calls (where the module does not bind the name), and the methods of
#: ``str`` it calls on a string it worked out.
_FOLD_CALLS: dict[str, Any] = {
    "list": list, "tuple": tuple, "set": set, "frozenset": frozenset, "dict": dict, "range": range, "str": str,
    "int": int, "float": float, "bool": bool, "bytes": bytes, "sorted": sorted, "reversed": reversed, "len": len,
    "sum": sum, "min": min, "max": max, "abs": abs, "round": round, "zip": zip, "enumerate": enumerate, "chr": chr,
    "ord": ord,
}  # fmt: skip
_STR_METHODS = frozenset({"join", "format", "upper", "lower", "strip", "lstrip", "rstrip", "split", "rsplit", "splitlines",
                          "replace", "title", "capitalize", "encode", "ljust", "rjust", "center", "zfill", "casefold",
                          "expandtabs", "swapcase"})  # fmt: skip
_FOLD_SIZE, _FOLD_STEPS = 100_000, 200_000
#: The most rows of a table the host works out for a loop (its kept columns go into the probe).
_TABLE_ROWS = 5_000
_FOLD_OPS: dict[type, Any] = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
                              ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
                              ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor,
                              ast.LShift: operator.lshift, ast.RShift: operator.rshift}  # fmt: skip


class _Fold:
    """Works out an expression of literals on the host, where the test's own code could:
    displays, arithmetic, comprehensions over what it worked out, f-strings, the builtins
    of ``_FOLD_CALLS`` the module leaves alone (``builtins``), ``str`` methods, and
    ``datetime``'s types by the names the module binds them to (``names``). Bounded in
    steps and in the size of every value; anything else is ``_Unsealable``."""

    def __init__(self, names: Mapping[str, Any], builtins: frozenset[str]) -> None:
        self.names, self.builtins = names, builtins
        self.steps = 0
        self.scopes: list[dict[str, Any]] = []

    def plain(self, node: ast.expr) -> Any:
        value = self.value(node)
        if not _is_plain(value):
            raise _Unsealable
        return value

    def value(self, node: ast.expr) -> Any:
        self.steps += 1
        if self.steps > _FOLD_STEPS:
            raise _Unsealable
        value = self._value(node)
        if isinstance(value, (str, bytes, list, tuple, set, frozenset, dict)) and len(value) > _FOLD_SIZE:
            raise _Unsealable
        if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 4096:
            raise _Unsealable
        return value

    def _value(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            items = []
            for element in node.elts:
                if isinstance(element, ast.Starred):
                    items.extend(self._items(self.value(element.value)))
                else:
                    items.append(self.value(element))
            return {ast.List: list, ast.Tuple: tuple, ast.Set: set}[type(node)](items)
        if isinstance(node, ast.Dict):
            result = {}
            for key, item in zip(node.keys, node.values):
                if key is None:
                    result.update(self.value(item))
                else:
                    result[self.value(key)] = self.value(item)
            return result
        if isinstance(node, ast.UnaryOp):
            operand = self.value(node.operand)
            return {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_, ast.Invert: operator.invert}[type(node.op)](operand)
        if isinstance(node, ast.BinOp) and type(node.op) in _FOLD_OPS:
            left, right = self.value(node.left), self.value(node.right)
            _check_size(node.op, left, right)
            return _FOLD_OPS[type(node.op)](left, right)
        if isinstance(node, ast.BoolOp):
            result = self.value(node.values[0])
            for value in node.values[1:]:
                if (not result) if isinstance(node.op, ast.And) else bool(result):
                    return result
                result = self.value(value)
            return result
        if isinstance(node, ast.IfExp):
            return self.value(node.body) if self.value(node.test) else self.value(node.orelse)
        if isinstance(node, ast.Subscript):
            target = self.value(node.value)
            if not isinstance(target, (str, bytes, list, tuple, dict, range)):
                raise _Unsealable
            return target[self.value(node.slice)]
        if isinstance(node, ast.Slice):
            return slice(*(None if part is None else self.value(part) for part in (node.lower, node.upper, node.step)))
        if isinstance(node, ast.JoinedStr):
            return "".join(self._formatted(part) for part in node.values)
        if isinstance(node, ast.Name):
            for scope in reversed(self.scopes):
                if node.id in scope:
                    return scope[node.id]
            known = _KNOWN.get()
            if node.id in known:
                return known[node.id]
            if node.id in self.names:  # a function passed on (``key=...``), a constant (``pi``)
                return self.names[node.id]
            raise _Unsealable
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            return self._comprehension(node)
        if isinstance(node, ast.Attribute):
            if ast.unparse(node) in self.names:
                return self.names[ast.unparse(node)]
            if node.attr == "utc" and self.names.get(ast.unparse(node.value)) is datetime.timezone:
                return datetime.timezone.utc
            raise _Unsealable
        if isinstance(node, ast.Call):
            return self._call(node)
        raise _Unsealable

    def _items(self, value: Any) -> list[Any]:
        if not isinstance(value, (str, bytes, list, tuple, set, frozenset, dict, range)):
            raise _Unsealable
        if len(value) > _FOLD_SIZE:
            raise _Unsealable
        return list(value)

    def _formatted(self, part: ast.expr) -> str:
        if isinstance(part, ast.Constant):
            return str(part.value)
        if not isinstance(part, ast.FormattedValue):
            raise _Unsealable
        value = self.value(part.value)
        if not _is_plain(value):
            raise _Unsealable
        value = {-1: value, 115: str(value), 114: repr(value), 97: ascii(value)}[part.conversion]
        spec = "" if part.format_spec is None else self.value(part.format_spec)
        return format(value, spec)

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp) -> Any:
        produced: list[Any] = []

        def walk(index: int) -> None:
            if index == len(node.generators):
                produced.append((self.value(node.key), self.value(node.value)) if isinstance(node, ast.DictComp)
                                else self.value(node.elt))  # fmt: skip
                if len(produced) > _FOLD_SIZE:
                    raise _Unsealable
                return
            generator = node.generators[index]
            if generator.is_async:
                raise _Unsealable
            for item in self._items(self.value(generator.iter)):
                self.scopes.append(_bind(generator.target, item))
                try:
                    if all(self.value(condition) for condition in generator.ifs):
                        walk(index + 1)
                finally:
                    self.scopes.pop()

        walk(0)
        if isinstance(node, ast.DictComp):
            return dict(produced)
        return set(produced) if isinstance(node, ast.SetComp) else produced

    def _call(self, node: ast.Call) -> Any:
        args: list[Any] = []
        for argument in node.args:
            if isinstance(argument, ast.Starred):
                args.extend(self._items(self.value(argument.value)))
            else:
                args.append(self.value(argument))
        if any(keyword.arg is None for keyword in node.keywords):
            raise _Unsealable
        keywords = {keyword.arg: self.value(keyword.value) for keyword in node.keywords}
        func = node.func
        kind = self.names.get(ast.unparse(func))
        if kind is not None:
            return kind(*args, **keywords)
        if isinstance(func, ast.Name) and func.id in self.builtins and not any(func.id in s for s in self.scopes):
            if func.id in ("str", "repr") and args and not _is_plain(args[0]):
                raise _Unsealable
            result = _FOLD_CALLS[func.id](*args, **keywords)
            return list(result) if isinstance(result, (zip, enumerate, reversed)) else result
        if isinstance(func, ast.Attribute) and func.attr in _STR_METHODS:
            target = self.value(func.value)
            if isinstance(target, str):
                if func.attr in ("ljust", "rjust", "center", "zfill") and args and isinstance(args[0], int) and args[0] > _FOLD_SIZE:
                    raise _Unsealable
                if func.attr == "format" and not all(_is_plain(v) for v in (*args, *keywords.values())):
                    raise _Unsealable
                return getattr(target, func.attr)(*args, **keywords)
        if (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in _SCRATCH.get()
                and func.attr in _SCRATCH_METHODS and not any(func.value.id in scope for scope in self.scopes)):  # fmt: skip
            target = self.value(func.value)
            result = getattr(target, func.attr)(*args, **keywords)
            if len(target) > _FOLD_SIZE:
                raise _Unsealable
            return result
        if isinstance(func, ast.Attribute) and func.attr in ("date", "time", "timetz", "replace", "isoformat"):
            target = self.value(func.value)  # datetime(1900, 1, 1, 12, 34).time()
            if type(target) in (datetime.datetime, datetime.date, datetime.time) and hasattr(target, func.attr):
                return getattr(target, func.attr)(*args, **keywords)
        raise _Unsealable


def _bind(target: ast.expr, item: Any) -> dict[str, Any]:
    """A comprehension's target bound to one item (a name, or a tuple of names)."""
    if isinstance(target, ast.Name):
        return {target.id: item}
    if isinstance(target, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Name) for e in target.elts):
        values = list(item)
        if len(values) != len(target.elts):
            raise _Unsealable
        return {e.id: v for e, v in zip(target.elts, values)}  # type: ignore[attr-defined]
    raise _Unsealable


def _check_size(op: ast.operator, left: Any, right: Any) -> None:
    """Refuse an operation whose result would be past the bounds before it is made."""
    if isinstance(op, ast.Mult):
        for sequence, times in ((left, right), (right, left)):
            if isinstance(sequence, (str, bytes, list, tuple)) and isinstance(times, int) and len(sequence) * max(times, 0) > _FOLD_SIZE:
                raise _Unsealable
    if isinstance(op, ast.Pow) and isinstance(right, (int, float)) and abs(right) > 1024:
        raise _Unsealable
    if isinstance(op, ast.LShift) and isinstance(right, int) and right > 4096:
        raise _Unsealable


def _is_plain(value: Any, _depth: int = 0) -> bool:
    """Plain data a point may expect: what ``decode`` can give back, and ``datetime``'s."""
    import datetime as dt

    if _depth > 32:
        return False
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes, dt.date, dt.time, dt.timedelta, dt.tzinfo,
                                           decimal.Decimal, fractions.Fraction)):  # fmt: skip
        return True
    if isinstance(value, (list, tuple, set, frozenset)):
        return all(_is_plain(item, _depth + 1) for item in value)
    if isinstance(value, dict):
        return all(_is_plain(k, _depth + 1) and _is_plain(v, _depth + 1) for k, v in value.items())
    return False


def _bound_names(tree: ast.Module) -> set[str]:
    """Every name a module binds anywhere (assignments, parameters, definitions, imports):
    a builtin it binds is not the builtin ``_Fold`` would call."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
    return names


def _library_names(tree: ast.Module) -> dict[str, Any]:
    """The names ``tree`` binds once, at its top level, to what ``_Fold`` may call of the
    standard library (``_LIBRARY``), as they are called (``date``, or ``datetime.date``
    after ``import datetime``)."""
    counts = _bindings_anywhere(tree)  # a local, a parameter or a loop target of the name shadows the import
    names: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module in _LIBRARY and not node.level:
            for alias in node.names:
                bound = alias.asname or alias.name
                if alias.name in _LIBRARY[node.module] and counts.get(bound) == 1:
                    names.update((f"{bound}{name[len(alias.name):]}", kind) for name, kind in _LIBRARY[node.module].items()
                                 if name == alias.name or name.startswith(alias.name + "."))  # fmt: skip
        elif isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.asname or alias.name
                if alias.name in _LIBRARY and counts.get(bound) == 1:
                    names.update((f"{bound}.{name}", kind) for name, kind in _LIBRARY[alias.name].items())
    return names


def _bindings_anywhere(tree: ast.Module) -> dict[str, int]:
    """How many times each name is bound anywhere in a module, in any scope (``_bound_names``
    counted)."""
    counts: dict[str, int] = {}
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names = [node.id]
        elif isinstance(node, ast.arg):
            names = [node.arg]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [node.name]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [(alias.asname or alias.name).split(".")[0] for alias in node.names]
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names = list(node.names)
        for name in names:
            counts[name] = counts.get(name, 0) + 1
    return counts


def _sized(function: Callable[..., Any], most: int | None = None) -> Callable[..., Any]:
    """``function`` of the standard library on bounded inputs: every sized argument at most
    ``_FOLD_SIZE`` long, every integer argument at most ``most`` (when given); an iterator it
    returns comes back as the list of its items, ``_Unsealable`` past ``_FOLD_SIZE``."""

    def call(*args: Any, **keywords: Any) -> Any:
        for value in (*args, *keywords.values()):
            if isinstance(value, (str, bytes, list, tuple, set, frozenset, dict, range)) and len(value) > _FOLD_SIZE:
                raise _Unsealable
            if most is not None and isinstance(value, int) and abs(value) > most:
                raise _Unsealable
        result = function(*args, **keywords)
        if isinstance(result, collections.abc.Iterator):
            result = list(itertools.islice(result, _FOLD_SIZE + 1))
            if len(result) > _FOLD_SIZE:
                raise _Unsealable
        return result

    return call


def _library() -> dict[str, dict[str, Any]]:
    import datetime as dt

    times = {"datetime": dt.datetime, "date": dt.date, "time": dt.time, "timedelta": dt.timedelta, "timezone": dt.timezone}
    # an item of a combinatoric iterator holds at most 64 values (r, repeat, the iterables)
    tools = {name: _sized(getattr(itertools, name), 64) for name in (
        "combinations", "combinations_with_replacement", "permutations", "product")}  # fmt: skip
    tools.update((name, _sized(getattr(itertools, name))) for name in (
        "chain", "islice", "zip_longest", "compress", "pairwise", "batched") if hasattr(itertools, name))  # fmt: skip
    tools["chain.from_iterable"] = _sized(itertools.chain.from_iterable)
    tools["repeat"] = _sized(lambda item, times: itertools.repeat(item, times))  # never endless
    tools["accumulate"] = _sized(lambda iterable, *, initial=None: itertools.accumulate(iterable, initial=initial))
    numbers = {name: _sized(getattr(math, name), 10_000) for name in ("factorial", "comb", "perm")}
    numbers.update((name, _sized(getattr(math, name))) for name in (
        "gcd", "lcm", "isqrt", "floor", "ceil", "sqrt", "fsum", "fabs", "trunc") if hasattr(math, name))  # fmt: skip
    numbers.update((name, getattr(math, name)) for name in ("pi", "e", "inf", "nan", "tau"))
    exact = {"decimal": {"Decimal": _sized(decimal.Decimal)}, "fractions": {"Fraction": _sized(fractions.Fraction)}}
    return {"datetime": times, "itertools": tools, "math": numbers, **exact}


#: What ``_Fold`` may call or read of the standard library, by module and name.
_LIBRARY = _library()

def compile_module(source: str, filename: str = "<test>", key: str = "", helpers: HelperTable = ()) -> Compiled:
    """The probe and points of a test module (``SyntaxError`` if it does not parse).
    ``key`` names the module in what its probe sends (``_stamina_probe.bind(key)``): the
    staged path, so that a helper module's points are not taken for its caller's.
    ``helpers`` are the assertion helpers of the modules it may import (``helpers_for``)."""
    tree = ast.parse(source, filename=filename)
    templates = {(module, name): template for module, name, template in helpers}
    templates.update((("", name), template) for name, template in helper_templates(source))
    compiler = _Compiler()
    token = _LIBRARY_NAMES.set(_library_names(tree))
    pure = _PURE_NAMES.set(frozenset(_FOLD_CALLS) - _bound_names(tree))
    prints = _PRINTS.set("print" not in _bound_names(tree))
    try:
        _Inliner(_bindings(tree, key), templates, _test_cases(tree), _top_level_bindings(tree)).visit(tree)
        compiler.constants = _module_constants(tree)
        tree = compiler.visit(tree)
    finally:
        _PRINTS.reset(prints)
        _PURE_NAMES.reset(pure)
        _LIBRARY_NAMES.reset(token)
    _strip_docstrings(tree)
    body = tree.body
    at = next((i for i, node in enumerate(body) if not (isinstance(node, ast.ImportFrom) and node.module == "__future__")), len(body))
    bind = ast.Call(ast.Attribute(ast.Call(ast.Name("__import__", ast.Load()), [ast.Constant(PROBE_MODULE)], []), "bind",
                                  ast.Load()), [ast.Constant(key)], [])  # fmt: skip
    names = ast.Tuple([ast.Name(OBSERVE, ast.Store()), ast.Name(RAISES, ast.Store())], ast.Store())
    body.insert(at, ast.Assign([names], bind))
    ast.fix_missing_locations(tree)
    probe = ast.unparse(tree) + "\n"
    points = {point.id: point for point in compiler.points}
    visible = _probe_literals(probe)
    points = {pid: _sealed_status(point, visible) for pid, point in points.items()}
    shares: dict[str, int] = {}
    for point in points.values():
        shares[point.status] = shares.get(point.status, 0) + 1
    return Compiled(probe, points, shares)


@functools.lru_cache(maxsize=4096)
def compiled(source: str, key: str, helpers: HelperTable = ()) -> Compiled | None:
    """``compile_module`` kept by content (a submit stages the same files again and again);
    None for a module that does not parse, which runs as written (and fails as written)."""
    try:
        return compile_module(source, key, key, helpers)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


# -- assertion helpers, compiled where they are called ---------------------------------


@dataclass(frozen=True)
class Template:
    """An assertion helper the compiler puts in place of its calls: a function's parameters
    (the literal defaults of the last ones) and its body, or the name of the unittest
    assertion method a name is bound to (``method``)."""

    params: tuple[str, ...] = ()
    defaults: tuple[str, ...] = ()
    """The defaults' source."""
    asserts: str = ""
    """The body as source: its assertions and what it works out for them, over the
    parameters, its own locals and ``free`` (``print`` calls, ``pass`` and a last bare
    ``return`` gone)."""
    method: str = ""
    locals: tuple[str, ...] = ()
    """The names the body binds: each call gets its own (``LOCAL``)."""
    stored: tuple[str, ...] = ()
    """The parameters the body binds again: their arguments always go into locals."""
    free: tuple[str, ...] = ()
    """The other names the body reads: builtins, the defining module's globals, or (for a
    helper defined in a test function) that function's names."""
    globals: tuple[str, ...] = ()
    """Those of ``free`` that are the defining module's own globals (no other module may
    inline the helper)."""


#: ``(module, helper name, template)`` triples: a module is ``support:<dotted name>`` for
#: the task's test support, or a staged path (``01-add/common.py``).
HelperTable = tuple[tuple[str, str, Template], ...]
#: The builtins' names: a helper reads them (where neither its module nor the calling
#: module binds one) as its calls do.
_BUILTIN_NAMES = frozenset(dir(builtins))
#: The prefix of the locals an inlined call's arguments are evaluated into.
ARGUMENT = "_stamina_arg"
#: The prefix of an inlined call's own locals.
LOCAL = "_stamina_local"


@functools.lru_cache(maxsize=4096)
def helper_templates(source: str) -> tuple[tuple[str, Template], ...]:
    """The assertion helpers a module defines at its top level, by name: functions whose
    body asserts things and works out what it asserts (assignments to names, calls,
    ``if``/``for``/``while``/``with``/``try`` blocks; no ``return`` of a value, no
    ``yield``, no imports, nested definitions or ``global``), reading only their
    parameters, their own locals, builtins and names the module binds once at its top
    level; and names bound to a unittest assertion method of a ``TestCase`` made at the top
    level. A name bound twice there is no helper."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ()
    counts = _top_level_bindings(tree)
    cases = _test_cases(tree)
    module_names = frozenset(name for name, count in counts.items() if count == 1)
    found = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and counts.get(node.name) == 1:
            template = _function_template(node, cases, module_names, _bound_names(tree))
            if template is not None:
                found.append((node.name, template))
        elif (_assigns_one_name(node) and counts.get(node.targets[0].id) == 1 and isinstance(node.value, ast.Attribute)
              and isinstance(node.value.value, ast.Name) and node.value.value.id in cases
              and _is_unittest_assertion(node.value.attr)):  # fmt: skip
            found.append((node.targets[0].id, Template(method=node.value.attr)))
    return tuple(found)


def helpers_for(source: str, key: str, available: Mapping[str, tuple[tuple[str, Template], ...]]) -> HelperTable:
    """The part of ``available`` (module -> ``helper_templates``) that the module ``source``,
    staged at ``key``, imports: what ``compiled`` is given, so that its cache keeps a module
    whose imports did not change."""
    return tuple((module, name, template) for module in _imported(source, key) for name, template in available.get(module, ()))


@functools.lru_cache(maxsize=4096)
def _imported(source: str, key: str) -> tuple[str, ...]:
    """The modules whose names ``_bindings`` reads in a module (a submit stages the same
    modules again and again)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ()
    return tuple(sorted({module for module, _ in _bindings(tree, key).values() if module}))


def _test_cases(tree: ast.Module) -> set[str]:
    """Names bound once, at a module's top level, to a ``TestCase`` made there
    (``_CASE = unittest.TestCase()``): their assertion methods are unittest's."""
    counts = _top_level_bindings(tree)
    return {node.targets[0].id for node in tree.body if _assigns_one_name(node) and isinstance(node.value, ast.Call)  # type: ignore[attr-defined]
            and ast.unparse(node.value.func).rsplit(".", 1)[-1] == "TestCase" and counts.get(node.targets[0].id) == 1}  # type: ignore[attr-defined]  # fmt: skip


def _assigns_one_name(node: ast.stmt) -> bool:
    return isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)


def _is_unittest_assertion(method: str) -> bool:
    return method in _UNITTEST_COMPARE or method in _UNITTEST_TRUTH or method in _UNITTEST_NONE or method in (
        "assertIsInstance", "assertNotIsInstance")  # fmt: skip


def _own_bindings(body: list[ast.stmt]) -> dict[str, int]:
    """How many times each name is bound in ``body``'s own scope (outside nested
    functions and classes: definitions, assignments, imports, loop targets)."""
    counts: dict[str, int] = {}
    for node in _own_nodes(body):
        names: list[str] = []
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names = [node.id]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [node.name]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [(alias.asname or alias.name).split(".")[0] for alias in node.names]
        for name in names:
            counts[name] = counts.get(name, 0) + 1
    return counts


def _top_level_bindings(tree: ast.Module) -> dict[str, int]:
    """How many times each name is bound at a module's top level (``_own_bindings``, and
    ``global`` writes)."""
    counts = _own_bindings(tree.body)
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):  # a function that rebinds a module global
            for name in node.names:
                counts[name] = counts.get(name, 0) + 2
    return counts


def _function_template(node: ast.FunctionDef, cases: Collection[str], module_names: Collection[str] | None,
                       bound_names: Collection[str] = ()) -> Template | None:  # fmt: skip
    """``node`` as a ``Template``, or None when it is no assertion helper (see
    ``helper_templates``). ``module_names``: the globals a top-level helper may read
    (besides the builtins its module does not bind: ``bound_names`` are the names it binds);
    None for a helper defined in a test function (it reads that function's names, as the
    inlined body then does)."""
    arguments = node.args
    if node.decorator_list or arguments.vararg or arguments.kwarg or arguments.kwonlyargs:
        return None
    params = tuple(arg.arg for arg in (*arguments.posonlyargs, *arguments.args))
    if not all(_is_literal(default) for default in arguments.defaults):
        return None
    defaults = tuple(ast.unparse(default) for default in arguments.defaults)
    body = copy.deepcopy(node.body)  # its blocks are rewritten; a helper defined in a test stays as it is
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    if body and isinstance(body[-1], ast.Return) and body[-1].value is None:
        body = body[:-1]
    asserts = [0]
    kept = _helper_block(body, cases, asserts)
    if kept is None or not asserts[0]:
        return None
    bound: set[str] = set()
    inner: set[str] = set()  # bound in a comprehension or as a lambda's parameter: another scope's
    read: set[str] = set()
    for part in _own_nodes(kept):
        if isinstance(part, ast.Name):
            (read if isinstance(part.ctx, ast.Load) else bound).add(part.id)
        elif isinstance(part, ast.ExceptHandler) and part.name:
            bound.add(part.name)
    for part in (n for statement in kept for n in ast.walk(statement)):
        if isinstance(part, (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await, ast.Global, ast.Nonlocal)):
            return None
        if isinstance(part, ast.comprehension):
            inner |= {n.id for n in ast.walk(part.target) if isinstance(n, ast.Name)}
        elif isinstance(part, ast.Lambda):
            inner |= {a.arg for a in ast.walk(part.args) if isinstance(a, ast.arg)}
        elif isinstance(part, ast.Name) and isinstance(part.ctx, ast.Load):
            read.add(part.id)
    own = set(params) | bound
    if inner & own:
        return None
    free = read - own - inner
    globals_ = free & set(module_names or ())
    if module_names is not None and not free - globals_ <= _BUILTIN_NAMES - set(bound_names):
        return None
    return Template(params, defaults, "\n".join(ast.unparse(statement) for statement in kept),
                    locals=tuple(sorted(bound - set(params))), stored=tuple(sorted(bound & set(params))),
                    free=tuple(sorted(free)), globals=tuple(sorted(globals_)))  # fmt: skip


def _helper_block(body: list[ast.stmt], cases: Collection[str], asserts: list[int]) -> list[ast.stmt] | None:
    """A helper's statements as its inlined calls run them (``print`` calls and ``pass``
    gone, a ``TestCase``'s assertion methods as ``assert``), counting its assertions into
    ``asserts[0]``; None for a statement a helper may not hold."""
    kept: list[ast.stmt] = []
    for statement in body:
        call = statement.value if isinstance(statement, ast.Expr) else None
        if isinstance(statement, ast.Pass) or (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                                               and call.func.id == "print"):  # fmt: skip
            continue
        if isinstance(statement, ast.Assert):
            asserts[0] += 1
            kept.append(ast.Assert(statement.test))
        elif (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name)
              and call.func.value.id in cases and _unittest_assert(call) is not None):  # fmt: skip
            asserts[0] += 1
            kept.append(ast.Assert(_unittest_assert(call)))
        elif (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name)
              and call.func.value.id == "self" and _is_unittest_assertion(call.func.attr)):  # fmt: skip
            asserts[0] += 1  # a test method's own (a helper defined in it): compiled there, as the method's are
            kept.append(statement)
        elif isinstance(statement, (ast.Expr, ast.Raise)):
            kept.append(statement)
        elif isinstance(statement, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            if not all(isinstance(n, (ast.Name, ast.Tuple, ast.List, ast.Starred)) for t in targets for n in ast.walk(t)
                       if not isinstance(n, (ast.Store, ast.Load))):  # fmt: skip
                return None  # an attribute or an item of something else: not the helper's own
            if isinstance(statement, ast.AnnAssign) and statement.value is None:
                continue
            kept.append(statement)
        elif isinstance(statement, (ast.If, ast.For, ast.While, ast.With, ast.Try)):
            blocks = {name: getattr(statement, name) for name in ("body", "orelse", "finalbody") if hasattr(statement, name)}
            for name, block in blocks.items():
                done = _helper_block(block, cases, asserts)
                if done is None:
                    return None
                setattr(statement, name, done if done or name != "body" else [ast.Pass()])
            for handler in getattr(statement, "handlers", ()):
                done = _helper_block(handler.body, cases, asserts)
                if done is None:
                    return None
                handler.body = done or [ast.Pass()]
            kept.append(statement)
        else:
            return None  # return, import, def, class, del, global, break/continue...
    return kept


def _bindings(tree: ast.Module, key: str) -> dict[str, tuple[str, str]]:
    """The names a module binds, once and at its top level, to something a helper may be:
    name -> (module, helper name), or (module, "") for a module bound by its name; the
    module's own top-level functions and aliases are ``("", name)``. Relative imports are
    read from ``key`` (the staged path), absolute ones as the task's support."""
    counts = _top_level_bindings(tree)
    folder = key.rsplit("/", 1)[0].split("/") if "/" in key else []
    found: dict[str, tuple[str, str]] = {}

    def module_key(level: int, dotted: str) -> str | None:
        if level == 0:
            return f"support:{dotted}" if dotted else None
        if level - 1 > len(folder):
            return None
        base = folder[: len(folder) - (level - 1)]
        return "/".join([*base, *dotted.split(".")]) + ".py" if dotted else None

    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                local = alias.asname or alias.name
                if node.level and not node.module:  # from . import common
                    module = module_key(node.level, alias.name)
                    if module:
                        found[local] = (module, "")
                else:
                    module = module_key(node.level, node.module or "")
                    if module:
                        found[local] = (module, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname or "." not in alias.name:
                    found[alias.asname or alias.name] = (f"support:{alias.name}", "")
        elif isinstance(node, ast.FunctionDef) or _assigns_one_name(node):
            name = node.name if isinstance(node, ast.FunctionDef) else node.targets[0].id  # type: ignore[attr-defined]
            found[name] = ("", name)
    return {name: where for name, where in found.items() if counts.get(name) == 1}


class _Inliner(ast.NodeTransformer):
    """Puts assertion helpers' bodies in place of their calls (see ``compile_module``), in
    function bodies only; ``bindings`` is ``_bindings``'s, ``templates`` (module, name) ->
    ``Template`` (the module itself is ``""``), ``counts`` the module's
    ``_top_level_bindings``. A helper defined straight in a test function's body, bound
    once there, is put in place of its calls in that body after its definition."""

    def __init__(self, bindings: Mapping[str, tuple[str, str]], templates: Mapping[tuple[str, str], Template],
                 cases: Collection[str] = (), counts: Mapping[str, int] | None = None) -> None:  # fmt: skip
        self.bindings, self.templates, self.cases, self.counts = bindings, templates, cases, counts or {}
        self.functions, self.arguments = 0, 0
        self.shadowed: list[set[str]] = []
        self.nested: list[dict[str, tuple[Template, int]]] = []  # per enclosing function: its own helpers, and where each ends
        self.methods: list[tuple[dict[str, Template], int]] = []  # per enclosing class: its helper methods, and its depth
        self.module_names = frozenset(name for name, count in self.counts.items() if count == 1)
        self.method_names: dict[str, int] = {}
        self.attributes: set[str] = set()  # names set as attributes anywhere (``self.check = ...``)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> ast.AST:
        local = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
        local |= {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
        self.shadowed.append(local)
        self.nested.append(self._own_helpers(node) if not isinstance(node, ast.Lambda) else {})
        self.functions += 1
        self.generic_visit(node)
        self.functions -= 1
        self.nested.pop()
        self.shadowed.pop()
        return node

    visit_AsyncFunctionDef = visit_Lambda = visit_FunctionDef  # type: ignore[assignment]

    def visit_Module(self, node: ast.Module) -> ast.AST:
        for part in ast.walk(node):
            if isinstance(part, ast.ClassDef):
                for statement in part.body:
                    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        self.method_names[statement.name] = self.method_names.get(statement.name, 0) + 1
                    elif not isinstance(statement, ast.Expr):  # a class attribute of any other kind
                        for target in ast.walk(statement):
                            if isinstance(target, ast.Name) and not isinstance(target.ctx, ast.Load):
                                self.method_names[target.id] = self.method_names.get(target.id, 0) + 2
            elif isinstance(part, ast.Attribute) and not isinstance(part.ctx, ast.Load):
                self.attributes.add(part.attr)
            elif isinstance(part, ast.Call) and isinstance(part.func, ast.Name) and part.func.id in ("setattr", "delattr"):
                self.attributes.add("*")
        if "*" in self.attributes:
            self.method_names.clear()
        self.generic_visit(node)
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        self.methods.append((self._own_methods(node), self.functions))
        self.generic_visit(node)
        self.methods.pop()
        return node

    def _own_methods(self, cls: ast.ClassDef) -> dict[str, Template]:
        """The assertion helpers a class defines as its own methods (``self.check(...)``
        in another of its methods): a plain function whose first parameter is ``self``,
        defined once in the class and by no other class of the module, never set as an
        attribute (so no subclass here overrides it and no instance hides it)."""
        found = {}
        for statement in cls.body:
            name = getattr(statement, "name", None)
            if (isinstance(statement, ast.FunctionDef) and self.method_names.get(name) == 1 and name not in self.attributes
                    and statement.args.args and statement.args.args[0].arg == "self" and not statement.args.posonlyargs):  # fmt: skip
                method = copy.deepcopy(statement)
                method.args.args = method.args.args[1:]
                template = _function_template(method, self.cases, self.module_names | {"self"}, self.counts)
                if template is not None and "self" not in template.locals:
                    found[statement.name] = template
        return found

    def _own_helpers(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, tuple[Template, int]]:
        stores = _own_bindings(function.body)
        rebound = {name for part in ast.walk(function) if isinstance(part, (ast.Nonlocal, ast.Global)) for name in part.names}
        params = {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)}
        found = {}
        for statement in function.body:
            if (isinstance(statement, ast.FunctionDef) and stores.get(statement.name) == 1 and statement.name not in rebound
                    and statement.name not in params):  # fmt: skip
                template = _function_template(statement, self.cases, None)
                if template is not None:
                    found[statement.name] = (template, statement.end_lineno or statement.lineno)
        return found

    def _template(self, call: ast.Call) -> Template | None:
        func = call.func
        if isinstance(func, ast.Name):
            name, attr = func.id, None
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            name, attr = func.value.id, func.attr
        else:
            return None
        if attr is None and self.nested and name in self.nested[-1]:  # in the body of the function that defines it
            template, ends = self.nested[-1][name]
            return template if call.lineno > ends else None
        if (name == "self" and attr is not None and self.methods and self.functions == self.methods[-1][1] + 1
                and attr in self.methods[-1][0] and "self" in self.shadowed[-1]):  # fmt: skip
            template = self.methods[-1][0][attr]  # in another method of its class, whose ``self`` it reads
            return None if any(free in self.shadowed[-1] and free != "self" for free in template.free) else template
        if any(name in scope for scope in self.shadowed):
            return None
        if attr is not None and name in self.cases:  # _CASE.assertEqual(...)
            return Template(method=attr) if _is_unittest_assertion(attr) else None
        module, helper = self.bindings.get(name, (None, None))
        if module is None or (attr is None) == (helper == ""):
            return None
        template = self.templates.get((module, attr if attr is not None else helper))  # type: ignore[arg-type]
        if template is None or any(free in scope for free in template.free for scope in self.shadowed):
            return None
        if module and (template.globals or any(self.counts.get(free) for free in template.free)):
            return None  # another module's globals, or a builtin this module binds
        return template

    def visit_Expr(self, node: ast.Expr) -> ast.AST | list[ast.stmt]:
        call = node.value
        if not self.functions or not isinstance(call, ast.Call):
            return node
        template = self._template(call)
        if template is None or any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            return node
        if template.method:
            test = _unittest_assert(ast.Call(ast.Attribute(ast.Name("self", ast.Load()), template.method, ast.Load()),
                                             call.args, call.keywords))  # fmt: skip
            return node if test is None else ast.copy_location(ast.Assert(test), node)
        bound = _bind_arguments(template, call)
        if bound is None:
            return node
        body = _pruned(ast.parse(template.asserts).body, dict(bound), template)
        reads = {name: sum(isinstance(n, ast.Name) and n.id == name for s in body for n in ast.walk(s)) for name in template.params}
        loops = {n.id for s in body for loop in ast.walk(s) if isinstance(loop, (ast.For, ast.While, ast.comprehension))
                 for n in ast.walk(loop) if isinstance(n, ast.Name)}  # fmt: skip
        statements: list[ast.stmt] = []
        values: dict[str, ast.expr] = {}
        self.arguments += 1
        call_number = self.arguments
        for param, argument in bound:
            once = reads[param] <= 1 and param not in loops
            if param not in template.stored and (isinstance(argument, ast.Name) or (_is_literal(argument) and (once or _immutable(argument)))
                                                 or (once and _display(argument))):  # fmt: skip
                values[param] = argument
                continue
            temp = f"{ARGUMENT}{call_number}_{param}"
            statements.append(ast.copy_location(ast.Assign([ast.Name(temp, ast.Store())], argument), node))
            values[param] = ast.Name(temp, ast.Load())
        values.update((name, ast.Name(f"{LOCAL}{call_number}_{name}", ast.Load())) for name in template.locals)
        for statement in body:
            statements.append(_placed(_Substitute(values).visit(statement), node))
        return statements


def _display(node: ast.expr) -> bool:
    """A list, tuple or set display of names and constants: evaluating it calls nothing."""
    return isinstance(node, (ast.List, ast.Tuple, ast.Set)) and all(isinstance(e, (ast.Name, ast.Constant)) for e in node.elts)


#: The builtins an idle loop of a helper may call to make what it iterates.
_INERT_CALLS = frozenset({"range", "len", "zip", "enumerate"})


def _pruned(body: list[ast.stmt], arguments: Mapping[str, ast.expr], template: Template) -> list[ast.stmt]:
    """A helper's body for one call without what does nothing there: a loop that only
    printed (its body is ``pass`` now) over what ``len``, ``range``, ``zip`` and
    ``enumerate`` make of literals and of displays the call passes, and a local assigned
    such a value that nothing reads (tabulate's ``assert_in`` printed each expected value)."""
    body = list(body)
    while True:
        inert: set[str] = set()
        assigned = [s.targets[0].id for s in body if _assigns_one_name(s)]  # type: ignore[attr-defined]

        def calm(node: ast.expr) -> bool:
            if isinstance(node, ast.Constant):
                return True
            if isinstance(node, ast.Name):
                if node.id in arguments and node.id in template.params:
                    argument = arguments[node.id]
                    return _display(argument) or _is_literal(argument)
                return node.id in inert
            if isinstance(node, (ast.List, ast.Tuple)):
                return all(calm(e) for e in node.elts)
            if isinstance(node, ast.BinOp):
                return calm(node.left) and calm(node.right)
            return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _INERT_CALLS
                    and not node.keywords and all(calm(a) for a in node.args))  # fmt: skip

        for statement in body:
            if _assigns_one_name(statement) and assigned.count(statement.targets[0].id) == 1 and calm(statement.value):  # type: ignore[attr-defined]
                inert.add(statement.targets[0].id)  # type: ignore[attr-defined]
        read = {n.id for s in body for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        kept = []
        for statement in body:
            idle_loop = (isinstance(statement, ast.For) and not statement.orelse and all(isinstance(b, ast.Pass) for b in statement.body)
                         and calm(statement.iter) and not {n.id for n in ast.walk(statement.target) if isinstance(n, ast.Name)} & read)  # fmt: skip
            unread = (_assigns_one_name(statement) and statement.targets[0].id in inert  # type: ignore[attr-defined]
                      and statement.targets[0].id in template.locals and statement.targets[0].id not in read)  # type: ignore[attr-defined]
            if not (idle_loop or unread):
                kept.append(statement)
        if len(kept) == len(body):
            return body
        body = kept


def _immutable(node: ast.expr) -> bool:
    """A literal whose value no helper can change (a helper may change a list it was
    given): a number, string, bytes, None, a date or time, or a tuple or frozenset of such."""
    try:
        value = literal(node)
    except _Unsealable:
        return False
    return _frozen(value)


def _frozen(value: Any) -> bool:
    if isinstance(value, (tuple, frozenset)):
        return all(_frozen(item) for item in value)
    return value is None or isinstance(value, (bool, int, float, complex, str, bytes, datetime.date, datetime.time,
                                               datetime.timedelta, datetime.tzinfo, decimal.Decimal, fractions.Fraction, range))  # fmt: skip


def _bind_arguments(template: Template, call: ast.Call) -> list[tuple[str, ast.expr]] | None:
    """The call's arguments bound to the template's parameters, in the order the call
    evaluates them, with the defaults of those it leaves out; None when they do not bind."""
    params = template.params
    if len(call.args) > len(params):
        return None
    bound = list(zip(params, call.args))
    given = {param for param, _ in bound}
    for keyword in call.keywords:
        if keyword.arg not in params or keyword.arg in given:
            return None
        bound.append((keyword.arg, keyword.value))  # type: ignore[arg-type]
        given.add(keyword.arg)  # type: ignore[arg-type]
    first_default = len(params) - len(template.defaults)
    for index, param in enumerate(params):
        if param not in given:
            if index < first_default:
                return None
            bound.append((param, ast.parse(template.defaults[index - first_default], mode="eval").body))
    return bound


def _is_literal(node: ast.expr) -> bool:
    try:
        literal(node)
    except _Unsealable:
        return False
    return True


class _Substitute(ast.NodeTransformer):
    def __init__(self, values: Mapping[str, ast.expr]) -> None:
        self.values = values

    def visit_Name(self, node: ast.Name) -> ast.expr:
        value = self.values.get(node.id)
        if value is None:
            return node
        if not isinstance(node.ctx, ast.Load):  # a local the body binds (never a literal: see ``_Inliner``)
            return ast.Name(value.id, node.ctx)  # type: ignore[attr-defined]
        return _copy(value)


def _copy(node: ast.expr) -> ast.expr:
    return ast.parse(ast.unparse(node), mode="eval").body


def _placed(statement: ast.stmt, at: ast.stmt) -> ast.stmt:
    """``statement`` with every node at ``at``'s place (the call's line, for points)."""
    for part in ast.walk(statement):
        if isinstance(part, (ast.expr, ast.stmt)):
            ast.copy_location(part, at)
    return statement


class _Compiler(ast.NodeTransformer):
    def __init__(self) -> None:
        self.points: list[Point] = []
        self.columns: list[dict[str, tuple[Any, ...]]] = []  # per enclosing function: its sealed parameters
        self.folded: list[dict[str, Any]] = []  # per enclosing function: its locals that hold an expected value
        self.guarded: list[dict[str, Any]] = []  # per enclosing function: its list, dict and set inputs (``_literal_locals``)
        self.constants: dict[str, Any] = {}  # the module's (``_module_constants``)
        self.rows: list[dict[str, tuple[Any, ...]]] = []  # per enclosing loop: the sealed columns of its table
        self.enclosing: list[ast.FunctionDef | ast.AsyncFunctionDef] = []  # the functions the statement is in
        self.scope: list[str] = []
        self.functions = 0  # how many function bodies enclose the statement
        self.reach: tuple[int, int | None] = (1, 1)  # how often the statement runs in one run of its function

    # -- scopes and blocks ---------------------------------------------------------------

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        self.scope.append(node.name)
        self.functions += 1
        _rename_rebound(node)
        self.columns.append(_seal_columns(node))
        constants = self.constants if self.functions == 1 else {}  # a nested function: its names may be the outer one's
        self.folded.append(_fold_locals(node, constants))
        stores = {n.id for n in _own_nodes(node.body) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
        stores |= {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
        frozen, guarded = _literal_locals(node)
        self.guarded.append({k: v for k, v in guarded.items() if k not in self.folded[-1]})
        known = _KNOWN.set({**{k: v for k, v in constants.items() if k not in stores}, **frozen, **self.folded[-1]})
        reach, self.reach = self.reach, ((1, None) if _may_repeat(node) else (1, 1))
        self.enclosing.append(node)
        try:
            self.generic_visit(node)
        finally:
            self.enclosing.pop()
            _KNOWN.reset(known)
        self.reach = reach
        self.guarded.pop()
        self.folded.pop()
        self.columns.pop()
        self.functions -= 1
        self.scope.pop()
        return node

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()
        return node

    def _block(self, node: ast.AST) -> ast.AST:
        """A branch, ``try``, ``while`` or ``match``: what it holds may run any number of times."""
        reach, self.reach = self.reach, (0, None)
        self.generic_visit(node)
        self.reach = reach
        return node

    visit_While = visit_If = visit_Try = visit_TryStar = visit_Match = _block  # type: ignore[assignment]

    def visit_For(self, node: ast.For | ast.AsyncFor) -> ast.AST:
        """A loop's body runs ``n`` times over a literal of ``n`` items, at least once over
        computed data (the reference's data decides; ``validate`` names a test where it was
        empty), any number of times when it may leave early; its ``else`` is a branch."""
        least, most = reach = self.reach
        times = _literal_length(node.iter)
        rows = (_seal_rows(node, self.enclosing[-1]) if self.enclosing and reach == (1, 1) and not node.orelse
                and not _leaves_early(node.body) else {})  # fmt: skip
        self.rows.append(rows)
        if rows:  # once per run, never left early, over a table of a known number of rows
            times = len(next(iter(rows.values())))
        if node.orelse or _leaves_early(node.body):
            self.reach = (0, None)
        elif times is not None:
            self.reach = (least * times, None if most is None else most * times)
        else:
            self.reach = (min(least, 1), None)
        orelse, node.orelse = node.orelse, []
        try:
            self.generic_visit(node)
        finally:
            self.rows.pop()
        self.reach = (0, None)
        node.orelse = self._statements(orelse)
        self.reach = reach
        return node

    visit_AsyncFor = visit_For  # type: ignore[assignment]

    def _statements(self, body: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for statement in body:
            new = self.visit(statement)
            out.extend(new if isinstance(new, list) else [new] if new is not None else [])
        return out

    # -- points ----------------------------------------------------------------------------

    def _point(self, node: ast.AST, kind: str, status: str, **fields: Any) -> int:
        reach = self.reach if self.scope else (0, None)
        point = Point(len(self.points) + 1, kind, ".".join(self.scope) or "<module>", getattr(node, "lineno", 0),
                      reach, status, **fields)  # fmt: skip
        self.points.append(point)
        return point.id

    def _observe(self, point: int, value: ast.expr, node: ast.AST) -> ast.stmt:
        call = ast.Call(ast.Name(OBSERVE, ast.Load()), [ast.Constant(point), value], [])
        return ast.copy_location(ast.Expr(call), node)

    def visit_Expr(self, node: ast.Expr) -> ast.AST | list[ast.stmt]:
        """``self.assertX(...)`` as a statement: the points of the ``assert`` it stands for."""
        call = node.value
        if not (self.functions and isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and isinstance(call.func.value, ast.Name) and call.func.value.id == "self"):  # fmt: skip
            return self.generic_visit(node)
        method = call.func.attr
        if method in ("assertRaises", "assertRaisesRegex") and len(call.args) >= 2 and not call.keywords:
            kinds, pattern = call.args[0], call.args[1] if method == "assertRaisesRegex" else None
            rest = call.args[2:] if pattern is not None else call.args[1:]
            raised = _raises_of(ast.Call(ast.Attribute(ast.Name("pytest", ast.Load()), "raises", ast.Load()), [kinds],
                                         [ast.keyword("match", pattern)] if pattern is not None else []))  # fmt: skip
            if raised is None or not rest:
                return node
            block = ast.With([ast.withitem(ast.Call(ast.Name("pytest", ast.Load()), [], []), None)],
                             [ast.Expr(ast.Call(rest[0], rest[1:], []))])  # fmt: skip
            ast.copy_location(block, node)
            return self._raises_block(block, [raised])
        test = _unittest_assert(call)
        if test is None:
            return node
        return [self._observe(point, value, node) for point, value in self._checks(test, node)]

    def visit_Assert(self, node: ast.Assert) -> ast.stmt | list[ast.stmt]:
        if not self.functions:  # at import: no test is under way to fail, so it stays as written
            return node
        return [self._observe(point, value, node) for point, value in self._checks(node.test, node)]

    def _checks(self, test: ast.expr, node: ast.AST) -> list[tuple[int, ast.expr]]:
        """(point, the expression the probe observes) for each check ``test`` makes."""
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            return [check for value in test.values for check in self._checks(value, node)]
        negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
        inner = test.operand if negated else test
        if isinstance(inner, ast.Compare) and len(inner.ops) == 1 and type(inner.ops[0]) in _OPS:
            op = _OPS[type(inner.ops[0])]
            if negated and op not in _NEGATED:
                return [self._open(test, node)]
            op = _NEGATED[op] if negated else op
            left, right = inner.left, inner.comparators[0]
            columns = self.columns[-1] if self.columns else {}
            folded = self.folded[-1] if self.folded else {}
            rows = self.rows[-1] if self.rows else {}
            for observed, constant, observed_left in ((left, right, True), (right, left, False)):
                if op in ("in", "not in") and not observed_left:
                    continue  # the container's own __contains__ decides (a cache, a custom set): open
                cases = isinstance(constant, ast.Name) and constant.id in columns
                ordered = isinstance(constant, ast.Name) and constant.id in rows
                if (isinstance(observed, ast.Name) and (observed.id in columns or observed.id in rows)) or any(
                        isinstance(n, ast.Name) and n.id in folded for n in ast.walk(observed)):  # fmt: skip
                    continue  # a sealed column or folded local is never what the probe observes: it is not there
                guards: dict[str, Any] = {}
                try:
                    if ordered:
                        expected = rows[constant.id]  # type: ignore[attr-defined]
                    elif cases:
                        expected = columns[constant.id]  # type: ignore[attr-defined]
                    elif isinstance(constant, ast.Name) and constant.id in folded:
                        expected = folded[constant.id]
                    else:
                        expected, guards = self._worked_out(constant)
                except _Unsealable:
                    continue
                if not observed_left and op not in ("in", "not in"):
                    op = _TURNED[op]
                point = self._point(node, "compare", "sealed", op=op, expected=expected, observed_left=observed_left,
                                    cases=cases, ordered=ordered)  # fmt: skip
                if op == "==" and not (cases or ordered) and isinstance(observed, ast.Name):
                    self._asserted(observed.id, expected)
                return [(point, observed)] + [(self._point(node, "compare", "sealed", op="==", expected=value),
                                               ast.Name(name, ast.Load())) for name, value in guards.items()]  # fmt: skip
            return [self._open(test, node)]
        if isinstance(inner, ast.Compare):  # a chain, or an operator the judge does not apply
            return [self._open(test, node)]
        truth = ast.Call(ast.Name("bool", ast.Load()), [inner], [])  # the truth alone: a list need not travel
        return [(self._point(node, "truth", "guessable", expected=not negated), truth)]

    def _asserted(self, name: str, value: Any) -> None:
        """After ``assert name == value`` straight in a function's body, a local bound once
        holds ``value`` in every run that goes on (the host judged it so, on plain data):
        a later expected side may read it as a guarded input (``_worked_out``)."""
        function = self.enclosing[-1] if self.enclosing else None
        if function is None or self.reach != (1, 1) or not self.guarded or not _is_plain(value):
            return
        params = {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)}
        if name not in params and _own_bindings(function.body).get(name) == 1 and not _changed_by_the_test(function, name):
            self.guarded[-1].setdefault(name, copy.deepcopy(value))

    def _worked_out(self, side: ast.expr) -> tuple[Any, dict[str, Any]]:
        """The value of an expected side the host works out, and the list, dict or set
        inputs it read (``guarded``), each with the value it must still hold: the test
        handed them to the product, which could have changed them, so each becomes a
        point of its own (the input unchanged), and the side's value is what the test's
        own text gives. ``_Unsealable`` where the host cannot work it out."""
        try:
            return literal(side), {}
        except _Unsealable:
            guarded = self.guarded[-1] if self.guarded else {}
            read = {n.id for n in ast.walk(side) if isinstance(n, ast.Name) and n.id in guarded}
            if not read:
                raise
        token = _KNOWN.set({**_KNOWN.get(), **{name: copy.deepcopy(guarded[name]) for name in read}})
        try:
            return literal(side), {name: guarded[name] for name in sorted(read)}
        finally:
            _KNOWN.reset(token)

    def _open(self, test: ast.expr, node: ast.AST) -> tuple[int, ast.expr]:
        return self._point(node, "open", "open"), ast.Call(ast.Name("bool", ast.Load()), [test], [])

    def visit_With(self, node: ast.With) -> ast.AST:
        if not self.functions:
            return self._block(node)
        raised = [_raises_of(item.context_expr) for item in node.items]
        if not any(raised):
            self.generic_visit(node)
            return node
        return self._raises_block(node, raised)

    def _raises_block(self, node: ast.With | ast.AsyncWith, raised: list) -> ast.AST:
        """A ``with`` whose items include ``raises`` contexts (``raised``: each item's
        names and pattern, or None): each becomes a ``raises`` point."""
        items = []
        for item, found in zip(node.items, raised):
            if found is None:
                items.append(item)
                continue
            names, pattern = found
            base = bool(_BASE_EXCEPTIONS & set(names))  # the probe must catch it too: said, and so guessable
            point = self._point(node, "raises", "guessable" if base else "sealed", expected=names, pattern=pattern)
            arguments = [ast.Constant(point)] + ([ast.Constant(True)] if base else [])
            call = ast.Call(ast.Name(RAISES, ast.Load()), arguments, [])
            items.append(ast.withitem(ast.copy_location(call, item.context_expr), item.optional_vars))
        node.items = items
        return self._block(node)  # the block ends at the statement that raises

    visit_AsyncWith = visit_With  # type: ignore[assignment]


def _literal_length(node: ast.expr) -> int | None:
    """How many items a loop over ``node`` takes when that is fixed by the test's text: a
    list, tuple, set or dict display (no ``*``), a string or ``range`` of constants."""
    if isinstance(node, (ast.List, ast.Tuple)) and not any(isinstance(e, ast.Starred) for e in node.elts):
        return len(node.elts)
    if isinstance(node, ast.Dict) and None not in node.keys:
        try:
            return len({literal(key) for key in node.keys if key is not None})
        except (_Unsealable, TypeError):
            return None
    if isinstance(node, ast.Set):
        try:
            return len({literal(e) for e in node.elts})
        except (_Unsealable, TypeError):
            return None
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
        return len(node.value)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range" and not node.keywords
            and 1 <= len(node.args) <= 3):  # fmt: skip
        try:
            bounds = [literal(arg) for arg in node.args]
        except _Unsealable:
            return None
        if all(isinstance(b, int) and not isinstance(b, bool) for b in bounds) and (len(bounds) < 3 or bounds[2]):
            return len(range(*bounds))
    return None


def _leaves_early(body: list[ast.stmt]) -> bool:
    """Whether a loop body holds a ``break``, ``continue``, ``return`` or ``raise`` (nested
    functions and classes aside): then its statements may run fewer times than it loops."""
    todo: list[ast.AST] = list(body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Break, ast.Continue, ast.Return, ast.Raise)):
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))
    return False


#: unittest's assertion methods as the ``assert`` each stands for: a comparison operator
#: between its two arguments, or a truth (``not``: its negation), or a comparison with None.
_UNITTEST_COMPARE = {"assertEqual": ast.Eq, "assertEquals": ast.Eq, "assertNotEqual": ast.NotEq, "assertIs": ast.Is,
                     "assertIsNot": ast.IsNot, "assertIn": ast.In, "assertNotIn": ast.NotIn, "assertGreater": ast.Gt,
                     "assertGreaterEqual": ast.GtE, "assertLess": ast.Lt, "assertLessEqual": ast.LtE,
                     "assertListEqual": ast.Eq, "assertTupleEqual": ast.Eq, "assertDictEqual": ast.Eq,
                     "assertSetEqual": ast.Eq, "assertMultiLineEqual": ast.Eq, "assertSequenceEqual": ast.Eq}  # fmt: skip
_UNITTEST_TRUTH = {"assertTrue": False, "assert_": False, "assertFalse": True}
_UNITTEST_NONE = {"assertIsNone": ast.Is, "assertIsNotNone": ast.IsNot}


def _unittest_assert(call: ast.Call) -> ast.expr | None:
    """The test of the ``assert`` that ``self.<method>(...)`` stands for (its message left
    out), or None for a method taken apart by no rule here."""
    method = call.func.attr  # type: ignore[attr-defined]
    args = list(call.args)
    if any(k.arg != "msg" for k in call.keywords) or any(isinstance(a, ast.Starred) for a in args):
        return None
    if method in _UNITTEST_COMPARE and len(args) in (2, 3):
        if method in ("assertListEqual", "assertTupleEqual", "assertDictEqual", "assertSetEqual", "assertSequenceEqual"):
            return None if len(args) == 3 and method == "assertSequenceEqual" else ast.Compare(args[0], [_UNITTEST_COMPARE[method]()], [args[1]])
        return ast.Compare(args[0], [_UNITTEST_COMPARE[method]()], [args[1]])
    if method in _UNITTEST_TRUTH and len(args) in (1, 2):
        return ast.UnaryOp(ast.Not(), args[0]) if _UNITTEST_TRUTH[method] else args[0]
    if method in _UNITTEST_NONE and len(args) in (1, 2):
        return ast.Compare(args[0], [_UNITTEST_NONE[method]()], [ast.Constant(None)])
    if method == "assertIsInstance" and len(args) in (2, 3):
        return ast.Call(ast.Name("isinstance", ast.Load()), args[:2], [])
    if method == "assertNotIsInstance" and len(args) in (2, 3):
        return ast.UnaryOp(ast.Not(), ast.Call(ast.Name("isinstance", ast.Load()), args[:2], []))
    return None


def _raises_of(expr: ast.expr) -> tuple[tuple[str, ...], str | None] | None:
    """``pytest.raises(E)``, ``pytest.raises((E1, E2), match="...")``,
    ``self.assertRaises(E)`` or ``self.assertRaisesRegex(E, "...")`` as a context: the
    exception names and the pattern; None for anything else (other forms stay)."""
    if (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and isinstance(expr.func.value, ast.Name)
            and expr.func.value.id == "self" and not expr.keywords):  # fmt: skip
        if expr.func.attr == "assertRaises" and len(expr.args) == 1:
            expr = ast.Call(ast.Attribute(ast.Name("pytest", ast.Load()), "raises", ast.Load()), expr.args, [])
        elif expr.func.attr == "assertRaisesRegex" and len(expr.args) == 2:
            expr = ast.Call(ast.Attribute(ast.Name("pytest", ast.Load()), "raises", ast.Load()), expr.args[:1],
                            [ast.keyword("match", expr.args[1])])  # fmt: skip
        else:
            return None
    if not (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "raises"
            and isinstance(expr.func.value, ast.Name) and expr.func.value.id == "pytest" and len(expr.args) == 1):  # fmt: skip
        return None
    kinds = expr.args[0].elts if isinstance(expr.args[0], ast.Tuple) else [expr.args[0]]
    names = []
    for kind in kinds:
        if isinstance(kind, ast.Name):
            names.append(kind.id)
        elif isinstance(kind, ast.Attribute):
            names.append(kind.attr)
        else:
            return None
        alias = _ALIASES.get(ast.unparse(kind))
        if alias and alias not in names:
            names.append(alias)  # an exception the MRO names by its class's own name
    pattern = None
    for keyword in expr.keywords:
        if keyword.arg != "match" or not isinstance(keyword.value, ast.Constant) or not isinstance(keyword.value.value, str):
            return None
        pattern = keyword.value.value
    return tuple(names), pattern


#: The standard library's other names for its exception classes, which no raised exception's
#: MRO holds (``pytest.raises(IOError)`` catches an ``OSError``): name as the test writes it ->
#: the class's own name. (tinydb's read-only storage raises ``io.UnsupportedOperation``.)
_ALIASES = {
    **{name: value.__name__ for name, value in vars(builtins).items()
       if isinstance(value, type) and issubclass(value, BaseException) and value.__name__ != name},
    "os.error": "OSError", "socket.error": "OSError", "select.error": "OSError", "socket.timeout": "TimeoutError",
}  # fmt: skip

#: The id a parametrize case gets when its expected column is taken out of the table.
CASE_ID = "case{}"


#: Decorators that run a test once or not at all: pytest's marks and fixtures, unittest's
#: skips, and the method kinds.
_ONCE_DECORATORS = re.compile(r"^(pytest\.|py\.test\.)?(mark\.|fixture\b)|^(unittest\.)?(skip|skipIf|skipUnless|expectedFailure)\b"
                              r"|^(staticmethod|classmethod)$")


def _may_repeat(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether a decorator of ``function`` may run it more than once a test: any but
    ``_ONCE_DECORATORS`` (zipp's ``@pass_alpharep`` runs a test once for each of two
    archives). Its straight points are then reached at least once, not exactly once."""
    return any(not _ONCE_DECORATORS.match(ast.unparse(decorator)) for decorator in function.decorator_list)


def _seal_columns(function: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, tuple[Any, ...]]:
    """Take the expected columns out of ``function``'s ``@pytest.mark.parametrize`` table
    (edited in place) and return them (parameter -> its value in each case). A column is
    expected when the parameter is used only as the literal side of assertions the
    compiler turns into points; its table is then a literal, and its cases get ids that
    say nothing (``case0``, ``case1``, ...). One table per function; a table with
    ``pytest.param`` rows, ``indirect`` or a single column stays as written."""
    for decorator in function.decorator_list:
        parsed = _parametrize(decorator)
        if parsed is None:
            continue
        names, rows = parsed
        hidden = _expected_only(function, names)
        if not hidden or len(hidden) == len(names):
            continue
        keep = [i for i, name in enumerate(names) if name not in hidden]
        table = []
        for row in rows:
            kept = [row[i] for i in keep]
            table.append(kept[0] if len(kept) == 1 else ast.Tuple(kept, ast.Load()))
        assert isinstance(decorator, ast.Call)
        decorator.args = [ast.Constant(",".join(names[i] for i in keep)), ast.List(table, ast.Load())]
        decorator.keywords = [ast.keyword("ids", ast.List([ast.Constant(CASE_ID.format(n)) for n in range(len(rows))],
                                                          ast.Load()))]  # fmt: skip
        arguments = function.args
        arguments.args = [arg for arg in arguments.args if arg.arg not in hidden]
        arguments.kwonlyargs, arguments.kw_defaults = (
            [a for a in arguments.kwonlyargs if a.arg not in hidden],
            [d for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if a.arg not in hidden])  # fmt: skip
        return {name: tuple(literal(row[names.index(name)]) for row in rows) for name in hidden}
    return {}


def _seal_rows(loop: ast.For | ast.AsyncFor, function: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, tuple[Any, ...]]:
    """Take the expected values out of the literal table ``loop`` (in ``function``) runs
    over, edited in place, and return them (name -> its value in each row): the table's
    expected columns (``for n, expected in ((6, [...]), (5, [...])):`` becomes ``for n in
    (6, 5):``), and locals the loop body binds once to what the host works out from a row
    (``expected = iterable.split(separator)``, whose line goes). A column or local is
    expected when its name is read only as the literal side of assertions straight in the
    loop's body (or in a ``with`` there), after it is bound, and nowhere else in the
    function, so that each such point is reached once a row, in the rows' order. The caller
    makes sure the loop runs once per run of its function and never leaves early."""
    target, table = loop.target, loop.iter
    if isinstance(target, ast.Name):
        names = [target.id]
    elif isinstance(target, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Name) for e in target.elts):
        names = [e.id for e in target.elts]  # type: ignore[attr-defined]
    else:
        return {}
    bound = _table_binding(table, loop, function) if isinstance(table, ast.Name) else None
    if bound is not None:
        table = bound.value
    if not isinstance(table, (ast.List, ast.Tuple)):
        token = _KNOWN.set({**_KNOWN.get(), **_inputs_before(loop, function)})
        try:
            table = _worked_table(table)
        finally:
            _KNOWN.reset(token)
    if len(set(names)) != len(names) or table is None or not table.elts:
        return {}
    rows = []
    for row in table.elts:
        cells = [row] if len(names) == 1 else row.elts if isinstance(row, (ast.Tuple, ast.List)) else None
        if cells is None or len(cells) != len(names) or any(isinstance(c, ast.Starred) for c in cells):
            return {}
        rows.append(cells)
    body = ast.FunctionDef(name="loop", args=ast.arguments([], [], None, [], [], None, []), body=loop.body,
                           decorator_list=[], returns=None)  # fmt: skip
    straight = {id(n) for statement in _straight(loop.body) if isinstance(statement, (ast.Assert, ast.Expr))
                for n in ast.walk(statement)}  # fmt: skip
    labels = [n for call in _subtests(loop.body) for n in ast.walk(call) if isinstance(n, ast.Name)]
    straight |= {id(n) for n in labels}
    inside = {id(n) for n in ast.walk(body)}
    reads: dict[str, list[ast.Name]] = {}
    for node in _own_nodes(function.body):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            reads.setdefault(node.id, []).append(node)
    stores = _own_bindings(function.body)
    order = _Order(function)

    def only_checked(name: str, after: ast.stmt | None = None) -> bool:
        return all(id(n) in inside and id(n) in straight and (after is None or order.after(n, after)) for n in reads.get(name, ()))

    found: dict[str, tuple[Any, ...]] = {}
    hidden = {name for name in _expected_only(body, names, labels) if only_checked(name)}
    for name in hidden:
        try:
            found[name] = tuple(literal(cells[names.index(name)]) for cells in rows)
        except _Unsealable:
            continue
    # locals worked out per row: bound once, straight in the body, read only as expected sides after
    values: list[dict[str, Any]] = []
    for cells in rows:
        known = {}
        for name, cell in zip(names, cells):
            try:
                value = literal(cell)
            except _Unsealable:
                continue
            if _frozen(value):  # the product may change a list the row hands it before the body reads it
                known[name] = value
        values.append(known)
    bindings = [s for s in _straight(loop.body) if _assigns_one_name(s) and stores.get(s.targets[0].id) == 1  # type: ignore[attr-defined]
                and s.targets[0].id not in names]  # type: ignore[attr-defined]  # fmt: skip
    worked: list[ast.stmt] = []
    scratch = _scratch(function, loop, bindings, order)
    for statement in bindings:
        name = statement.targets[0].id  # type: ignore[attr-defined]
        if not (only_checked(name, statement) and _expected_only(body, [name], [*statement.targets, *labels])):  # type: ignore[attr-defined]
            continue
        per_row = []
        state = copy.deepcopy(scratch)  # kept row after row, in the rows' order
        for known in values:
            token, kept = _KNOWN.set({**_KNOWN.get(), **known, **state}), _SCRATCH.set(frozenset(state))
            try:
                per_row.append(literal(statement.value))  # type: ignore[attr-defined]
            except _Unsealable:
                break
            finally:
                _SCRATCH.reset(kept)
                _KNOWN.reset(token)
        if len(per_row) == len(rows):
            found[name] = tuple(per_row)
            worked.append(statement)
    if not found:
        return {}
    for block in [loop.body, *(s.body for s in _straight(loop.body) if isinstance(s, (ast.With, ast.AsyncWith)))]:
        block[:] = [s for s in block if not any(s is w for w in worked)] or [ast.Pass()]
    for call in _subtests(loop.body):  # a sub-test's label names no expected value: it stands in as None
        _StandIn(dict.fromkeys(found)).visit(call)
    keep = [i for i, name in enumerate(names) if name not in found]
    if len(keep) == len(names):
        return found
    if not keep:
        loop.target, rest = ast.Name("_", ast.Store()), ast.Call(ast.Name("range", ast.Load()), [ast.Constant(len(rows))], [])
    elif len(keep) == 1:
        loop.target = ast.Name(names[keep[0]], ast.Store())
        rest = ast.Tuple([cells[keep[0]] for cells in rows], ast.Load())
    else:
        loop.target = ast.Tuple([ast.Name(names[i], ast.Store()) for i in keep], ast.Store())
        rest = ast.Tuple([ast.Tuple([cells[i] for i in keep], ast.Load()) for cells in rows], ast.Load())
    if bound is not None:
        bound.value = rest  # the table's own line holds what is left of it
    else:
        loop.iter = rest
    return found


def _scratch(function: ast.FunctionDef | ast.AsyncFunctionDef, loop: ast.stmt, statements: list[ast.stmt],
             order: _Order) -> dict[str, Any]:  # fmt: skip
    """Locals the loop's per-row ``statements`` keep state in (``first_index = {}`` before
    ``for ...: expected = first_index.setdefault(element, index)``): a dict, list or set
    bound once, straight in the body before the loop, to a literal, and read nowhere but
    in those statements' values. The host keeps them from row to row; the product never
    sees them."""
    stores = _own_bindings(function.body)
    inside = {id(n) for statement in statements for n in ast.walk(statement.value)}  # type: ignore[attr-defined]
    found = {}
    for statement in _surely_run(function):
        if not (_assigns_one_name(statement) and order.after(loop, statement) and stores.get(statement.targets[0].id) == 1):  # type: ignore[attr-defined]
            continue
        target = statement.targets[0]  # type: ignore[attr-defined]
        uses = [n for n in ast.walk(function) if isinstance(n, ast.Name) and n.id == target.id and n is not target]
        if not uses or any(id(n) not in inside for n in uses):
            continue
        try:
            value = literal(statement.value)  # type: ignore[attr-defined]
        except _Unsealable:
            continue
        if isinstance(value, (dict, list, set)):
            found[target.id] = value
    return found


def _inputs_before(loop: ast.stmt, function: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, Any]:
    """The locals ``function`` binds, each once, to values the host works out, in the run of
    statements straight in its body that ends where ``loop`` starts: nothing of the
    product's runs between their binding and the loop, so they hold their literal value
    when it starts."""
    stores = _own_bindings(function.body)
    known: dict[str, Any] = {}
    for statement in function.body:
        if any(node is loop for node in ast.walk(statement)):
            return known
        if not (_assigns_one_name(statement) and stores.get(statement.targets[0].id) == 1):  # type: ignore[attr-defined]
            known = {}
            continue
        token = _KNOWN.set({**_KNOWN.get(), **known})
        try:
            known[statement.targets[0].id] = literal(statement.value)  # type: ignore[attr-defined]
        except _Unsealable:
            known = {}
        finally:
            _KNOWN.reset(token)
    return {}


def _worked_table(node: ast.expr) -> ast.Tuple | None:
    """The table a loop runs over when the host works it out (``enumerate(product(*iterables))``),
    as a display of its rows (at most ``_TABLE_ROWS``), or None."""
    try:
        rows = literal(node, plain=False)
    except _Unsealable:
        return None
    if not isinstance(rows, (list, tuple, range)) or len(rows) > _TABLE_ROWS:
        return None
    try:
        return ast.Tuple([_display_of(row) for row in rows], ast.Load())
    except _Unsealable:
        return None


def _display_of(value: Any) -> ast.expr:
    """The expression that gives back ``value`` (plain data the host worked out), or
    ``_Unsealable``."""
    try:
        node = ast.parse(repr(value), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise _Unsealable from exc
    try:
        again = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as exc:
        raise _Unsealable from exc
    if again != value or repr(again) != repr(value):
        raise _Unsealable
    return node


def _table_binding(name: ast.Name, loop: ast.For | ast.AsyncFor, function: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.Assign | None:
    """The assignment straight in ``function``'s body that binds the table ``loop`` runs
    over by name (``cases = [...]`` before ``for a, expected in cases:``), when that is the
    name's only binding and the loop its only reader; else None."""
    order = _Order(function)
    binding = next((s for s in _straight(function.body) if _assigns_one_name(s) and s.targets[0].id == name.id  # type: ignore[attr-defined]
                    and order.after(loop, s)), None)  # fmt: skip
    uses = [n for n in ast.walk(function) if isinstance(n, ast.Name) and n.id == name.id]  # nested scopes too
    if binding is None or len(uses) != 2 or not any(n is name for n in uses) or not any(n is binding.targets[0] for n in uses):
        return None
    return binding


def _surely_run(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.stmt]:
    """The statements straight in ``function``'s body and in its ``with self.subTest(...)``
    blocks: each runs once a run gets to it (another ``with`` may swallow an exception,
    ``pytest.raises`` does, and skip what follows in its block)."""
    found: list[ast.stmt] = []
    todo = list(reversed(function.body))
    while todo:
        statement = todo.pop()
        found.append(statement)
        if isinstance(statement, ast.With) and all(
                isinstance(item.context_expr, ast.Call) and ast.unparse(item.context_expr.func) == "self.subTest"
                for item in statement.items):  # fmt: skip
            todo.extend(reversed(statement.body))
    return found


def _subtests(body: list[ast.stmt]) -> list[ast.Call]:
    """The ``self.subTest(...)`` calls that open ``with`` blocks straight in ``body``: they
    only label what the block reports."""
    return [item.context_expr for statement in _straight(body) if isinstance(statement, (ast.With, ast.AsyncWith))
            for item in statement.items if isinstance(item.context_expr, ast.Call)
            and ast.unparse(item.context_expr.func) == "self.subTest"]  # fmt: skip


def _straight(body: list[ast.stmt]) -> Iterable[ast.stmt]:
    """The statements straight in ``body``, and in the ``with`` blocks there."""
    for statement in body:
        yield statement
        if isinstance(statement, (ast.With, ast.AsyncWith)):
            yield from _straight(statement.body)


def _parametrize(decorator: ast.expr) -> tuple[list[str], list[list[ast.expr]]] | None:
    """``@pytest.mark.parametrize("a,b", [(...), ...])`` (``ids`` aside) as its names and
    its rows' nodes, every cell a literal; None for anything else."""
    if not (isinstance(decorator, ast.Call) and ast.unparse(decorator.func) == "pytest.mark.parametrize"
            and len(decorator.args) == 2 and all(k.arg == "ids" for k in decorator.keywords)):  # fmt: skip
        return None
    try:
        spec = literal(decorator.args[0])
        literal(decorator.args[1])
    except _Unsealable:
        return None
    names = [name.strip() for name in spec.split(",")] if isinstance(spec, str) else spec
    table = decorator.args[1]
    if not (isinstance(names, (list, tuple)) and names and all(isinstance(n, str) for n in names)
            and isinstance(table, (ast.List, ast.Tuple)) and table.elts):  # fmt: skip
        return None
    if len(names) == 1:
        return list(names), [[row] for row in table.elts]
    rows = [row.elts for row in table.elts if isinstance(row, (ast.Tuple, ast.List)) and len(row.elts) == len(names)]
    return (list(names), rows) if len(rows) == len(table.elts) else None


def _module_constants(tree: ast.Module) -> dict[str, Any]:
    """Names a module binds once, at its top level, to a literal no code can change (a
    string, a number, a tuple of such: ``_frozen``): an expected value a test reads from
    them is worked out on the host (the probe still holds the module's line)."""
    counts = _top_level_bindings(tree)
    found = {}
    for node in tree.body:
        if _assigns_one_name(node) and counts.get(node.targets[0].id) == 1:  # type: ignore[attr-defined]
            try:
                value = literal(node.value)  # type: ignore[attr-defined]
            except _Unsealable:
                continue
            if _frozen(value):
                found[node.targets[0].id] = value  # type: ignore[attr-defined]
    return found


def _literal_locals(function: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[dict[str, Any], dict[str, Any]]:
    """Locals ``function`` binds once, straight in its body, to a literal the host works
    out, and reads only after that line (the probe still holds the line: the test also
    hands the value to the product). Those no code can change (``_frozen``) come first:
    an expected value worked out from them is the host's to work out, like one from a
    module constant. Lists, dicts and sets come second: their value when bound, which
    an expected side may use only with a point that the input still holds it."""
    stores = _own_bindings(function.body)
    params = {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)}
    frozen: dict[str, Any] = {}
    guarded: dict[str, Any] = {}
    order = _Order(function)
    for statement in _surely_run(function):
        if not _assigns_one_name(statement):
            continue
        name = statement.targets[0].id  # type: ignore[attr-defined]
        if stores.get(name) != 1 or name in params:
            continue
        if any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) and not order.after(n, statement)
               for n in ast.walk(function)):  # fmt: skip
            continue
        token = _KNOWN.set({**_KNOWN.get(), **frozen})  # never from a guarded one: it may have changed by then
        try:
            value = literal(statement.value, plain=False)  # type: ignore[attr-defined]
        except _Unsealable:
            continue
        finally:
            _KNOWN.reset(token)
        if _frozen(value):
            frozen[name] = value
        elif isinstance(value, (list, dict, set)) and not _changed_by_the_test(function, name):
            guarded[name] = value
    for statement in _surely_run(function):  # ``expected = iterable``: the same object, under the same guard
        if (_assigns_one_name(statement) and isinstance(statement.value, ast.Name) and statement.value.id in guarded  # type: ignore[attr-defined]
                and stores.get(statement.targets[0].id) == 1 and statement.targets[0].id not in params):  # type: ignore[attr-defined]  # fmt: skip
            guarded[statement.targets[0].id] = copy.deepcopy(guarded[statement.value.id])  # type: ignore[attr-defined]
    return frozen, guarded


def _changed_by_the_test(function: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    """Whether ``function`` may change the list, dict or set ``name`` holds itself: a method
    called on it (``seen.add(...)``), an item set or deleted. Its guard would then fail
    where the test, as written, passes (``validate`` found ``seen = set()`` so)."""
    for node in ast.walk(function):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == name:
            return True
        if (isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Load) and isinstance(node.value, ast.Name)
                and node.value.id == name):  # fmt: skip
            return True
    return False


#: Calls that read a function's locals by name: where one is made, no local is renamed.
_NAME_READERS = frozenset({"locals", "vars", "eval", "exec", "dir"})


def _rename_rebound(function: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
    """Give each binding of a local the body binds more than once its own name (``actual``,
    ``actual__2``, ...), edited in place, where that changes nothing the test does: every
    binding is ``name = ...`` straight in the body, every read lies after the first, in
    this function's own scope, and reads the binding last made before it. Each then
    binds once, so an expected value it holds is folded as any other."""
    if any(isinstance(n, (ast.Global, ast.Nonlocal)) or (isinstance(n, ast.Name) and n.id in _NAME_READERS)
           for n in ast.walk(function)):  # fmt: skip
        return
    own = list(_own_nodes(function.body))
    mine = {id(n) for n in own}
    taken = {n.id for n in ast.walk(function) if isinstance(n, ast.Name)} | {a.arg for a in ast.walk(function.args)
                                                                              if isinstance(a, ast.arg)}  # fmt: skip
    assigns = [s for s in _surely_run(function) if _assigns_one_name(s)]
    order = _Order(function)
    for name, count in _own_bindings(function.body).items():
        bindings = [s for s in assigns if s.targets[0].id == name]  # type: ignore[attr-defined]
        if count < 2 or len(bindings) != count or name in taken - {n.id for n in own if isinstance(n, ast.Name)}:
            continue
        uses = [n for n in ast.walk(function) if isinstance(n, ast.Name) and n.id == name]
        if any(id(n) not in mine for n in uses):
            continue  # a nested scope reads or binds it
        owner: dict[int, int] = {}
        for node in uses:
            if isinstance(node.ctx, ast.Load):
                before = [k for k, binding in enumerate(bindings) if order.after(node, binding)]
                if not before:
                    break  # read before its first binding
                owner[id(node)] = before[-1]
        else:
            names = [name] + [_fresh(f"{name}__{k + 1}", taken) for k in range(1, count)]
            taken.update(names)
            for k, statement in enumerate(bindings):
                statement.targets[0].id = names[k]  # type: ignore[attr-defined]
            for node in uses:
                if id(node) in owner:
                    node.id = names[owner[id(node)]]


def _fresh(name: str, taken: Collection[str]) -> str:
    while name in taken:
        name += "_"
    return name


def _fold_locals(function: ast.FunctionDef | ast.AsyncFunctionDef, constants: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Locals that hold an expected value: a name bound once, by ``name = <literal>``
    straight in ``function``'s body, bound nowhere else, and read only, after that line and
    in this function's own scope, as the literal side of assertions ``_checks`` turns into
    compare points. Their assignments leave the body (edited in place): the value is the
    points' expected value, and the probe no longer holds it."""
    own = list(_own_nodes(function.body))
    stores: dict[str, int] = {}
    for node in own:
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            stores[node.id] = stores.get(node.id, 0) + 1
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                stores[name] = stores.get(name, 0) + 2
    params = {a.arg for a in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)}
    known = {name: value for name, value in (constants or {}).items() if name not in stores and name not in params}
    # straight in the body, or straight in the body of a ``try`` or ``with`` there (read only in that block)
    blocks = [function.body, *(s.body for s in function.body if isinstance(s, (ast.Try, ast.With)))]
    bound: dict[str, tuple[ast.stmt, Any, list[ast.stmt]]] = {}
    token = _KNOWN.set(known)
    try:
        for block in blocks:
            for statement in block:
                if (isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name)
                        and stores.get(statement.targets[0].id) == 1 and statement.targets[0].id not in params):  # fmt: skip
                    try:
                        bound[statement.targets[0].id] = (statement, literal(statement.value), block)
                    except _Unsealable:
                        continue
    finally:
        _KNOWN.reset(token)
    if not bound:
        return {}
    inner = {id(n) for n in ast.walk(function) if isinstance(n, ast.Name)} - {id(n) for n in own}
    if any(isinstance(n, ast.Name) and n.id in bound and id(n) in inner for n in ast.walk(function)):
        bound = {name: item for name, item in bound.items()
                 if not any(isinstance(n, ast.Name) and n.id == name and id(n) in inner for n in ast.walk(function))}  # fmt: skip
    folded = _expected_only(function, sorted(bound), [item[0].targets[0] for item in bound.values()],  # type: ignore[misc]
                            {name: item[1] for name, item in bound.items()}, known)  # fmt: skip

    order = _Order(function)

    def within(name: str, read: ast.Name) -> bool:
        statement, _, block = bound[name]
        return order.after(read, statement) and (block is function.body or order.within(read, block))

    folded = {name for name in folded
              if all(within(name, n) for n in own if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load))}
    for block in blocks:
        block[:] = [s for s in block if not any(s is bound[name][0] for name in folded)] or [ast.Pass()]
    values = {name: bound[name][1] for name in folded}
    for call in _prints(function):
        _StandIn(values).visit(call)
    return values


class _Order:
    """Where the nodes of a tree lie in the order its text runs: each node's index in a
    walk in field order, and the last index inside each. Line numbers cannot tell this
    for the statements an inlined helper puts on its call's line."""

    def __init__(self, root: ast.AST) -> None:
        self.first: dict[int, int] = {}
        self.last: dict[int, int] = {}
        todo: list[tuple[ast.AST, bool]] = [(root, False)]
        count = 0
        while todo:
            node, done = todo.pop()
            if done:
                self.last[id(node)] = count - 1
                continue
            self.first[id(node)] = count
            count += 1
            todo.append((node, True))
            todo.extend((child, False) for child in reversed(list(ast.iter_child_nodes(node))))

    def after(self, node: ast.AST, statement: ast.AST) -> bool:
        """Whether ``node`` lies after the whole of ``statement``."""
        return self.first[id(node)] > self.last[id(statement)]

    def within(self, node: ast.AST, block: list[ast.stmt]) -> bool:
        return self.first[id(block[0])] <= self.first[id(node)] <= self.last[id(block[-1])]


def _own_nodes(body: list[ast.stmt]) -> Iterable[ast.AST]:
    """Every node under ``body`` outside nested functions, lambdas, classes and
    comprehensions (their names are another scope's)."""
    todo: list[ast.AST] = list(body)
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp,
                                 ast.SetComp, ast.DictComp, ast.GeneratorExp)):  # fmt: skip
            todo.extend(ast.iter_child_nodes(node))


def _assertion_tests(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterable[ast.expr]:
    """The tests of the assertions in ``function``'s own scope as ``_checks`` takes them
    apart: each conjunct of an ``assert``, and what a ``self.assertX(...)`` stands for
    (built of the call's own argument nodes). Not those of a function, class or lambda it
    defines: the compiler judges them with that scope's own expected values, so a name
    of this scope they read stays in the probe (marshmallow's ``assert data ==
    expected_data`` in a validator the test defines)."""
    for node in _own_nodes(function.body):
        if isinstance(node, ast.Assert):
            yield from _conjuncts(node.test)
        elif (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Attribute)
              and isinstance(node.value.func.value, ast.Name) and node.value.func.value.id == "self"):  # fmt: skip
            test = _unittest_assert(node.value)
            if test is not None:
                yield test


def _expected_only(function: ast.FunctionDef | ast.AsyncFunctionDef, names: Sequence[str],
                   binding: Collection[ast.Name] = (), values: Mapping[str, Any] | None = None,
                   known: Mapping[str, Any] | None = None) -> set[str]:  # fmt: skip
    """The names of ``names`` that ``function`` reads only as one side of an assertion
    ``_checks`` turns into a compare point, whose other side reads none of them (the name
    nodes of ``binding``, where they are bound, aside). With their ``values``, a name may
    also be read in an expected side the host works out from them and ``known``
    (``expected.splitlines()``, ``[first, second]``)."""
    sides: dict[int, tuple[ast.expr, ast.expr]] = {}  # id of a name's node -> the other side of its comparison, its own
    for test in _assertion_tests(function):
        negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
        inner = test.operand if negated else test
        if not (isinstance(inner, ast.Compare) and len(inner.ops) == 1 and type(inner.ops[0]) in _OPS):
            continue
        if negated and _OPS[type(inner.ops[0])] not in _NEGATED:
            continue
        left, right = inner.left, inner.comparators[0]
        membership = type(inner.ops[0]) in (ast.In, ast.NotIn)
        for side, other in ((right, left),) if membership else ((left, right), (right, left)):
            if isinstance(side, ast.Name):  # of "x in C" only the container C can be the expected side
                sides[id(side)] = (other, side)
            elif values is not None:
                sides.update((id(n), (other, side)) for n in ast.walk(side) if isinstance(n, ast.Name) and n.id in names)
    skip = {id(node) for node in binding}
    printed = {id(n) for call in _prints(function) for n in ast.walk(call)} if values is not None else set()
    reads: dict[str, list[ast.Name]] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and node.id in names and id(node) not in skip:
            reads.setdefault(node.id, []).append(node)
    candidates = {name for name, found in reads.items()
                  if all(isinstance(n.ctx, ast.Load) and (id(n) in sides or id(n) in printed) for n in found)}  # fmt: skip
    while True:
        dropped = set()
        for name in candidates:
            for read in reads[name]:
                if id(read) not in sides:
                    continue  # printed (``_fold_locals`` prints a stand-in)
                other, side = sides[id(read)]
                if any(isinstance(n, ast.Name) and n.id in candidates for n in ast.walk(other)):
                    dropped.add(name)
                elif side is not read and values is not None:
                    token = _KNOWN.set({**(known or {}), **{c: values[c] for c in candidates}})
                    try:
                        literal(side)
                    except _Unsealable:
                        dropped.add(name)
                    finally:
                        _KNOWN.reset(token)
        if not dropped:
            return candidates
        candidates -= dropped


def _prints(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.Call]:
    """The builtin ``print`` calls, as statements, in ``function``'s own body (none when the
    module or the function binds ``print``, or outside a module's compiling)."""
    if not _PRINTS.get() or any(isinstance(n, ast.Name) and n.id == "print" and not isinstance(n.ctx, ast.Load)
                                for n in _own_nodes(function.body)):  # fmt: skip
        return []
    return [node.value for node in _own_nodes(function.body) if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name) and node.value.func.id == "print"]  # fmt: skip


class _StandIn(ast.NodeTransformer):
    """A folded local, where a ``print`` reads it, as an empty value of its type: the
    probe prints something else, and the expected value stays out of it."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        self.values = values

    def visit_Name(self, node: ast.Name) -> ast.expr:
        if node.id not in self.values or not isinstance(node.ctx, ast.Load):
            return node
        kind = type(self.values[node.id])
        try:
            empty = kind() if kind in (str, bytes, int, float, bool, list, tuple, dict, set, frozenset) else None
        except TypeError:
            empty = None
        return ast.copy_location(ast.parse(repr(empty), mode="eval").body, node)


def _conjuncts(test: ast.expr) -> list[ast.expr]:
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return [part for value in test.values for part in _conjuncts(value)]
    return [test]


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _probe_literals(probe: str) -> set[Any]:
    """The literals a reader of the probe sees (point numbers aside)."""
    tree = ast.parse(probe)
    numbers = {id(node.args[0]) for node in ast.walk(tree) if isinstance(node, ast.Call) and node.args
               and isinstance(node.func, ast.Name) and node.func.id in (OBSERVE, RAISES)}  # fmt: skip
    return {node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and id(node) not in numbers and _hashable(node.value)}  # fmt: skip


def _atoms(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [atom for pair in value.items() for item in pair for atom in _atoms(item)]
    if isinstance(value, (list, tuple, set, frozenset)):
        return [atom for item in value for atom in _atoms(item)]
    return [value]


def forged_message(visible: Iterable[Any]) -> str:
    """The message a forger gives every exception it raises: the strings the probe holds
    and the words of ``FIRST_WORDS``."""
    return " | ".join([*sorted(v for v in visible if isinstance(v, str)), *FIRST_WORDS])


def _sealed_status(point: Point, visible: set[Any]) -> Point:
    """A compare point is sealed unless its expected value can be had for free: it is
    written elsewhere in the probe, or it is a value a forger tries first (in any one case,
    for a point with cases). A ``raises`` point is sealed only by a pattern that the
    forger's message (``forged_message``) does not meet: a forger tells a ``raises`` block
    from the rest of the probe and raises there an exception of every kind it can name."""
    if point.kind == "raises":
        if point.pattern is None or re.search(point.pattern, forged_message(visible)):
            return _with(point, "guessable")
        return point
    if point.kind != "compare":
        return point
    for expected in point.expected if point.cases or point.ordered else (point.expected,):
        atoms = _atoms(expected)
        if any(_guessable(atom) for atom in atoms) and len(atoms) <= 1:
            return _with(point, "guessable")
        if all(_hashable(atom) and (atom in visible) for atom in atoms):
            return _with(point, "guessable")
    return point


def _guessable(atom: Any) -> bool:
    if atom is None or isinstance(atom, bool) or atom == "" or atom == b"":
        return True
    if isinstance(atom, int):
        return -16 <= atom <= 16 or atom in _COMMON_STATUSES
    return False


def _with(point: Point, status: str) -> Point:
    return Point(**{**point.__dict__, "status": status})


def _strip_docstrings(tree: ast.AST) -> None:
    """Drop every docstring (a body left empty gets ``pass``)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                node.body[0:1] = [] if len(node.body) > 1 else [ast.copy_location(ast.Pass(), first)]


# -- what the probe sends, and how the host reads it --------------------------------------


class Opaque:
    """An object of the graded code's own class, as the host sees it: its class's names and
    its truth. It equals nothing but itself."""

    def __init__(self, names: Sequence[str], truth: bool) -> None:
        self.names, self.truth = tuple(names), truth

    def __bool__(self) -> bool:
        return self.truth

    def __repr__(self) -> str:
        return f"<{self.names[0] if self.names else 'object'}>"


class Malformed(ValueError):
    """An observation that is not what ``encode`` makes."""


_MAX_DEPTH, _MAX_ITEMS = 32, 100_000


def decode(data: Any, _depth: int = 0, _budget: list[int] | None = None) -> Any:
    """The plain value an encoded observation stands for; ``Malformed`` when it is not one
    ``encode`` makes (or past the bounds). Never runs anything of the sandbox's."""
    budget = [_MAX_ITEMS] if _budget is None else _budget
    budget[0] -= 1
    if _depth > _MAX_DEPTH or budget[0] < 0:
        raise Malformed("an observation past the bounds on depth or size")
    if data is None or isinstance(data, (bool, str)) or (isinstance(data, int) and not isinstance(data, bool)):
        return data
    if not isinstance(data, dict) or len(data) not in (1, 2):
        raise Malformed(f"not an encoded value: {type(data).__name__}")
    (tag, value), *rest = data.items()
    inner = (lambda item: decode(item, _depth + 1, budget))
    if tag == "f" and isinstance(value, str):
        try:
            return float(value)
        except ValueError as exc:
            raise Malformed("a float that is not one") from exc
    if tag == "i" and isinstance(value, str) and re.fullmatch(r"-?\d{1,4300}", value):
        return int(value)
    if tag == "q" and isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value):
        import fractions

        numerator, denominator = value
        if re.fullmatch(r"-?\d{1,4300}", numerator) and re.fullmatch(r"[1-9]\d{0,4299}", denominator):
            return fractions.Fraction(int(numerator), int(denominator))
        raise Malformed("a fraction that is not one")
    if tag == "dec" and isinstance(value, str) and len(value) <= 4300:
        import decimal

        try:
            return decimal.Decimal(value)
        except decimal.InvalidOperation as exc:
            raise Malformed("a decimal that is not one") from exc
    if tag in ("dt", "date", "time", "td"):
        return _decode_time(tag, value)
    if tag in ("l", "t", "s", "fs") and isinstance(value, list):
        items = [inner(item) for item in value]
        try:
            return {"l": list, "t": tuple, "s": set, "fs": frozenset}[tag](items)
        except TypeError as exc:
            raise Malformed("a set of unhashable items") from exc
    if tag == "d" and isinstance(value, list) and all(isinstance(pair, list) and len(pair) == 2 for pair in value):
        try:
            return {inner(key): inner(item) for key, item in value}
        except TypeError as exc:
            raise Malformed("a dict with an unhashable key") from exc
    if tag == "b" and isinstance(value, str):
        import base64

        return base64.b64decode(value.encode("ascii"), validate=True)
    if tag == "obj" and isinstance(value, list) and all(isinstance(name, str) for name in value):
        truth = rest[0][1] if rest and rest[0][0] == "truth" else True
        return Opaque(value, bool(truth))
    if tag == "raised":
        if value is None:
            return None
        if isinstance(value, list) and all(isinstance(name, str) for name in value) and rest and rest[0][0] == "msg":
            return Raised(tuple(value), str(rest[0][1]))
    raise Malformed(f"an unknown tag {tag!r}")


#: The naive fields of each encoded time value, and whether an offset may follow them.
_TIME_FIELDS = {"dt": (7, True), "date": (3, False), "time": (4, True), "td": (3, False)}


def _decode_time(tag: str, value: Any) -> Any:
    """A ``datetime``, ``date``, ``time`` or ``timedelta`` from its fields (and an aware
    value's UTC offset in microseconds; ``"?"``, a ``tzinfo`` that failed, equals nothing)."""
    import datetime as dt

    count, aware = _TIME_FIELDS[tag]
    if not (isinstance(value, list) and len(value) in ((count, count + 1) if aware else (count,))
            and all(type(v) is int for v in value[:count])):  # fmt: skip
        raise Malformed(f"a {tag} that is not one")
    fields, offset = value[:count], value[count:]
    tz = None
    if offset:
        if offset[0] == "?":
            return Opaque(["datetime.datetime" if tag == "dt" else "datetime.time"], True)
        if offset[0] is not None and type(offset[0]) is not int:
            raise Malformed(f"a {tag} whose offset is not one")
        tz = None if offset[0] is None else dt.timezone(dt.timedelta(microseconds=offset[0]))
    try:
        if tag == "td":
            return dt.timedelta(days=fields[0], seconds=fields[1], microseconds=fields[2])
        if tag == "date":
            return dt.date(*fields)
        if tag == "time":
            return dt.time(*fields, tzinfo=tz)
        return dt.datetime(*fields, tzinfo=tz)
    except (ValueError, OverflowError) as exc:
        raise Malformed(f"a {tag} that is not one") from exc


@dataclass(frozen=True)
class Raised:
    """What a ``raises`` point observed: the exception's class names up its MRO
    (``module.qualname``) and its message."""

    names: tuple[str, ...]
    message: str


_COMPARE = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
            ">=": operator.ge, "is": lambda a, b: a is b or (a == b and type(a) is type(b) and a in (None, True, False)),
            "is not": lambda a, b: not (a is b or (a == b and type(a) is type(b) and a in (None, True, False)))}  # fmt: skip


def meets(point: Point, observed: Any, case: int | None = None, index: int = 0) -> bool:
    """Whether one decoded observation, the point's ``index``-th in the run, meets its
    point in case ``case`` of its test (an exception in the comparison of mismatched plain
    types, as Python raises it, is a failure)."""
    try:
        expected = point.expected_in(case, index)
        if point.kind == "open":
            return observed is True
        if point.kind == "truth":
            return bool(observed) is expected
        if point.kind == "raises":
            if not isinstance(observed, Raised):
                return False
            short = {name.rsplit(".", 1)[-1] for name in observed.names}
            if not short & set(expected):
                return False
            return point.pattern is None or re.search(point.pattern, observed.message) is not None
        if point.op in ("in", "not in"):
            inside = (observed in expected) if point.observed_left else (expected in observed)
            return inside if point.op == "in" else not inside
        if isinstance(observed, float) and math.isnan(observed) and point.op == "==":
            return False
        return bool(_COMPARE[point.op](observed, expected))
    except Exception:  # noqa: BLE001 - e.g. "<" between a str and an int: the assertion raises
        return False


#: A test's sealing status, best first.
STATUSES = ("sealed", "guessable", "open")


def test_status(points: Mapping[int, Point], function: str) -> str:
    """What a forger must do to pass test function ``function``: ``sealed`` when a point in
    its own body is (it must do the work), ``guessable`` when every point is a first guess,
    ``open`` when it has an open point and no sealed one, or no point at all (the sandbox
    decides)."""
    statuses = {point.status for point in points.values() if point.function == function}
    return next((status for status in ("sealed", "open", "guessable") if status in statuses), "open")


def judge(points: Mapping[int, Point], function: str, observations: Iterable[tuple[int, Any]]) -> tuple[bool, str]:
    """The verdict on one run of a test whose function is ``function`` in a module whose
    points are ``points``, from the ``(point, encoded value)`` pairs its probe sent."""
    return judge_test({"": points}, "", function, [("", pid, encoded) for pid, encoded in observations])


def judge_test(modules: Mapping[str, Mapping[int, Point]], path: str, function: str,
               observations: Iterable[tuple[str, Any, Any]], case: int | None = None) -> tuple[bool, str]:  # fmt: skip
    """The verdict on one run (case ``case`` of a parametrized one) of test function
    ``function`` of module ``path``, from the ``(module key, point, encoded value)``
    triples sent while it ran (a helper module's points count too): every observation
    meets its point, and every point of the function's own was reached as many times as
    its ``reach`` says. (Whether the function returned without an exception is the
    harness's to say.)"""
    counts: dict[int, int] = {}
    seen: dict[tuple[str, int], int] = {}  # observations so far of each point, a helper module's too
    for key, pid, encoded in observations:
        points = modules.get(key) if isinstance(key, str) else None
        point = points.get(pid) if points is not None and isinstance(pid, int) else None
        if point is None:
            return False, f"an observation of an unknown point ({key!r}, {pid!r})"
        try:
            value = decode(encoded)
        except Malformed as exc:
            return False, f"point {pid}: {exc}"
        index = seen.get((key, pid), 0)
        seen[(key, pid)] = index + 1
        if not meets(point, value, case if key == path else None, index):
            return False, f"the check at line {point.line} does not hold"
        if key == path:
            counts[pid] = counts.get(pid, 0) + 1
    for point in modules.get(path, {}).values():
        if point.function == function and not point.reaches(counts.get(point.id, 0)):
            least, most = point.reach
            wanted = f"{least}" if least == most else f"at least {least}" if most is None else f"{least} to {most}"
            return False, f"the check at line {point.line} was reached {counts.get(point.id, 0)} times, not {wanted}"
    return True, ""


#: The longest observation the host reads (the harness sends none longer).
OBSERVATION_CAP = 1 << 20


def parse(text: Any) -> Any:
    """An observation as the harness sent it (JSON text) to the data ``decode`` reads;
    ``Malformed`` for anything else."""
    if not isinstance(text, str) or len(text) > OBSERVATION_CAP:
        raise Malformed("an observation that is not text within the cap")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise Malformed("an observation that is not JSON") from exc


def test_function(test_id: str) -> tuple[str, str, int | None]:
    """A test id's module path, function and sealed case (``t/test_x.py::TestA::test_b[case1-x]``
    -> ``("t/test_x.py", "TestA.test_b", 1)``; None without a ``caseN`` part)."""
    path, _, rest = test_id.partition("::")
    function = ".".join(part.split("[", 1)[0] for part in rest.split("::"))
    params = rest.partition("[")[2].rstrip("]")
    cases = [int(part[4:]) for part in params.split("-") if re.fullmatch(r"case\d{1,6}", part)]
    return path, function, cases[0] if len(cases) == 1 else None


def judge_run(outcomes: Mapping[str, tuple[str, str]], observations: Mapping[str, Sequence[Sequence[Any]]],
              modules: Mapping[str, Mapping[int, Point]]) -> dict[str, tuple[str, str]]:  # fmt: skip
    """The outcomes of a run with sealed judging applied: a test the harness saw pass whose
    module was compiled, or which sent observations, passes only when ``judge_test`` says
    so; anything else keeps its outcome. ``observations`` is test id -> ``[module key,
    point, JSON text]`` in the order sent."""
    judged = dict(outcomes)
    for test_id, (status, _) in outcomes.items():
        path, function, case = test_function(test_id)
        sent = observations.get(test_id, ())
        if status != "passed" or (path not in modules and not sent):
            continue
        try:
            triples = [_triple(entry) for entry in sent]
        except Malformed as exc:
            judged[test_id] = ("failed", f"[sealed judging] {exc}")
            continue
        ok, why = judge_test(modules, path, function, triples, case)
        if not ok:
            judged[test_id] = ("failed", f"[sealed judging] {why}")
    return judged


def _triple(entry: Any) -> tuple[str, Any, Any]:
    if not (isinstance(entry, (list, tuple)) and len(entry) == 3):
        raise Malformed("an observation that is not (module, point, value)")
    key, pid, text = entry
    return key, pid, parse(text)

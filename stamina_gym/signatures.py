"""Does every call a hidden test makes fit a signature the agent was told?

The interface check (``stamina_gym.interfaces``) asks whether each name a test uses was
named; this one asks whether the *call* fits. A prompt that gives ``bulk(action, ids)`` as
a backticked call tells the agent two arguments; a later test that calls
``service.bulk("add-tags", ids, ["b"])`` grades a third positional argument nobody named.

A told signature is a backticked call in a prompt (``create(title, tags=None)``, or an
example call, ``bulk("add-tags", [1, 2], ["home"])``), a spec answer, or a function the
seed defines. Each gives a shape: how many arguments may go by position (every argument
and parameter it shows) and which may go by keyword (its parameter names and keywords).
``...`` or ``*args`` in it lifts the limit on positions, ``...`` or ``**kw`` the one on
keywords. What was told of a name is taken together, over every paraphrase, answer and turn up to
this one and the seed: a call fits when it passes no more arguments by position than the
longest told shape shows, and each keyword it passes is one some told shape names. (The
interface check already asks that every keyword was named as a parameter in every
paraphrase; this one asks that it was named *for this call*.)

A call is checked when the test calls a product name (a method or function the reference
defines at this turn, by attribute, or imported from a product module) for which some
prompt, spec answer or the seed gave a shape; a name never given as a call is left to the
interface check. Calls with ``*`` or ``**`` arguments are not checked.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Iterable, Mapping

from stamina_gym import pyast
from stamina_gym.interfaces import _BUILTIN_ATTRIBUTES, _CODE_SPAN, _read_seed, _render, definitions, packages, turn_cached
from stamina_gym.task import Task, Turn

_CALL = re.compile(r"([A-Za-z_][\w.]*)\(([^()]*)\)")
_ANY = None


@dataclass(frozen=True)
class Shape:
    """What a told signature allows: at most ``positional`` arguments by position and
    keyword arguments named in ``keywords`` (``None``: no limit)."""

    positional: int | None
    keywords: frozenset[str] | None
    told: str
    """The signature as told, for the message."""

    def fits(self, positional: int, keywords: Iterable[str]) -> bool:
        if self.positional is not None and positional > self.positional:
            return False
        return self.keywords is None or set(keywords) <= self.keywords


@dataclass(frozen=True)
class Call:
    """One call a hidden test makes of a product name."""

    file: str
    line: int
    name: str
    positional: int
    keywords: tuple[str, ...]

    def __str__(self) -> str:
        words = f"{self.positional} positional argument(s)" + (f" and keyword(s) {', '.join(self.keywords)}" if self.keywords else "")
        return f"{self.file}:{self.line}: calls {self.name}() with {words}"


def told_shapes(text: str) -> dict[str, list[Shape]]:
    """The shapes the backticked calls of ``text`` (prose) give, by the called name's last part."""
    found: dict[str, list[Shape]] = {}
    for span in _CODE_SPAN.findall(text):
        for dotted, inside in _CALL.findall(span):
            shape = _shape_of(inside, f"{dotted}({inside})")
            if shape is not None:
                found.setdefault(dotted.rsplit(".", 1)[-1], []).append(shape)
    return found


def _shape_of(inside: str, told: str) -> Shape | None:
    """A signature (``create(title, *, tags=None)``) read as a definition, an example call
    (``bulk("add-tags", [1], ["b"])``) as a call; None for prose in parentheses. A told
    signature that shows ``self`` or ``cls`` fits a call with or without it: the prompt
    shows the parameter, and a function kept as an attribute (a decorator's
    ``cache_clear(self)``) takes it by position."""
    try:
        definition = ast.parse(f"def f({inside}): pass").body[0]
    except SyntaxError:
        definition = None
    if isinstance(definition, ast.FunctionDef):  # a told ``self`` may be passed (``Cls.get.cache(obj)``) or bound
        return _shape_of_def(definition.args, told, method=False)
    try:
        call = ast.parse(f"f({inside})", mode="eval").body
    except SyntaxError:
        return None
    assert isinstance(call, ast.Call)
    loose = any(isinstance(a, ast.Constant) and a.value is Ellipsis for a in call.args)
    starred = loose or any(isinstance(a, ast.Starred) for a in call.args)
    double = loose or any(k.arg is None for k in call.keywords)
    names = {a.id for a in call.args if isinstance(a, ast.Name)} | {k.arg for k in call.keywords if k.arg}
    return Shape(_ANY if starred else len(call.args) + len(call.keywords), _ANY if double else frozenset(names), told)


def _shape_of_def(args: ast.arguments, told: str, method: bool = True) -> Shape:
    """A definition's shape; a ``method``'s first parameter (``self``, ``cls``) is bound, so
    left out. A parameter named ``cls`` elsewhere (six's ``create_unbound_method(func,
    cls)``) is an argument like any other."""
    ordered = [a.arg for a in (*args.posonlyargs, *args.args)]
    if method and ordered and ordered[0] in ("self", "cls"):
        ordered = ordered[1:]
    keywords = frozenset([*ordered, *(a.arg for a in args.kwonlyargs)])
    return Shape(_ANY if args.vararg else len(ordered), _ANY if args.kwarg else keywords, told)


def seed_shapes(files: Mapping[str, str]) -> dict[str, list[Shape]]:
    """The shapes of the functions and methods a repository defines at module level or in
    its classes (``self`` and ``cls`` aside), and of its classes as their ``__init__``
    takes (any call of a class that inherits one); a function nested in another is no
    interface of the repository."""
    found: dict[str, list[Shape]] = {}
    for rel, tree in pyast.modules(files):
        bodies = [(tree.body, False)]
        while bodies:
            body, in_class = bodies.pop()
            for node in body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and pyast.is_property(node):
                    # ``obj.ttu(key, value, now)`` calls the property's value: any shape
                    found.setdefault(node.name, []).append(Shape(_ANY, _ANY, f"{rel}: property {node.name}"))
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    found.setdefault(node.name, []).append(_shape_of_def(node.args, f"{rel}: def {node.name}", in_class))
                elif isinstance(node, ast.ClassDef):
                    bodies.append((node.body, True))
                    # calling the class calls its __init__: marshmallow's ``Number(*, as_string=False,
                    # **kwargs)``; one it inherits from elsewhere takes what that one takes
                    init = next((item for item in node.body if isinstance(item, ast.FunctionDef) and item.name == "__init__"), None)
                    found.setdefault(node.name, []).append(
                        _shape_of_def(init.args, f"{rel}: class {node.name}") if init else Shape(_ANY, _ANY, f"{rel}: class {node.name}"))
    return found


def calls(source: str, file: str, names: Iterable[str], tops: Iterable[str], own: Iterable[str] = ()) -> list[Call]:
    """The calls ``source`` (a test module) makes of ``names`` (product methods and
    functions): by attribute (a name ``dict`` or ``set`` also has only on a product
    module), or by a name imported from a product module (``tops``). A call through
    ``self`` or ``cls`` of a method the tests' own classes define (``own``: a test case's
    ``self.cache(2)`` helper) is the tests' own, not the product's. A call reached through
    a class the module defines (``Cached.get.cache_clear(cached)``) passes the instance a
    method binds by position, so that argument is not counted."""
    wanted, tops, own = set(names), set(tops), set(own)
    tree = ast.parse(source)
    classes = {node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    imported = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                and node.module and node.module.split(".")[0] in tops for alias in node.names}  # fmt: skip
    modules = {alias.asname or alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
               for alias in node.names if alias.name.split(".")[0] in tops}  # fmt: skip
    # names bound to what another project provides: ``os.path.exists(name)`` beside tinydb's ``exists()``
    foreign = {alias.asname or alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
               for alias in node.names if alias.name.split(".")[0] not in tops}  # fmt: skip
    foreign |= {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                and not node.level and node.module and node.module.split(".")[0] not in tops for alias in node.names}  # fmt: skip
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Attribute) and node.func.attr in own and _receiver(node.func) in ("self", "cls"):
            continue
        if isinstance(node.func, ast.Attribute) and _base(node.func) in foreign:
            continue
        if isinstance(node.func, ast.Attribute) and (node.func.attr not in _BUILTIN_ATTRIBUTES or _base(node.func) in modules):
            name = node.func.attr  # a method that shares a name with a ``dict`` or ``set`` one counts on a product module only
        elif isinstance(node.func, ast.Name) and node.func.id in imported:
            name = node.func.id
        else:
            continue
        if name not in wanted or any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            continue
        unbound = isinstance(node.func, ast.Attribute) and _base(node.func) in classes and node.args
        found.append(Call(file, node.lineno, name, len(node.args) - bool(unbound), tuple(k.arg for k in node.keywords if k.arg)))
    return found


def _receiver(node: ast.Attribute) -> str | None:
    """The plain name an attribute is read from (``self`` in ``self.cache``), if any."""
    return node.value.id if isinstance(node.value, ast.Name) else None


def test_methods(sources: Iterable[str]) -> set[str]:
    """The names of the methods the classes of the test modules ``sources`` define; a
    module that does not parse defines none (pytest reports it where it is imported)."""
    found = set()
    for source in sources:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                found.update(n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
    return found


def _base(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


@turn_cached
def _turn_shapes(turn: Turn, params: Mapping[str, str | int]) -> dict[str, list[Shape]]:
    """The shapes any paraphrase of ``turn`` or its spec's answers give."""
    table: dict[str, list[Shape]] = {}
    texts = [_render(prompt, params) for prompt in turn.spec.prompts]
    texts += [point.answer for point in (turn.spec.spec.key_points if turn.spec.spec else ())]
    for text in texts:
        for name, shapes in told_shapes(text).items():
            table.setdefault(name, []).extend(shapes)
    return table


def check_turn(task: Task, turn: Turn, tree: Mapping[str, str], params: Mapping[str, str | int]) -> list[tuple[Call, list[Shape]]]:
    """The calls ``turn``'s tests make that fit no signature told up to this turn, each
    with the shapes that were told for its name; ``tree`` is the reference's repository
    after the turn (path -> text)."""
    told: dict[str, list[Shape]] = {name: list(shapes) for name, shapes in seed_shapes(_read_seed(task.seed_dir)).items()}
    for earlier in task.turns[: turn.index]:
        for name, shapes in _turn_shapes(earlier, params).items():
            told.setdefault(name, []).extend(shapes)
    tops = packages(tree)
    defined, _ = definitions(tree, tops)
    misfits = []
    sources = {path: task.render(path.read_text(encoding="utf-8"), params, str(path)) for path in turn.tests}
    helpers = [path.read_text(encoding="utf-8") for path in sorted((turn.dir / "tests").rglob("*.py")) if path not in sources]
    own = test_methods([*sources.values(), *helpers])  # a mixin in the tests' __init__.py too
    for path, source in sources.items():
        for call in calls(source, f"{turn.id}/tests/{path.name}", defined, tops, own):
            shapes = told.get(call.name)
            if shapes and not _fits_any(shapes, call):
                misfits.append((call, shapes))
    return misfits


def _fits_any(shapes: list[Shape], call: Call) -> bool:
    """Whether ``call`` fits what the shapes told together: no more positional arguments
    than the longest shows, and keywords each of which one of them names."""
    limit = None if any(s.positional is None for s in shapes) else max(s.positional for s in shapes)
    keywords = None if any(s.keywords is None for s in shapes) else frozenset().union(*(s.keywords for s in shapes))
    return Shape(limit, keywords, "").fits(call.positional, call.keywords)

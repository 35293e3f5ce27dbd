"""Is every interface a hidden test uses one the agent was told about?

A hidden test is fair when each product name it relies on was *named* to the agent: by a
prompt of this turn or an earlier one (in every paraphrase, since the episode shows one),
in the seed repository, or in an answer of a turn's hidden spec (the agent gets it by
asking). Otherwise the test grades knowledge of the reference's internals, which only the
oracle has.

What a test uses (read from its syntax tree, nothing is imported):

- ``module``: a product module it imports (``todo.service``) or runs (``-m todo.cli``);
- ``name``, ``attribute``, ``keyword``, ``field``: names imported from product modules,
  attributes read from values that come from them, keyword arguments passed to their
  functions and methods, and to their classes (fields); these count
  only where the reference's code at this turn defines the name (an attribute of a
  ``dict`` or a ``sqlite3`` connection is not the product's);
- ``route``: the literal segments and query parameters of an HTTP path (``"/todos/1/archive?all=1"``);
- ``flag``: a command-line option (``"--db"``); ``env``: an environment variable (``"TODO_PORT"``).

What counts as named: a prose word names an identifier only in code form (between
backticks, called as ``name(``, dotted, or spelt like code: ``set_tags``, ``TodoService``),
since "create a todo" does not name a ``create`` method, and a path in a code span names a
route, not a method (``/todos/{id}/archive``). A keyword argument is named only as a
parameter (``create(title, tags=None)`` or ``tags=``): that a todo has tags does not say
that ``create`` takes them. A route segment, flag or variable is named by its plain text.
The seed repository names every identifier in it.
"""

from __future__ import annotations

import ast
import bisect
import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

from stamina_gym import pyast
from stamina_gym.quality.measure import read_tree
from stamina_gym.task import Task, Turn, render_params

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_CALLED = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")
_DOTTED = re.compile(r"[A-Za-z_][\w]*(?:[./][A-Za-z_][\w]*)+")
_PATH_IN_SPAN = re.compile(r"(?<![\w.])/[\w\-/{}.?=&]*")
_ROUTE = re.compile(r"^/[A-Za-z0-9_\-/{}.]*(?:\?.*)?$")
_MODULE_PATH = re.compile(r"\w+(?:\.\w+)+")
_FLAG = re.compile(r"^--[A-Za-z][\w-]*$")
_ENV = re.compile(r"^[A-Z][A-Z0-9]*_[A-Z0-9_]+$")
#: Keys of a WSGI or CGI environ, and the interpreter's own variables: not the product's.
_STANDARD_ENV = frozenset({"REQUEST_METHOD", "PATH_INFO", "QUERY_STRING", "CONTENT_LENGTH", "CONTENT_TYPE",
                           "SERVER_NAME", "SERVER_PORT", "SERVER_PROTOCOL", "SCRIPT_NAME", "REMOTE_ADDR",
                           "PYTHONPATH", "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE", "PYTHONIOENCODING"})
_BUILTIN_ATTRIBUTES = frozenset(name for kind in (str, bytes, dict, list, tuple, set, int, float) for name in dir(kind))


@dataclass(frozen=True)
class Use:
    """One product name a hidden test relies on."""

    kind: str
    name: str
    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.kind} {self.name!r}"


# -- what the product defines -----------------------------------------------------------


def packages(texts: Mapping[str, str]) -> frozenset[str]:
    """Top-level product modules and packages of a tree (``tests/`` and hidden support aside)."""
    tops = set()
    for rel in texts:
        parts = rel.split("/")
        if rel.endswith(".py") and parts[0] not in ("tests", "test") and not parts[-1].startswith("test_"):
            tops.add(parts[0][:-3] if len(parts) == 1 else parts[0])
    return frozenset(top for top in tops if top.isidentifier() and top not in ("setup", "conftest"))


def definitions(texts: Mapping[str, str], tops: Iterable[str]) -> tuple[frozenset[str], frozenset[str]]:
    """Every name the product's modules define (functions, classes, their parameters, the
    keywords they read from ``**kwargs`` by name, attributes, module-level names, the
    modules themselves), and every string constant in them with each word of it."""
    tops = set(tops)
    names: set[str] = set()
    strings: set[str] = set()
    for rel, text in texts.items():
        if rel.endswith(".py") and rel.split("/")[0].removesuffix(".py") in tops:
            names.update(part.removesuffix(".py") for part in rel.split("/"))
            file_names, file_strings = _file_facts(text)
            names |= file_names
            strings |= file_strings
    return frozenset(names), frozenset(strings)


@functools.lru_cache(maxsize=4096)
def _file_facts(text: str) -> tuple[frozenset[str], frozenset[str]]:
    names: set[str] = set()
    strings: set[str] = set()
    try:
        tree = pyast.parse(text)
    except SyntaxError:
        return frozenset(), frozenset()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.args.kwarg:
            names |= _read_from(node, node.args.kwarg.arg)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            strings.add(node.value)
            strings.update(re.findall(r"[\w-]+", node.value))
    return frozenset(names), frozenset(strings)


def _read_from(function: ast.FunctionDef | ast.AsyncFunctionDef, kwargs: str) -> set[str]:
    """The keywords ``function`` reads from its ``**kwargs`` by name: a parameter in all
    but its spelling (tinydb's ``kwargs.pop('default_table', ...)``)."""
    found: set[str] = set()
    for node in ast.walk(function):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("pop", "get", "setdefault")
                and isinstance(node.func.value, ast.Name) and node.func.value.id == kwargs and node.args):  # fmt: skip
            key = node.args[0]
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == kwargs:
            key = node.slice
        elif (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn))
                and isinstance(node.comparators[0], ast.Name) and node.comparators[0].id == kwargs):  # fmt: skip
            key = node.left
        else:
            continue
        if isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value.isidentifier():
            found.add(key.value)
    return found


# -- what a test uses ---------------------------------------------------------------------


def uses(source: str, file: str, tops: Iterable[str]) -> list[Use]:
    """The product names ``source`` (a test module) relies on, before any filtering."""
    tops = set(tops)
    tree = pyast.parse(source, filename=file)
    found: list[Use] = []
    tainted: set[str] = set()
    raised: set[str] = set()  # ``with pytest.raises(...) as info``: info.value is the exception

    def product(module: str | None) -> bool:
        return bool(module) and module.split(".")[0] in tops

    def derived(node: ast.AST) -> bool:
        """Does the value of ``node`` come from the product?"""
        if isinstance(node, ast.Name):
            return node.id in tainted
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in raised:
            return node.attr == "value"
        if isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
            return derived(node.value)
        if isinstance(node, ast.Await):
            return derived(node.value)
        if isinstance(node, ast.Call):
            if derived(node.func):
                return True
            # pytest.raises(ProductError) as info: info.value is the product's exception
            return isinstance(node.func, ast.Attribute) and node.func.attr == "raises" and any(map(derived, node.args))
        return False

    def targets(node: ast.AST) -> Iterable[str]:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name):
                yield sub.id

    # Flow-insensitive taint over the module's names, to a fixed point (fixtures that
    # return product values taint the parameters named after them).
    while True:
        before = len(tainted) + len(raised)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and product(node.module):
                tainted.update(alias.asname or alias.name for alias in node.names)
            elif isinstance(node, ast.Import):
                tainted.update((alias.asname or alias.name).split(".")[0] for alias in node.names if product(alias.name))
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) and node.value is not None:
                if derived(node.value):
                    for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                        tainted.update(targets(target))
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)) and derived(node.iter):
                tainted.update(targets(node.target))
            elif isinstance(node, ast.withitem) and node.optional_vars is not None and derived(node.context_expr):
                context = node.context_expr
                is_raises = isinstance(context, ast.Call) and isinstance(context.func, ast.Attribute) and context.func.attr == "raises"
                (raised if is_raises else tainted).update(targets(node.optional_vars))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for sub in ast.walk(node):
                    if isinstance(sub, (ast.Return, ast.Yield)) and sub.value is not None and derived(sub.value):
                        tainted.add(node.name)
                        break
        if len(tainted) + len(raised) == before:
            break

    # A path or option handed to the product is data it is given (a route registered on a
    # router under test), not a route or option of the product.
    given = {id(sub) for node in ast.walk(tree) if isinstance(node, ast.Call) and derived(node.func)
             for arg in [*node.args, *(k.value for k in node.keywords)] for sub in ast.walk(arg)
             if isinstance(arg, (ast.Constant, ast.JoinedStr))}  # fmt: skip

    local = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}

    def add(kind: str, name: str, node: ast.AST) -> None:
        found.append(Use(kind, name, file, getattr(node, "lineno", 0)))

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and product(node.module):
            add("module", node.module, node)
            for alias in node.names:
                add("name", alias.name, node)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if product(alias.name):
                    add("module", alias.name, node)
        elif isinstance(node, ast.Attribute) and derived(node.value) and not (
                isinstance(node.value, ast.Name) and node.value.id in raised):  # fmt: skip
            add("attribute", node.attr, node)
        elif isinstance(node, ast.Call) and derived(node.func) and not (
                isinstance(node.func, ast.Name) and node.func.id in local):  # a helper of the test's own
            callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            for keyword in node.keywords:
                if keyword.arg:  # a class's keywords are its fields, named as attributes are
                    add("field" if callee[:1].isupper() else "keyword", keyword.arg, keyword)
        elif isinstance(node, (ast.Constant, ast.JoinedStr)) and id(node) not in given:
            text = _literal(node)
            if text is None:
                continue
            if _ROUTE.match(text) and len(text) > 1:
                path, _, query = text.partition("?")
                for segment in path.split("/"):
                    if segment and "{}" not in segment and not segment.isdigit() and _WORD.fullmatch(segment.replace("-", "_")):
                        add("route", segment, node)
                for pair in filter(None, query.split("&")):
                    key = pair.split("=")[0]
                    if key and "{}" not in key:
                        add("route", key, node)
            elif _FLAG.match(text) and text not in ("-m", "-c", "-"):
                add("flag", text, node)
            elif _ENV.match(text) and text not in _STANDARD_ENV and not text.startswith("HTTP_"):
                add("env", text, node)
            elif product(text) and _MODULE_PATH.fullmatch(text):  # "pkg.moves." + name is built, not named
                add("module", text, node)
    return found


def _literal(node: ast.AST) -> str | None:
    """A string constant, or an f-string with each replacement field as ``{}``."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    parts = []
    for value in node.values:
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            parts.append(value.value)
        else:
            parts.append("{}")
    return "".join(parts)


# -- what the agent was told ------------------------------------------------------------


@dataclass(frozen=True)
class Told:
    """What was named to the agent: identifiers in code form, parameter names (a keyword
    argument is named only as one: ``create(title, tags=None)``, ``tags=``), and plain
    text (for routes, flags and variables)."""

    code: frozenset[str] = frozenset()
    keywords: frozenset[str] = frozenset()
    text: str = ""

    @classmethod
    def prose(cls, text: str) -> "Told":
        return cls(frozenset(code_names(text)), frozenset(parameter_names(text)), _plain_words(text))

    @classmethod
    def repository(cls, files: Mapping[str, str]) -> "Told":
        """A repository the agent has: every identifier and path in it is named."""
        words: set[str] = set()
        for rel, content in files.items():
            words.update(_WORD.findall(content))
            words.update([rel, rel.removesuffix(".py"), *(part.removesuffix(".py") for part in rel.split("/"))])
        return cls(frozenset(words), frozenset(words), "\n".join(files.values()))

    def __or__(self, other: "Told") -> "Told":
        return Told(self.code | other.code, self.keywords | other.keywords, f"{self.text}\n{other.text}")

    def __and__(self, other: "Told") -> "Told":
        shared = set(self.text.split()) & set(other.text.split())
        return Told(self.code & other.code, self.keywords & other.keywords, " ".join(sorted(shared)))

    def names(self, use: Use) -> bool:
        if use.kind == "module":  # also a dotted string such as ``"todo.auth.HASH_ITERATIONS"``
            parts = use.name.split(".")
            for cut in range(len(parts), 0, -1):
                module, rest = ".".join(parts[:cut]), parts[cut:]
                spelt = {module, module.replace(".", "/"), module.replace(".", "/") + ".py"}
                if spelt & self.code and all(name in self.code for name in rest):
                    return True
            return False
        if use.kind in ("route", "flag", "env"):
            return re.search(rf"(?<![\w-]){re.escape(use.name)}(?![\w-])", self.text) is not None
        if use.kind == "keyword":
            return use.name in self.keywords
        return use.name in self.code


def code_names(text: str) -> set[str]:
    """Identifiers ``text`` (prose) names in code form: in a code span (route paths aside:
    ``/todos/{id}/archive`` names a route, not an ``archive`` method), called, dotted, or
    spelt like code (``set_tags``, ``TodoService``)."""
    names: set[str] = set()
    for span in _CODE_SPAN.findall(text):
        span = _PATH_IN_SPAN.sub(" ", span)
        names.update(_WORD.findall(span))
        names.update(_DOTTED.findall(span))
    names.update(_CALLED.findall(text))
    for dotted in _DOTTED.findall(text):
        names.add(dotted)
        names.update(_WORD.findall(dotted))
    for word in _WORD.findall(text):
        if "_" in word.strip("_") or re.search(r"[a-z][A-Z]", word):
            names.add(word)
    return names


def parameter_names(text: str) -> set[str]:
    """Names ``text`` gives as parameters: inside a signature ``name(a, b=None)`` or as ``b=``."""
    names = set(re.findall(r"([A-Za-z_]\w*)\s*=(?!=)", text))
    for inside in re.findall(r"[A-Za-z_]\w*\(([^()]*)\)", text):
        names.update(_WORD.findall(inside))
    return names


def told_by(turn: Turn, params: Mapping[str, str | int]) -> Told:
    """What one turn names: what every paraphrase names (the episode shows one of them),
    and what its hidden spec's answers name (the agent hears them by asking). Prompts are
    read with the task's ``params`` filled in; a turn's own variables (chosen when the
    turn begins) are left blank, as nothing a test uses may hang on them."""
    prompts = [Told.prose(_without(_render(prompt, params), turn.spec.planted)) for prompt in turn.spec.prompts]
    common = prompts[0]
    for other in prompts[1:]:
        common = common & other
    for point in turn.spec.spec.key_points if turn.spec.spec else ():
        common = common | Told.prose(point.answer)
    return common


def _without(text: str, planted: Iterable[str]) -> str:
    """``text`` with each planted piece (``TurnSpec.planted``, longest first) blanked
    where it stands as a whole token: noise names nothing."""
    for piece in sorted(planted, key=len, reverse=True):
        text = re.sub(rf"(?<![\w/.-]){re.escape(piece)}(?![\w/-])", " ", text)
    return text


def turn_cached(fn):
    """``fn(turn, params)`` computed once per version of the turn's ``turn.yaml`` and
    params: a check of turn k reads what every earlier turn told."""
    memo: dict[tuple, object] = {}

    @functools.wraps(fn)
    def cached(turn: Turn, params: Mapping[str, str | int]):
        key = (turn.dir, turn.dir.joinpath("turn.yaml").stat().st_mtime_ns, tuple(sorted(params.items())))
        if key not in memo:
            memo[key] = fn(turn, params)
        return memo[key]

    return cached


_told_by_cached = turn_cached(told_by)


def _render(text: str, params: Mapping[str, str | int]) -> str:
    import jinja2

    return jinja2.Environment(autoescape=False).from_string(text).render(**params)


def _plain_words(text: str) -> str:
    return " ".join(re.findall(r"-{0,2}\w[\w\-./]*\w|-{0,2}\w", text))


# -- the check ---------------------------------------------------------------------------


def contract(task: Task, turn: Turn, tree: Mapping[str, str], params: Mapping[str, str | int]) -> list[tuple[Use, str | None]]:
    """Each product name ``turn``'s hidden tests use (the first use of each), with where
    the agent was told it: ``"seed"``, ``"turn N"`` (the first turn naming it) or None
    (nobody did). ``tree`` is the reference's repository after the turn (path -> text)."""
    seed = _read_seed(task.seed_dir)
    tops = packages(tree)
    defined, spelt = definitions(tree, tops)
    # what the agent knew after each source, the seed first: a dotted name may be told in
    # parts (``todo.auth`` by one turn, ``HASH_ITERATIONS`` by a later one)
    labels = ["seed", *(f"turn {earlier.index}" for earlier in task.turns[: turn.index])]
    known = [Told.repository(seed)]
    for earlier in task.turns[: turn.index]:
        known.append(known[-1] | _told_by_cached(earlier, params))
    found: dict[tuple[str, str], tuple[Use, str | None]] = {}
    for path in turn.tests:
        source = path.read_text(encoding="utf-8")
        if task.meta.params:
            source = render_params(source, params, str(path))
        for use in uses(source, f"{turn.id}/tests/{path.name}", tops):
            if use.kind in ("route", "flag") and use.name not in spelt:
                continue  # data (an id in a path, a sort key), not a route or option of the product
            relevant = use.kind in ("module", "route", "flag", "env") or (
                use.name in defined and use.name not in _BUILTIN_ATTRIBUTES and not use.name.startswith("__"))
            if relevant and (use.kind, use.name) not in found:
                first = bisect.bisect_left(range(len(known)), True, key=lambda i: known[i].names(use))
                found[(use.kind, use.name)] = (use, labels[first] if first < len(known) else None)
    return list(found.values())


def check_turn(task: Task, turn: Turn, tree: Mapping[str, str], params: Mapping[str, str | int]) -> list[Use]:
    """The uses in ``turn``'s hidden tests of product names nobody told the agent about;
    ``tree`` is the reference's repository after the turn (path -> text)."""
    return [use for use, where in contract(task, turn, tree, params) if where is None]


@functools.lru_cache(maxsize=8)
def _read_seed(root: Path) -> dict[str, str]:
    texts, _ = read_tree(root, 1 << 20, 10_000)
    return {rel: data.decode("utf-8", "replace") for rel, data in texts.items()}

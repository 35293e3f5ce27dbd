"""Which strings of a module are built from constants only: the false positives of
bandit's B608 ("possible SQL injection through string-based query construction").

bandit flags every SQL-looking string built with an f-string, ``%``, ``+`` or
``.format()``, whatever is spliced in, so a storage module that writes
``f"SELECT {_COLUMNS} FROM todos WHERE id IN ({_placeholders(ids)})"`` collects a medium
finding per query although no value a caller passes can reach the SQL text. Such findings
grow with the number of queries, not with any risk. This module follows, within one
module, where each spliced value comes from and accepts it only when every way it can be
bound yields text the program itself wrote:

* literals, and the module's names whose every binding is such text (``_COLUMNS``);
* a local name whose every binding in the function is such text (``where = " WHERE " +
  " AND ".join(clauses)`` with ``clauses`` a local list that only ever gets literals
  appended), a loop variable over such a collection, a comprehension's element built of
  such text (``"?" for _ in ids``: the values only decide how many);
* an item of such a collection (``SORT_KEYS[key]``: whichever key, the value is ours),
  ``sep.join`` of one, ``len()`` of anything, a call of a module function whose every
  ``return`` is such text;
* a name unpacked from a tuple (``where, params = ...``) whose item at that place is such
  text in every way the value can come: a literal tuple, both arms of a conditional, each
  ``return`` of a module function, or of a method called on an object of a class of the
  module (``TodoFilter(done=done).where()``, or ``filters.where()`` with ``filters: TodoFilter``
  a parameter, or a local only ever bound to ``TodoFilter(...)``), when the class defines
  the method once, undecorated, no ``__new__``, and no class of the module derives from it.

A parameter's annotation is believed only for a method name no built-in type has and
no other function or method of the tree is named (``defined_names``; the meter voids the
proof otherwise), so an object of another class passed for it cannot bring its own. A parameter, an attribute, a global rebound in a function or anything
else is not. A string a test cannot prove constant stays flagged: the analysis errs
towards bandit.
"""

from __future__ import annotations

import ast
import copy
from typing import Iterable

from stamina_gym.rules import interpolated

_STRING_METHODS = frozenset({"upper", "lower", "strip", "lstrip", "rstrip", "title", "casefold", "replace"})
_SEQUENCE_CALLS = frozenset({"sorted", "list", "tuple", "set", "frozenset", "reversed"})


def constant_lines(tree: ast.Module) -> dict[int, frozenset[str]]:
    """The lines of a module on which a string is built (f-string, ``%``, ``+``,
    ``.format()``) and every string built there splices in constant text only, each with
    the module-level names that proof relies on: another module that assigns one of them
    (``storage._COLUMNS = ...``) voids it (``attribute_writes``)."""
    facts = _Module(tree)
    safe: dict[int, set[str]] = {}
    unsafe: set[int] = set()
    for function, node in _walk_with_function(tree):
        parts = interpolated(node)
        if parts is None:
            continue
        lines = range(node.lineno, (node.end_lineno or node.lineno) + 1)
        facts.relied = set()
        if all(facts.text(part, function) for part in parts):
            for line in lines:
                safe.setdefault(line, set()).update(facts.relied)
        else:
            unsafe.update(lines)
    return {line: frozenset(names) for line, names in safe.items() if line not in unsafe}


#: Prefix of a relied-on name that means "a function or method of this name is defined
#: once in the whole tree" (``defined_names``).
DEFINED = "def:"
_BUILTIN_METHODS = frozenset(name for kind in (str, bytes, int, float, list, tuple, dict, set, frozenset)
                             for name in dir(kind))  # fmt: skip


def defined_names(tree: ast.Module) -> list[str]:
    """The name of every function and method a module defines, and of every attribute
    bound in a class body, once per definition."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.append(node.name)
        elif isinstance(node, ast.ClassDef):
            for statement in node.body:
                if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                    targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
                    names += [name for target in targets for name in _target_names(target)]
    return sorted(names)


def attribute_writes(tree: ast.Module) -> set[str]:
    """Names of attributes a module assigns or deletes on anything but ``self`` and
    ``cls`` (``setattr`` with a literal name included); ``"*"`` when it may write names
    we cannot read: ``globals()``, ``vars()``, ``__dict__``, ``__setattr__``,
    ``sys.modules``, ``exec``, or ``setattr`` with a computed name on a module it imports
    (or on anything but a plain variable). A module object handed to a function and
    changed there with a computed name is not followed."""
    imported = {(alias.asname or alias.name).split(".")[0]
                for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom)) for alias in node.names}
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)):
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                found.add(node.attr)
        elif isinstance(node, ast.Attribute) and node.attr in ("__dict__", "modules", "__setattr__", "__delattr__"):
            found.add("*")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in ("globals", "vars", "exec", "eval", "__import__"):
                found.add("*")
            elif node.func.id in ("setattr", "delattr") and len(node.args) > 1:
                target, name = node.args[0], node.args[1]
                if isinstance(name, ast.Constant) and isinstance(name.value, str):
                    found.add(name.value)
                elif not isinstance(target, ast.Name) or target.id in imported:
                    found.add("*")
    return found


def _walk_with_function(tree: ast.Module) -> Iterable[tuple[ast.AST | None, ast.AST]]:
    """Every node with the innermost function around it (None at module level); a loop,
    so deeply nested code meets no recursion limit."""
    stack: list[tuple[ast.AST | None, ast.AST]] = [(None, tree)]
    while stack:
        function, node = stack.pop()
        yield function, node
        inner = node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) else function
        stack += [(inner, child) for child in ast.iter_child_nodes(node)]


class _Module:
    def __init__(self, tree: ast.Module) -> None:
        self.functions = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self.classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
        self._derived = {base.id for n in ast.walk(tree) if isinstance(n, ast.ClassDef)
                         for base in n.bases if isinstance(base, ast.Name)}  # fmt: skip
        self._locals: dict[int, dict[str, list[ast.AST]]] = {}
        self._busy: set[tuple[int, ...]] = set()
        self._known: dict[tuple, bool] = {}
        self._assumed = 0  # cycle assumptions made so far
        self.relied: set[str] = set()
        """Module-level names the last proofs used."""
        self.bindings = self._locals_of(tree)
        """Name -> every value the module's own code binds it to (in ``if``, ``for``,
        ``try`` at module level too); a name a function rebinds (``global``) is opaque."""
        for node in ast.walk(tree):
            if isinstance(node, ast.Global):
                for name in node.names:
                    self.bindings[name] = [_Opaque()]
        for name in [*self.functions, *self.classes]:
            self.bindings.setdefault(name, []).append(_Opaque())  # a function or a class is not text

    # -- text -----------------------------------------------------------------------------

    def text(self, node: ast.AST, function: ast.AST | None) -> bool:
        """Whether ``node`` evaluates to text (or a number) the module itself wrote."""
        return self._guarded(self._text, node, function)

    def _guarded(self, judge, node: ast.AST, function: ast.AST | None, *extra: int) -> bool:
        """``judge(node, function)``, each answer kept: a chain of names that each use the
        one before twice (``b = a + a``, ``c = b + b``, ...) costs linear time, not
        exponential. An answer that leaned on a cycle's assumption is not kept."""
        key = (judge.__name__, id(node), id(function), *extra)
        if key in self._known:
            return self._known[key]
        busy = (id(node), *extra)
        if busy in self._busy:  # a cycle (x = x + "a"): the other parts and bindings decide
            self._assumed += 1
            return True
        self._busy.add(busy)
        assumed = self._assumed
        try:
            answer = judge(node, function, *extra)
        finally:
            self._busy.discard(busy)
        if self._assumed == assumed:
            self._known[key] = answer
        return answer

    def _text(self, node: ast.AST, function: ast.AST | None) -> bool:
        if isinstance(node, _Item):
            return self.collection(node.iterable, function)
        if isinstance(node, _Added):
            return True  # adding to a list binds no text to the name itself
        if isinstance(node, _Element):
            return self.element(node.value, node.index, function)
        if isinstance(node, ast.Constant):
            return True
        parts = interpolated(node)
        if parts is not None:
            base = node.func.value if isinstance(node, ast.Call) else None  # "{}".format(...)
            return all(self.text(p, function) for p in parts) and (base is None or self.text(base, function))
        if isinstance(node, ast.Name):
            return self._name(node.id, function, self.text)
        if isinstance(node, ast.IfExp):
            return self.text(node.body, function) and self.text(node.orelse, function)
        if isinstance(node, ast.Subscript):
            return self.collection(node.value, function) or self.text(node.value, function)
        if isinstance(node, ast.Call):
            return self._call(node, function)
        return False

    def _call(self, node: ast.Call, function: ast.AST | None) -> bool:
        func = node.func
        if isinstance(func, ast.Name) and func.id == "len":
            return True
        if isinstance(func, ast.Attribute):
            if func.attr == "join" and len(node.args) == 1:
                return self.text(func.value, function) and self.collection(node.args[0], function)
            if func.attr in _STRING_METHODS:
                return self.text(func.value, function) and all(self.text(a, function) for a in node.args)
        target = self._callee(node, function)
        return target is not None and self._returns_text(target)

    def _returns_text(self, target: ast.AST) -> bool:
        returns = [n for n in _own_nodes(target) if isinstance(n, ast.Return)]
        return bool(returns) and all(r.value is not None and self.text(r.value, target) for r in returns)

    # -- tuples ---------------------------------------------------------------------------

    def element(self, node: ast.AST, index: int, function: ast.AST | None) -> bool:
        """Whether item ``index`` of the tuple ``node`` evaluates to is text the module wrote."""
        return self._guarded(self._element, node, function, index)

    def _element(self, node: ast.AST, function: ast.AST | None, index: int) -> bool:
        if isinstance(node, (ast.Tuple, ast.List)):
            return (not any(isinstance(e, ast.Starred) for e in node.elts) and index < len(node.elts)
                    and self.text(node.elts[index], function))  # fmt: skip
        if isinstance(node, ast.IfExp):
            return self.element(node.body, index, function) and self.element(node.orelse, index, function)
        if isinstance(node, ast.Name):
            return self._name(node.id, function, lambda value, where: self.element(value, index, where))
        if isinstance(node, ast.Call):
            target = self._callee(node, function)
            if target is None:
                return False
            returns = [n for n in _own_nodes(target) if isinstance(n, ast.Return)]
            return bool(returns) and all(r.value is not None and self.element(r.value, index, target) for r in returns)
        return False

    # -- calls ----------------------------------------------------------------------------

    def _callee(self, node: ast.Call, function: ast.AST | None) -> ast.AST | None:
        """The function of the module a call runs, when the module decides it: a module
        function (not rebound, shadowed or decorated), or a method of a class of the module
        called on an object of that class (see the module's docstring)."""
        func = node.func
        if isinstance(func, ast.Name):
            target = self.functions.get(func.id)
            if target is None or function is not None and func.id in self._locals_of(function):
                return None
            if len(self.bindings.get(func.id, ())) != 1 or target.decorator_list:  # rebound or wrapped
                return None
            self.relied.add(func.id)
            return target
        if not isinstance(func, ast.Attribute):
            return None
        cls = self._class_of(func.value, function)
        if cls is None or cls.name in self._derived:
            return None
        defined = [n for n in cls.body if _binds(n, func.attr)]
        if any(_binds(n, "__new__") for n in cls.body) or len(defined) != 1:
            return None
        method = defined[0]
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) or method.decorator_list:
            return None
        if self._by_annotation(func.value, function):
            # Believed from an annotation: any object may come in. Not for a method name a
            # built-in type has, and void where another file defines the name too.
            if func.attr in _BUILTIN_METHODS:
                return None
            self.relied.add(f"{DEFINED}{func.attr}")
        self.relied.update((cls.name, func.attr))
        return method

    def _by_annotation(self, node: ast.AST, function: ast.AST | None) -> bool:
        """Whether ``node``'s class is known from a parameter's annotation only."""
        return (isinstance(node, ast.Name) and function is not None and node.id not in self._locals_of(function)
                and node.id in _parameters(function))  # fmt: skip

    def _class_of(self, node: ast.AST, function: ast.AST | None) -> ast.ClassDef | None:
        """The class of the module whose object ``node`` is: a call of the class, a
        parameter annotated with it, a local every binding of which is a call of it."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in self.classes:
            if len(self.bindings.get(node.func.id, ())) != 1:
                return None  # the class name is rebound
            if function is not None and node.func.id in self._locals_of(function):
                return None
            return self.classes[node.func.id]
        if not isinstance(node, ast.Name) or function is None:
            return None
        bound = self._locals_of(function)
        if node.id in bound:
            found = {id(c): c for c in (self._class_of(value, function) if isinstance(value, ast.Call) else None
                                        for value in bound[node.id])}  # fmt: skip
            return next(iter(found.values())) if len(found) == 1 else None
        annotation = _annotation(function, node.id)
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            annotation = ast.Name(id=annotation.value)
        if isinstance(annotation, ast.Name) and annotation.id in self.classes and len(self.bindings[annotation.id]) == 1:
            return self.classes[annotation.id]
        return None

    # -- collections --------------------------------------------------------------------

    def collection(self, node: ast.AST, function: ast.AST | None) -> bool:
        """Whether every item ``node`` can yield is text the module wrote."""
        return self._guarded(self._collection, node, function)

    def _collection(self, node: ast.AST, function: ast.AST | None) -> bool:
        if isinstance(node, _Added):
            return self.collection(node.items, function)
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return all(self.text(e, function) for e in node.elts)
        if isinstance(node, ast.Dict):
            return all(k is not None and self.text(k, function) for k in node.keys) and all(
                self.text(v, function) for v in node.values)  # fmt: skip
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return True
        if isinstance(node, ast.Name):
            return self._name(node.id, function, self.collection)
        if isinstance(node, (ast.GeneratorExp, ast.ListComp, ast.SetComp)):
            return self._comprehension_text(node.elt, node.generators, function)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self.collection(node.left, function) and self.collection(node.right, function)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):  # ["?"] * n: n decides how many only
            return self.collection(node.left, function) or self.collection(node.right, function)
        if isinstance(node, ast.IfExp):
            return self.collection(node.body, function) and self.collection(node.orelse, function)
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in _SEQUENCE_CALLS:
                return len(node.args) == 1 and self.collection(node.args[0], function)
            if isinstance(func, ast.Attribute) and func.attr in ("keys", "values", "items", "split"):
                return self.collection(func.value, function) or (func.attr == "split" and self.text(func.value, function))
        return False

    def _comprehension_text(self, element: ast.AST, generators: list[ast.comprehension], function) -> bool:
        """The element's text, where each comprehension variable stands for an item of its
        iterable (trusted when the iterable is a trusted collection)."""
        trusted = {name for gen in generators if self.collection(gen.iter, function) for name in _target_names(gen.target)}
        loop = {name for gen in generators for name in _target_names(gen.target)}
        names = {n.id for n in ast.walk(element) if isinstance(n, ast.Name)}
        if names & (loop - trusted):
            return False
        return self.text(_without(element, loop), function)

    # -- names ----------------------------------------------------------------------------

    def _name(self, name: str, function: ast.AST | None, check) -> bool:
        if function is not None:
            bound = self._locals_of(function)
            if name in bound:
                return all(check(value, function) for value in bound[name])
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and name in _parameters(function):
                return False
        values = self.bindings.get(name)
        self.relied.add(name)
        return bool(values) and all(check(value, None) for value in values)

    def _locals_of(self, function: ast.AST) -> dict[str, list[ast.AST]]:
        """Name -> what each binding in ``function`` binds it to; ``for x in C`` binds an
        item of C (``_Item``), ``x.append(v)`` and ``x += [v]`` add to a list."""
        key = id(function)
        if key not in self._locals:
            found: dict[str, list[ast.AST]] = {}
            for node in _own_nodes(function):
                for name, value in _assignments(node):
                    found.setdefault(name, []).append(value)
                if isinstance(node, (ast.For, ast.AsyncFor)):
                    for name in _target_names(node.target):
                        found.setdefault(name, []).append(_Item(node.iter) if isinstance(node.target, ast.Name) else _Opaque())
                elif isinstance(node, (ast.With, ast.AsyncWith)):
                    for item in node.items:
                        for name in _target_names(item.optional_vars) if item.optional_vars else ():
                            found.setdefault(name, []).append(_Opaque())
                elif isinstance(node, ast.NamedExpr):
                    found.setdefault(node.target.id, []).append(node.value)
                elif isinstance(node, (ast.Import, ast.ImportFrom)):
                    for alias in node.names:
                        found.setdefault((alias.asname or alias.name).split(".")[0], []).append(_Opaque())
                elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                      and node.func.attr in ("append", "extend", "insert") and isinstance(node.func.value, ast.Name)):
                    value = node.args[-1] if node.args else _Opaque()
                    added = ast.List(elts=[value]) if node.func.attr in ("append", "insert") else value
                    found.setdefault(node.func.value.id, []).append(_Added(added))
            self._locals[key] = found
        return self._locals[key]


class _Item(ast.AST):
    """An item of ``iterable`` (a loop variable)."""

    def __init__(self, iterable: ast.AST) -> None:
        super().__init__()
        self.iterable = iterable


class _Added(ast.AST):
    """What a list method adds to a list (a collection)."""

    def __init__(self, items: ast.AST) -> None:
        super().__init__()
        self.items = items


class _Element(ast.AST):
    """Item ``index`` of the tuple ``value`` evaluates to (a name unpacked from it)."""

    def __init__(self, value: ast.AST, index: int) -> None:
        super().__init__()
        self.value, self.index = value, index


class _Opaque(ast.AST):
    """A binding we do not follow."""


# -- syntax helpers ---------------------------------------------------------------------


def _assignments(node: ast.AST) -> Iterable[tuple[str, ast.AST]]:
    """(name, value) of a plain assignment statement to a name."""
    if isinstance(node, ast.Assign):
        for target in node.targets:
            if isinstance(target, ast.Name):
                yield target.id, node.value
            elif (isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple)
                  and len(target.elts) == len(node.value.elts) and all(isinstance(t, ast.Name) for t in target.elts)):
                yield from ((t.id, v) for t, v in zip(target.elts, node.value.elts))  # a, b = x, y
            elif isinstance(target, ast.Tuple) and all(isinstance(t, ast.Name) for t in target.elts):
                yield from ((t.id, _Element(node.value, i)) for i, t in enumerate(target.elts))  # a, b = f()
            else:
                for name in _target_names(target):
                    yield name, _Opaque()
    elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
        yield node.target.id, node.value
    elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
        yield node.target.id, node.value if isinstance(node.op, ast.Add) else _Opaque()


def _target_names(target: ast.AST) -> list[str]:
    return [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]


def _annotation(function: ast.AST, name: str) -> ast.AST | None:
    """The annotation of ``function``'s parameter ``name``, if it has one."""
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    args = function.args
    for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
        if arg.arg == name:
            return arg.annotation
    return None


def _binds(node: ast.AST, name: str) -> bool:
    """Whether the statement ``node`` of a class body binds ``name``."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name == name
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return any(name in _target_names(t) for t in targets)
    return any(_binds(child, name) for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt))


def _parameters(function: ast.AST) -> set[str]:
    args = function.args
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs, *filter(None, [args.vararg, args.kwarg])]
    return {a.arg for a in every}


def _own_nodes(function: ast.AST) -> Iterable[ast.AST]:
    """The nodes of ``function``'s body, not those of functions or classes inside it."""
    stack = list(ast.iter_child_nodes(function))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack += ast.iter_child_nodes(node)


class _Blank(ast.NodeTransformer):
    """Replaces the names it is given by an empty literal."""

    def __init__(self, names: set[str]) -> None:
        self.names = names

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.Constant(value="") if node.id in self.names else node


def _without(element: ast.AST, names: set[str]) -> ast.AST:
    """A copy of ``element`` with the trusted loop variables ``names`` blanked out."""
    return _Blank(names).visit(copy.deepcopy(element))

"""What pylint's verdict on a file depends on besides the file: the first-party modules it
imports, directly or through others.

pylint infers across modules (``no-member``, ``import-error``, ``too-many-function-args``,
whether an import is first-party), so a file's messages are a function of its text *and*
of the text of every module of the tree its imports reach. The meter keys pylint's result
by that whole context (``context_digest``), so a result is reused only where the same text
meets the same modules: planting a module, measuring, then deleting it cannot leave a file
judged against a tree that no longer holds it, and no figure depends on what the process
measured before. Which modules exist at all (``listing``) is part of every file's context.

Names are matched conservatively: a module import ``a.b`` reaches every file that some
root could import as ``a``, ``a.b`` or ``b`` (astroid also looks beside the importing
file), so the context holds at least what astroid may load. Reaching too much costs a
cache miss, never a wrong result.

The imports themselves are read from the syntax tree in the analysis worker
(``module_imports``), never in the env's process: the text is hostile.
"""

from __future__ import annotations

import ast
import hashlib
import os
from collections import defaultdict
from typing import Iterable, Mapping

#: Imports kept per file; past it the file counts as importing every module of the tree.
MAX_IMPORTS = 500
#: An import list that stands for every module of the tree.
EVERYTHING = [(0, "*")]


def module_imports(tree: ast.Module) -> list[tuple[int, str]]:
    """``(level, dotted name)`` of every module the file may import, anywhere in it:
    ``import a.b`` gives ``(0, "a.b")``; ``from a import b`` gives ``(0, "a.b")`` (``b`` may
    be a module) and ``from .m import x`` gives ``(1, "m.x")``. Past ``MAX_IMPORTS``
    distinct names, ``EVERYTHING``."""
    found: set[tuple[int, str]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update((0, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            found.update((node.level, f"{base}.{alias.name}".lstrip(".")) for alias in node.names)
            if base:
                found.add((node.level, base))
        if len(found) > MAX_IMPORTS:
            return list(EVERYTHING)
    return sorted(found)


def module_names(rel: str) -> list[str]:
    """Every dotted name under which some root could import the file ``rel``: for
    ``a/b/c.py``: ``c``, ``b.c``, ``a.b.c``; a package's ``__init__.py`` is its folder."""
    parts = rel[: -len(".py")].split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return [".".join(parts[i:]) for i in range(len(parts)) if parts[i:]]


def _reached_names(rel: str, level: int, name: str) -> list[str]:
    """The dotted names an import of ``name`` at ``level`` in file ``rel`` loads: the
    module and every package above it."""
    if level:
        package = rel.split("/")[:-1]
        package = package[: len(package) - (level - 1)] if level > 1 else package
        name = ".".join([*package, name]).strip(".")
    parts = name.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def ambiguous(files: Iterable[str]) -> bool:
    """Whether two files could be imported under one dotted name. astroid keeps parsed
    modules by name, so which of the two another file sees would then depend on which was
    parsed first: such a tree is analysed one file at a time, each from a clean cache."""
    seen: set[str] = set()
    for rel in files:
        for name in module_names(rel):
            if name in seen:
                return True
            seen.add(name)
    return False


def reached(imports: Mapping[str, list[tuple[int, str]]]) -> dict[str, frozenset[str]]:
    """File -> the files its imports reach, directly or through other files, itself
    included. ``imports``: each file's ``module_imports``."""
    index: dict[str, set[str]] = defaultdict(set)
    for rel in imports:
        for name in module_names(rel):
            index[name].add(rel)
    everything = frozenset(imports)
    edges: dict[str, set[str]] = {}
    for rel, found in imports.items():
        if found == EVERYTHING:
            edges[rel] = set(everything)
            continue
        edges[rel] = {target for level, name in found for reached_name in _reached_names(rel, level, name)
                      for target in index.get(reached_name, ())}  # fmt: skip
    return _closures(edges)


def _closures(edges: Mapping[str, set[str]]) -> dict[str, frozenset[str]]:
    """Each node's reachable set (itself included), by strongly connected components
    (Tarjan's algorithm, iterative: a long import chain meets no recursion limit), so a
    tree of thousands of files that all import each other costs one set per component."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    component: dict[str, int] = {}
    closure: list[frozenset[str]] = []  # per component, in the order they complete
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            advanced = False
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(edges[succ]))))
                    advanced = True
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:  # node roots a component: every successor's is done
                members = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component[member] = len(closure)
                    members.append(member)
                    if member == node:
                        break
                below = {component[t] for m in members for t in edges[m] if component.get(t, -1) != len(closure)}
                closure.append(frozenset(members).union(*(closure[c] for c in below)))
    return {node: closure[component[node]] for node in edges}


def listing(files: Iterable[str]) -> bytes:
    """One digest of the names of the files of a tree: which modules exist decides what
    an import finds, a package's attributes (its submodules) and whether an import is
    first-party, for every file. Files added or deleted change it; edits do not."""
    return hashlib.sha256(b"\0".join(sorted(os.fsencode(rel) for rel in files))).digest()


def context_digest(files: Iterable[str], keys: Mapping[str, str]) -> bytes:
    """One digest of the files of a context and their content keys."""
    digest = hashlib.sha256()
    for rel in sorted(files):
        digest.update(os.fsencode(rel) + f"\0{keys[rel]}\n".encode())
    return digest.digest()

"""A project's ``conftest.py`` fixtures, carried into the test modules that use them.

The grader runs pytest without conftest files (``--noconftest``: a conftest.py in the
agent's tree would steer the run), so a mined test that takes a fixture of its project's
conftest.py (tinydb's ``db``, marshmallow's ``user``, sqlparse's ``load_file``) errors at
setup and was dropped. ``with_conftest_fixtures`` writes, at the top of such a module, the
fixtures it uses (and those they use), with the conftest's imports, constants and helpers
they read: the module then defines them itself, as pytest would have found them.

Left out: autouse fixtures (they run for every test, and often set up what only the
project's own tooling has: semver's doctest namespace imports its docs' modules), pytest's
hooks, and a fixture the module defines itself (its own wins, as in pytest).
"""

from __future__ import annotations

import ast
from typing import Sequence

#: What the written block begins with, so that a reader of the task knows where it is from.
HEADER = "# From the tests' conftest.py: the fixtures this module uses (the grader runs without conftest files).\n"


def _fixture(node: ast.stmt) -> tuple[str, bool] | None:
    """(the fixture's name, whether it is autouse) for a function decorated with
    ``pytest.fixture`` (called or not, ``name=`` honoured), else None."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    for decorator in node.decorator_list:
        call = decorator if isinstance(decorator, ast.Call) else None
        target = call.func if call else decorator
        name = target.attr if isinstance(target, ast.Attribute) else target.id if isinstance(target, ast.Name) else ""
        if name not in ("fixture", "yield_fixture"):
            continue
        keywords = {k.arg: k.value for k in call.keywords} if call else {}
        named = keywords.get("name")
        autouse = keywords.get("autouse")
        return (named.value if isinstance(named, ast.Constant) and isinstance(named.value, str) else node.name,
                isinstance(autouse, ast.Constant) and bool(autouse.value))  # fmt: skip
    return None


def _binds(node: ast.stmt) -> set[str]:
    """The names a top-level statement binds."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(alias.asname or alias.name).split(".")[0] for alias in node.names if alias.name != "*"}
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _reads(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _segment(lines: list[str], node: ast.stmt) -> str:
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    return "".join(lines[first - 1 : node.end_lineno]).rstrip() + "\n"


def _is_future(node: ast.stmt) -> bool:
    return isinstance(node, ast.ImportFrom) and node.module == "__future__"


def with_conftest_fixtures(module: str, conftests: Sequence[str]) -> str:
    """``module`` (a test module's text) with the fixtures it uses from ``conftests`` (the
    texts of the conftest.py files above it, outermost first; an inner one's fixture wins)
    written at its top, each with what it reads of its file. A module that uses none, or
    that does not parse, is returned as it is; so is one whose conftest does not parse."""
    try:
        tree = ast.parse(module)
        parsed = [ast.parse(text) for text in conftests]
    except (SyntaxError, ValueError):
        return module
    own = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    # What asks for a fixture: a parameter of a function, or a string (``usefixtures("db")``,
    # ``request.getfixturevalue("db")``).
    words = {a.arg for n in ast.walk(tree) if isinstance(n, ast.arguments) for a in [*n.posonlyargs, *n.args, *n.kwonlyargs]}
    words |= {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.isidentifier()}
    fixtures: dict[str, tuple[int, ast.stmt]] = {}  # name -> (which conftest, its definition)
    for index, conftest in enumerate(parsed):
        for node in conftest.body:
            found = _fixture(node)
            if found and not found[1]:
                fixtures[found[0]] = (index, node)
    wanted = {name for name in fixtures if name in words and name not in own}
    todo = list(wanted)
    while todo:  # the fixtures a wanted one takes
        node = fixtures[todo.pop()][1]
        for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:  # type: ignore[attr-defined]
            if arg.arg in fixtures and arg.arg not in wanted and arg.arg not in own:
                wanted.add(arg.arg)
                todo.append(arg.arg)
    if not wanted:
        return module
    blocks, futures = [], []
    for index, conftest in enumerate(parsed):
        chosen = {id(fixtures[name][1]) for name in wanted if fixtures[name][0] == index}
        if not chosen:
            continue
        kept = set(chosen)
        needed = set().union(*(_reads(node) for node in conftest.body if id(node) in chosen))
        others = [node for node in conftest.body if id(node) not in chosen and not _fixture(node) and not _is_future(node)
                  and not (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("pytest_"))
                  and not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))]  # fmt: skip
        taken = True
        while taken:  # the imports, constants and helpers they read, and what those read
            taken = [node for node in others if id(node) not in kept and _binds(node) & needed]
            for node in taken:
                kept.add(id(node))
                needed |= _reads(node)
        lines = conftests[index].splitlines(keepends=True)
        futures += [_segment(lines, node) for node in conftest.body if _is_future(node)]
        blocks.append("".join(("\n\n" if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else "")
                              + _segment(lines, node) for node in conftest.body if id(node) in kept))  # fmt: skip
    lines = module.splitlines(keepends=True)
    future_lines = {i for node in tree.body if _is_future(node) for i in range(node.lineno - 1, node.end_lineno or node.lineno)}
    futures += ["".join(lines[i] for i in sorted(future_lines))] if future_lines else []
    rest = "".join(line for i, line in enumerate(lines) if i not in future_lines)
    head = "".join(dict.fromkeys(futures))
    return head + HEADER + "\n\n".join(block.strip("\n") + "\n" for block in blocks) + "# End of the conftest.py fixtures.\n\n\n" + rest

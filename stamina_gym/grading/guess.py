"""The guessing forger: what code that owns the observation stream can earn under sealed
judging. The in-sandbox defences (the signed channel, the guarded observers) may one day
fall; then the sandbox says whatever it likes about every point, and only what the host
holds decides. This forger plays that case. It knows what the sandbox knows (a test's probe
and its id) and nothing of the host's: for every test it sends, as often as the judge
counts, its first guess at each point of the test's own body (``True`` for a truth or an
open point, a status from the test's name or its HTTP method, the literal the test passed
under the same name, a small integer), and for a ``raises`` point an exception of every
kind the probe names, with a message holding every string the test holds. The host's
judge (``seal.judge_run``) then decides; ``scripts/seal_report.py`` reports its take per
task and ``tests/test_sealed.py`` checks that it passes no test holding a sealed point.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any, Mapping, Sequence

from stamina_gym.grading import seal

#: Exception kinds every forged exception is one of, beside those the probe names.
BUILTIN_KINDS = ("Exception", "ValueError", "TypeError", "KeyError", "IndexError", "LookupError", "RuntimeError",
                 "OSError", "FileNotFoundError", "PermissionError", "AttributeError", "NotImplementedError",
                 "PermissionError", "TimeoutError", "UnicodeError", "ArithmeticError", "ZeroDivisionError",
                 "AssertionError", "SystemExit", "BaseException")  # fmt: skip
_STATUS_BY_METHOD = {"POST": 201, "DELETE": 204}


def forge_run(probes: Mapping[str, str], test_ids: Sequence[str]) -> tuple[dict[str, tuple[str, str]], dict[str, list]]:
    """The outcomes and observations a forger that owns the stream reports for
    ``test_ids``: every test passed, each with its guesses (in ``seal.judge_run``'s form)."""
    trees = {path: ast.parse(text) for path, text in probes.items() if path.endswith(".py")}
    outcomes, observations = {}, {}
    for test_id in test_ids:
        path, function, _ = seal.test_function(test_id)
        node = _function(trees.get(path), function)
        outcomes[test_id] = ("passed", "")
        sent = _Forger(node, trees.get(path)).run() if node is not None else []
        observations[test_id] = [[path, point, json.dumps(value)] for point, value in sent]
    return outcomes, observations


def _function(tree: ast.Module | None, qualname: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    scope: list[ast.stmt] = tree.body if tree else []
    found: ast.AST | None = None
    for part in qualname.split("."):
        found = next((n for n in scope if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                      and n.name == part), None)  # fmt: skip
        if found is None:
            return None
        scope = found.body  # type: ignore[attr-defined]
    return found if isinstance(found, (ast.FunctionDef, ast.AsyncFunctionDef)) else None


class _Forger:
    def __init__(self, function: ast.FunctionDef | ast.AsyncFunctionDef, module: ast.Module | None) -> None:
        self.function = function
        self.sent: list[tuple[int, Any]] = []
        self.statuses = [int(n) for n in re.findall(r"(?<!\d)([1-5]\d\d)(?!\d)", function.name)]
        self.message = seal.forged_message({n.value for n in ast.walk(module or function) if isinstance(n, ast.Constant)
                                            and isinstance(n.value, str)})  # fmt: skip
        names = {n.id for n in ast.walk(module or function) if isinstance(n, ast.Name)}
        names |= {n.attr for n in ast.walk(module or function) if isinstance(n, ast.Attribute)}
        names |= {alias.asname or alias.name for n in ast.walk(module or function) if isinstance(n, ast.ImportFrom)
                  for alias in n.names}  # fmt: skip
        self.kinds = sorted({*BUILTIN_KINDS, *(n for n in names if re.search(r"(Error|Exception|Denied|NotFound|Invalid)", n))})
        self.method = ""
        self.given: dict[str, Any] = {}

    def run(self) -> list[tuple[int, Any]]:
        self._body(self.function.body, 1)
        return self.sent

    def _body(self, body: list[ast.stmt], times: int) -> None:
        for statement in body:
            self._learn(statement)
            if times == 0:
                continue  # nothing the judge counts here: send nothing
            if isinstance(statement, ast.Expr) and _observer(statement.value) == seal.OBSERVE:
                point, value = statement.value.args  # type: ignore[attr-defined]
                self.sent += [(point.value, self._guess(value))] * times
            elif isinstance(statement, (ast.With, ast.AsyncWith)):
                raised = [i.context_expr for i in statement.items if _observer(i.context_expr) == seal.RAISES]
                for call in raised:
                    self.sent += [(call.args[0].value, {"raised": self.kinds, "msg": self.message})] * times
                self._body(statement.body, 0 if raised else times)
            elif isinstance(statement, (ast.For, ast.AsyncFor)):
                length = seal._literal_length(statement.iter)
                early = bool(statement.orelse) or seal._leaves_early(statement.body)
                self._body(statement.body, 0 if early else times * length if length is not None else 1)

    def _learn(self, statement: ast.stmt) -> None:
        """What the test passes to the code under test: literals by keyword or key, the HTTP method."""
        for node in ast.walk(statement):
            if isinstance(node, ast.Call):
                for keyword in node.keywords:
                    self._given(keyword.arg, keyword.value)
                for arg in node.args:
                    if isinstance(arg, ast.Constant) and arg.value in ("GET", "POST", "PATCH", "PUT", "DELETE"):
                        self.method = arg.value
            if isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values):
                    if isinstance(key, ast.Constant) and isinstance(key.value, str):
                        self._given(key.value, value)

    def _given(self, name: str | None, node: ast.expr) -> None:
        try:
            value = seal.literal(node)
        except seal._Unsealable:
            return
        if name and isinstance(value, (str, int, float, bool)) or value is None:
            self.given[name or ""] = value

    def _guess(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "bool":
            return True
        text = ast.unparse(node)
        if re.search(r"status", text):
            if self.statuses:
                return self.statuses.pop(0)
            return _STATUS_BY_METHOD.get(self.method, 200)
        if text.startswith("len("):
            return 1
        key = node.slice if isinstance(node, ast.Subscript) else None
        name = key.value if isinstance(key, ast.Constant) else node.attr if isinstance(node, ast.Attribute) else None
        if isinstance(name, str) and name in self.given:
            return _encoded(self.given[name])
        return None


def _observer(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args and isinstance(node.args[0], ast.Constant):
        return node.func.id
    return None


def _encoded(value: Any) -> Any:
    if isinstance(value, float):
        return {"f": repr(value)}
    return value

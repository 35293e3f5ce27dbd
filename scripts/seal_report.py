"""How much of each task's hidden tests sealed judging can seal: every hidden test module
compiled (``stamina_gym.grading.seal``), its points counted by status and kind, and its
tests by the best point they hold.

    .venv/bin/python scripts/seal_report.py [TASK ...]   # default: the shipped tasks
    .venv/bin/python scripts/seal_report.py --tests DIR ...   # test modules under DIR (an unpacked sdist)
    .venv/bin/python scripts/seal_report.py --open DIR ...    # DIR's tests that stay open, and why

A point is sealed when its expected value is in no line of the probe and is not a first
guess; guessable when it is True/False/None, "", a small integer, a common HTTP status or a
literal the probe itself holds (an input the test passes); open when the sandbox computes
the verdict. A test is sealed when one of the points in its own body is: a forger that
answers every point with its best first guess passes at most the other tests (the
``guessable`` and ``open`` columns of the second table), which is the upper bound of what
it earns. The third table plays one such forger (``stamina_gym.grading.guess``: it owns
the observation stream, reads the probes and sends one first guess per point) through the
host's judge, over the first ten turns and over all of them.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Iterator

from stamina_gym.config import RewardConfig
from stamina_gym.grading import guess, seal
from stamina_gym.hidden_runner import _staged_tests, seal_modules
from stamina_gym.task import Task, load_task_dir

ROOT = Path(__file__).resolve().parents[1]
STATUSES = seal.STATUSES
KINDS = ("compare", "truth", "raises", "open")


def report(task_dir: Path) -> dict[str, int]:
    """Points by status and kind, and tests by their best point (``test:<status>``)."""
    task = load_task_dir(task_dir)
    counts: dict[str, int] = {}

    def add(key: str) -> None:
        counts[key] = counts.get(key, 0) + 1

    for turn in task.turns:
        for path in turn.tests:
            rel = f"{turn.id}/{path.relative_to(turn.dir / 'tests').as_posix()}"
            module = seal.compile_module(path.read_text(encoding="utf-8"), str(path), rel)
            add("modules")
            for point in module.points.values():
                add(point.status)
                add(f"kind:{point.kind}")
            for test_id in turn.test_ids:
                if test_id.split("::")[0] == rel:
                    add(f"test:{seal.test_status(module.points, seal.test_function(test_id)[1])}")
    return counts


def forged(task: Task, last: int) -> dict[str, float]:
    """Over the tests of turns 1..``last``: how many the forger passes (``passed``), how
    many hold no sealed point (``bound``: what a forger that always guessed right would
    pass), how many there are; and the test reward (the ``tests`` and ``bonus`` terms) of
    each, as a share of the oracle's."""
    weights = RewardConfig()
    counts = dict.fromkeys(("passed", "bound", "total", "reward", "bound_reward", "oracle_reward"), 0.0)
    for turn in task.turns[:last]:
        probes, sealed = seal_modules(_staged_tests(task, [turn], turn.example_params))
        judged = seal.judge_run(*guess.forge_run(probes, turn.test_ids), sealed)
        passed = sum(status == "passed" for status, _ in judged.values())
        bound = 0
        for test_id in turn.test_ids:
            path, function, _ = seal.test_function(test_id)
            bound += path not in sealed or seal.test_status(sealed[path], function) != "sealed"
        total = len(turn.test_ids)
        for key, n in (("reward", passed), ("bound_reward", bound), ("oracle_reward", total)):
            counts[key] += weights.test_pass * n / total + (weights.turn_bonus if n == total else 0.0)
        counts["passed"] += passed
        counts["bound"] += bound
        counts["total"] += total
    return counts


def test_functions(tree: ast.Module) -> list[str]:
    """The test functions of a module as ``seal`` names them (``test_x``, ``Class.test_y``)."""
    found = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test")]
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            found += [f"{node.name}.{n.name}" for n in node.body
                      if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test")]  # fmt: skip
    return found


def compiled_modules(root: Path) -> Iterator[tuple[str, ast.Module | None, seal.Compiled | None]]:
    """Each test module under ``root`` (its path there, its tree, what it compiles to; the
    last two None where it does not parse), with the assertion helpers of the modules beside
    it, found as mining finds them: the tests folder's own top-level modules by name."""
    texts = {path.relative_to(root).as_posix(): path.read_text(encoding="utf-8", errors="replace") for path in root.rglob("*.py")}
    available = {rel: seal.helper_templates(text) for rel, text in texts.items()}
    available.update((f"support:{rel[:-3]}", available[rel]) for rel in texts if "/" not in rel)
    for path in sorted(root.rglob("test*.py")):
        rel = path.relative_to(root).as_posix()
        try:
            tree = ast.parse(texts[rel])
            module = seal.compile_module(texts[rel], str(path), rel, seal.helpers_for(texts[rel], rel, available))
        except SyntaxError:
            yield rel, None, None
            continue
        yield rel, tree, module


def folder_report(root: Path) -> None:
    """How the test modules under ``root`` compile: points by status, and tests by
    ``seal.test_status``. A test is compiled when its body holds a point (a probe and a
    judge replace it, as every test of the shipped tasks); of those, sealed or guessable
    when no point of its body stays open (a forger must guess, or cannot); it has no point
    when every check it makes stays as written (in a helper, or a form the compiler does
    not take apart)."""
    points: dict[str, int] = {}
    tests: dict[str, int] = {}
    for _, tree, module in compiled_modules(root):
        if module is None:
            tests["does not parse"] = tests.get("does not parse", 0) + 1
            continue
        for point in module.points.values():
            points[point.status] = points.get(point.status, 0) + 1
        for function in test_functions(tree):
            own = [p for p in module.points.values() if p.function == function]
            status = seal.test_status(module.points, function) if own else "no point"
            tests[status] = tests.get(status, 0) + 1
    total = sum(tests.values())
    compiled = tests.get("sealed", 0) + tests.get("guessable", 0) + tests.get("open", 0)
    closed = tests.get("sealed", 0) + tests.get("guessable", 0)
    print(f"| {root.name} | {sum(points.values())} | {points.get('open', 0)} | {total} | {_share(tests, 'sealed', total)} "
          f"| {compiled} ({100 * compiled / max(total, 1):.0f}%) | {closed} ({100 * closed / max(total, 1):.0f}%) "
          f"| {tests.get('open', 0)} | {tests.get('no point', 0) + tests.get('does not parse', 0)} |")  # fmt: skip


#: unittest methods that check membership, and those that compare two values.
_MEMBERSHIP = {"assertIn", "assertNotIn"}
_COMPARING = {"assertEqual", "assertNotEqual", "assertIs", "assertIsNot", "assertListEqual", "assertTupleEqual",
              "assertDictEqual", "assertSetEqual", "assertCountEqual", "assertLess", "assertLessEqual", "assertGreater",
              "assertGreaterEqual", "assertAlmostEqual"}  # fmt: skip


def why_open(tree: ast.Module, line: int) -> str:
    """What kind of check the open point at ``line`` is: ``membership`` (the container's own
    ``__contains__`` decides), ``two computed values`` (neither side is one the host can work
    out: the product's ``__eq__``, an identity), or ``other`` (a form the compiler does not
    take apart)."""
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) != line:
            continue
        if isinstance(node, ast.Assert):
            test = node.test.operand if isinstance(node.test, ast.UnaryOp) else node.test
            if isinstance(test, ast.Compare) and len(test.ops) == 1:
                return "membership" if isinstance(test.ops[0], (ast.In, ast.NotIn)) else "two computed values"
            return "other"
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Attribute):
            method = node.value.func.attr
            if method in _MEMBERSHIP:
                return "membership"
            if method in _COMPARING:
                return "two computed values"
            return "other"
    return "other"


def open_report(root: Path) -> None:
    """Each test under ``root`` that compiles to no sealed or guessable status, with the kind
    of each open check it makes; then the tests counted by those kinds."""
    by_kind: dict[str, int] = {}
    print(f"\n{root.name}: the tests that stay open\n")
    print("| test | open checks |")
    print("|---|---|")
    for rel, tree, module in compiled_modules(root):
        if module is None:
            print(f"| {rel} | does not parse |")
            continue
        for function in test_functions(tree):
            own = [p for p in module.points.values() if p.function == function]
            if own and seal.test_status(module.points, function) in ("sealed", "guessable"):
                continue
            kinds = sorted({why_open(tree, p.line) for p in own if p.status == "open"}) or ["no check it takes apart"]
            key = " and ".join(kinds)
            by_kind[key] = by_kind.get(key, 0) + 1
            print(f"| {rel}::{function} | {key} |")
    print("\n| its open checks | tests |\n|---|---:|")
    for key, count in sorted(by_kind.items(), key=lambda item: -item[1]):
        print(f"| {key} | {count} |")


def main(argv: list[str]) -> int:
    if argv[:1] == ["--open"]:
        for folder in argv[1:]:
            open_report(Path(folder))
        return 0
    if argv[:1] == ["--tests"]:
        print("| tests of | points | open points | tests | sealed | compiled | sealed or guessable | open | no point |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for folder in argv[1:]:
            folder_report(Path(folder))
        return 0
    tasks = [Path(name) if "/" in name else ROOT / "tasks" / name for name in argv] or sorted(
        path for path in (ROOT / "tasks").iterdir() if (path / "task.yaml").exists())  # fmt: skip
    rows = [(task.name, report(task)) for task in tasks]
    print("| task | modules | points | " + " | ".join(STATUSES) + " | " + " | ".join(f"{k} points" for k in KINDS) + " |")
    print("|---|" + "---:|" * (2 + len(STATUSES) + len(KINDS)))
    for name, counts in rows:
        total = sum(counts.get(status, 0) for status in STATUSES)
        print(f"| {name} | {counts.get('modules', 0)} | {total} | " + " | ".join(_share(counts, s, total) for s in STATUSES)
              + " | " + " | ".join(str(counts.get(f"kind:{k}", 0)) for k in KINDS) + " |")  # fmt: skip
    print()
    print("| task | tests | sealed tests | guessable tests | open tests |")
    print("|---|---:|---:|---:|---:|")
    for name, counts in rows:
        total = sum(counts.get(f"test:{status}", 0) for status in STATUSES)
        print(f"| {name} | {total} | " + " | ".join(_share(counts, f"test:{s}", total) for s in STATUSES) + " |")
    print()
    print("| task | turns | tests | the forger passes | its test reward | no sealed point (its bound) | the bound's test reward |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for path in tasks:
        task = load_task_dir(path)
        for last in sorted({min(10, len(task.turns)), len(task.turns)}):
            c = forged(task, last)
            print(f"| {task.id} | 1-{last} | {c['total']:.0f} | {c['passed']:.0f} ({100 * c['passed'] / c['total']:.0f}%) | "
                  f"{100 * c['reward'] / c['oracle_reward']:.0f}% | {c['bound']:.0f} ({100 * c['bound'] / c['total']:.0f}%) | "
                  f"{100 * c['bound_reward'] / c['oracle_reward']:.0f}% |")  # fmt: skip
    return 0


def _share(counts: dict[str, int], key: str, total: int) -> str:
    return f"{counts.get(key, 0)} ({100 * counts.get(key, 0) / total:.0f}%)" if total else "0"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

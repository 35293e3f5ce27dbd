"""The package's import graph keeps the layering drawn in docs/concepts/architecture.md
("How the parts depend on each other"): no import cycle anywhere, and no module imports a
layer above its own. Every import counts, those inside functions and under ``TYPE_CHECKING``
too: a lazy import is a dependency all the same."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import stamina_gym

PACKAGE = Path(stamina_gym.__file__).parent

#: Lowest first. A module belongs to the first layer with a prefix that names it or a
#: package above it; it may import its own layer and those below.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("base", ("errors", "registry", "safetree", "pyast", "interpreter", "packaged", "text_space", "run_result", "action_text",
              "mutants", "config", "records", "submits")),
    ("task", ("task", "collection", "rules", "stamina_gym")),
    ("judgement", ("grading", "user", "reward")),
    ("execution", ("sandbox", "workspace", "hidden_runner", "agent_runner", "reproduce", "tools", "quality",
                   "interfaces", "exact_text", "signatures", "char_rules", "paraphrases", "costs")),
    ("env", ("env", "chat", "validate", "authoring")),
    ("agents", ("agents",)),
    ("drivers", ("play", "harness", "rollout", "evaluation", "integrations", "mining", "corpus_env")),
    ("cli", ("cli", "__main__")),
]  # fmt: skip


def module_names(root: Path, package: str) -> dict[str, Path]:
    names = {}
    for path in root.rglob("*.py"):
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Module -> the modules of ``package`` it imports (``from p import m`` counts as the
    module ``p.m`` when there is one, else as ``p``)."""
    names = module_names(root, package)
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:  # relative: from the package ``level - 1`` above this one
                    base = ".".join(here[: len(here) - node.level + 1] + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in names]
                found.update(subs)
                if len(subs) < len(node.names):
                    found.add(base)
        graph[name] = {m for m in found if m in names and m != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def layer_of(module: str, package: str, layers=LAYERS) -> int | None:
    rel = module[len(package) + 1 :] if module != package else package
    for level, (_, prefixes) in enumerate(layers):
        if any(rel == p or rel.startswith(p + ".") for p in prefixes):
            return level
    return None


def layering_problems(graph: dict[str, set[str]], package: str, layers=LAYERS) -> list[str]:
    problems = [f"import cycle: {' -> '.join(c)}" for c in cycles(graph)]
    for module in sorted(graph):
        level = layer_of(module, package, layers)
        if level is None:
            problems.append(f"{module} is in no layer: add it to LAYERS (and to the picture in docs/concepts/architecture.md)")
            continue
        for target in sorted(graph[module]):
            up = layer_of(target, package, layers)
            if up is not None and up > level:
                problems.append(f"{module} ({layers[level][0]}) imports {target} ({layers[up][0]}), a layer above")
    return problems


def test_the_package_has_no_import_cycle_and_keeps_its_layers():
    assert not layering_problems(import_graph(PACKAGE, "stamina_gym"), "stamina_gym")


def test_grading_and_the_user_import_neither_the_sandbox_nor_what_runs_code():
    graph = import_graph(PACKAGE, "stamina_gym")
    for module, targets in graph.items():
        if module.startswith(("stamina_gym.grading", "stamina_gym.user")):
            banned = {t for t in targets if t.startswith(("stamina_gym.sandbox", "stamina_gym.workspace", "stamina_gym.env"))}
            assert not banned, f"{module} imports {banned}"


def test_the_check_finds_a_cycle_an_upward_import_and_a_module_of_no_layer(tmp_path):
    """The checker itself, on a package made for it: each fault is named."""
    pkg = tmp_path / "pkg"
    (pkg / "low").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "low/__init__.py": "",
        "low/a.py": "from pkg.low import b\n",
        "low/b.py": "def f():\n    from pkg.low.a import x\n",  # a lazy import closes the cycle
        "low/c.py": "if True:\n    from pkg import high\n",
        "high.py": "from . import low\n",
        "stray.py": "",
    }
    for rel, text in files.items():
        (pkg / rel).write_text(textwrap.dedent(text))
    layers = [("low", ("low", "pkg")), ("high", ("high",))]
    problems = layering_problems(import_graph(pkg, "pkg"), "pkg", layers)
    assert "import cycle: pkg.low.a -> pkg.low.b" in problems
    assert "pkg.low.c (low) imports pkg.high (high), a layer above" in problems
    assert "pkg.stray is in no layer: add it to LAYERS (and to the picture in docs/concepts/architecture.md)" in problems
    assert len(problems) == 3, problems


#: Names under which modules hold an env (``env.unwrapped`` counts whatever it is called).
_ENV_NAMES = {"env", "inner", "environment"}


def private_env_reads(root: Path, package: str) -> list[str]:
    """``env._x``, ``inner._x``, ``self.env._x``, ``anything.unwrapped._x`` outside env.py."""
    found = []
    for name, path in module_names(root, package).items():
        if name == f"{package}.env":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                held = node.value
                holder = held.id if isinstance(held, ast.Name) else held.attr if isinstance(held, ast.Attribute) else None
                if holder in _ENV_NAMES or holder == "unwrapped":
                    found.append(f"{path.relative_to(root.parent)}:{node.lineno}: .{node.attr}")
    return found


def test_no_module_outside_the_env_reads_a_private_env_attribute():
    assert not private_env_reads(PACKAGE, "stamina_gym")


def test_the_private_read_check_finds_one(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "loop.py").write_text("def f(env, self):\n    env.unwrapped._sandbox\n    self.env._turn\n    env.__class__\n")
    assert private_env_reads(pkg, "pkg") == ["pkg/loop.py:2: ._sandbox", "pkg/loop.py:3: ._turn"]

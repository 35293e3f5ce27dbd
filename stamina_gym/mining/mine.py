"""Turn a project's history (``Snapshot``s, oldest first) into a long-horizon task.

Each snapshot is split into product files and test files. A *candidate* is a step whose
product and tests both changed. For each candidate, in order, the step's whole test tree
becomes the turn's hidden tests folder and the product diff since the last kept turn its
reference patch; the tests are then run in the sandbox through the grader itself (so
what is selected is what will be graded), ``runs`` times at the state before and at the
state after:

* fail-to-pass tests (never passing before, always passing after) become the turn's own
  tests (``tests:`` in its turn.yaml); a test whose text is unchanged since the last kept
  turn failed before only because its module did not import there (it imports a name the
  step adds), and is one only when the turn has no other (a refactor that renames);
* a fail-to-pass test that passes on the seed or on an earlier kept state (broken by a
  step between, fixed by this one) is left out: the null agent keeps the seed's code, and
  would be paid for it;
* tests whose outcome differs between runs are flaky: dropped and listed;
* tests of earlier kept turns that fail at this state (run once) are proposed as ``retires``.

A candidate with no fail-to-pass test is dropped, with the reason, and its product change
folds into the next kept turn's patch. Prompts are drafted from the commit message or
changelog entry by a template that names every product name the turn's tests use and the
agent was not yet told (``stamina_gym.interfaces``), so the interface check holds; they
are marked for review. ``mining.yaml`` beside the task records the yield, with each
dropped step's cause (``CAUSES``, from the first error of its tests: ``classify``); a
mining that keeps nothing leaves ``mining.yaml`` alone in the output folder.
"""

from __future__ import annotations

import ast
import copy
import difflib
import fnmatch
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Callable, Iterator, Mapping, Sequence

import yaml

from stamina_gym import collection, exact_text, interfaces, pyast
from stamina_gym.config import SandboxConfig
from stamina_gym.errors import ConfigError
from stamina_gym.evaluation.runner import patch_stats
from stamina_gym.grading.canaries import hypothesis_driven, voids_a_run
from stamina_gym.grading.grade import by_base_id
from stamina_gym.grading.report import Outcome, base_id
from stamina_gym.hidden_runner import run_hidden_tests
from stamina_gym.mining import doc_examples
from stamina_gym.mining.fixtures import with_conftest_fixtures
from stamina_gym.mining.recipe import RECIPE_FILE, Recipe, write_support
from stamina_gym.mining.sources import Snapshot, write_tree
from stamina_gym.sandbox import Sandbox
from stamina_gym.task import SourceFix, Task, load_task_dir

#: Path parts and file names that make a file a test file.
TEST_FOLDERS = frozenset({"tests", "test", "testing"})
#: Files that are no product code: documentation, prose, CI and packaging files, the
#: top level's hidden files and folders (CI, editor and tool settings: sqlparse 0.5.4's sdist
#: ships ``.idea/``), its lock files and its prose pages other than the licence, and the
#: scripts named ``test.py``/``tests.py`` that pytest does not collect. They are in no
#: snapshot's product, so no reference patch carries them (a recipe's ``ignore`` adds more).
NOT_PRODUCT = re.compile(
    r"^(docs?|doc-src|documentation|examples?|benchmarks?|[^/]+\.egg-info)/"
    r"|^(CHANGE|CHANGES|CHANGELOG|HISTORY|NEWS|README|AUTHORS|CONTRIBUTING)"
    r"|^(setup\.py|setup\.cfg|pyproject\.toml|MANIFEST\.in|PKG-INFO|tox\.ini|noxfile\.py|appveyor\.yml"
    r"|Makefile|requirements[^/]*\.txt|[^/]+\.lock|(?!LICEN[CS]E|COPYING)[^/]+\.(md|rst))$"
    r"|^\.|(^|/)tests?\.py$",
    re.IGNORECASE,
)
#: The most texts of exact wording (an error's message, printed output) one prompt shows.
MAX_SHOWN_WORDING = 20
#: The most changed lines of product code one mined turn holds (``mine``).
MAX_TURN_LINES = 1500
REVIEW_NOTE = "# Drafted by stamina-gym mine from the project's history: review the prompts before use.\n"


def is_test_file(rel: str, text: str = "") -> bool:
    """A file under a tests folder, a ``conftest.py``, or one named like a test module that
    holds tests (``markdown/test_tools.py`` holds none: it is the product's)."""
    parts = PurePosixPath(rel).parts
    name = parts[-1]
    if any(part in TEST_FOLDERS for part in parts[:-1]) or name == "conftest.py":
        return True
    if not (name.startswith("test_") or name.endswith("_test.py")):
        return False
    try:
        return not name.endswith(".py") or bool(collection.collect(None, text, ()).ids)
    except SyntaxError:
        return True


#: A header that says a module was written by a program (``# This file is automatically
#: generated``, ``DO NOT EDIT``), looked for in its first lines.
_GENERATED = re.compile(r"(auto(matically|-)?\s*generated|generated (by|from|with|automatically)|do not (edit|modify))", re.IGNORECASE)
#: A module at least this long, this share of whose lines are literal data, is data.
DATA_MODULE_LINES = 200
DATA_MODULE_SHARE = 0.9


def is_data_module(text: str) -> bool:
    """A Python module that is data, not code: one whose first lines say a program wrote it,
    or one of at least ``DATA_MODULE_LINES`` lines, ``DATA_MODULE_SHARE`` of them top-level
    assignments of literal tables (idna's ``uts46data.py``). The quality meter leaves such
    modules out (``TaskMeta.quality_exclude``): their size says nothing of the code's
    quality, and analysing them may run past the meter's budget."""
    if _GENERATED.search("\n".join(text.splitlines()[:10])):
        return True
    lines = text.count("\n") + 1
    if lines < DATA_MODULE_LINES:
        return False
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    data = sum(node.end_lineno - node.lineno + 1 for node in tree.body  # type: ignore[operator]
               if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and _data(node.value))  # fmt: skip
    return data >= DATA_MODULE_SHARE * lines


def _data(node: ast.expr) -> bool:
    """A literal, a container of literals, or a builtin container made of them (``frozenset([...])``)."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(_data(item) for item in node.elts)
    if isinstance(node, ast.Dict):
        return all(key is not None and _data(key) for key in node.keys) and all(_data(v) for v in node.values)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return _data(node.operand)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("frozenset", "set", "tuple", "dict", "list"):
        return not node.keywords and all(_data(arg) for arg in node.args)
    return False


def split(files: Mapping[str, str], import_roots: Sequence[str] = (".",)) -> tuple[dict[str, str], dict[str, str]]:
    """(product files, test files relative to their tests folder). The tests folder is
    the shallowest ``tests``/``test`` folder of a path; test files outside any such
    folder keep their path; a ``src/`` layout is laid flat. Imports of the tests package by its absolute name
    (``from tests.helpers import x``) become relative ones: hidden tests must never import
    a module of that name from the agent's tree. So do imports by top-level name of the
    modules in ``import_roots`` (folders of the tests folder, ``.`` the folder itself), when
    the product has no module of that name (``from common import x``, ``tests/common.py``)."""
    product, tests = {}, {}
    depths = {}
    conftests = {rel: text for rel, text in files.items() if PurePosixPath(rel).name == "conftest.py"}
    for rel, text in files.items():
        if is_test_file(rel, text):
            parts = PurePosixPath(rel).parts
            cut = next((i for i, part in enumerate(parts[:-1]) if part in TEST_FOLDERS), None)
            inner = "/".join(parts[cut + 1 :]) if cut is not None else rel
            if any(fnmatch.fnmatch(parts[-1], pattern) for pattern in collection.TEST_FILE_PATTERNS):
                above = [str(PurePosixPath(*parts[:i], "conftest.py")) for i in range(cut + 1 if cut is not None else 0, len(parts))]
                text = with_conftest_fixtures(text, [conftests[c] for c in above if c in conftests])
            if cut is not None and rel.endswith(".py"):
                text = relative_imports(text, ".".join(parts[: cut + 1]), len(parts) - cut - 2)
                depths[inner] = len(parts) - cut - 2
            tests[inner] = text
        elif not NOT_PRODUCT.match(rel):
            product[rel] = text
    product = _flat(product)
    rooted = _root_modules(tests, import_roots, {rel.split("/")[0].removesuffix(".py") for rel in product})
    if rooted:
        for inner, depth in depths.items():
            tests[inner] = rooted_imports(tests[inner], rooted, depth)
    return product, tests


def _root_modules(tests: Mapping[str, str], roots: Sequence[str], product_tops: set[str]) -> dict[str, str]:
    """Top-level name -> its dotted path in the tests folder, for the modules and packages of
    ``roots`` that the product does not also hold (the first root that has a name wins)."""
    found: dict[str, str] = {}
    for root in roots:
        prefix = "" if root.strip("/") in ("", ".") else root.strip("/") + "/"
        for rel in tests:
            if not rel.startswith(prefix) or not rel.endswith(".py"):
                continue
            first = rel[len(prefix) :].split("/")
            name = first[0].removesuffix(".py")
            if name.isidentifier() and name != "conftest" and name not in product_tops:
                found.setdefault(name, f"{prefix.replace('/', '.')}{name}")
    return found


def rooted_imports(text: str, modules: Mapping[str, str], depth: int) -> str:
    """``text`` (a test module ``depth`` folders below the tests folder) with imports of
    ``modules`` by top-level name (name -> dotted path in the tests folder) made relative:
    ``from common import x`` -> ``from .common import x``, ``import common as c`` ->
    ``from . import common as c``. ``import common.sub`` (which binds ``common``) is left."""
    dots = "." * (depth + 1)

    def edit(node: ast.AST) -> str | None:
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            top, _, rest = node.module.partition(".")
            if top in modules:
                names = ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in node.names)
                return f"from {dots}{modules[top]}{'.' + rest if rest else ''} import {names}"
        elif isinstance(node, ast.Import) and len(node.names) == 1:
            alias = node.names[0]
            top = alias.name.split(".")[0]
            if top in modules and (alias.asname or "." not in alias.name):
                head, _, last = f"{modules[top]}{alias.name[len(top):]}".rpartition(".")
                return f"from {dots}{head} import {last}" + (f" as {alias.asname}" if alias.asname and alias.asname != last else "")
        return None

    return _edit_imports(text, edit)


def _flat(product: dict[str, str]) -> dict[str, str]:
    """A ``src/`` layout laid flat (``src/pkg/a.py`` -> ``pkg/a.py``): the grader puts the
    repository's root on the path, and a package of the same name installed where the
    tests run would otherwise be imported in the project's place."""
    if not any(rel.startswith("src/") and rel.endswith(".py") for rel in product):
        return product
    flat = {rel: text for rel, text in product.items() if not rel.startswith("src/")}
    for rel, text in product.items():
        if rel.startswith("src/"):
            flat.setdefault(rel[len("src/") :], text)
    return flat


def relative_imports(text: str, package: str, depth: int) -> str:
    """``text`` (a module ``depth`` folders below the tests package ``package``) with
    ``from package[.x] import y`` and ``import package.x as y`` made relative; other
    code is kept verbatim. A text that does not parse is returned as it is."""

    def edit(node: ast.AST) -> str | None:
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and (
                node.module == package or node.module.startswith(package + ".")):  # fmt: skip
            rest = node.module[len(package) :].lstrip(".")
            names = ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in node.names)
            return f"from {'.' * (depth + 1)}{rest} import {names}"
        if isinstance(node, ast.Import) and len(node.names) == 1:
            alias = node.names[0]
            if alias.asname and alias.name.startswith(package + "."):
                head, _, last = alias.name[len(package) + 1 :].rpartition(".")
                return f"from {'.' * (depth + 1)}{head} import {last} as {alias.asname}"
        return None

    return _edit_imports(text, edit)


def _edit_imports(text: str, edit: Callable[[ast.AST], str | None]) -> str:
    """``text`` with each import statement for which ``edit`` gives a replacement replaced,
    the rest verbatim; a text that does not parse is returned as it is."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text
    lines = text.splitlines(keepends=True)
    edits = [(node, replacement) for node in ast.walk(tree)
             if isinstance(node, (ast.Import, ast.ImportFrom)) and (replacement := edit(node)) is not None]  # fmt: skip
    for node, replacement in sorted(edits, key=lambda e: (e[0].lineno, e[0].col_offset), reverse=True):
        if node.lineno != node.end_lineno:
            first, last = lines[node.lineno - 1], lines[node.end_lineno - 1]
            lines[node.lineno - 1 : node.end_lineno] = [first.encode()[: node.col_offset].decode() + replacement
                                                        + last.encode()[node.end_col_offset :].decode()]  # fmt: skip
        else:
            line = lines[node.lineno - 1].encode()
            lines[node.lineno - 1] = (line[: node.col_offset] + replacement.encode() + line[node.end_col_offset :]).decode()
    return "".join(lines)


@dataclass
class Step:
    ref: str
    title: str
    status: str
    """``kept`` or ``dropped``."""
    reason: str = ""
    cause: str = ""
    """Why a dropped step was dropped, classified (``CAUSES``)."""
    first_error: str = ""
    """The first error of the step's tests that do not pass at the step, as the grader saw it."""
    turn: str = ""
    tests: list[str] = field(default_factory=list)
    flaky: list[str] = field(default_factory=list)
    not_running: list[str] = field(default_factory=list)
    """Tests that do not pass at the step itself in the grading layout (a fixture of the
    project's conftest.py, a dependency the sandbox lacks): left out."""
    retires: list[str] = field(default_factory=list)
    hypothesis: list[str] = field(default_factory=list)
    """Tests hypothesis drives (``@given``), never run nor kept: when one fails, hypothesis
    traces the failing example, which the grader's audit hook takes for tampering."""
    stopped: list[str] = field(default_factory=list)
    """Tests whose run the grader voids whatever the code does (``canaries.voids_a_run``: one
    that runs doctest, which sets ``sys.settrace``, toolz's ``test_doctests``; one that hands
    the product its own module, funcy's ``monkey(sys.modules[__name__])``): never run nor
    kept, since one run of them voids the run of every test of the step."""
    doubles: list[str] = field(default_factory=list)
    """Tests whose checks read how the product used a test double (a counted lock's count, a
    mock's calls): the implementation's steps, which no release note states. Left out."""
    import_only: list[str] = field(default_factory=list)
    """Unchanged tests that failed before only because their module did not import (it
    imports a name the step adds): left to the turn's other tests."""
    pin_broken: list[str] = field(default_factory=list)
    """A corpus build's pinned tests of this step that did not fail before it and pass after
    (or are no longer collected): the manifest and this build disagree."""
    untold: list[str] = field(default_factory=list)
    """Tests that the turn's prompt does not tell: its notes (with the names and signatures
    it gives) do not name them and it shows none of their checks (tabulate's "Bug fixes."
    over a dozen fixes, each pinned by its exact table). Left out."""
    passes_earlier: list[str] = field(default_factory=list)
    """Tests that fail just before the step but pass on the seed or on an earlier kept
    state (broken by a step between, fixed by this one): an agent that did nothing would
    be paid for them. Left out."""
    asked: dict[str, list[str]] = field(default_factory=dict)
    """Test id -> the cases of it (pytest's ids, ``example_.com-True``) that failed on the
    state before the step: what the step asks of a parametrized test, whose prompt shows
    some of them (``cases``). Not written to ``mining.yaml``."""


@dataclass
class Yield:
    task: Path
    snapshots: int
    candidates: int
    steps: list[Step]
    sdists: dict[str, str] = field(default_factory=dict)
    """Release -> the sha256 of its sdist, for a package's releases."""

    @property
    def kept(self) -> list[Step]:
        return [step for step in self.steps if step.status == "kept"]

    @property
    def rate(self) -> float:
        return len(self.kept) / self.candidates if self.candidates else 0.0

    def to_data(self) -> dict:
        return {
            "snapshots": self.snapshots, "candidates": self.candidates, "kept": len(self.kept),
            "yield": round(self.rate, 3), **({"sdists": self.sdists} if self.sdists else {}),
            "steps": [{key: value for key, value in vars(step).items() if value not in ("", []) and key != "asked"}
                      for step in self.steps],
        }  # fmt: skip


def mine(
    snapshots: Sequence[Snapshot],
    out: Path,
    *,
    task_id: str | None = None,
    title: str = "",
    fixes: Sequence[SourceFix] = (),
    recipe: Recipe | None = None,
    sandbox: Sandbox | None = None,
    runs: int = 3,
    timeout: float = 300.0,
    pinned: Mapping[str, Sequence[str]] | None = None,
    max_turn_lines: int | None = None,
    progress: Callable[[str], None] = lambda line: None,
    version: int = 1,
) -> Yield:
    """Write the task mined from ``snapshots`` into ``out`` (a new or empty folder, whose
    name is the task id unless ``task_id`` says otherwise) and return its yield. The
    ``recipe`` says what the project needs (``stamina_gym.mining.recipe``); ``fixes`` are
    applied after its own. With ``pinned`` (step ref -> its tests, relative to the turn's
    tests folder: a corpus manifest's), the kept steps and their tests are those, not what
    this machine's runs would choose: every other candidate is dropped unrun, and each
    pinned test is run once before and after its step to check that it still fails and
    then passes (one that does not is listed in its step's ``pin_broken``).

    A turn holds at most ``max_turn_lines`` (else the recipe's, else ``MAX_TURN_LINES``)
    changed lines of product code (added and removed, as ``code_size`` counts them: ``git
    diff --find-renames`` of the code, docstrings, comments and annotations aside). A candidate past that before any
    turn is kept moves the task's seed forward to its release (the step is dropped:
    ``too-large``); after one, the step is dropped with that cause, and its changes fold
    into the next kept turn, which is then bounded the same way."""
    if len(snapshots) < 2:
        raise ConfigError(f"mining needs at least two snapshots (a seed and a step), got {len(snapshots)}")
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise ConfigError(f"{out}: the output folder exists and is not empty; mining never writes over a task")
    task_id = task_id or out.name
    recipe = recipe or Recipe()
    max_turn_lines = max_turn_lines or recipe.max_turn_lines or MAX_TURN_LINES
    fixes = [*recipe.fixes, *fixes]
    trees = []
    for snapshot in snapshots:
        files = {rel: text for rel, text in snapshot.files.items() if not recipe.ignored(rel)}
        for fix in fixes:
            fix.apply(files)
        trees.append(split(files, recipe.test_import_roots))
    # A step whose tests are gone (an sdist that left them out) changes no test: no candidate.
    candidates = [i for i in range(1, len(trees))
                  if trees[i][1] and trees[i][0] != trees[i - 1][0] and trees[i][1] != trees[i - 1][1]]  # fmt: skip
    if not candidates:
        raise ConfigError("no step of the history changes both the product and its tests: nothing to mine")
    out.mkdir(parents=True, exist_ok=True)
    write_tree(out / "repo", trees[0][0])
    meta = {"id": task_id, "version": version, "title": title or f"History of {task_id}",
            "description": f"Mined from {len(snapshots)} snapshots ({snapshots[0].ref} to {snapshots[-1].ref}): each turn is "
                           "one step of the project's own history, landing on the agent's code of the turns before.",
            "python": [".".join(map(str, sys.version_info[:2]))]}  # fmt: skip
    if fixes:
        meta["fixes"] = [fix.model_dump() for fix in fixes]
    # every product module that is data at its last appearance in the history
    latest = {rel: text for product, _ in trees for rel, text in product.items() if rel.endswith(".py")}
    data_modules = sorted(rel for rel, text in latest.items() if is_data_module(text))
    if data_modules:
        meta["quality_exclude"] = data_modules
    _write_yaml(out / "task.yaml", meta)
    if recipe != Recipe():
        _write_yaml(out / RECIPE_FILE, recipe.model_dump(mode="json", exclude_defaults=True))
    owned = sandbox is None
    sandbox = sandbox or _default_sandbox(out)
    steps: list[Step] = []
    kept: list[tuple[int, str, list[str]]] = []  # (snapshot index, turn id, its tests)
    state = base = 0  # the last kept state, and the seed's
    scratch = Path(tempfile.mkdtemp(prefix="stamina-mine-"))
    try:
        write_support(recipe, out / "support", progress)
        for number, index in enumerate(candidates, 1):
            snapshot = snapshots[index]
            progress(f"candidate {number}/{len(candidates)}: {snapshot.ref[:12]} {snapshot.title[:60]}")
            turn_id = f"{len(kept) + 1:02d}-{_slug(snapshot.title)}"
            size = code_size(trees[state][0], trees[index][0]) if pinned is None else 0
            if pinned is not None and snapshot.ref not in pinned:
                step = Step(snapshot.ref, snapshot.title, "dropped", "not a kept step of the manifest", "not-pinned")
            elif size > max_turn_lines and pinned is None:  # a manifest's pins say what is kept
                since = (f"{size} changed lines of product code since {snapshots[state].ref} (docstrings, comments, annotations "
                         f"and layout aside), more than a turn holds ({max_turn_lines})")  # fmt: skip
                if kept:
                    step = Step(snapshot.ref, snapshot.title, "dropped", f"{since}: its changes fold into the next kept turn",
                                "too-large")  # fmt: skip
                else:
                    step = Step(snapshot.ref, snapshot.title, "dropped", f"{since}: the task's seed moves to this release",
                                "too-large")  # fmt: skip
                    state = base = index
                    shutil.rmtree(out / "repo")
                    write_tree(out / "repo", trees[base][0])
            else:
                step = _try_step(out, scratch, sandbox, trees, snapshots, state, index, turn_id, kept,
                                 1 if pinned is not None else runs, timeout, None if pinned is None else pinned[snapshot.ref],
                                 base)  # fmt: skip
            steps.append(step)
            if step.status == "kept":
                kept.append((index, turn_id, step.tests))
                state = index
            progress(f"    {step.status}: " + (f"{len(step.tests)} test(s)" if step.status == "kept" else step.reason))
        if not kept:
            _keep_only_the_yield(out, Yield(out, len(snapshots), len(candidates), steps, _digests(snapshots)))
            raise ConfigError("no candidate step has a test that fails before it and passes after: nothing to mine; "
                              f"why each was dropped: {out / 'mining.yaml'} ("
                              + "; ".join(f"{s.ref[:12]}: {s.cause}" for s in steps[:5]) + ")")  # fmt: skip
        asked = {step.turn: step.asked for step in steps if step.status == "kept"}
        _draft_prompts(out, trees, snapshots, kept, base, sandbox, scratch, asked)
    except BaseException:
        if not kept and not (out / "mining.yaml").exists():
            shutil.rmtree(out, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if owned:
            sandbox.close()
    result = Yield(out, len(snapshots), len(candidates), steps, _digests(snapshots))
    (out / "mining.yaml").write_text(yaml.safe_dump(result.to_data(), sort_keys=False, allow_unicode=True), encoding="utf-8")
    return result


def code_size(before: Mapping[str, str], after: Mapping[str, str]) -> int:
    """The changed lines (added and removed) of product code from ``before`` to ``after``,
    as a turn's bound counts them: ``git diff --find-renames`` of the two trees with each
    Python module as its code alone, its docstrings, comments, annotations and layout left
    out (``_code``), every other file as it is. A release that documents or annotates its
    API (markdown 3.5: 1,598 lines added, most of them docstrings and comments; pydash 7.0's
    type hints) asks an agent for no more code than it changes."""
    def code(files: Mapping[str, str]) -> dict[str, str]:
        return {rel: _code(text) if rel.endswith(".py") else text for rel, text in files.items()}

    changed = {rel for rel in set(before) | set(after) if before.get(rel) != after.get(rel)}
    if not changed:
        return 0
    stats = patch_stats(diff_trees(code(before), code(after)))
    return stats["added"] + stats["removed"]


def _code(text: str) -> str:
    """A module's code without its docstrings, comments, annotations and layout (its tree
    unparsed), or its text where it does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return text
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                node.body = node.body[1:] or [ast.Pass()]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node.returns = None
        elif isinstance(node, ast.arg):
            node.annotation = None
        elif isinstance(node, ast.AnnAssign):
            node.annotation = ast.Name("_", ast.Load())  # a field declared stays a line of code
    return ast.unparse(_Unannotated().visit(tree))


class _Unannotated(ast.NodeTransformer):
    """``x: int = 1`` as ``x = 1``: an annotation added to an assignment is no code."""

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        if node.value is None or not node.simple:
            return node
        return ast.copy_location(ast.Assign([node.target], node.value), node)


def _digests(snapshots: Sequence[Snapshot]) -> dict[str, str]:
    return {snapshot.ref: snapshot.digest for snapshot in snapshots if snapshot.digest}


def _keep_only_the_yield(out: Path, result: "Yield") -> None:
    """A mining that kept nothing leaves no task, only ``mining.yaml``: why each step was dropped."""
    for child in out.iterdir():
        shutil.rmtree(child) if child.is_dir() else child.unlink()
    (out / "mining.yaml").write_text(yaml.safe_dump(result.to_data(), sort_keys=False, allow_unicode=True), encoding="utf-8")


def _default_sandbox(out: Path) -> Sandbox:
    from stamina_gym.sandbox.local import LocalSandbox

    return LocalSandbox(SandboxConfig(), hidden=[out])


def _try_step(out: Path, scratch: Path, sandbox: Sandbox, trees, snapshots, state: int, index: int, turn_id: str,
              kept: list[tuple[int, str, list[str]]], runs: int, timeout: float, pins: Sequence[str] | None = None,
              base: int = 0) -> Step:  # fmt: skip
    snapshot = snapshots[index]
    step = Step(snapshot.ref, snapshot.title, "dropped")
    before, after = trees[state][0], trees[index][0]
    patch = diff_trees(before, after)
    folder = out / "turns" / turn_id
    write_tree(folder / "tests", trees[index][1])
    (folder / "reference.patch").write_text(patch, encoding="utf-8")
    _write_yaml(folder / "turn.yaml", {"title": snapshot.title or snapshot.ref, "kind": "feature", "prompts": ["(draft)", "(draft 2)"]})
    try:
        try:
            task = load_task_dir(out)
        except Exception as exc:  # noqa: BLE001 - the step's tests are unreadable: say why and go on
            step.reason, step.cause = f"its tests cannot be read: {exc}", "unreadable"
            return step
        turn = task.turns[-1]
        earlier = list(task.turns[:-1])
        keep_earlier = list(task.regression_ids(turn.index))  # earlier turns' tests still in force
        sources = _TestSources(trees[index][1])
        ids = []
        for tid in turn.collected:
            rel, *names = tid.removeprefix(f"{turn_id}/").split("::")
            # Failing, a hypothesis test traces its example (sys.settrace), which the
            # grader takes for tampering: an honest agent would be paid as a forger.
            if sources.uses_hypothesis(rel, names):
                step.hypothesis.append(tid)
            elif sources.voids_runs(rel, names):
                step.stopped.append(tid)
            elif sources.reads_doubles(tid.removeprefix(f"{turn_id}/")):
                step.doubles.append(tid)
            else:
                ids.append(tid)
        if pins is not None:
            wanted = {f"{turn_id}/{pin}" for pin in pins}
            step.pin_broken = sorted(pin for pin in pins if f"{turn_id}/{pin}" not in ids)  # no longer collected
            ids = [tid for tid in ids if tid in wanted]
        if not ids:
            but = [what for what, tests in (("hypothesis-driven ones", step.hypothesis), ("ones that read test doubles", step.doubles),
                                            ("ones whose run the grader voids", step.stopped)) if tests]  # fmt: skip
            step.reason = "its test files hold no test" + (" but " + " and ".join(but) if but else "")
            step.cause = "no-tests"
            return step
        unchanged = _unchanged_tests(trees[state][1], trees[index][1], ids, turn_id)
        messages: dict[str, str] = {}  # a test that does not pass after the step -> its first run's message
        retired: list[str] = []

        def fail_to_pass(group: list[str], first: bool) -> list[str]:
            """The tests of ``group`` that fail before the step and pass after it, every
            run, and fail on the seed and on every earlier kept state (the rest are noted on
            ``step``). With ``first``, the earlier turns' tests run once after it too."""
            try:
                # The tests the clock stopped before the step (the slow one, and those after
                # it in its run) do not run again with the others: ``runs`` - 1 more runs
                # would each wait out the limit again (more-itertools' 47th candidate, 3 x
                # 300 s). Where it stopped more than one, each runs alone once the runs
                # after the step have set a shorter limit (``apart``, below).
                first_run = _run(task, [turn], before, scratch, sandbox, timeout, group)
                seen_before = [by_base_id(first_run, group)]
                for case, outcome in first_run.items():
                    if "[" in case and outcome.status != "passed":
                        step.asked.setdefault(base_id(case), []).append(case[len(base_id(case)) + 1 : -1])
                slow = {tid: seen_before[0][tid] for tid in group if seen_before[0][tid].message == TIMED_OUT}
                rest = [tid for tid in group if tid not in slow]
                for _ in range(runs - 1):
                    again = by_base_id(_run(task, [turn], before, scratch, sandbox, timeout, rest), rest) if rest else {}
                    seen_before.append({**slow, **again})
                seen_after, slowest = [], 0.0
                for n in range(runs):
                    also = keep_earlier if first and n == 0 else []  # run once, for what the step retires
                    started = time.monotonic()
                    outcomes = _run(task, [*earlier, turn] if also else [turn], after, scratch, sandbox, timeout, [*also, *group])
                    slowest = max(slowest, time.monotonic() - started)
                    seen_after.append(by_base_id(outcomes, group))
                    if also:
                        seen = by_base_id(outcomes, also)
                        retired.extend(tid for tid in also if seen[tid].status != "passed")
            except _Void as exc:  # e.g. hypothesis tracing a failing test, which the audit hook stops
                raise _Void(f"the grader voided a run of its tests: {exc}") from exc
            passing = []
            for tid in group:
                statuses_before = {s[tid].status for s in seen_before}
                statuses_after = {s[tid].status for s in seen_after}
                if len(statuses_before) > 1 or len(statuses_after) > 1:
                    step.flaky.append(tid)
                elif statuses_after != {"passed"}:
                    step.not_running.append(tid)
                    messages[tid] = seen_after[0][tid].message
                elif statuses_before != {"passed"}:
                    passing.append(tid)
            # The null agent keeps the seed's code for the whole episode, and an agent may
            # undo a turn: a test that passes on the seed or an earlier kept state would pay
            # for that.
            # A test the step mends from hanging hangs on every earlier state too: each such
            # run waits for a limit that the tests' own run after the step sets, not for
            # ``timeout`` (boltons' 55th candidate, 40 earlier states x 300 s).
            limit = min(timeout, max(EARLIER_LIMIT_FLOOR, EARLIER_LIMIT_FACTOR * slowest))

            def apart(seen: dict[str, Outcome], tree: Mapping[str, str]) -> dict[str, Outcome]:
                """``seen`` with each test a run's clock stopped run again alone, where it
                stopped more than one: a test after a hanging one never reported, and
                counted as failing there, a test that state passes would be the turn's
                (the null agent, keeping the seed, would earn it)."""
                stopped = [tid for tid in seen if seen[tid].message == TIMED_OUT]
                if len(stopped) < 2:
                    return seen
                return {**seen, **{tid: by_base_id(_run(task, [turn], tree, scratch, sandbox, limit, [tid]), [tid])[tid]
                                   for tid in stopped}}  # fmt: skip

            if len(slow) > 1:
                alone = apart(dict(slow), before)
                seen_before = [{**seen, **alone} for seen in seen_before]
                passing = [tid for tid in passing if {s[tid].status for s in seen_before} != {"passed"}]
            try:
                for earlier_state in sorted({base, *(i for i, _, _ in kept)} - {state}):
                    if not passing:
                        break
                    seen = by_base_id(_run(task, [turn], trees[earlier_state][0], scratch, sandbox, limit, passing), passing)
                    seen = apart(seen, trees[earlier_state][0])
                    step.passes_earlier += [tid for tid in passing if seen[tid].status == "passed"]
                    passing = [tid for tid in passing if seen[tid].status != "passed"]
            except _Void as exc:  # on an earlier state too: the step is dropped, and mining goes on
                raise _Void(f"the grader voided a run of its tests on an earlier state: {exc}") from exc
            return passing

        # A test whose text did not change failed before only because its module did not
        # import there (it imports a new name): it is the turn's only when the turn has no
        # other, as in a refactor that renames a module, whose import is the requirement. So,
        # unpinned, the new and changed tests run first, and the unchanged rest (most of a
        # git commit's suite, each test run 2 * ``runs`` times) only when none of them is.
        if pins is not None:
            groups = [ids]
        else:
            groups = [group for group in ([t for t in ids if t not in unchanged], [t for t in ids if t in unchanged]) if group]
        passed: list[str] = []
        try:
            for number, group in enumerate(groups):
                passed = fail_to_pass(group, first=number == 0)
                if passed:
                    break
        except _Void as exc:
            step.reason, step.cause = str(exc), "voided"
            return step
        if pins is not None:  # the manifest chose them: each must still fail before and pass after
            step.tests = passed
            step.pin_broken += sorted(tid.split("/", 1)[1] for tid in ids if tid not in passed)
        else:
            step.tests = [tid for tid in passed if tid not in unchanged] or passed
        step.import_only = [tid for tid in passed if tid not in step.tests]
        step.retires = retired
        # A test the step did not change asks only for the names it imports, which the
        # prompt gives (the interface check): its turn's notes need not name it.
        if step.tests and not set(step.tests) <= unchanged:
            told = _told(trees, snapshots, state, index, [tid for tid in step.tests if tid not in unchanged], step.asked)
            step.untold = [tid for tid in step.tests if tid not in told and tid not in unchanged]
            step.tests = [tid for tid in step.tests if tid in told or tid in unchanged]
            if pins is not None:  # a pinned test the prompt no longer tells breaks its pin
                step.pin_broken += sorted(tid.split("/", 1)[1] for tid in step.untold)
            if not told:
                step.reason = (f"its notes name none of its {len(step.untold)} test(s), and a prompt could show their "
                               "checks only by showing every one")  # fmt: skip
                step.cause = "untold"
                return step
        if not step.tests:
            step.reason = _no_tests_reason(step, ids, unchanged)
            # A new or changed test that does not run at the step is why it has no test; an
            # unchanged one that does not run (a platform's skip) is only noted.
            changed = [tid for tid in step.not_running if tid not in unchanged]
            if step.not_running:
                step.first_error = error_line(messages[(changed or step.not_running)[0]])
            if changed:
                step.cause = classify(messages[changed[0]], trees[index][1], after)
            else:
                step.cause = "flaky" if step.flaky else "passes-earlier" if step.passes_earlier else "no-fail-to-pass"
            return step
        step.status, step.turn = "kept", turn_id
        spec = {"title": snapshot.title or snapshot.ref, "kind": "feature", "prompts": ["(draft)", "(draft 2)"],
                "tests": [tid.split("/", 1)[1] for tid in step.tests]}  # fmt: skip
        if step.retires:
            spec["retires"] = step.retires
        _write_yaml(folder / "turn.yaml", spec)
        return step
    finally:
        if step.status != "kept":
            shutil.rmtree(folder, ignore_errors=True)


#: Notes shorter than this (characters) say next to nothing ("Speedups."); short notes that
#: name what changed ("seekable: Add relative_seek") are trusted as longer ones are.
BARE_NOTES = 24
#: Notes that speak of fixes without naming them: "Bug fixes.", "Various bug fixes", "several
#: fixes for parsing non-base 10 numbers".
VAGUE = re.compile(r"\b(bug ?fix(es)?|(various|several|minor|other|misc\w*|small) (bug ?)?fix(es)?|fixed (some|several|various) bugs)\b",
                   re.IGNORECASE)  # fmt: skip


def _told(trees, snapshots: Sequence[Snapshot], previous: int, index: int, tests: Sequence[str],
          asked: Mapping[str, Sequence[str]] = {}) -> list[str]:  # fmt: skip
    """Those of ``tests`` (ids under the task's turns folder) that the turn's prompt tells,
    where its notes are vague (all but bare, or fixes unnamed: ``VAGUE``; else all of them): its
    notes or documentation name them, or it shows one of their checks (``_Shown.told``). The others are
    left out, and what the prompt shows is read again from those left (shown checks are
    never all a turn's tests hold), until it tells every one: a turn whose notes name none
    of its tests and whose every check is a single one ends with none."""
    kept = list(tests)
    if not _vague([*_folded(snapshots, previous, index), snapshots[index]]):
        return kept  # notes that say what changed are trusted to tell its tests
    while kept:
        shown = _shown(trees, snapshots, previous, index, [tid.split("/", 1)[1] for tid in kept], asked=asked)
        told = [tid for tid in kept if shown.told(tid.split("/", 1)[1])]
        if told == kept:
            break
        kept = told
    return kept


def _no_tests_reason(step: Step, ids: list[str], unchanged: set[str]) -> str:
    parts = []
    if step.not_running:
        parts.append(f"{len(step.not_running)} of {len(ids)} test(s) do not pass at the step in the grading layout")
    if step.flaky:
        parts.append(f"{len(step.flaky)} flaky")
    if step.passes_earlier:
        parts.append(f"{len(step.passes_earlier)} pass on the seed or an earlier kept state")
    changed = [tid for tid in ids if tid not in unchanged]
    parts.append(f"none of the {len(changed)} new or changed test(s) fails before the step and passes after")
    return "; ".join(parts)


#: The causes a dropped step is classified by.
CAUSES = ("missing-test-dependency", "import-root", "collection-error", "failing-assertion", "failing-test", "timeout",
          "skipped", "flaky", "passes-earlier", "no-fail-to-pass", "no-tests", "unreadable", "voided", "not-pinned",
          "too-large", "untold")  # fmt: skip
_NO_MODULE = re.compile(r"No module named '([\w.]+)'")


def error_line(message: str, limit: int = 500) -> str:
    """The line of a test's failure message that names its error: the last exception line of
    its traceback (``ModuleNotFoundError: No module named 'nose'``), else its last line."""
    lines = [re.sub(r"^E\s+", "", line.strip())  # pytest's marker of an error line
             for line in message.replace("\\n", "\n").splitlines() if line.strip()]  # a report escapes its line ends
    named = [line for line in lines if _EXCEPTION_LINE.match(line)]
    return (named or lines or [""])[-1][:limit]


_EXCEPTION_LINE = re.compile(r"^(?:[\w.]+(?:Error|Exception|Exit|Interrupt)|Skipped|Failed|AssertionError)\b:?")


def classify(message: str, tests: Mapping[str, str], product: Mapping[str, str]) -> str:
    """The cause a test's first error names: a module neither the product nor the tests
    hold is a missing test dependency; one the tests folder holds, imported by its top-level
    name, is the tests' import root; a skip where it is graded is ``skipped``; other errors
    before the test runs (its module raising as it is imported) are collection errors; then a
    timeout, a failing assertion or another exception."""
    if error_line(message).startswith("Skipped"):
        return "skipped"  # where it is graded, it skips (a platform or an optional module it lacks)
    missing = _NO_MODULE.search(message)
    if missing:
        top = missing[1].split(".")[0]
        if any(top in (*rel.split("/")[:-1], rel.rsplit("/", 1)[-1].removesuffix(".py")) for rel in tests):
            return "import-root"
        if any(rel.split("/")[0].removesuffix(".py") == top for rel in product):
            return "collection-error"
        return "missing-test-dependency"
    lowered = message.lower()
    if "timed out" in lowered or "timeout" in lowered:
        return "timeout"
    line, first = error_line(message), message.strip().partition("\n")[0].lower()
    at_import = ", in <module>" in message  # the test module itself raised as it was imported
    if at_import or "collect" in first or any(kind in line for kind in ("ImportError", "SyntaxError", "NameError", "fixture")):
        return "collection-error"
    if "AssertionError" in message or message.lstrip().startswith("assert"):
        return "failing-assertion"
    return "failing-test"


class _Void(Exception):
    """A run of a step's tests that the grader voided (its reason is the message)."""


#: The message of a test that had not reported when its run hit the time limit.
TIMED_OUT = "the run timed out before this test reported"
#: A test's run on an earlier kept state (which it must fail) is stopped at this many times
#: the slowest of its runs after the step, and never sooner than the floor's seconds: one
#: still running then counts as failing there (a test that passes on an earlier state runs
#: there about as fast as after the step).
EARLIER_LIMIT_FACTOR = 5.0
EARLIER_LIMIT_FLOOR = 60.0


def _run(task: Task, turns, tree: Mapping[str, str], scratch: Path, sandbox: Sandbox, timeout: float, only):
    source = Path(tempfile.mkdtemp(prefix="state-", dir=scratch))
    try:
        write_tree(source, tree)
        sandbox.prepare(source)
        # No canary: mining runs the project's own history and judges no agent, so nothing
        # reads a canary's outcome, and sealing one copied from a large test module took
        # most of a candidate's time (a second each, six per run for more-itertools).
        hidden = run_hidden_tests(source=source, task=task, turns=turns, sandbox=sandbox, scratch=scratch, timeout=timeout,
                                  only=only, plant_canaries=False)  # fmt: skip
        if hidden.outcomes is None or hidden.evidence:
            raise _Void("; ".join([*hidden.evidence[:2], hidden.problem[:200]]).strip("; ") or "no report")
        if hidden.run is not None and hidden.run.timed_out:  # the tests the clock stopped say so
            reported = {base_id(tid) for tid in hidden.outcomes}  # a module that did not collect: by its file's name
            return {**hidden.outcomes, **{tid: Outcome("missing", TIMED_OUT) for tid in only
                                          if tid not in reported and tid.split("::")[0] not in reported}}  # fmt: skip
        return hidden.outcomes
    finally:
        shutil.rmtree(source, ignore_errors=True)


def _unchanged_tests(old: Mapping[str, str], new: Mapping[str, str], ids: Sequence[str], turn_id: str) -> set[str]:
    """The ids whose test function reads the same in ``old`` and ``new`` (test files
    relative to the tests folder), its decorators and its ``parametrize`` rows with it: a
    test that did not change is no test of this step; one whose list of cases grew is."""
    was, now = _TestSources(old), _TestSources(new)
    same = set()
    for tid in ids:
        rel, *names = tid.removeprefix(f"{turn_id}/").split("::")
        before = was.source(rel, names)
        if before is not None and before == now.source(rel, names) and _marks(was, rel, names) == _marks(now, rel, names):
            same.add(tid)
    return same


def _marks(sources: "_TestSources", rel: str, names: Sequence[str]) -> list[str]:
    """A test's decorators and its ``parametrize`` rows (a list the module names read
    through), as text."""
    node = sources.node(rel, names)
    found = _parametrized(sources, rel, names)
    return [*(ast.unparse(d) for d in (node.decorator_list if node else [])),
            *(ast.unparse(ast.Tuple(elts=row, ctx=ast.Load())) for row in (found.rows if found else []))]  # fmt: skip


class _Segments:
    """``ast.get_source_segment`` of many nodes of one text, its lines split once: the
    library's splits the whole text again at every call, and a 6,000-line test module
    has hundreds of tests (more-itertools' ``test_more.py``: 77 of a candidate's 112 s)."""

    _LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")  # as ``ast`` splits: never at a form feed

    def __init__(self, text: str) -> None:
        self.lines = self._LINE.findall(text)

    def __call__(self, node: ast.AST) -> str | None:
        end_lineno, end_col = getattr(node, "end_lineno", None), getattr(node, "end_col_offset", None)
        if end_lineno is None or end_col is None:
            return None
        start, end = node.lineno - 1, end_lineno - 1
        if start == end:
            return self.lines[start].encode()[node.col_offset : end_col].decode()
        first = self.lines[start].encode()[node.col_offset :].decode()
        return first + "".join(self.lines[start + 1 : end]) + self.lines[end].encode()[:end_col].decode()


class _TestSources:
    """The source of each test function and method of a tests tree, each file parsed once."""

    def __init__(self, files: Mapping[str, str]) -> None:
        self.files = files
        self._parsed: dict[str, dict[tuple[str, ...], str]] = {}
        self._methods: dict[str, list[str]] | None = None
        self._classes: dict[str | None, dict[str, ast.ClassDef]] = {}
        self._own: dict[str, set[str]] = {}
        self._trees: dict[str, ast.Module] = {}
        self._given: set[tuple[str, ...]] = set()
        """(file, name...) of the tests hypothesis drives (``@given``)."""
        self._audited: set[tuple[str, ...]] = set()
        """(file, name...) of the tests whose run the grader voids (``canaries.voids_a_run``),
        hypothesis-driven ones aside."""

    def uses_hypothesis(self, rel: str, names: Sequence[str]) -> bool:
        self._index(rel)
        return (rel, *names) in self._given

    def voids_runs(self, rel: str, names: Sequence[str]) -> bool:
        self._index(rel)
        return (rel, *names) in self._audited

    def _index(self, rel: str) -> dict[tuple[str, ...], str]:
        if rel not in self._parsed:
            found: dict[tuple[str, ...], str] = {}
            text = self.files.get(rel, "")
            try:
                tree = ast.parse(text)
            except SyntaxError:
                tree = ast.Module(body=[], type_ignores=[])
            segment = _Segments(text)

            def index(key: tuple[str, ...], node: ast.AST) -> None:
                found[key] = segment(node) or ""
                if hypothesis_driven(node):
                    self._given.add((rel, *key))
                elif voids_a_run(node):
                    self._audited.add((rel, *key))

            for node in collection.module_level(tree.body):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    index((node.name,), node)
                elif isinstance(node, ast.ClassDef):
                    for item in node.body:
                        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                            index((node.name, item.name), item)
            self._parsed[rel] = found
        return self._parsed[rel]

    def module(self, rel: str) -> ast.Module:
        """The test module ``rel`` parsed, once (an empty module where it does not parse)."""
        if rel not in self._trees:
            try:
                self._trees[rel] = ast.parse(self.files.get(rel, ""))
            except SyntaxError:
                self._trees[rel] = ast.Module(body=[], type_ignores=[])
        return self._trees[rel]

    def node(self, rel: str, names: Sequence[str]) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """The test function (``[name]``) or method (``[Class, name]``) of ``rel`` as parsed,
        its decorators with it; None where ``rel`` does not define it."""
        scope: Sequence[ast.stmt] = list(collection.module_level(self.module(rel).body))
        for name in names[:-1]:
            scope = next((node.body for node in scope if isinstance(node, ast.ClassDef) and node.name == name), [])
        return next((node for node in scope if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == names[-1]), None)

    def own_names(self, rel: str) -> set[str]:
        """The names the test module ``rel`` defines, assigns or imports from the tests folder
        (``class Locked``, ``DATA = [...]``, ``from . import CacheTestMixin``): the tests',
        not the product's. Read once per file: every test of a turn asks."""
        if rel in self._own:
            return self._own[rel]
        tree = self.module(rel)
        names = {node.name for node in collection.module_level(tree.body)
                 if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}  # fmt: skip
        names |= {target.id for node in collection.module_level(tree.body) if isinstance(node, (ast.Assign, ast.AnnAssign))
                  for target in (node.targets if isinstance(node, ast.Assign) else [node.target]) if isinstance(target, ast.Name)}  # fmt: skip
        names |= {(alias.asname or alias.name) for node in tree.body if isinstance(node, ast.ImportFrom) and node.level
                  for alias in node.names}  # fmt: skip
        self._own[rel] = names
        return names

    def source(self, rel: str, names: Sequence[str]) -> str | None:
        """A test function (``[name]``) or method (``[Class, name]``); a method inherited
        from a class elsewhere is found by its name where exactly one class defines it."""
        if rel not in self.files:
            return None
        own = self._index(rel).get(tuple(names))
        if own is not None or len(names) == 1:
            return own
        if self._methods is None:
            self._methods = {}
            for other in self.files:
                if other.endswith(".py"):
                    for key, text in self._index(other).items():
                        if len(key) == 2:
                            self._methods.setdefault(key[1], []).append(text)
        found = self._methods.get(names[-1], [])
        if len(found) == 1:
            return found[0]
        where, method = self._members(rel, names[0]).get(names[-1], (rel, None))  # through the class's bases
        return ast.get_source_segment(self.files[where], method) if isinstance(method, ast.FunctionDef) else None

    def reads_doubles(self, tid: str) -> bool:
        """Whether a check of test ``tid`` reads how the product used a test double: an
        attribute that an object the test made from a class of the tests' own records in a
        method the product calls and the test never does (cachetools 6.0.0: ``lock =
        CountedLock()``, whose ``__enter__`` counts, then ``lock.count == 3`` entries per
        miss; ``Conditioned``'s ``wait_for`` and ``notify_all``), or a mock's record
        (``m.call_count``, ``m.assert_called_once_with(...)``, pretend's ``recorder.calls``).
        How often a lock is taken is the implementation's, which no release note states.
        What a method the test calls records (a ``get`` under ``@cachedmethod`` counting
        its calls) is behaviour, and stays."""
        rel = tid.split("::", 1)[0]
        tree = self.test_tree(tid)
        called = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        recorded: dict[str, set[str]] = {}  # name -> the attributes its object records, or {"*"} for a mock
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                kept = self._recorded(rel, _called_name(node.value), called)
                recorded.update({target.id: kept for target in node.targets if isinstance(target, ast.Name) and kept})
            elif isinstance(node, ast.withitem) and isinstance(node.optional_vars, ast.Name) and isinstance(node.context_expr, ast.Call) \
                    and _called_name(node.context_expr) in ("patch", "object"):  # fmt: skip
                recorded[node.optional_vars.id] = {"*"}  # with mock.patch(...) as m

        def reads(node: ast.AST) -> bool:
            return any(isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in recorded
                       and ({"*", n.attr} & recorded[n.value.id]) for n in ast.walk(node))  # fmt: skip

        for node in ast.walk(tree):
            if isinstance(node, ast.Assert) and reads(node.test):
                return True
            if isinstance(node, ast.Call) and _called_name(node).startswith("assert"):
                root = node.func.value if isinstance(node.func, ast.Attribute) else None
                while isinstance(root, (ast.Attribute, ast.Subscript)):
                    root = root.value
                if isinstance(root, ast.Name) and "*" in recorded.get(root.id, ()):
                    return True  # m.assert_called_once_with(...), m.__enter__.assert_called_once()
                if any(reads(arg) for arg in node.args):
                    return True
        return False

    def _recorded(self, rel: str, name: str, called: set[str]) -> set[str]:
        """What an object made by calling ``name`` records: {"*"} for a mock; for a class of
        the tests' own (of ``rel`` or imported from the tests folder), the attributes its
        methods and its own bases' store into ``self`` in a method that is not ``__init__``,
        has no decorator and whose name the test never reads (``called``): one the
        product calls (``__enter__``, ``wait_for``)."""
        if name in _MOCKS:
            return {"*"}
        found: set[str] = set()
        todo, seen = [name], set()
        while todo:
            cls = todo.pop()
            where = rel if self._class(rel, cls) is not None else self._defining(cls) if cls in self.own_names(rel) else None
            node = self._class(where, cls) if where else None
            if node is None or cls in seen:
                continue
            seen.add(cls)
            todo += [base.id for base in node.bases if isinstance(base, ast.Name)]
            for method in node.body:
                if (isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) and not method.decorator_list
                        and method.name not in ("__init__", "__new__") and method.name not in called):  # fmt: skip
                    found |= {target.attr for n in ast.walk(method) if isinstance(n, (ast.Assign, ast.AugAssign))
                              for target in (n.targets if isinstance(n, ast.Assign) else [n.target])
                              if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self"}  # fmt: skip
        return found

    def test_tree(self, tid: str) -> ast.Module:
        """The test ``tid`` (``file::Class::name[param]``) parsed, with what it reaches
        through the test case read through: ``self.Cache`` is the class attribute its class
        or a base sets (``Cache = LRUCache``), ``self.decorator(maxsize=2)`` the one
        expression a helper method returns, its parameters bound (``return
        self.DECORATOR(maxsize, **kwargs)`` with ``DECORATOR =
        staticmethod(cachetools.func.lru_cache)``: ``cachetools.func.lru_cache(2)``). An
        empty module where the source is not found or does not parse."""
        rel, *names = tid.split("::")
        names = [name.split("[", 1)[0] for name in names]
        try:
            tree = ast.parse(textwrap.dedent(self.source(rel, names) or ""))
        except SyntaxError:
            return ast.Module(body=[], type_ignores=[])
        members = {name: node for name, (_, node) in self._members(rel, names[0]).items()} if len(names) == 2 else {}
        if members:
            tree = _ThroughTheTestCase(members).visit(tree)
            ast.fix_missing_locations(tree)
        return tree

    def _members(self, rel: str, name: str) -> dict[str, tuple[str, ast.AST]]:
        """The class attributes and methods of test class ``name`` of ``rel`` and its bases
        (found by name in that file, else in the one file that defines it), the class's own
        first, each with the file that defines it."""
        members: dict[str, tuple[str, ast.AST]] = {}
        todo, seen = [(rel, name)], set()
        while todo:
            where, cls = todo.pop(0)
            node = self._class(where, cls)
            if node is None or (where, cls) in seen:
                continue
            seen.add((where, cls))
            for item in node.body:
                if isinstance(item, ast.Assign) and len(item.targets) == 1 and isinstance(item.targets[0], ast.Name):
                    members.setdefault(item.targets[0].id, (where, item.value))
                elif isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    members.setdefault(item.name, (where, item))
            for base in node.bases:
                base_name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
                todo.append((where if self._class(where, base_name) else self._defining(base_name), base_name))
        return members

    def _class(self, rel: str | None, name: str) -> ast.ClassDef | None:
        if rel not in self._classes:
            try:
                tree = ast.parse(self.files.get(rel or "", ""))
            except SyntaxError:
                tree = ast.Module(body=[], type_ignores=[])
            self._classes[rel] = {node.name: node for node in collection.module_level(tree.body) if isinstance(node, ast.ClassDef)}
        return self._classes[rel].get(name)

    def _defining(self, name: str) -> str | None:
        """The one test file that defines class ``name``, or None."""
        found = [rel for rel in self.files if rel.endswith(".py") and self._class(rel, name) is not None]
        return found[0] if len(found) == 1 else None


#: The test doubles of unittest.mock and pretend, by the name of the call that makes one.
_MOCKS = frozenset({"Mock", "MagicMock", "AsyncMock", "NonCallableMock", "create_autospec", "stub", "call_recorder"})


class _ThroughTheTestCase(ast.NodeTransformer):
    """``self.NAME`` read as the class attribute ``members`` gives, ``self.helper(...)`` as
    the expression the helper returns, a few levels deep; anything else left as it is."""

    def __init__(self, members: Mapping[str, ast.AST], depth: int = 3) -> None:
        self.members, self.depth = members, depth

    def _member(self, node: ast.AST) -> ast.AST | None:
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            return self.members.get(node.attr)
        return None

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        value = self._member(node)
        if isinstance(value, ast.expr) and isinstance(node.ctx, ast.Load) and not (isinstance(value, ast.Constant) and value.value is None):
            if isinstance(value, ast.Call) and getattr(value.func, "id", "") in ("staticmethod", "classmethod") and value.args:
                value = value.args[0]
            return copy.deepcopy(value)
        return self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        helper = self._member(node.func)
        returned = _returned(helper) if isinstance(helper, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
        bound = _bind(helper.args, node) if returned is not None else None
        if bound is None or self.depth <= 0:
            return self.generic_visit(node)
        expression = _Bind(*bound).visit(copy.deepcopy(returned))
        if any(isinstance(n, ast.Name) and n.id == bound[1] for n in ast.walk(expression)):
            return self.generic_visit(node)  # its ``**kwargs`` used otherwise than passed on
        return _ThroughTheTestCase(self.members, self.depth - 1).visit(expression)


def _returned(function: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.expr | None:
    """The expression of a method whose body is one ``return`` (a docstring aside)."""
    body = function.body[1:] if ast.get_docstring(function) is not None else function.body
    return body[0].value if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None else None


def _bind(args: ast.arguments, call: ast.Call) -> tuple[dict[str, ast.expr], str | None, list[ast.keyword]] | None:
    """A method's parameters (``self`` aside) bound to a call's arguments, its ``**kwargs``
    name and the keywords it takes; None where the call does not bind plainly."""
    params = [a.arg for a in (*args.posonlyargs, *args.args)][1:]
    defaults = dict(zip(params[len(params) - len(args.defaults):], args.defaults)) if args.defaults else {}
    if args.vararg or len(call.args) > len(params) or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    values: dict[str, ast.expr] = dict(zip(params, call.args))
    extra = []
    for keyword in call.keywords:
        if keyword.arg in params and keyword.arg not in values:
            values[keyword.arg] = keyword.value
        elif keyword.arg is not None and args.kwarg:
            extra.append(keyword)
        else:
            return None
    for param in params:
        if param not in values:
            if param not in defaults:
                return None
            values[param] = defaults[param]
    return values, args.kwarg.arg if args.kwarg else None, extra


class _Bind(ast.NodeTransformer):
    def __init__(self, values: Mapping[str, ast.expr], kwargs: str | None, extra: Sequence[ast.keyword]) -> None:
        self.values, self.kwargs, self.extra = values, kwargs, extra

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return copy.deepcopy(self.values[node.id]) if node.id in self.values else node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        keywords = []
        for keyword in node.keywords:
            if keyword.arg is None and isinstance(keyword.value, ast.Name) and keyword.value.id == self.kwargs:
                keywords += copy.deepcopy(list(self.extra))
            else:
                keywords.append(keyword)
        node.keywords = keywords
        return node


# -- prompts --------------------------------------------------------------------------------

_BUGFIX = re.compile(r"\b(fix(es|ed)?|bug|regression|crash|broken|incorrect|wrong)\b", re.IGNORECASE)
_REFACTOR = re.compile(r"\b(refactor\w*|renam\w*|clean ?up|simplif\w*|restructur\w*|mov(e|ed) )", re.IGNORECASE)
_CHANGE = re.compile(r"\b(chang\w*|deprecat\w*|remov\w*|drop(ped)?|no longer|instead)\b", re.IGNORECASE)


def kind_of(text: str, added: Sequence[str] = ()) -> str:
    """A step's kind from what it does, then from its notes: one that adds public names
    (``added``) is a feature whatever its notes say ("bug fixes" in a release's notes
    makes no release a fix); else a fix, refactor or change by the words of its notes."""
    if added:
        return "feature"
    if _BUGFIX.search(text):
        return "bugfix"
    if _REFACTOR.search(text):
        return "refactor"
    if _CHANGE.search(text):
        return "change"
    return "feature"


def sequence_of(kind: str, paths: Sequence[str], earlier: Sequence[tuple[str, Sequence[str]]]) -> str | None:
    """The dependent sequence a turn closes, from its kind, the product files it changes
    and the (kind, files) of the turns before it: a bug fix of files an earlier fix
    changed (``fix-regression``) or an earlier feature added or changed (``feature-fix``),
    a refactor of earlier turns' files (``implement-refactor``), else a change across
    several modules (``multi-module``)."""
    mine = {p for p in paths if p.endswith(".py")}
    touched = {k: set() for k in ("bugfix", "feature", "any")}
    for earlier_kind, earlier_paths in earlier:
        files = {p for p in earlier_paths if p.endswith(".py")}
        touched["any"] |= files
        if earlier_kind in touched:
            touched[earlier_kind] |= files
    if kind == "bugfix" and mine & touched["bugfix"]:
        return "fix-regression"
    if kind == "bugfix" and mine & touched["feature"]:
        return "feature-fix"
    if kind == "refactor" and mine & touched["any"]:
        return "implement-refactor"
    if len(mine) >= 2:
        return "multi-module"
    return None


def _draft_prompts(out: Path, trees, snapshots: Sequence[Snapshot], kept: list[tuple[int, str, list[str]]],
                   base: int = 0, sandbox: Sandbox | None = None, scratch: Path | None = None,
                   asked: Mapping[str, Mapping[str, Sequence[str]]] = {}) -> None:  # fmt: skip
    """Write each kept turn's turn.yaml: title, kind, paths, the sequence it closes, and
    two prompt drafts that name every product name its tests use that the agent was not
    yet told. ``base``: the snapshot the seed is. With a ``sandbox``, the documentation's
    examples are quoted as each release prints them (``doc_examples``)."""
    previous = base
    history: list[tuple[str, list[str]]] = []
    for index, turn_id, tests in kept:
        snapshot = snapshots[index]
        folder = out / "turns" / turn_id
        spec = yaml.safe_load((folder / "turn.yaml").read_text(encoding="utf-8"))
        before, after = trees[previous][0], trees[index][0]
        changed = sorted(rel for rel in {*before, *after} if before.get(rel) != after.get(rel))
        shown = _shown(trees, snapshots, previous, index, [tid.split("/", 1)[1] for tid in tests], sandbox, scratch,
                       asked.get(turn_id, {}))  # fmt: skip
        signatures, rewritten, described, added = shown.signatures, shown.rewritten, shown.described, shown.added
        calls, warned, whole = shown.calls, shown.warned, shown.whole
        kind = kind_of(f"{snapshot.title}\n{snapshot.message}", added)
        spec.update(kind=kind, paths=changed, context_files=[rel for rel in changed if rel in before][:10])
        sequence = sequence_of(kind, changed, history)
        if sequence:
            spec["sequence"] = sequence
        history.append((kind, changed))
        _write_yaml(folder / "turn.yaml", spec)
        task = load_task_dir(out)
        turn = next(t for t in task.turns if t.id == turn_id)
        missing = [use for use, where in interfaces.contract(task, turn, trees[index][0], {}) if where is None]
        folded = _folded(snapshots, previous, index)
        # exact wording the tests compare (an error's or a warning's message, printed output)
        # that no prompt so far, the seed or the support code gives, shown word for word; the
        # examples are left out of that reading: `from ct.cache import Cache` in an example
        # does not say that a warning's message names `ct.cache`
        sources = _TestSources(trees[index][1])
        options = short_options(sources, [tid.split("/", 1)[1] for tid in tests], before, shown.notes)
        spec["prompts"] = _prompts(snapshot, changed, missing, added, tests, folded, signatures, rewritten, described,
                                   options=options, docs=shown.docs, sources=sources)  # fmt: skip
        write_turn(folder / "turn.yaml", spec)
        task = load_task_dir(out)
        untold = exact_text.check_turn(task, next(t for t in task.turns if t.id == turn_id), {})
        wording = list(dict.fromkeys(piece.whole for piece in untold))[:MAX_SHOWN_WORDING]  # the check reads texts whole
        spec["prompts"] = _prompts(snapshot, changed, missing, added, tests, folded, signatures, rewritten, described, calls, warned,
                                   whole, options, shown.docs, sources, shown.raised)  # fmt: skip
        if shown.docs_printed:
            spec["prompts"] = [prompt + "\n\n" + shown.docs_printed for prompt in spec["prompts"]]
        if wording:
            line = "\n\nWording the tests compare, exactly: " + "; ".join(f"`{text}`" for text in wording) + "."
            spec["prompts"] = [prompt + line for prompt in spec["prompts"]]
        write_turn(folder / "turn.yaml", spec)
        previous = index


def _folded(snapshots: Sequence[Snapshot], previous: int, index: int) -> list[Snapshot]:
    """The steps between the last kept turn and this one, which fold into its patch: their
    notes fold into its prompt too."""
    return [snapshots[i] for i in range(previous + 1, index) if snapshots[i].message.strip()]


@dataclass
class _Shown:
    """What a turn's prompt tells beyond its notes, and which of its tests a shown check is from."""

    notes: str
    """The titles and changelog entries or messages of the step and of the steps folded into it."""
    added: list[str]
    rewritten: list[str]
    signatures: list[str]
    described: list[str]
    docs: str
    """What the step adds to the project's documentation (``doc_changes``)."""
    calls: list[str]
    warned: list[str]
    whole: list[str]
    tests: set[str]
    """The tests (ids under the tests folder) one of whose checks the prompt shows."""
    docs_printed: str = ""
    """What the prompt says of the examples ``docs`` quotes as the release prints them, or
    could not run (``doc_examples.Quoted.told``)."""
    raised: list[str] = field(default_factory=list)
    """What the tests expect to raise (``raise_examples``)."""

    def told(self, tid: str) -> bool:
        """Whether the prompt tells what ``tid`` checks: its notes name it, or it shows one
        of its checks. A name or signature the prompt gives is not what the function does:
        tabulate 0.8.10's ``_wrap_text_to_colwidths(..., numparses=True)`` named its test
        ``test_wrap_text_to_numbers``, whose per-column rules no note states."""
        return tid in self.tests or named_by(tid, f"{self.notes}\n{self.docs}")


def _shown(trees, snapshots: Sequence[Snapshot], previous: int, index: int, tests: Sequence[str],
           sandbox: Sandbox | None = None, scratch: Path | None = None, asked: Mapping[str, Sequence[str]] = {}) -> _Shown:  # fmt: skip
    """What the prompt of the turn from snapshot ``previous`` to ``index`` shows of its
    ``tests`` (ids under the tests folder): the step's public names, signatures and, where
    the notes are thin, docstrings; example calls, warnings and checks shown whole. With a
    ``sandbox``, the documentation's examples are run on each release and quoted as it
    prints them (while mining chooses tests, their pages' own words are read)."""
    snapshot = snapshots[index]
    before, after = trees[previous][0], trees[index][0]
    public_before, public_after = _public_definitions(before), _public_definitions(after)  # each tree parsed once
    added = [name for name in public_after if name not in public_before]
    test_texts = [text for rel, text in sorted(trees[index][1].items()) if rel.endswith(".py")]
    signatures = changed_signatures(before, after, test_texts)
    rewritten = changed_public_functions(public_before, public_after)
    steps = [*_folded(snapshots, previous, index), snapshot]
    notes = "".join(step.message.strip() for step in steps)
    thin = len(notes) < THIN_NOTES
    described = docstrings([*added, *rewritten], public_after) if thin else []
    pages = doc_pages(snapshots[previous].files, snapshot.files)
    docs = doc_changes(snapshots[previous].files, snapshot.files, notes, pages=pages, names=added)
    printed = ""
    if docs and sandbox is not None and scratch is not None:
        quoted = [doc_examples.as_printed(sandbox, trees[i][0], {rel: snapshots[i].files[rel] for rel in pages if rel in snapshots[i].files},
                                          scratch) for i in (previous, index)]  # fmt: skip
        # the pages as their texts chose them: a copy quoted as printed differs from the page it copies
        docs = doc_changes({**snapshots[previous].files, **quoted[0].pages}, {**snapshot.files, **quoted[1].pages}, notes,
                           pages=pages, names=added)  # fmt: skip
        printed = quoted[1].told(docs)
    sources = _TestSources(trees[index][1])
    # calls of what the step adds or changes; else of any public function (a fix inside
    # a private helper shows through the public call the tests make: parse.parse(...))
    # Where the notes are thin ("Bug fixes."), more is shown, first from the tests whose
    # names the notes never mention (tabulate 0.7.3's numeric column headers).
    ids = untold_first(tests, notes)
    origins: dict[str, str] = {}
    calls = (examples(sources, ids, [*added, *rewritten, *(s.split("(", 1)[0] for s in signatures)], 5 if thin else 3, origins=origins)
             or examples(sources, ids, list(public_after), 5 if thin else 3, origins=origins))  # fmt: skip
    warned = warning_examples(sources, ids, origins=origins)
    raised = raise_examples(sources, ids, 5 if thin else 3)
    whole = scenarios(sources, ids, limit=4 if thin else 2, origins=origins)
    failing = {tid.split("/", 1)[1]: cases for tid, cases in asked.items()}  # under the tests folder, as ``ids``
    whole += cases(sources, _TestSources(trees[previous][1]), ids, limit=6 if thin else 4, origins=origins, asked=failing)
    return _Shown("\n".join([*(step.title for step in steps), notes]), added, rewritten, signatures, described, docs, calls,
                  warned, whole, set(origins.values()), printed, raised)  # fmt: skip


def _vague(steps: Sequence[Snapshot]) -> bool:
    """Whether the notes of ``steps`` (a turn's, with those folded into it) are all but bare
    or speak of fixes without naming them. A commit's subject is part of its notes ("Add
    ``iter_index``" with no body says what changed); a release's title names only its version."""
    said = "\n".join([*(step.title for step in steps if not re.fullmatch(r"Release \S+", step.title)),
                      *(step.message.strip() for step in steps)]).strip()  # fmt: skip
    return len(said) < BARE_NOTES or bool(VAGUE.search(said))


#: The project's documentation: its README and the files of its docs folder, but its changelog.
_DOCS = re.compile(r"^(README[^/]*|(docs?|documentation)/[^_][^/]*(/[^/]+)*\.(rst|md|txt))$", re.IGNORECASE)
_CHANGELOG_NAMES = re.compile(r"change|history|news|release|contribut|authors", re.IGNORECASE)
#: What a prompt, read as a template (``stamina_gym.task.render_params``), would take for a
#: tag: parse's README writes literal braces as ``{{``. Such a documentation line is left out.
_TEMPLATE = re.compile(r"\{[{%#]|[}%#]\}")
#: A README's badge or image line: a picture, not a word of what the project does.
_BADGE = re.compile(r"\s*(\[!\[|!\[|\.\. (image|figure)::|:target:|<img )")


def doc_pages(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """The documentation pages (not the changelog) a step changes, its README first. Of
    pages that read the same after it, one is shown: the one whose text before it was the
    closest (tabulate 0.8.10's ``README``, a link to ``README.md`` until then, became a copy
    of it: all of it is no addition)."""
    changed = [rel for rel in after if _DOCS.match(rel) and not _CHANGELOG_NAMES.search(rel) and after[rel] != before.get(rel)]
    copies: dict[str, list[str]] = {}
    for rel in changed:
        copies.setdefault(after[rel], []).append(rel)
    closest = {max(group, key=lambda rel: difflib.SequenceMatcher(None, before.get(rel, "").splitlines(), text.splitlines()).quick_ratio())
               for text, group in copies.items()}  # fmt: skip
    return sorted(closest, key=lambda rel: (not rel.upper().startswith("README"), rel))


def doc_changes(before: Mapping[str, str], after: Mapping[str, str], notes: str = "", limit: int = 150, width: int = 400,
                pages: Sequence[str] | None = None, names: Sequence[str] = ()) -> str:  # fmt: skip
    """The lines a step adds to the project's documentation (``before`` and ``after`` are
    its snapshots' files: the README first, then the docs folder's pages), hunk by hunk,
    without those its ``notes`` already hold (tabulate's README carries its changelog), or
    the documentation held before in other words or lines (``_said_before``), and
    at most ``limit`` lines: what an engineer reads of a change besides its notes. tabulate
    0.10.0's README documents the ``"global"`` and ``"same"`` alignments its notes only name
    as options; parse's README is where a new format type says what it matches. Backticks
    are dropped: an example call in the docs (packaging's ``SpecifierSet("<4")``) is prose
    there, not the signature a prompt's backticked call tells (``stamina_gym.signatures``);
    a markdown fence (```` ```python ````) is a blank line. ``pages``: those to read, if not
    ``doc_pages(before, after)``. Past ``limit``, the hunks that name one of ``names`` (the
    public names the step adds, as code) are kept first, the first to name each name before
    the others, and shown in the pages' order: semver 2.10.0 adds 390 lines, and the 150
    shown held its deprecations but not what ``next_version`` does."""
    said = {line.strip() for line in notes.splitlines() if line.strip()}
    known = _plain("\n".join(text for rel, text in before.items() if _DOCS.match(rel)))
    hunks: list[list[str]] = []
    for rel in doc_pages(before, after) if pages is None else pages:
        paragraph = _paragraphs(after[rel])
        hunk: list[str] = []
        at = 0  # the line of after[rel] the next added line is
        for line in difflib.unified_diff(before.get(rel, "").splitlines(), after[rel].splitlines(), n=0, lineterm=""):
            if line.startswith("@@"):
                if any(text.strip() for text in hunk):
                    hunks.append(hunk)
                hunk = []
                at = int(re.search(r"\+(\d+)", line).group(1)) - 1
            elif line.startswith("+") and not line.startswith("+++"):
                if (line[1:].strip() not in said and not _BADGE.match(line[1:]) and not _TEMPLATE.search(line)
                        and not _said_before(paragraph[at], known)):  # fmt: skip
                    hunk.append("" if doc_examples.FENCE.match(line[1:]) else line[1:].rstrip().replace("`", "")[:width])
                at += 1
        if any(text.strip() for text in hunk):
            hunks.append(hunk)
    hunks = [_trimmed(hunk) for hunk in hunks]
    total = sum(len(hunk) for hunk in hunks) + len(hunks) - 1
    if total > limit and names:
        # a name as code: ``v.next_version(...)``, ``:func:semver.VersionInfo.next_version``
        # (not "match" in prose); the first hunk naming each name, then the others naming one
        naming = [re.compile(rf"[.:]{re.escape(name)}\b|(?<![\w.]){re.escape(name)}\(")
                  for name in dict.fromkeys(name.rsplit(".", 1)[-1] for name in names)]  # fmt: skip
        named = [[i for i, hunk in enumerate(hunks) if any(pattern.search(line) for line in hunk)] for pattern in naming]
        first = list(dict.fromkeys([*(found[0] for found in named if found), *sorted({i for found in named for i in found})]))
        chosen: set[int] = set()
        room = limit
        for i in [*first, *(i for i in range(len(hunks)) if i not in first)] if first else ():
            if len(hunks[i]) + 1 <= room:
                chosen.add(i)
                room -= len(hunks[i]) + 1
        hunks = [hunk for i, hunk in enumerate(hunks) if i in chosen] or hunks
    lines: list[str] = []
    for hunk in hunks:
        lines += [*(["..."] if lines else []), *hunk]
    if len(lines) > limit or len(lines) < total:
        lines = [*lines[:limit], f"... ({total - min(len(lines), limit)} more lines)"]
    return "\n".join(lines).strip("\n")


def _trimmed(hunk: list[str]) -> list[str]:
    """A hunk with one blank line at most in a row, and none at its ends."""
    hunk = [line for i, line in enumerate(hunk) if line.strip() or (0 < i and hunk[i - 1].strip())]
    while not hunk[0].strip():
        hunk.pop(0)
    while not hunk[-1].strip():
        hunk.pop()
    return hunk


def _plain(text: str) -> str:
    """``text`` as words: markup (backticks, emphasis, headings' rules, escapes, links'
    targets, reST's ``::``) and line breaks aside (not case: an example's output may be
    all that changed)."""
    text = re.sub(r"\]\([^)\s]*\)", " ", text)  # a markdown link's target: reST writes it apart
    return " ".join(re.sub(r"[`*_\\#>|=~:\[\]-]+", " ", text).split())


def _paragraphs(text: str) -> list[str]:
    """For each line of ``text``, its paragraph (the lines between blank ones) as ``_plain`` words."""
    lines = text.splitlines()
    of: list[str] = []
    start = 0
    for end in [*(i for i, line in enumerate(lines) if not line.strip()), len(lines)]:
        words = _plain("\n".join(lines[start:end]))
        of += [words] * (end - start) + ([""] if end < len(lines) else [])
        start = end + 1
    return of


def _said_before(paragraph: str, known: str) -> bool:
    """Whether a paragraph (``_plain``) was already in ``known`` (the documentation before
    the step, ``_plain``), word for word, wherever its line breaks, markup and page were:
    tabulate 0.8.7 rewrote README.rst as README.md, rewrapping its paragraphs."""
    return bool(paragraph) and f" {paragraph} " in f" {known} "


def changed_signatures(before: Mapping[str, str], after: Mapping[str, str], tests: Sequence[str] = (), limit: int = 12) -> list[str]:
    """The signatures (``name(a, b=1, *, c=...)``, ``Class.method(x)``) of the functions and
    methods a step adds or whose parameters it changes: the public ones, and the private
    ones the turn's ``tests`` (their texts) call; every one the tests call, then others up
    to ``limit``. A class with no ``__init__`` of its own is called as the base it names
    is (marshmallow's ``ContainsNoneOf(NoneOf)`` takes ``error=``), shown only where the
    tests call it: six's generated module classes would be noise. A default that is long
    or holds parentheses is shown as ``...``, so that the signature reads as one call."""

    def defined(files: Mapping[str, str]) -> tuple[dict[str, tuple[ast.arguments, bool]], set[str]]:
        """Name -> (its parameters, whether it is a method, whose first one is bound); and
        the classes among the names that take their base's ``__init__``."""
        found: dict[str, tuple[ast.arguments, bool]] = {}
        bases: dict[str, list[str]] = {}
        for _, tree in pyast.modules(dict(sorted(files.items()))):
            for node in collection.module_level(tree.body):  # ``if PY3: def wraps(...)`` too
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    found.setdefault(node.name, (node.args, False))
                    for attribute, args in _function_attributes(node).items():  # a decorator's ``wrapper.cache_clear``
                        found.setdefault(f"{node.name}.{attribute}", (args, False))
                elif isinstance(node, ast.ClassDef):
                    for item in node.body:
                        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and pyast.is_property(item):
                            continue  # an attribute, not a call: ``cache.ttu(k, v, t)`` calls its value
                        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name != "__init__":
                            bound = not any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in item.decorator_list)
                            found.setdefault(f"{node.name}.{item.name}", (item.args, bound))
                        elif isinstance(item, ast.FunctionDef) and item.name == "__init__":
                            found.setdefault(node.name, (item.args, True))  # a class is called through its __init__
                    if not any(isinstance(item, ast.FunctionDef) and item.name == "__init__" for item in node.body):
                        bases.setdefault(node.name, [base.id if isinstance(base, ast.Name) else base.attr for base in node.bases
                                                     if isinstance(base, (ast.Name, ast.Attribute))])  # fmt: skip
        inherited = set()
        for name in bases:
            seen, todo = {name}, list(bases[name])
            while todo and name not in found:
                base = todo.pop(0)
                if base in found and base not in bases:
                    found[name] = found[base]
                    inherited.add(name)
                elif base not in seen:
                    seen.add(base)
                    todo += bases.get(base, [])
        return found, inherited

    called = {match for text in tests for match in re.findall(r"\b(\w+)\s*\(", text)}
    (old, _), found = defined(before), []
    now, inherited = defined(after)
    for name, (args, bound) in now.items():
        private = any(part.startswith("_") for part in name.split("."))  # a method of a private class too
        short = name.rsplit(".", 1)[-1]
        if ((private or name in inherited) and short not in called) or (name in old and ast.dump(old[name][0]) == ast.dump(args)):
            continue
        found.append((short in called, f"{name}({_parameters(args, bound)})"))
    room = max(0, limit - sum(is_called for is_called, _ in found))
    uncalled = [signature for is_called, signature in found if not is_called][:room]
    return [signature for is_called, signature in found if is_called or signature in uncalled]  # in the order defined


def _function_attributes(function: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, ast.arguments]:
    """The functions ``function`` defines inside it and hands out as attributes of another
    (``wrapper.cache_clear = cache_clear``): attribute -> the parameters. Reached through
    the attribute, such a function binds nothing: its first parameter is passed."""
    nested = {node.name: node.args for node in ast.walk(function)
              if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node is not function}  # fmt: skip
    found = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in nested:
            for target in node.targets:
                if isinstance(target, ast.Attribute) and not target.attr.startswith("_"):
                    found.setdefault(target.attr, nested[node.value.id])
    return found


def _parameters(args: ast.arguments, bound: bool) -> str:
    """The parameters as a call shows them: a method's first one (``self``, ``cls``) left out;
    a function's kept whatever its name (six's ``assertCountEqual(self, *args)`` takes the
    test case first)."""
    def default(node: ast.expr | None) -> str:
        text = ast.unparse(node) if node is not None else ""
        return text if text and len(text) <= 24 and not re.search(r"[()]", text) else "..."

    positional = [*args.posonlyargs, *args.args]
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    parts = [a.arg + (f"={default(d)}" if d is not None else "") for a, d in zip(positional, defaults)][1 if bound and positional else 0 :]
    if args.vararg:
        parts.append(f"*{args.vararg.arg}")
    elif args.kwonlyargs:
        parts.append("*")
    parts += [a.arg + (f"={default(d)}" if d is not None else "") for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    if args.kwarg:
        parts.append(f"**{args.kwarg.arg}")
    return ", ".join(parts)


def _spelt(use: interfaces.Use) -> str:
    """How a prompt names a use so that the interface check counts it as named."""
    return f"`{use.name}=`" if use.kind in ("keyword", "field") else f"`{use.name}`"


def _public_definitions(files: Mapping[str, str]) -> dict[str, str]:
    """Public function, class and method name (``Class.method``) -> its source, in file order."""
    found: dict[str, str] = {}
    for rel, tree in pyast.modules(dict(sorted(files.items()))):
        segment = _Segments(files[rel])
        for node in collection.module_level(tree.body):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
                found.setdefault(node.name, segment(node) or "")
                if isinstance(node, ast.ClassDef):
                    for item in node.body:
                        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and not item.name.startswith("_"):
                            found.setdefault(f"{node.name}.{item.name}", segment(item) or "")
    return found


def changed_public_functions(old: Mapping[str, str], new: Mapping[str, str]) -> list[str]:
    """Public functions and methods a step rewrites (their source differs; ``old`` and
    ``new`` are ``_public_definitions`` of the trees before and after), in file order: where
    a release's notes name the wrong one, the prompt still points at the right one."""
    return [name for name, text in new.items() if name in old and old[name] != text and not text.startswith("class ")]


#: Notes shorter than this (characters) are thin: the prompt then also gives the docstrings
#: of what the step adds or rewrites.
THIN_NOTES = 200


def docstrings(names: Sequence[str], new: Mapping[str, str], limit: int = 8, width: int = 240) -> list[str]:
    """``name: what its docstring says`` (the first paragraph, one line, cut at ``width``)
    for each of ``names`` whose source in ``new`` (``_public_definitions``) has a docstring."""
    found = []
    for name in names:
        try:
            tree = ast.parse(textwrap.dedent(new.get(name, "")))
        except SyntaxError:
            continue
        node = tree.body[0] if tree.body else None
        text = ast.get_docstring(node) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else None
        if text:
            first = " ".join(text.strip().split("\n\n", 1)[0].split())
            found.append(f"{name}: {first[:width].rstrip()}{'...' if len(first) > width else ''}")
        if len(found) == limit:
            break
    return found


def examples(sources: "_TestSources", tests: Sequence[str], names: Sequence[str], limit: int = 3, width: int = 160,
             origins: dict[str, str] | None = None) -> list[str]:  # fmt: skip
    """Example calls with their results, taken from the turn's own ``tests`` (ids under
    the tests folder): ``f(args)[0].microsecond == value`` where ``f`` is one of ``names``
    (what the step adds or rewrites, by its last part), the arguments are literals and the
    value a literal or a constructor of literals (``datetime(2023, 10, 14)``); a call bound
    to a name first (``r = f(...)``, then ``assert r[0] == 1``) is read through the name.
    One of each shape (the line with its calls' arguments left out) first, in rounds over
    the tests (one per test, then the next), then the others in that order, and never every
    example the tests hold (shown examples stay graded, and are never the only checks).
    ``origins``, where given, gets each shown line -> the test it is from (the first that holds it)."""
    wanted = {name.rsplit(".", 1)[-1] for name in names}
    found: list[list[str]] = []
    holders: dict[str, str] = {}
    for tid in tests:
        rel = tid.split("::", 1)[0]
        tree = sources.test_tree(tid)
        lines = [line for line in dict.fromkeys(_example_lines(tree, wanted, sources.own_names(rel))) if len(line) <= width]
        if lines:
            found.append(lines)
            for line in lines:
                holders.setdefault(line, tid)
    shown = _in_rounds(found, min(limit, sum(len(lines) for lines in found) - 1))
    if origins is not None:
        origins.update((line, holders[line]) for line in shown)
    return shown


def _in_rounds(found: Sequence[Sequence[str]], count: int, shaped: Callable[[str], str] = lambda line: line) -> list[str]:
    """``count`` of the lines ``found`` (each test's, in order), taken in rounds over the tests
    (each one's first, then each one's second), one of each shape first (``_shape`` of
    ``shaped(line)``): three tests' ``cached(cache)(f).cache is cache`` say less than one of
    them and the ``cached(cache, condition=cond)(f).cache_lock is cond`` after it."""
    rounds = list(dict.fromkeys(lines[depth] for depth in range(max(map(len, found), default=0)) for lines in found
                                if depth < len(lines)))  # fmt: skip
    shapes: dict[str, str] = {}
    for line in rounds:
        shapes.setdefault(_shape(shaped(line)), line)
    first = list(shapes.values())
    return [*first, *(line for line in rounds if line not in first)][: max(count, 0)]


def _test_locals(tree: ast.AST, own: set[str] = frozenset()) -> set[str]:
    """The names a test binds (assigned, or its and its inner functions' parameters) and the
    test module's ``own``: what an example may not read."""
    local = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)} | set(own)
    return local | {a.arg for n in ast.walk(tree) if isinstance(n, ast.arguments) for a in (*n.posonlyargs, *n.args, *n.kwonlyargs)}


def _shape(line: str) -> str:
    """An example with its calls' arguments left out: ``f()().cache is cache``."""
    while (shorter := re.sub(r"\([^()]*\)", "\x00", line)) != line:
        line = shorter
    return line


def _example_lines(tree: ast.AST, wanted: set[str] | None, own: set[str] = frozenset()) -> Iterator[str]:
    """``CALL<trail> == VALUE`` for each check in ``tree`` (one test's source), in order, of
    a call of one of the ``wanted`` names (None: of any). A
    local name bound to a call of literals is read as that call while nothing has used it
    but to read it (``r = parse.parse(...)``, then ``r[0]``); once the test has called a
    method on it, stored into it or passed it on (``cache[1] = 1``), its state is the
    test's, and a check through it, or through any other local, shows none; nor does one
    through the test module's ``own`` names (a class it defines: ``Locked({}).get(0)``)."""
    local = _test_locals(tree, own)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    changed = sorted((n.lineno, n.col_offset, n.id) for n in ast.walk(tree)
                     if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and not _only_read(n, parents))  # fmt: skip
    bound: dict[str, tuple[ast.Call, int]] = {}
    aliases = {target.id: {t.id for t in node.targets if isinstance(t, ast.Name)} for node in ast.walk(tree)
               if isinstance(node, ast.Assign) for target in node.targets if isinstance(target, ast.Name)}  # lock = cond = ...
    for node in sorted((n for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.Assert, ast.Expr))), key=lambda n: n.lineno):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    bound.pop(target.id, None)
                    if isinstance(node.value, ast.Call):
                        bound[target.id] = (node.value, node.end_lineno or node.lineno)
            continue
        pair = _observed_and_value(node.value if isinstance(node, ast.Expr) else node)
        fresh = {name: call for name, (call, line) in bound.items()
                 if not any(line < used < node.lineno and who == name for used, _, who in changed)}  # fmt: skip
        if pair is None:
            line = _identity_line(node.value if isinstance(node, ast.Expr) else node, fresh, local, wanted, aliases)
            if line:
                yield line
            continue
        observed = _through(pair[0], fresh)
        if _free_names(observed) & local:
            continue
        calls = [n for n in ast.walk(observed) if isinstance(n, ast.Call)]
        root = observed
        while isinstance(root, (ast.Subscript, ast.Attribute)):
            root = root.value
        if (isinstance(root, ast.Call) and any(wanted is None or _called_name(call) in wanted for call in calls) and _value(pair[1])
                and all(_literal(arg) or isinstance(arg, (ast.Lambda, ast.Call)) for call in calls  # a call's own checked too
                        for arg in [*call.args, *(k.value for k in call.keywords)])):  # fmt: skip
            yield f"{ast.unparse(observed)} == {ast.unparse(pair[1])}"


def _identity_line(node: ast.AST, fresh: Mapping[str, ast.Call], local: set[str], wanted: set[str] | None,
                   aliases: Mapping[str, set[str]] = {}) -> str | None:  # fmt: skip
    """``CALL<trail> is NAME`` where the check is ``assertIs(OBSERVED, NAME)`` or ``assert
    OBSERVED is NAME`` and ``NAME`` is an argument of a call the observed side makes:
    cachetools 6.0.0's ``cached(cache, condition=cond)(self.func).cache_lock is cond``.
    The test's own names stand in the example only as arguments, by their names; a name
    bound with another (``lock = cond = ...``) is read as the one that is an argument."""
    if isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare) and len(node.test.ops) == 1 \
            and isinstance(node.test.ops[0], ast.Is):  # fmt: skip
        sides = [node.test.left, node.test.comparators[0]]
    elif isinstance(node, ast.Call) and _called_name(node) == "assertIs" and len(node.args) >= 2:
        sides = node.args[:2]
    else:
        return None
    observed, value = sides if isinstance(sides[1], ast.Name) else sides[::-1]
    if not isinstance(value, ast.Name):
        return None
    same = aliases.get(value.id, {value.id})
    observed = _through(observed, {name: call for name, call in fresh.items() if name not in same})
    root = observed
    while isinstance(root, (ast.Subscript, ast.Attribute)):
        root = root.value
    calls = [n for n in ast.walk(observed) if isinstance(n, ast.Call)]
    args = [arg for call in calls for arg in (*call.args, *(k.value for k in call.keywords))]
    stand_ins = {arg for arg in args if isinstance(arg, ast.Name) or (isinstance(arg, ast.Attribute) and getattr(arg.value, "id", "") == "self")}
    named = {arg.id for arg in stand_ins if isinstance(arg, ast.Name)}
    if not isinstance(root, ast.Call) or not same & named or not any(wanted is None or _called_name(c) in wanted for c in calls):
        return None
    if not all(_literal(arg) or isinstance(arg, (ast.Lambda, ast.Call)) or arg in stand_ins for arg in args):
        return None
    inside = {id(n) for arg in stand_ins for n in ast.walk(arg)}
    if any(isinstance(n, ast.Name) and n.id in local and id(n) not in inside for n in ast.walk(observed)):
        return None  # a local anywhere but as an argument
    return f"{ast.unparse(observed)} is {min(same & named)}"


def _free_names(node: ast.AST) -> set[str]:
    """The names ``node`` reads, but those a lambda in it binds (``lambda n: n``)."""
    if isinstance(node, ast.Lambda):
        bound = {a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)}
        return _free_names(node.body) - bound
    if isinstance(node, ast.Name):
        return {node.id}
    return set().union(*(_free_names(child) for child in ast.iter_child_nodes(node)))


def _only_read(name: ast.Name, parents: Mapping[ast.AST, ast.AST]) -> bool:
    """Whether this use of ``name`` only reads it (``r[0]``, ``r.fixed``, compared or handed
    to an ``assert...`` method), not calls a method on it, stores into it or passes it on."""
    node: ast.AST = name
    while isinstance(parents.get(node), (ast.Attribute, ast.Subscript)) and parents[node].value is node:
        node = parents[node]
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            return False
    parent = parents.get(node)
    if isinstance(parent, ast.Call):
        return parent.func is not node and _called_name(parent).startswith("assert")
    return isinstance(parent, (ast.Compare, ast.Assert, ast.BoolOp, ast.UnaryOp, ast.Tuple, ast.List, ast.keyword)) \
        and not isinstance(parents.get(parent), ast.Call)  # fmt: skip


def _through(node: ast.expr, bound: Mapping[str, ast.Call]) -> ast.expr:
    """``node`` with each name ``bound`` to a call replaced by the call (``r[0]`` ->
    ``parse.parse(...)[0]``), a few levels deep."""
    class Substitute(ast.NodeTransformer):
        def visit_Name(self, name: ast.Name) -> ast.expr:
            return copy.deepcopy(bound[name.id]) if name.id in bound else name

    for _ in range(3):
        node = Substitute().visit(copy.deepcopy(node))
    return node


def _value(node: ast.expr) -> bool:
    """A literal, or a constructor of literals (``datetime(2023, 10, 14)``, ``Decimal('1.5')``)."""
    if _literal(node):
        return True
    return (isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute))
            and all(_literal(arg) for arg in [*node.args, *(k.value for k in node.keywords)]))  # fmt: skip


#: Words of a test's name that say nothing of what it checks.
_SAYS_NOTHING = frozenset({"test", "tests", "with", "without", "that", "when", "works", "work", "should", "does", "from",
                           "into", "have", "return", "returns", "check", "checks", "case", "cases", "correct", "correctly",
                           "properly", "issue", "regression", "this", "then", "than", "also", "only", "each", "some"})  # fmt: skip


def named_by(tid: str, text: str) -> bool:
    """Whether ``text`` (a turn's notes) names what the test ``tid`` checks: more than half
    of its name's words of four letters or more appear in it (``test_latex_booktabs``:
    both; ``test_list_of_dicts_firstrow``: dicts of three). Words match by their stems
    (``_stem``: dicts, dict; escaping, escape), not by a shared start (headers is not
    headerless). A name with no such word says nothing, and is named by nothing."""
    said = {_stem(word) for word in re.findall(r"[a-z0-9]{4,}", text.lower())}
    name = re.sub(r"^test_?", "", tid.rsplit("::", 1)[-1].split("[", 1)[0].lower())
    words = [_stem(word) for word in re.findall(r"[a-z0-9]{4,}", name.replace("_", " ")) if word not in _SAYS_NOTHING]

    def found(stem: str) -> bool:
        return any(stem == w or (abs(len(stem) - len(w)) <= 1 and (stem.startswith(w) or w.startswith(stem))) for w in said)

    return bool(words) and 2 * sum(map(found, words)) > len(words)


def _stem(word: str) -> str:
    """``word`` without a plural's or a verb form's ending, where four letters are left:
    escaping -> escap, escape -> escape (then matched as one letter apart), dicts -> dict."""
    for suffix in ("ing", "es", "ed", "s"):
        if word.endswith(suffix) and not word.endswith("ss") and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def untold_first(tests: Sequence[str], notes: str) -> list[str]:
    """``tests`` with those the ``notes`` do not name (``named_by``) first, each group in
    its order: what the notes do not say is what an example must show."""
    return sorted(tests, key=lambda tid: named_by(tid, notes))


def scenarios(sources: "_TestSources", tests: Sequence[str], limit: int = 2, statements: int = 8, width: int = 600,
              origins: dict[str, str] | None = None) -> list[str]:  # fmt: skip
    """Short tests that no example can show, whole (their body, dedented): six 1.5.0 fixes
    "issues #19 and #41", which its tests check as a sequence of imports, not as a call
    with its result. Only tests from which ``examples`` draws nothing and ``warning_examples``
    no warning, of at most ``statements`` statements, that take no fixture and reach
    nothing of the tests' own (a class or helper the test module defines, the test case's
    attributes but its ``assert...`` methods); at most ``limit``, from fewer tests than
    the turn has, so the shown checks are never the only ones."""
    shown: list[str] = []
    for tid in tests:
        if len(shown) >= min(limit, len(tests) - 1):
            break
        rel, *parts = tid.split("::")
        text = textwrap.dedent(sources.source(rel, [part.split("[", 1)[0] for part in parts]) or "")
        try:
            function = ast.parse(text).body[0]
        except (SyntaxError, IndexError):
            continue
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) or "[" in tid:
            continue
        args = function.args
        if [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)] not in ([], ["self"]) or args.vararg or args.kwarg:
            continue  # a fixture or a parameter: values the test is handed, not shown
        body = function.body[1:] if ast.get_docstring(function) is not None else function.body
        own = sources.own_names(rel)
        if (not body or any(_example_lines(function, None, own)) or any(_warned(function))
                or sum(isinstance(n, ast.stmt) for n in ast.walk(function)) - 1 > statements
                or any(isinstance(n, ast.Name) and n.id in own for n in ast.walk(function))
                or any(isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self"
                       and not n.attr.startswith("assert") for n in ast.walk(function))):  # fmt: skip
            continue
        first = min(node.lineno for node in [body[0], *getattr(body[0], "decorator_list", [])])
        snippet = textwrap.dedent("\n".join(text.splitlines()[first - 1 : function.end_lineno])).strip()
        snippet = "\n".join([*_aliases_used(sources.files.get(rel, ""), function), snippet])
        if len(snippet) <= width and snippet not in shown:
            shown.append(snippet)
            if origins is not None:
                origins[snippet] = tid
    return shown


def cases(sources: "_TestSources", earlier: "_TestSources", tests: Sequence[str], limit: int = 4, per_test: int = 8,
          statements: int = 8, width: int = 1200, origins: dict[str, str] | None = None,
          asked: Mapping[str, Sequence[str]] = {}) -> list[str]:  # fmt: skip
    """Cases the step adds to a test's ``@pytest.mark.parametrize`` list, each test shown as
    its source with some of those rows: semver 2.10.0's ``next_version(part)`` cases are
    what its notes leave out, and validators 0.24's ``example_.com`` under ``rfc_2782`` is
    the whole of what its step asks. The rows that failed before the step, where ``asked``
    (test id -> its cases' pytest ids that did) names some, those it adds first (validators
    0.24's new ``example.com`` row passed before it, and showing it told nothing); else
    the rows the ``earlier`` tests (the tree before the step) do not hold. Of a test, the first of them and then each time the one most unlike
    those shown, up to ``per_test`` and half its rows, never every row it has nor every one
    of those rows but where there is one; and never every one of them of every test of the
    turn. A test is shown where it has one ``parametrize``, at most ``statements``
    statements, takes nothing but its parameters and reaches nothing of the tests' own but
    through its rows (as ``scenarios``); at most ``limit`` tests. A parametrized test
    passes only when every case does, so its shown rows alone never pass it."""
    shown: list[str] = []
    whole: list[bool] = []  # per shown test: every row of its pool is shown
    for tid in tests:
        if len(shown) >= limit:
            break
        rel, *parts = tid.split("::")
        names = [part.split("[", 1)[0] for part in parts]
        now = _parametrized(sources, rel, names)
        if now is None:
            continue
        function, mark, argnames, rows = now.function, now.mark, now.argnames, now.rows
        before = _parametrized(earlier, rel, names)
        old = {ast.unparse(ast.Tuple(elts=row, ctx=ast.Load())) for row in (before.rows if before else [])}
        new = [row for row in rows if ast.unparse(ast.Tuple(elts=row, ctx=ast.Load())) not in old]
        failed = set(asked.get("::".join([rel, *names]), ()))
        failing = [row for row, case in zip(rows, now.ids) if case in failed]
        pool = [*(row for row in failing if row in new), *(row for row in failing if row not in new)] or new
        own = sources.own_names(rel) - set(argnames)  # a parameter shadows the module's name
        args = function.args
        body = function.body[1:] if ast.get_docstring(function) is not None else function.body
        inside = list(ast.walk(ast.Module(body=body, type_ignores=[])))  # not its decorators: CASES is the tests' own
        if ([a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs) if a.arg != "self"] != argnames
                or args.vararg or args.kwarg or not body or sum(isinstance(n, ast.stmt) for n in inside) > statements
                or any(isinstance(n, ast.Name) and (n.id in own or (n.id in argnames and not isinstance(n.ctx, ast.Load)))
                       for n in inside)
                or any(isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self"
                       and not n.attr.startswith("assert") for n in inside)):  # fmt: skip
            continue
        unshown = [row for row in pool if not (_free_names(ast.Tuple(elts=row, ctx=ast.Load())) & own)]
        most = min(per_test, len(rows) - 1, max(1, len(rows) // 2), len(pool) - 1 if len(pool) > 1 else 1)
        picked: list[list[ast.expr]] = []
        while unshown and len(picked) < most:
            # the first row, then each time the one that differs from those picked in the
            # most places: semver's next_version(part) cases of another part and result
            spelt = [[ast.unparse(value) for value in row] for row in picked]
            row = max(unshown, key=lambda r: sum(min(ast.unparse(v) != p[i] for p in spelt) for i, v in enumerate(r)) if spelt else 0)
            picked.append(row)
            unshown.remove(row)
        head = f"@{ast.unparse(mark.func)}({ast.unparse(mark.args[0])}, ["
        lines = [f"    {ast.unparse(row[0]) if len(row) == 1 else ast.unparse(ast.Tuple(elts=row, ctx=ast.Load()))}," for row in picked]
        bare = copy.deepcopy(function)
        bare.decorator_list, bare.body = [], body
        tail = [f"])  # {len(picked)} of its {len(rows)} cases", ast.unparse(bare)]
        aliases = _aliases_used(sources.files.get(rel, ""), function)
        while lines and len("\n".join([*aliases, head, *lines, *tail])) > width:
            lines.pop()
            picked.pop()
            tail[0] = f"])  # {len(picked)} of its {len(rows)} cases"
        if lines:
            shown.append("\n".join([*aliases, head, *lines, *tail]))
            whole.append(len(picked) == len(pool))
            if origins is not None:
                origins[shown[-1]] = tid
    if shown and all(whole) and len(shown) == len(tests):
        # every row of every test's pool would be shown, so every check of the turn: one is not
        dropped = shown.pop()
        if origins is not None:
            origins.pop(dropped, None)
    return shown


def _parametrized(sources: "_TestSources", rel: str, names: Sequence[str]) -> _Parametrized | None:
    """The test function ``names`` of ``rel`` with its one ``parametrize`` decorator, its
    list written in the decorator or as a module-level name of the test module. None where
    it has no such decorator, or more than one."""
    function = sources.node(rel, names)
    if function is None:
        return None
    marks = [d for d in function.decorator_list if isinstance(d, ast.Call) and _called_name(d) == "parametrize"]
    if len(marks) != 1 or len(marks[0].args) < 2 or any(k.arg == "indirect" for k in marks[0].keywords):
        return None
    spelt, listed = marks[0].args[:2]
    if isinstance(spelt, ast.Constant) and isinstance(spelt.value, str):
        argnames = [name.strip() for name in spelt.value.split(",") if name.strip()]
    elif isinstance(spelt, (ast.List, ast.Tuple)) and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in spelt.elts):
        argnames = [e.value for e in spelt.elts]
    else:
        return None
    if isinstance(listed, ast.Name):  # a list the test module names: CASES = [...]
        listed = next((node.value for node in collection.module_level(sources.module(rel).body) if isinstance(node, ast.Assign)
                       and any(isinstance(t, ast.Name) and t.id == listed.id for t in node.targets)), None)  # fmt: skip
    if not isinstance(listed, (ast.List, ast.Tuple)):
        return None
    ids = next((k.value for k in marks[0].keywords if k.arg == "ids"), None)
    given = [e.value if isinstance(e, ast.Constant) and isinstance(e.value, str) else None
             for e in (ids.elts if isinstance(ids, (ast.List, ast.Tuple)) else [])]  # fmt: skip
    found = _Parametrized(function, marks[0], argnames, [], [])
    for index, element in enumerate(listed.elts):
        case = given[index] if index < len(given) else None if ids is not None else ""
        if isinstance(element, ast.Call) and _called_name(element) == "param":
            if any(k.arg == "marks" and re.search(r"\b(xfail|skip\w*)\b", ast.unparse(k.value)) for k in element.keywords):
                continue
            values = list(element.args)
            case = next((k.value.value for k in element.keywords if k.arg == "id" and isinstance(k.value, ast.Constant)), case)
        elif len(argnames) > 1:
            values = list(element.elts) if isinstance(element, (ast.Tuple, ast.List)) else []
        else:
            values = [element]
        if len(values) == len(argnames) and not any(isinstance(v, ast.Starred) for v in values):
            found.rows.append(values)
            found.ids.append(_case_id(argnames, values, index) if case == "" else case)
    found.ids = [case if case is not None and found.ids.count(case) == 1 else None for case in found.ids]
    return found


@dataclass
class _Parametrized:
    """A test under one ``parametrize``: its rows (each a list of expressions; a row marked
    ``xfail`` or ``skip`` left out) and the id pytest gives each (``_case_id``; None where
    it is not sure: an id pytest would give twice, or an ``ids`` function)."""

    function: ast.FunctionDef | ast.AsyncFunctionDef
    mark: ast.Call
    argnames: list[str]
    rows: list[list[ast.expr]]
    ids: list[str | None]


def _case_id(argnames: Sequence[str], values: Sequence[ast.expr], index: int) -> str | None:
    """The id pytest gives a row of no ``id``: its values joined by ``-``, each a literal's
    text (a printable ASCII string or bytes as it is, ``True``, ``1.5``, ``None``), else the
    parameter's name and the row's index in its list (``func0``, ``a3`` for a tuple). None
    where pytest would escape a value (``\\xe9``)."""
    parts = []
    for name, value in zip(argnames, values):
        try:
            literal = ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            literal = ...
        if isinstance(literal, bytes):
            literal = literal.decode("latin-1")
        if isinstance(literal, str):
            if not (literal.isascii() and literal.isprintable()):
                return None
            parts.append(literal)
        elif isinstance(literal, (bool, int, float, complex)) or literal is None:
            parts.append(str(literal))
        else:
            parts.append(f"{name}{index}")
    return "-".join(parts)


def _aliases_used(module: str, function: ast.AST) -> list[str]:
    """The test module's imports under another name (``from textwrap import TextWrapper as
    OTW``) of the names ``function`` reads, as lines: a check shown whole reads them."""
    read = {node.id for node in ast.walk(function) if isinstance(node, ast.Name)}
    try:
        tree = pyast.parse(module)
    except SyntaxError:
        return []
    lines = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [alias for alias in node.names if alias.asname and alias.asname in read]
            if names:
                lines.append(ast.unparse(type(node)(**{**vars(node), "names": names})))
    return lines


#: The calls whose ``with`` block (or whose call, for ``assertWarns(C, f, *args)``) expects a warning.
#: What a test expects a call to raise: pytest's ``raises(E)``, unittest's ``assertRaises(E)``.
_RAISES = ("raises", "assertRaises", "assertRaisesRegex", "assertRaisesRegexp")


def raise_examples(sources: "_TestSources", tests: Sequence[str], limit: int = 3, width: int = 160) -> list[str]:
    """What the turn's ``tests`` expect to raise, taken from them: schema's
    ``Optional(And(str, Use(int)), default=7)`` raises ``TypeError`` where its notes say only
    that such a default is refused. The call is the one statement of a ``raises(E)`` or
    ``assertRaises(E)`` block, or ``assertRaises(E, f, *args)``'s; a local bound to a call
    and only read since is read as that call (``s = Schema(int)``, then ``s.validate("1")``),
    and a call that reads anything else of the test's own (another local, a class the test
    module defines) shows nothing. One of each shape first, in rounds over the tests, as
    ``examples``; every one only where the tests check more than what raises (schema's turn
    has one raise beside its asserts: that one is shown), so shown checks are never all the
    turn's. Only words: a shown raise marks no test as told (the tests a turn keeps do not
    hang on it)."""
    found: list[list[str]] = []
    more = False  # a check of the tests besides what raises
    for tid in tests:
        tree = sources.test_tree(tid)
        lines = [line for line in dict.fromkeys(_raised(tree, sources.own_names(tid.split("::", 1)[0]))) if len(line) <= width]
        if lines:
            found.append(lines)
        more = more or any(isinstance(node, ast.Assert) or (isinstance(node, ast.Call) and _called_name(node).startswith("assert")
                                                            and _called_name(node) not in _RAISES) for node in ast.walk(tree))  # fmt: skip
    return _in_rounds(found, min(limit, sum(len(lines) for lines in found) + more - 1), lambda line: line.split("` raises", 1)[0])


def _raised(tree: ast.AST, own: set[str] = frozenset()) -> Iterator[str]:
    """A line "`CALL` raises `E`" for each check in ``tree`` (one test's source) that a call raises;
    nothing where the call or the class reads a name of the test's ``own`` or its locals."""
    local = _test_locals(tree, own)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    changed = [(n.lineno, n.id) for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
               and not _only_read(n, parents)]  # fmt: skip
    assigned: dict[str, list[ast.Assign]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    assigned.setdefault(target.id, []).append(node)
    checks: list[tuple[int, ast.expr, ast.expr]] = []  # (line, the exception, the call)
    for node in ast.walk(tree):
        if isinstance(node, ast.With) and len(node.body) == 1 and isinstance(node.body[0], (ast.Expr, ast.Assign)) \
                and isinstance(node.body[0].value, ast.Call) and _trigger(node.body[0]):  # fmt: skip
            for item in node.items:
                call = item.context_expr
                if isinstance(call, ast.Call) and _called_name(call) in _RAISES and call.args:
                    checks.append((node.body[0].lineno, call.args[0], node.body[0].value))
        elif isinstance(node, ast.Call) and _called_name(node) in _RAISES[1:] and len(node.args) >= 2:
            raiser = ast.Call(func=node.args[1], args=list(node.args[2:]), keywords=[k for k in node.keywords if k.arg != "msg"])
            checks.append((node.lineno, node.args[0], raiser))
    for line, error, call in sorted(checks, key=lambda check: check[0]):
        # a local bound once to a call, and only read from its binding to this check
        fresh = {name: nodes[0].value for name, nodes in assigned.items()
                 if len(nodes) == 1 and isinstance(nodes[0].value, ast.Call) and nodes[0].lineno < line
                 and not any(nodes[0].lineno < used < line and who == name for used, who in changed)}  # fmt: skip
        observed = _through(call, fresh)
        if not _free_names(observed) & local and not _free_names(error) & local:
            yield f"`{ast.unparse(observed)}` raises `{ast.unparse(error)}`"


_WARNS = ("warns", "assertWarns", "assertWarnsRegex", "deprecated_call", "catch_warnings")


def warning_examples(sources: "_TestSources", tests: Sequence[str], limit: int = 3, width: int = 120,
                     origins: dict[str, str] | None = None) -> list[str]:  # fmt: skip
    """What the turn's ``tests`` expect to warn, taken from them: ``from pkg.cache import
    Cache`` warns ``DeprecationWarning``. The trigger is the first statement of a
    ``pytest.warns(C)``, ``assertWarns(C)`` or ``warnings.catch_warnings(record=True)``
    block (or ``assertWarns(C, f, *args)``'s call); the class is the block's, or the one the
    test compares a recorded warning's ``category`` with. One per test, from fewer tests
    than the turn has, as ``examples``."""
    shown: list[str] = []
    for tid in tests:
        if len(shown) >= min(limit, len(tests) - 1):
            break
        tree = sources.test_tree(tid)
        compared = _compared_category(tree)
        for trigger, category in _warned(tree):
            line = f"`{trigger}` warns `{category or compared}`" if (category or compared) else ""
            if line and line not in shown and len(line) <= width:
                shown.append(line)
                if origins is not None:
                    origins[line] = tid
                break
    return shown


def _warned(tree: ast.AST) -> Iterator[tuple[str, str | None]]:
    """(the statement that warns, the class a ``warns`` call names or None) in ``tree``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.With):
            for item in node.items:
                call = item.context_expr
                name = _called_name(call) if isinstance(call, ast.Call) else ""
                if name not in _WARNS:
                    continue
                category = "DeprecationWarning" if name == "deprecated_call" else (
                    ast.unparse(call.args[0]) if call.args and name != "catch_warnings" else None)  # fmt: skip
                trigger = next(filter(None, map(_trigger, node.body)), None)
                if trigger:
                    yield trigger, category
        elif isinstance(node, ast.Call) and _called_name(node) == "assertWarns" and len(node.args) >= 2:
            args = ", ".join([*(ast.unparse(a) for a in node.args[2:]), *(ast.unparse(k) for k in node.keywords if k.arg != "msg")])
            yield f"{ast.unparse(node.args[1])}({args})", ast.unparse(node.args[0])


def _trigger(statement: ast.stmt) -> str | None:
    """The code a warning block runs, as a line: an import, a call, an assignment's value;
    None for the block's own set-up and checks (``simplefilter``, asserts)."""
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return ast.unparse(statement)
    value = statement.value if isinstance(statement, (ast.Expr, ast.Assign)) else None
    if not isinstance(value, ast.Call) or _called_name(value) in ("simplefilter", "filterwarnings", "resetwarnings") \
            or _called_name(value).startswith("assert"):  # fmt: skip
        return None
    return ast.unparse(value)


def _compared_category(tree: ast.AST) -> str | None:
    """The class a test compares a recorded warning's ``category`` with
    (``issubclass(w[-1].category, C)``, ``self.assertIs(w[0].category, C)``, ``w[0].category is C``)."""
    def category(node: ast.expr) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "category"

    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _called_name(node) in ("issubclass", "assertIs", "assertEqual") and len(node.args) >= 2:
            first, second = node.args[:2]
            if category(first) or category(second):
                return ast.unparse(second if category(first) else first)
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.Eq)) and category(node.left):
            return ast.unparse(node.comparators[0])
    return None


def _called_name(call: ast.Call) -> str:
    return call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")


def _observed_and_value(node: ast.AST) -> tuple[ast.expr, ast.expr] | None:
    """``assert OBSERVED == VALUE`` (either way round) or ``self.assertEqual(...)``, where
    the observed side reads a call's result (``f(x)``, ``r[0].microsecond``)."""
    test = node.test if isinstance(node, ast.Assert) else None
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq):
        sides = [test.left, test.comparators[0]]
    elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("assertEqual", "assertEquals")
          and len(node.args) >= 2):  # fmt: skip
        sides = node.args[:2]
    else:
        return None
    for observed, value in (sides, sides[::-1]):
        if isinstance(value, ast.Call) and not _value(value):
            continue
        if isinstance(observed, (ast.Call, ast.Subscript, ast.Attribute, ast.Name)) and observed is not value and not _literal(observed):
            return observed, value
    return None


def _literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def short_options(sources: "_TestSources", tests: Sequence[str], before: Mapping[str, str], notes: str) -> list[str]:
    """The short command-line options (``-F``) the ``tests`` pass that neither the product
    ``before`` the step nor its ``notes`` spell: tabulate 0.7.5's notes give ``--float``,
    and its test runs the script with ``-F`` as well. The interface check names long
    options only; a short one no prompt names is a guess."""
    spelt = "\n".join([notes, *before.values()])
    found: list[str] = []
    for tid in tests:
        for node in ast.walk(sources.test_tree(tid)):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str) and re.fullmatch(r"-[A-Za-z]", node.value)
                    and node.value not in ("-m", "-c") and node.value not in found
                    and not re.search(rf"(?<![\w-]){re.escape(node.value)}(?![\w-])", spelt)):  # fmt: skip
                found.append(node.value)
    return found


def _behaviours(tests: Sequence[str], sources: "_TestSources | None" = None) -> list[str]:
    """What the turn's tests check: the first line of a test's docstring, its author's words
    for what it checks (tabulate 0.7.3's ``test_list_of_dicts_with_list_of_headers`` says
    "Input: a list of headers for a list of dicts, raise ValueError (issue #23)"), else
    words taken from its name (``TestParse::test_width_str`` -> ``width str``)."""
    words = []
    for tid in tests:
        name = tid.rsplit("::", 1)[-1]
        text = re.sub(r"^test_?", "", name).replace("_", " ").strip()
        said = _docstring_line(sources, tid.split("/", 1)[-1]) if sources is not None else ""
        if said or text:
            words.append(said or text)
    return list(dict.fromkeys(words))


def _docstring_line(sources: "_TestSources", tid: str, width: int = 160) -> str:
    """The first line of test ``tid``'s docstring (id under the tests folder), as a prompt
    can show it: no backticks, nothing a template reading takes for a tag, at most ``width``."""
    rel, *names = tid.split("::")
    source = sources.source(rel, [name.split("[", 1)[0] for name in names])
    try:
        function = ast.parse(textwrap.dedent(source or "")).body
    except SyntaxError:
        return ""
    doc = ast.get_docstring(function[0]) if function and isinstance(function[0], (ast.FunctionDef, ast.AsyncFunctionDef)) else None
    line = (doc or "").strip().split("\n", 1)[0].replace("`", "").strip()
    return "" if _TEMPLATE.search(line) or len(line) > width else line.rstrip(".")


def _prompts(snapshot: Snapshot, paths: Sequence[str], missing: Sequence[interfaces.Use], added: Sequence[str],
             tests: Sequence[str], folded: Sequence[Snapshot] = (), signatures: Sequence[str] = (),
             rewritten: Sequence[str] = (), described: Sequence[str] = (), calls: Sequence[str] = (),
             warned: Sequence[str] = (), whole: Sequence[str] = (), options: Sequence[str] = (), docs: str = "",
             sources: "_TestSources | None" = None, raised: Sequence[str] = ()) -> list[str]:  # fmt: skip
    """Two drafts of the turn's request: the message or changelog entry (those of the
    ``folded`` steps before it first, each under its title), the public names the step
    adds, the existing public functions it ``rewritten``, the ``signatures`` it adds or
    changes, what their docstrings say where the notes are thin (``described``), example
    ``calls`` with their results, what its tests expect to ``warned`` and to have ``raised``, short checks shown
    ``whole`` where no example shows them, what its tests check (from their docstrings in
    ``sources``, else their names), the
    files (Python first), and every name the tests use that the agent was not yet told, with
    the short command-line ``options`` they pass."""
    names = ", ".join(dict.fromkeys([*(_spelt(use) for use in missing), *(f"`{option}`" for option in options)]))
    body = "\n\n".join([*(f"{step.title}:\n{step.message.strip()}" for step in folded),
                         *([f"{snapshot.title}:\n{snapshot.message.strip()}" if folded else snapshot.message.strip()]
                           if snapshot.message.strip() else [])])  # fmt: skip
    paths = sorted(paths, key=lambda rel: not rel.endswith(".py"))
    where = ", ".join(f"`{p}`" for p in paths[:8]) + (" and more" if len(paths) > 8 else "")
    new = ", ".join(f"`{name}`" for name in added[:10])
    checks = "; ".join(_behaviours(tests, sources)[:10])
    first = f"{snapshot.title}." + (f"\n\n{body}" if body else "")
    if docs:
        first += f"\n\nWhat it adds to the documentation:\n```\n{docs}\n```"
    if new:
        first += f"\n\nThis adds {new}."
    changes = ", ".join(f"`{name}`" for name in rewritten[:10])
    if changes:
        first += f"\n\nThe existing functions it changes: {changes}."
    told = ", ".join(f"`{signature}`" for signature in signatures)
    if told:
        first += f"\n\nThe signatures it adds or changes: {told}."
    if described:
        first += "\n\nWhat they do:\n" + "\n".join(f"- `{line.split(': ', 1)[0]}`: {line.split(': ', 1)[1]}" for line in described)
    if calls:
        first += "\n\nFor example:\n" + "\n".join(f"- `{call}`" for call in calls)
    if warned:
        first += "\n\nWhat must warn, for example:\n" + "\n".join(f"- {line}" for line in warned)
    if raised:
        first += "\n\nWhat must raise, for example:\n" + "\n".join(f"- {line}" for line in raised)
    for snippet in whole:
        first += f"\n\nThis must work:\n```python\n{snippet}\n```"
    if checks:
        first += f"\n\nWhat must hold afterwards: {checks}."
    if where:
        first += f"\n\nThis concerns {where}."
    if names:
        first += f" The change involves {names}."
    second = f"Next change for the project: {snapshot.title[:1].lower()}{snapshot.title[1:]}." + (f"\n\nDetails:\n{body}" if body else "")
    if docs:
        second += f"\n\nThe documentation now also says:\n```\n{docs}\n```"
    if changes:
        second += f"\n\nExisting code to change: {changes}."
    if told:
        second += f"\n\nNew or changed signatures: {told}."
    if described:
        second += "\n\nFrom their docstrings:\n" + "\n".join(f"- {line}" for line in described)
    if calls:
        second += "\n\nExamples that must hold: " + "; ".join(f"`{call}`" for call in calls) + "."
    if warned:
        second += "\n\nIt must warn, as in: " + "; ".join(warned) + "."
    if raised:
        second += "\n\nErrors it must raise, as in: " + "; ".join(raised) + "."
    for snippet in whole:
        second += f"\n\nA check it must pass:\n```python\n{snippet}\n```"
    if checks:
        second += f"\n\nI will check these behaviours: {checks}."
    if new or names:
        second += f"\n\nPlease make sure these exist and work as described: {', '.join(filter(None, [new, names]))}."
    if where:
        second += f" Files likely involved: {where}."
    return ["\n".join(line.rstrip() for line in text.strip().splitlines()) for text in (first, second)]


# -- trees ----------------------------------------------------------------------------------


def _slug(title: str) -> str:
    words = re.findall(r"[a-z0-9]+", title.lower())[:5]
    return "-".join(words) or "step"


class _Dumper(yaml.SafeDumper):
    """Multi-line texts (prompts) as literal blocks, as a reviewer edits them."""


_Dumper.add_representer(str, lambda dumper, text: dumper.represent_scalar(
    "tag:yaml.org,2002:str", text, style="|" if "\n" in text else None))  # fmt: skip


def dump_yaml(data: dict, width: int = 100) -> str:
    """``data`` as YAML in its own order, multi-line texts as literal blocks."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=width)


def write_turn(path: Path, spec: dict) -> None:
    """A drafted turn.yaml: the note that asks for a review of its prompts, then ``spec``."""
    path.write_text(REVIEW_NOTE + dump_yaml(spec), encoding="utf-8")


def _write_yaml(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump_yaml(data), encoding="utf-8")


def diff_trees(before: Mapping[str, str], after: Mapping[str, str]) -> str:
    """A git unified diff that turns ``before`` into ``after`` (path -> text maps), a
    moved file as a rename (with its changes), not as a deletion and an addition."""
    with tempfile.TemporaryDirectory(prefix="stamina-diff-") as root:
        env = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "HOME": root, "PATH": "/usr/bin:/bin",
               "GIT_AUTHOR_NAME": "m", "GIT_AUTHOR_EMAIL": "m@m", "GIT_COMMITTER_NAME": "m", "GIT_COMMITTER_EMAIL": "m@m"}  # fmt: skip
        work = Path(root) / "w"

        def git(*args: str) -> str:
            return subprocess.run(["git", *args], cwd=work, env=env, capture_output=True, text=True, check=True).stdout

        write_tree(work, before)
        git("init", "-q")
        git("add", "-A")
        git("commit", "-q", "--allow-empty", "-m", "before")
        for rel in before:
            (work / rel).unlink()
        write_tree(work, after)
        git("add", "-A")
        return git("diff", "--cached", "--find-renames", "--no-color", "--no-ext-diff")

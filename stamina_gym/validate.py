"""Check that a task is valid: replay every reference patch from the seed and require, at
every state, that the last turn's tests pass, earlier tests still in force pass, the
next turn's tests all fail (so each test discriminates), the consistency rules in force
hold, the reference patch stays within the paths its turn declares, and every product
name the turn's tests use was named to the agent (``stamina_gym.interfaces``), and that
sealed judging gives every test the verdict its module as written gives (at each state,
where the next turn's tests meet code that does not do their work yet)."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

from stamina_gym import char_rules, costs, exact_text, interfaces, mutants, signatures
from stamina_gym.config import SandboxConfig
from stamina_gym.errors import PatchError, TaskError
from stamina_gym.grading.grade import by_base_id
from stamina_gym.grading.report import Outcome
from stamina_gym.hidden_runner import run_hidden_tests
from stamina_gym.sandbox import Sandbox
from stamina_gym.sandbox.local import LocalSandbox
from stamina_gym.quality.measure import read_tree
from stamina_gym.quality.review import scope_result
from stamina_gym.reproduce import run_repro_result
from stamina_gym.rules import check_rules
from stamina_gym.task import Task, Turn
from stamina_gym.user.checks import check_dialogue_data, check_dialogue_state
from stamina_gym.workspace import Workspace


@dataclass(frozen=True)
class Problem:
    turn: int
    message: str

    def __str__(self) -> str:
        return f"turn {self.turn}: {self.message}"


def check_data(task: Task) -> list[Problem]:
    """Checks that need no test run: ids, paraphrases, retired tests."""
    problems = []
    if task.meta.id != task.root.name:
        problems.append(Problem(0, f"task.yaml id {task.meta.id!r} differs from the folder name {task.root.name!r}"))
    for turn in task.turns:
        if len(set(turn.spec.prompts)) < 2:
            problems.append(Problem(turn.index, "needs at least 2 different prompt paraphrases"))
        earlier = {tid for t in task.turns[: turn.index - 1] for tid in t.test_ids}
        files = {tid.split("::")[0] for tid in earlier}
        for entry in turn.spec.retires:
            if entry not in earlier and entry not in files:
                problems.append(Problem(turn.index, f"retires {entry!r}, which is no earlier turn's test"))
        try:
            problems += [Problem(turn.index, f"{case}: a stated character rule classifies it the other way")
                         for case in char_rules.check_turn(task, turn, turn.example_params)]  # fmt: skip
        except (OSError, ValueError) as exc:
            problems.append(Problem(turn.index, f"char_cases: {exc}"))
        for piece in turn.spec.planted:
            if not any(piece in prompt for prompt in turn.spec.prompts):
                problems.append(Problem(turn.index, f"planted noise {piece!r} is in none of the turn's prompts"))
        for probe in turn.spec.memory:
            if not probe.from_turn < turn.index:
                problems.append(Problem(turn.index, f"memory probe {probe.fact!r} must come from an earlier turn"))
            named = turn.memory_ids(probe)
            if len(named) < len(probe.tests):
                problems.append(Problem(turn.index, f"memory probe names tests this turn lacks: {list(probe.tests)}"))
    try:
        costs.load(task)
    except TaskError as exc:
        problems.append(Problem(0, str(exc)))
    ids = [rule.id for rule in task.meta.rules]
    for rule in task.meta.rules:
        if ids.count(rule.id) > 1:
            problems.append(Problem(0, f"rule id {rule.id!r} is used more than once"))
        if rule.from_turn > len(task.turns):
            problems.append(Problem(0, f"rule {rule.id!r} starts at turn {rule.from_turn}, after the last turn"))
    problems += [Problem(turn, message) for turn, message in check_dialogue_data(task)]
    return problems


def validate_task(
    task: Task,
    *,
    sandbox: Sandbox | None = None,
    progress: Callable[[str], None] = lambda line: None,
    params: Mapping[str, str | int] | None = None,
    first: int = 1,
) -> list[Problem]:
    """Every problem of ``task`` under one procedural variant (``params``; default: the
    first value of each). With ``first`` > 1 the states before turn ``first - 1`` are
    only replayed, not checked (a quick check of the turns being written)."""
    params = dict(params) if params is not None else task.choose_params(lambda n: 0)
    problems = check_data(task)
    own = sandbox is None  # a sandbox made here is closed here, warm runners and all
    sandbox = sandbox or LocalSandbox(SandboxConfig(), hidden=[task.root])
    root = Path(tempfile.mkdtemp(prefix="stamina-validate-"))
    try:
        workspace = Workspace(root / "ws", task.seed_dir)
        workspace.reset()
        states = _replayed(task, params, workspace, problems)
        broken: set[str] = set()  # earlier tests already reported broken: said once, at the first turn that breaks them
        for state in range(len(task.turns) + 1):
            if state > 0 and next(states, None) is None:
                break
            if state < first - 1:
                continue
            sandbox.prepare(workspace.path)
            found = _check_state(task, state, workspace, sandbox, root, params, broken)
            tree: dict[str, str] = {}
            if state > 0:
                turn, tree = task.turns[state - 1], _texts(workspace)
                found += _check_conventions(task, turn, workspace, tree)
                found += _check_interfaces(task, turn, tree, params)
            found += [Problem(turn, message) for turn, message in _check_dialogue(task, state, workspace, sandbox, root, tree)]
            problems += found
            progress(f"state after turn {state:>3}/{len(task.turns)}: " + ("ok" if not found else f"{len(found)} problem(s)"))
    finally:
        if own:
            sandbox.close()
        shutil.rmtree(root, ignore_errors=True)
    return problems


def _replayed(task: Task, params: Mapping[str, str | int], workspace: Workspace, problems: list[Problem]):
    """Apply each reference patch to ``workspace`` (at the seed) and commit it, yielding
    ``(turn, patch)`` after each; a patch that does not apply is a problem and ends it."""
    for turn in task.turns:
        patch = task.reference_patch(turn, params)
        try:
            workspace.apply_patch(patch)
        except PatchError as exc:
            problems.append(Problem(turn.index, f"reference patch does not apply: {exc}"))
            return
        workspace.commit(f"turn {turn.index}")
        yield turn, patch


def _texts(workspace: Workspace) -> dict[str, str]:
    texts, _ = read_tree(workspace.path, 1 << 20, 10_000)
    return {rel: data.decode("utf-8", "replace") for rel, data in texts.items()}


def check_interfaces(
    task: Task, *, params: Mapping[str, str | int] | None = None, progress: Callable[[str], None] = lambda line: None,
    contract: bool = False,
) -> list[Problem]:
    """The told-interface checks alone (no test runs, seconds): every turn's tests use
    only product names the agent was told about, call them with arguments a told
    signature fits and compare output with wording that was given, read against the
    reference after the turn.
    With ``contract``, ``progress`` also gets each name a turn's tests use and where the
    agent was told it (``interfaces.contract``)."""
    params = dict(params) if params is not None else task.choose_params(lambda n: 0)
    root = Path(tempfile.mkdtemp(prefix="stamina-interfaces-"))
    problems: list[Problem] = []
    try:
        workspace = Workspace(root / "ws", task.seed_dir)
        workspace.reset()
        for turn, _ in _replayed(task, params, workspace, problems):
            tree = _texts(workspace)
            found = _check_interfaces(task, turn, tree, params)
            problems += found
            progress(f"turn {turn.index:>3}/{len(task.turns)}: " + ("ok" if not found else f"{len(found)} unnamed"))
            if contract:
                for use, where in interfaces.contract(task, turn, tree, params):
                    progress(f"    {use.kind} {use.name!r} ({use.file}:{use.line}): {where or 'NOT NAMED'}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return problems


def _check_interfaces(task: Task, turn: Turn, tree: Mapping[str, str], params: Mapping[str, str | int]) -> list[Problem]:
    """What the tests rely on was told: every product name (``interfaces``), every call's
    arguments (``signatures``) and every piece of exact output text (``exact_text``)."""
    problems = [Problem(turn.index, f"{use}: named by no prompt of this or an earlier turn (every paraphrase), "
                                    "the seed or a spec answer")  # fmt: skip
                for use in interfaces.check_turn(task, turn, tree, params)]
    for call, shapes in signatures.check_turn(task, turn, tree, params):
        told = "; ".join(sorted({f"`{s.told}`" for s in shapes}))
        problems.append(Problem(turn.index, f"{call}: fits no signature a prompt, answer or the seed gave ({told})"))
    problems += [Problem(turn.index, f"{piece}: given by no prompt of this or an earlier turn (every paraphrase), "
                                     "the seed or the support code")  # fmt: skip
                 for piece in exact_text.check_turn(task, turn, params)]
    return problems


def _check_conventions(task: Task, turn: Turn, workspace: Workspace, tree: Mapping[str, str]) -> list[Problem]:
    """The reference state (``tree``: path -> text) keeps every rule in force, and the
    reference patch stays within the paths the turn declares."""
    _, violations = check_rules(task.meta.rules, dict(tree), turn.index)
    problems = [Problem(turn.index, f"the reference breaks rule {v.rule} at {v.file}:{v.line}: {v.message}") for v in violations]
    changed = workspace.numstat("HEAD~1")
    for path in scope_result(turn, "strict", changed)["outside"]:
        problems.append(Problem(turn.index, f"the reference patch edits {path}, outside the turn's paths"))
    for fix in task.meta.fixes:
        if fix.old in fix.new:
            continue  # the fixed text holds the old one: nothing to tell apart
        for rel in sorted(rel for rel, text in tree.items() if fix.old in text and fix.covers(rel)):
            problems.append(Problem(turn.index, f"{rel} holds {fix.old!r} again: the source fix for {fix.path} is undone"))
    return problems


def _check_state(task: Task, state: int, workspace: Workspace, sandbox: Sandbox, root: Path, params: dict,
                 broken: set[str] | None = None) -> list[Problem]:  # fmt: skip
    turns = task.turns[: min(state + 1, len(task.turns))]
    hidden = run_hidden_tests(source=workspace.path, task=task, turns=turns, sandbox=sandbox, scratch=root, timeout=600,
                              params=params, report_dropped=True)  # fmt: skip
    if hidden.outcomes is None:
        output = hidden.run.output[-2000:] if hidden.run else ""
        return [Problem(state, f"the hidden tests did not run: {hidden.problem}\n{output}")]
    problems = _uncollected(turns, hidden.dropped)
    written = run_hidden_tests(source=workspace.path, task=task, turns=turns, sandbox=sandbox, scratch=root, timeout=600,
                               params=params, sealed_judging=False)  # fmt: skip
    problems += _sealed_differences(state, turns, hidden.outcomes, written.outcomes)
    if state > 0:
        own = task.turns[state - 1].test_ids
        for tid, outcome in by_base_id(hidden.outcomes, own).items():
            if outcome.status != "passed":
                problems.append(Problem(state, f"{tid} should pass after the reference patch: {outcome.status} {outcome.message}"))
        broken = set() if broken is None else broken
        earlier = by_base_id(hidden.outcomes, task.regression_ids(state))
        newly = [tid for tid, outcome in earlier.items() if outcome.status != "passed" and tid not in broken]
        if newly:
            broken.update(newly)
            first = earlier[newly[0]]
            problems.append(Problem(state, (
                f"the reference patch breaks {len(newly)} earlier test(s): {', '.join(newly[:8])}"
                f"{' ...' if len(newly) > 8 else ''} (first: {first.status} {first.message[:200]}). If this turn changes "
                f"that requirement, add them to its retires: [{', '.join(newly)}]")))  # fmt: skip
    if state < len(task.turns):
        following = task.turns[state]
        for tid, outcome in by_base_id(hidden.outcomes, following.test_ids).items():
            if outcome.status == "passed":
                problems.append(Problem(following.index, f"{tid} passes before its reference patch: it does not discriminate"))
    return problems


def _sealed_differences(state: int, turns: Sequence[Turn], sealed: Mapping[str, Outcome],
                        written: Mapping[str, Outcome] | None) -> list[Problem]:  # fmt: skip
    """Sealed judging's equivalence check: every test of ``turns`` has the same verdict
    (passed or not) with its module staged as a probe as with it staged as written."""
    if written is None:
        return [Problem(state, "the hidden tests as written did not run (sealed judging's equivalence is unchecked)")]
    problems = []
    ids = [tid for turn in turns for tid in turn.test_ids]
    as_written, probed = by_base_id(written, ids), by_base_id(sealed, ids)
    for tid in ids:
        before, after = as_written[tid], probed[tid]
        if (before.status == "passed") != (after.status == "passed"):
            problems.append(Problem(state, f"{tid} {before.status} as written but {after.status} sealed "
                                           f"(sealed judging must not change a verdict): {after.message[:200] or before.message[:200]}"))  # fmt: skip
    return problems


def _uncollected(turns, dropped) -> list[Problem]:
    """Tests pytest collects in a turn's files that the task's reading of them misses
    (those a turn's ``tests:`` leaves out on purpose aside), with what it could not read."""
    problems = []
    for turn in turns:
        known = set(turn.collected)
        files = {f"{turn.id}/{path.relative_to(turn.dir / 'tests').as_posix()}" for path in turn.tests}
        missed = [tid for tid in dropped if tid.split("::")[0] in files and tid not in known]  # canaries' files aside
        if missed:
            why = f"; base classes it could not read: {', '.join(turn.unresolved)}" if turn.unresolved else ""
            problems.append(Problem(turn.index, f"pytest collects {len(missed)} test(s) the task does not count: "
                                                f"{', '.join(missed[:5])}{' ...' if len(missed) > 5 else ''}{why}"))  # fmt: skip
    return problems


@dataclass(frozen=True)
class TurnKills:
    """The mutation check of one turn: mutants tried, killed, and the survivors."""

    turn: int
    tried: int
    killed: int
    survivors: tuple[str, ...]

    @property
    def rate(self) -> float | None:
        return self.killed / self.tried if self.tried else None


def mutation_check(
    task: Task,
    *,
    per_turn: int,
    sandbox: Sandbox | None = None,
    seed: int = 0,
    progress: Callable[[str], None] = lambda line: None,
    params: Mapping[str, str | int] | None = None,
    first: int = 1,
) -> list[TurnKills]:
    """Replay the reference patches; after each (from turn ``first`` on), run the turn's
    hidden tests on up to ``per_turn`` sampled mutants of the lines the patch adds
    (``stamina_gym.mutants``)."""
    own = sandbox is None
    sandbox = sandbox or LocalSandbox(SandboxConfig(), hidden=[task.root])
    params = dict(params) if params is not None else task.choose_params(lambda n: 0)
    root = Path(tempfile.mkdtemp(prefix="stamina-mutants-"))
    results = []
    try:
        workspace = Workspace(root / "ws", task.seed_dir)
        workspace.reset()
        unapplied: list[Problem] = []
        for turn, patch in _replayed(task, params, workspace, unapplied):
            if turn.index < first:
                continue
            files = {path: (workspace.path / path).read_text(encoding="utf-8") for path in mutants.added_lines(patch)
                     if path.endswith(".py") and (workspace.path / path).is_file()}  # fmt: skip
            chosen = mutants.sample(mutants.mutants_of(patch, files), per_turn, seed + turn.index)
            killed, survivors = 0, []
            for mutant in chosen:
                target = workspace.path / mutant.path
                target.write_text(mutants.apply(mutant, files[mutant.path]), encoding="utf-8")
                sandbox.prepare(workspace.path)
                hidden = run_hidden_tests(source=workspace.path, task=task, turns=[turn], sandbox=sandbox, scratch=root,
                                          timeout=120, params=params)  # fmt: skip
                target.write_text(files[mutant.path], encoding="utf-8")
                outcomes = by_base_id(hidden.outcomes or {}, turn.test_ids)
                if hidden.outcomes is None or any(o.status != "passed" for o in outcomes.values()):
                    killed += 1
                else:
                    survivors.append(mutant.describe())
            results.append(TurnKills(turn.index, len(chosen), killed, tuple(survivors)))
            rate = f"{killed}/{len(chosen)} killed" if chosen else "no mutable lines"
            progress(f"turn {turn.index:>3}/{len(task.turns)} {turn.id}: {rate}")
        if unapplied:
            raise PatchError(str(unapplied[0]))
    finally:
        if own:
            sandbox.close()
        shutil.rmtree(root, ignore_errors=True)
    return results


def task_counts(task: Task) -> dict[str, object]:
    """What the task holds, as the validator prints it."""
    return {
        "turns": len(task.turns),
        "turns per phase": {p.name: sum(p.first <= t.index <= p.last for t in task.turns) for p in task.meta.phases},
        "kinds": {kind: sum(t.spec.kind == kind for t in task.turns) for kind in ("setup", "feature", "change", "bugfix", "refactor")},
        "hidden tests": sum(len(t.test_ids) for t in task.turns),
        "retired tests": len(task.retired_by(len(task.turns))),
        "clarification turns": sum(t.spec.spec is not None for t in task.turns),
        "planning turns": sum(bool(t.spec.decisions) for t in task.turns),
        "memory probes": sum(len(t.spec.memory) for t in task.turns),
        "memory probes reaching back 30+ turns": sum(t.index - p.from_turn >= 30 for t in task.turns for p in t.spec.memory),
        "bug reports with reproduction output": sum(t.spec.repro is not None for t in task.turns),
        "noisy requests": sum(bool(t.spec.noise) for t in task.turns),
        "consistency rules": len(task.meta.rules),
        "prompt variants": sum(len(t.spec.prompts) for t in task.turns),
        "params": {name: len(values) for name, values in task.meta.params.items()},
    }


def _check_dialogue(task: Task, state: int, workspace: Workspace, sandbox: Sandbox, scratch: Path,
                    tree: Mapping[str, str]) -> list[tuple[int, str]]:  # fmt: skip
    """The dialogue data's checks at the state after turn ``state`` (``tree``: its files'
    text, as read for the other checks), with the reproduction scripts of this turn and
    the next run here for them."""
    near = [task.turns[i] for i in (state - 1, state) if 0 <= i < len(task.turns)]
    repro = {turn.index: run_repro_result(turn, workspace.path, sandbox, scratch) for turn in near if turn.spec.repro}
    sources = {rel: text for rel, text in tree.items() if rel.endswith(".py")}
    return check_dialogue_state(task, state, sources, repro)

"""Scripted policies of graded skill, built from the reference, to check that the reward
ranks agents the way an expert would (``scripts/ladder.py``, ``tests/test_ladder.py``).

``FlawedOracle`` plays like the oracle except on a share of the turns, where it has one
flaw (``FLAWS``):

* ``debt``: solves the turn, and leaves a tangled helper module beside the code it
  changed (deep nesting, a bare ``except``, ``shell=True``): the tests pass, the quality
  falls.
* ``skip``: submits the turn untouched, and catches up on the next one.
* ``mutant``: submits the reference with one line mutated (``stamina_gym.mutants``);
  the next turn starts by putting the line back.
* ``break``: solves the turn, and mutates a line an earlier turn added: an earlier
  feature breaks; the next turn puts it back.

The flawed turns are every ``1/share``-th turn, so the turns flawed at 25% are among
those flawed at 50%: a rung with a larger share is worse by construction, not by luck.

``WreckAgent`` leaves a syntax error where the turn's code goes; ``TamperAgent`` does no
work and rebinds pytest's reporting from the module the tests import. Both are privileged
(they read the reference patch to know where the turn's code goes). ``GuessAgent`` does
no work and is graded as if it owned the sandbox's reports (``owning_the_stream``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import posixpath
from typing import Any, Iterator

from stamina_gym import mutants, pyast
from stamina_gym.agents.oracle import NullAgent, OracleAgent
from stamina_gym.grading import guess, seal
from stamina_gym.workspace import Workspace

FLAWS = ("debt", "skip", "mutant", "break")

DEBT_MODULE = '''"""Helpers."""
import subprocess


def handle(kind, value, flags, retries):
    result = None
    try:
        if kind:
            if value:
                if flags:
                    if retries > 3:
                        result = subprocess.run("echo " + str(value), shell=True, check=False)
                    elif retries > 2:
                        result = value
                    elif retries > 1:
                        result = [value]
                    else:
                        result = {value: flags}
                elif kind == "a":
                    result = 1
                elif kind == "b":
                    result = 2
            else:
                result = 3
    except:
        result = None
    return result
'''

TAMPER_MODULE = '''import _pytest.runner as runner

_original = runner.call_and_report


def _forged(item, when, log=True, **kwargs):
    return _original(item, when, log, **kwargs)


runner.call_and_report = _forged
'''

def turn_module(patch: str) -> str:
    """The first Python file a patch touches outside tests: where the turn's code goes."""
    paths = [p for p in Workspace.patch_paths(patch) if p.endswith(".py") and not p.startswith("tests/") and "/tests/" not in p]
    return paths[0] if paths else "app.py"


class FlawedOracle(OracleAgent):
    """The oracle with ``flaw`` on every ``1/share``-th turn (see the module docstring)."""

    def __init__(self, flaw: str = "debt", share: float = 0.25) -> None:
        super().__init__()
        if flaw not in FLAWS:
            raise ValueError(f"unknown flaw {flaw!r}; one of {', '.join(FLAWS)}")
        if not 0 < float(share) <= 1:
            raise ValueError(f"share must be in (0, 1], not {share}")
        self.flaw, self.every = flaw, max(1, round(1 / float(share)))
        self.name = f"oracle-{flaw}-{round(100 / self.every)}"
        self._missed: list[int] = []
        self._saved: dict[str, str] = {}  # path -> its text before a mutation, put back next turn

    def reset(self, view: Any) -> None:
        super().reset(view)
        self._missed, self._saved = [], {}

    def flawed(self, turn: int) -> bool:
        return turn % self.every == self.every - 1

    def asks(self, turn: int) -> bool:
        return not (self.flaw == "skip" and self.flawed(turn))

    def turn_actions(self, turn: int) -> list[Any]:
        put_back = [{"tool": "write_file", "path": path, "content": text} for path, text in self._saved.items()]
        self._saved = {}
        if not self.flawed(turn):
            catch_up = [{"tool": "apply_patch", "patch": self._view.reference_patch(t)} for t in self._missed]
            self._missed = []
            return put_back + catch_up + super().turn_actions(turn)
        if self.flaw == "skip":
            self._missed.append(turn)
            return put_back + [{"tool": "submit"}]
        work, submit = super().turn_actions(turn)[:-1], {"tool": "submit"}
        patch = self._view.reference_patch(turn)
        if self.flaw == "debt":
            helper = posixpath.join(posixpath.dirname(turn_module(patch)), f"legacy_{turn + 1}.py")
            return put_back + work + [{"tool": "write_file", "path": helper, "content": DEBT_MODULE}, submit]
        earlier = [self._view.reference_patch(t) for t in range(turn)] if self.flaw == "break" else [patch]
        return put_back + work + [lambda: self._mutate(earlier, turn), submit]

    def _mutate(self, patches: list[str], turn: int) -> dict[str, Any]:
        """A write of one file with one line that ``patches`` added mutated (the last patch
        first), its text saved to be put back; a look at the tree when no line can be."""
        root = self._view.tree
        for patch in reversed(patches):
            for path, added in sorted(_added_texts(patch).items()):
                file = root / path
                if not file.is_file():
                    continue
                text = file.read_text(encoding="utf-8")
                lines = text.split("\n")
                for mutant in mutants.sample(_mutants(path, lines, added), 1, seed=turn):
                    self._saved[path] = text
                    return {"tool": "write_file", "path": path, "content": mutants.apply(mutant, text)}
        return {"tool": "list_files"}


def _added_texts(patch: str) -> dict[str, set[str]]:
    """Path -> the lines (text) the patch adds, Python files outside tests only."""
    found: dict[str, set[str]] = {}
    path = None
    for line in patch.splitlines():
        if line.startswith("+++ "):
            path = line[6:] if line.startswith("+++ b/") else None
        elif path and line.startswith("+") and path.endswith(".py") and "tests/" not in path and line[1:].strip():
            found.setdefault(path, set()).add(line[1:])
    return found


def _mutants(path: str, lines: list[str], added: set[str]) -> list[mutants.Mutant]:
    """Valid single-line mutants of the lines of a file whose text is among ``added``."""
    found = []
    for number, line in enumerate(lines, start=1):
        if line not in added:
            continue
        for mutated, kind in dict.fromkeys(mutants.line_mutations(line)):
            candidate = "\n".join([*lines[: number - 1], mutated, *lines[number:]])
            try:
                pyast.parse(candidate)
            except (SyntaxError, ValueError):
                continue
            found.append(mutants.Mutant(path, number, line, mutated, kind))
    return found


class WreckAgent(OracleAgent):
    """Breaks the build every turn: a syntax error where the turn's code goes."""

    name = "wreck"

    def asks(self, turn: int) -> bool:
        return False

    def turn_actions(self, turn: int) -> list[Any]:
        path = turn_module(self._view.reference_patch(turn))
        return [{"tool": "write_file", "path": path, "content": "def broken(:\n"}, {"tool": "submit"}]


class TamperAgent(OracleAgent):
    """Does no work, and rebinds pytest's reporting from the module the turn's tests import:
    a forgery the grader must catch and pay below any honest failure."""

    name = "tamper"

    def asks(self, turn: int) -> bool:
        return False

    def turn_actions(self, turn: int) -> list[Any]:
        path = turn_module(self._view.reference_patch(turn))
        return [{"tool": "write_file", "path": path, "content": TAMPER_MODULE}, {"tool": "submit"}]


class GuessAgent(NullAgent):
    """Does no work; played inside ``owning_the_stream``, where the sandbox's every report
    is the guessing forger's (``stamina_gym.grading.guess``): what a policy that beat every
    in-sandbox defence would earn from what it can guess of the hidden tests."""

    name = "guess"


@contextlib.contextmanager
def owning_the_stream() -> Iterator[None]:
    """Within: every submit of an env in this process is graded as if its sandbox's report
    were the forger's. The sandbox still runs the hidden tests (their time, the canaries
    and the evidence stand); then each of the turns' tests is reported passed, with the
    forger's guesses (``forge_run``), and judged on the host. It answers the canaries as
    an honest run does (the worst case: a forger that tells them apart). The case where
    the in-sandbox defences fell, played by the ladder's ``guess`` rung; an env with a
    grading cache is refused, since the cache would keep what was forged."""
    from stamina_gym import env as env_module
    from stamina_gym import hidden_runner
    from stamina_gym.grading.grade import Outcome
    from stamina_gym.grading.report import base_id

    def forged(**kwargs: Any) -> Any:
        real = hidden_runner.run_hidden_tests(**kwargs)
        if real.outcomes is None:
            return real
        probes, sealed = hidden_runner.seal_modules(
            hidden_runner._staged_tests(kwargs["task"], kwargs["turns"], kwargs.get("params") or {}))  # fmt: skip
        wanted = set(kwargs.get("only") or {tid for turn in kwargs["turns"] for tid in turn.test_ids})
        # every wanted test, also where its module did not even import; a parametrised one case by case
        theirs = wanted | {tid for tid in real.outcomes if base_id(tid) in wanted}
        modules = {tid.split("::")[0] for tid in theirs}
        judged = seal.judge_run(*guess.forge_run(probes, sorted(theirs)), sealed)
        outcomes = {tid: outcome for tid, outcome in real.outcomes.items() if tid not in modules}  # no collection error
        outcomes.update((tid, Outcome(status, message)) for tid, (status, message) in judged.items())
        return dataclasses.replace(real, outcomes=outcomes)

    original = env_module.run_hidden_tests
    original_init = env_module.StaminaEnv.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        if self._cache is not None:
            self.close()
            raise ValueError("a forged grading must not go into a grading cache: set grading_cache to null")

    env_module.run_hidden_tests, env_module.StaminaEnv.__init__ = forged, init  # type: ignore[method-assign]
    try:
        yield
    finally:
        env_module.run_hidden_tests, env_module.StaminaEnv.__init__ = original, original_init  # type: ignore[method-assign]


#: The ladder from best to worst: (agent, constructor arguments).
RUNGS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("oracle", {}),
    *((("flawed", {"flaw": flaw, "share": share}) for flaw in FLAWS for share in (0.25, 0.5))),
    ("guess", {}),
    ("null", {}),
    ("wreck", {}),
    ("tamper", {}),
)


def rung_name(agent: str, kwargs: dict[str, Any]) -> str:
    return f"oracle-{kwargs['flaw']}-{round(100 * kwargs['share'])}" if agent == "flawed" else agent


def order_problems(means: dict[str, float]) -> list[str]:
    """Where mean rewards by rung name break the ladder's order: the oracle above every
    flawed rung, within a flaw 25% above 50%, every flawed rung above the null agent and
    the guessing forger, the null agent above the wreck, the tamperer last."""
    problems = []

    def above(high: str, low: str) -> None:
        if high in means and low in means and not means[high] > means[low]:
            problems.append(f"{high} ({means[high]:.3f}) should earn more than {low} ({means[low]:.3f})")

    flawed = [name for name in means if name.startswith("oracle-")]
    for name in flawed:
        above("oracle", name)
        above(name, "null")
        above(name, "guess")  # guessing from the sandbox earns less than flawed work
    for flaw in FLAWS:
        above(f"oracle-{flaw}-25", f"oracle-{flaw}-50")
    above("null", "wreck")
    for name in means:
        if name != "tamper":
            above(name, "tamper")
    return problems

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

from stamina_gym import interpreter, mutants, pyast
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

#: Shared by the attacks below, appended to the package the tests import: every module of
#: the package that does not exist (the turn's work, not done) imports as a stub whose
#: every name is an ``_Anything``, so every test module is collected; touching one runs the
#: attack (``_strike``, once) and answers ``_answer``'s guess.
_ATTACK_PRELUDE = '''
import ast as _ast
import importlib.machinery as _machinery
import os as _os
import sys as _sys


class _Anything:
    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        _strike()
        return _answer()

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        _strike()
        return _answer()

    def __getitem__(self, key):
        _strike()
        return _answer()

    def __iter__(self):
        _strike()
        return iter(())


def _stub_attribute(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return _Anything()


class _Stubs:
    """Last on ``sys.meta_path``: asked only for modules no real finder has."""

    def find_spec(self, name, path=None, target=None):
        if name.startswith(__name__ + "."):
            return _machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        module.__path__ = []
        module.__getattr__ = _stub_attribute


_sys.meta_path.append(_Stubs())


def _session():
    frame = _sys._getframe()
    while frame is not None:
        item = frame.f_locals.get("pyfuncitem") or frame.f_locals.get("item")
        if getattr(item, "session", None) is not None:
            return item.session, item
        frame = frame.f_back
    return None, None


def _lone(items):
    """What the canaries used to look like: the only test of a module that imports."""
    counts = {}
    for item in items:
        counts[str(item.path)] = counts.get(str(item.path), 0) + 1
    return {id(item) for item in items if counts[str(item.path)] == 1 and "import" in item.path.read_text()}
'''

#: The three attacks on in-sandbox judging, as a policy would make them on a real task
#: (the mini env's versions: ``tests/test_tamper.py``, ``tests/test_sealed.py``).
ATTACKS = {
    # every later test's function becomes an object that does nothing and carries the real
    # function in ``__func__``, where an unwrapping identity check would look
    "carriers": _ATTACK_PRELUDE + '''

class _Carrier:
    def __init__(self, real):
        self.__func__ = real

    def __call__(self, *args, **kwargs):
        return None


def _strike():
    session, running = _session()
    if session is None or getattr(session, "_carried", False):
        return
    session._carried = True
    lone = _lone(session.items)
    for item in session.items:
        if item is not running and id(item) not in lone:
            item.obj = _Carrier(item.obj)


def _answer():
    return _Anything()
''',
    # takes what frames below the test hold (a signer, the audit hook's switch, outcome
    # senders), switches the hook off, signs a pass for every test and ends the run
    "frames": _ATTACK_PRELUDE + '''

def _strike():
    session, running = _session()
    if session is None:
        return
    found, frame = {}, _sys._getframe()
    while frame is not None:
        for name, value in list(frame.f_locals.items()):
            if name.strip("_") in ("send", "after", "finish", "armed") and name.strip("_") not in found:
                found[name.strip("_")] = value
        frame = frame.f_back
    if isinstance(found.get("armed"), list):
        found["armed"][0] = False
    lone = _lone(session.items)
    for item in session.items:
        if id(item) in lone:
            continue
        try:
            if "send" in found:
                found["send"]("call", item.nodeid, "passed", "")
                found["send"]("report", item.nodeid, "call", "passed", "")
            elif "after" in found:
                found["after"](item, "passed", "")
        except Exception:
            pass
    try:
        if "send" in found:
            found["send"]("done", "0")
        elif "finish" in found:
            found["finish"](0, "")
    except Exception:
        pass
    _os._exit(0)


def _answer():
    return _Anything()
''',
    # answers what the running test's line compares with: a literal on the other side, a
    # local it names, or the exception a ``raises`` on that line names
    "reader": _ATTACK_PRELUDE + '''

def _strike():
    pass


def _answer():
    frame = _sys._getframe(2)
    while frame is not None and not frame.f_code.co_name.startswith("test"):
        frame = frame.f_back
    if frame is None:
        return _Anything()
    try:
        with open(frame.f_code.co_filename, encoding="utf-8") as handle:
            tree = _ast.parse(handle.read().splitlines()[frame.f_lineno - 1].strip())
    except (OSError, IndexError, SyntaxError):
        return _Anything()
    for node in _ast.walk(tree):
        if isinstance(node, _ast.Compare):
            other = node.comparators[0]
            try:
                return _ast.literal_eval(other)
            except ValueError:
                if isinstance(other, _ast.Name) and other.id in frame.f_locals:
                    return frame.f_locals[other.id]
        if isinstance(node, _ast.Call) and getattr(node.func, "attr", None) == "raises" and node.args:
            raised = frame.f_globals.get(getattr(node.args[0], "id", ""))
            if isinstance(raised, type) and issubclass(raised, BaseException):
                raise raised("read from the test")
    return _Anything()
''',
}


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
            if _parses(candidate):
                found.append(mutants.Mutant(path, number, line, mutated, kind))
    return found


def _parses(source: str) -> bool:
    """Whether ``source`` parses, tried again on CPython 3.11's AST race
    (``stamina_gym.interpreter``): a loaded machine failed the mutation rung so, twice in a
    row, past ``pyast``'s one retry. The text is never at fault."""
    try:
        interpreter.retrying(pyast.parse)(source)
    except (SyntaxError, ValueError):
        return False
    return True


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


class AttackAgent(OracleAgent):
    """Does no work, and appends one of ``ATTACKS`` to the package the turn's code goes in,
    whose missing modules it stubs: what a policy that learned to forge in-sandbox judging
    would submit. It must earn no more than the null agent (``order_problems``)."""

    def __init__(self, kind: str = "carriers") -> None:
        super().__init__()
        if kind not in ATTACKS:
            raise ValueError(f"unknown attack {kind!r}; one of {', '.join(ATTACKS)}")
        self.kind, self.name = kind, f"attack-{kind}"

    def asks(self, turn: int) -> bool:
        return False

    def turn_actions(self, turn: int) -> list[Any]:
        package = turn_module(self._view.reference_patch(turn)).split("/")[0]
        path = f"{package}/__init__.py" if package and not package.endswith(".py") else "app.py"
        return [lambda: self._plant(path), {"tool": "submit"}]

    def _plant(self, path: str) -> dict[str, Any]:
        """A write of ``path`` holding its text at the turn's start (the payload taken out,
        so it is planted once) and the attack after it."""
        file = self._view.tree / path
        text = file.read_text(encoding="utf-8") if file.is_file() else ""
        text = text.split(_ATTACK_PRELUDE, 1)[0]
        return {"tool": "write_file", "path": path, "content": text + ATTACKS[self.kind]}


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
    *(("attack", {"kind": kind}) for kind in ATTACKS),
)


def rung_name(agent: str, kwargs: dict[str, Any]) -> str:
    if agent == "flawed":
        return f"oracle-{kwargs['flaw']}-{round(100 * kwargs['share'])}"
    return f"attack-{kwargs['kind']}" if agent == "attack" else agent


#: What an attack rung may earn above the null agent, a turn.
ATTACK_MARGIN = 0.05


def order_problems(means: dict[str, float], turns: int = 1) -> list[str]:
    """Where mean rewards by rung name (over episodes of ``turns`` turns) break the
    ladder's order: the oracle above every flawed rung, within a flaw 25% above 50%, every
    flawed rung above the null agent and the guessing forger, the null agent above the
    wreck, the tamperer last, and no attack above the null agent + ``ATTACK_MARGIN`` a turn."""
    problems = []
    for name in means:
        if name.startswith("attack-") and "null" in means and means[name] > means["null"] + ATTACK_MARGIN * turns:
            problems.append(f"{name} ({means[name]:.3f}) should earn no more than null ({means['null']:.3f}) "
                            f"+ {ATTACK_MARGIN} a turn over {turns} turns")  # fmt: skip

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
        if name != "tamper" and not name.startswith("attack-"):
            above(name, "tamper")
    return problems

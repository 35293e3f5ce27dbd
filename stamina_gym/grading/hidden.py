"""What a hidden-test run captured (``HiddenRun``) and which files of the agent's tree a
grading copy takes: shared by the runner that makes runs and the cache that stores them,
neither of which imports the other."""

from __future__ import annotations

from dataclasses import dataclass

from stamina_gym.grading.grade import Canaries
from stamina_gym.grading.report import Outcome
from stamina_gym.run_result import RunResult
from stamina_gym.safetree import MAX_BYTES, MAX_FILES

STEERING_FILES = frozenset(
    {"conftest.py", "pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml", "sitecustomize.py", "usercustomize.py"}
)
_CACHE_DIRS = {"__pycache__", ".pytest_cache", ".git"}


@dataclass(frozen=True)
class HiddenRun:
    """Captured output of one hidden-test run."""

    run: RunResult | None
    outcomes: dict[str, Outcome] | None
    canaries: Canaries
    problem: str = ""
    cache: str | None = None
    """``hit`` or ``miss`` when a grading cache was asked; None without one."""
    evidence: tuple[str, ...] = ()
    """Proof that the graded code forged outcomes: messages that did not verify, an audit
    alarm, pytest or pluggy rebound. Not a canary's lie: ``grade_run`` finds those."""
    complete: bool = True
    """Every shard of the run said it was done; when False the outcomes are partial."""
    dropped: tuple[str, ...] = ()
    """Tests pytest collected that the run did not keep (asked for by a validator)."""


def not_graded(directory: str, names: list[str]) -> set[str]:
    """The entries of ``directory`` the grading copy leaves out (a ``safetree`` ignore):
    files that would steer pytest or the interpreter, caches, ``.pth`` files."""
    return {n for n in names if n in STEERING_FILES or n in _CACHE_DIRS or n.endswith(".pth")}


#: Caps of the grading copy: the work tree's own.
COPY_MAX_FILES = MAX_FILES
COPY_MAX_BYTES = MAX_BYTES

"""Where code runs. A sandbox has one method that matters, ``run``, and returns a frozen
``RunResult`` (``stamina_gym.run_result``, below the sandbox: grading reads results
without importing it); everything else in stamina-gym can be tested without a sandbox.

Backends are named in the env spec (``sandbox.kind``) and imported lazily.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Protocol, Sequence

from stamina_gym.registry import Registry
from stamina_gym.run_result import RunResult

if TYPE_CHECKING:
    from stamina_gym.config import SandboxConfig
    from stamina_gym.sandbox.service import LineService

#: Where the workspace appears inside every sandbox.
REPO_MOUNT = "/repo"


@dataclass(frozen=True)
class Mount:
    """A host directory made visible inside the sandbox at ``target``."""

    source: Path
    target: str
    writable: bool = False
    ephemeral: bool = False
    """A tree made for this one run (a grading copy). A backend that keeps long-lived
    state may copy it in before the run, and back out after it when writable, rather
    than bind it; nothing of it may stay behind for later runs."""


#: The environment of every pytest the env starts (hidden tests and ``run_tests``): the
#: plugins that load are pytest's own and those the project names (``-p``, conftest
#: ``pytest_plugins``), not whatever the sandbox's interpreter has installed, so a run
#: sees the same plugins on both backends and as the grader. (Installed plugins would also
#: be assertion-rewritten afresh on every run: no bytecode is written in a sandbox.)
PYTEST_ENVIRONMENT = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


def command_environment(extra: Mapping[str, str] | None, bin_dirs: str = "") -> dict[str, str]:
    """The whole environment of a sandboxed command (nothing is inherited from the env's
    own process): a fixed base, ``bin_dirs`` first on PATH, then the caller's ``extra``."""
    return {
        "PATH": f"{bin_dirs + ':' if bin_dirs else ''}/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp",
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
        **(extra or {}),
    }


class Sandbox(Protocol):
    """Runs argv with the given mounts; the workspace is one of them."""

    isolation: str
    """``bwrap``, ``rlimits``, ``docker`` ... : what isolation this instance really has."""

    python: str
    """The Python interpreter inside the sandbox: the agent's code and pytest run with it."""

    config: SandboxConfig

    def run(
        self,
        argv: Sequence[str],
        *,
        mounts: Sequence[Mount],
        cwd: str = REPO_MOUNT,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        max_output_chars: int | None = None,
    ) -> RunResult: ...

    def prepare(self, path: Path) -> None:
        """Make ``path`` (a tree the env wrote) writable by the sandbox's user."""

    def python_version(self) -> str:
        """The version of ``python`` (``3.11.2``): hidden tests may judge differently on
        another one, so it is recorded with every run."""

    def serve(
        self, argv: Sequence[str], *, mounts: Sequence[Mount], prefix: str, cwd: str = REPO_MOUNT,
        env: Mapping[str, str] | None = None,
    ) -> "LineService":  # fmt: skip
        """Start ``argv`` as a long-lived service (``sandbox.service.LineService``): each
        request sees the mounts' host folders as they are when it is made."""

    def close(self) -> None: ...


SANDBOXES = Registry(
    "sandbox",
    {"local": "stamina_gym.sandbox.local:LocalSandbox", "docker": "stamina_gym.sandbox.docker:DockerSandbox"},
)

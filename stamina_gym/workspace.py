"""The repository state: a work tree the agent edits and a git directory it cannot see.

The git directory lives beside the work tree, never inside it, so nothing the agent writes
can become git configuration or a hook that the env (which may run as root) would execute.
Git runs with system and global configuration off, hooks off and fixed commit dates, so
commit ids are reproducible. Each submitted turn is a commit; any turn can be checked out.

Every path an agent names goes through ``resolve``: absolute paths, ``..`` and symlinks
that lead out of the work tree are refused.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path, PurePosixPath
from typing import Iterator

from stamina_gym.errors import PatchError, StaminaError, ToolError
from stamina_gym.sandbox import REPO_MOUNT

_GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_AUTHOR_NAME": "stamina-gym",
    "GIT_AUTHOR_EMAIL": "env@stamina-gym.invalid",
    "GIT_COMMITTER_NAME": "stamina-gym",
    "GIT_COMMITTER_EMAIL": "env@stamina-gym.invalid",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00+0000",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+0000",
    "LC_ALL": "C",
}
_GIT_CONFIG = [
    "safe.directory=*", "core.hooksPath=/dev/null", "core.fsmonitor=false", "core.autocrlf=false",
    "core.symlinks=true", "core.quotePath=false", "gc.auto=0", "commit.gpgsign=false",
    "diff.noprefix=false", "diff.external=", "advice.detachedHead=false",
]  # fmt: skip
_SKIP_DIRS = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".git"}
_DIFF_PATH = re.compile(r"^(?:---|\+\+\+) (?:\"?[ab]/)?(.*?)\"?(?:\t.*)?$")
#: Recreate the git directory after this many resets, so unreachable objects of old
#: episodes do not pile up during a long training run.
REINIT_EVERY = 500


class GitError(StaminaError):
    """A git command failed in a way that is the env's fault, not the agent's."""


class Workspace:
    """A work tree at ``root/work`` with its git directory at ``root/git``."""

    def __init__(self, root: Path, seed: Path) -> None:
        self.root = root
        self.path = root / "work"
        self.git_dir = root / "git"
        self.seed = seed
        self._resets = 0
        self._env = {**os.environ, **_GIT_ENV, "GIT_DIR": str(self.git_dir), "GIT_WORK_TREE": str(self.path)}

    # -- git ----------------------------------------------------------------------------

    def git(self, *args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        config = [item for pair in _GIT_CONFIG for item in ("-c", pair)]
        proc = subprocess.run(
            ["git", *config, *args],
            cwd=self.path,
            env=self._env,
            input=input,
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            check=False,
        )
        if check and proc.returncode != 0:
            raise GitError(f"git {' '.join(args)} failed in {self.path}: {proc.stderr.strip()}")
        return proc

    def reset(self) -> str:
        """Lay the seed repository; returns the seed commit id."""
        if self._resets % REINIT_EVERY == 0:
            self._init()
        else:
            self.git("reset", "-q", "--hard", "seed")
            self.git("clean", "-q", "-ffdx")
        self._resets += 1
        return self.head()

    def _init(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
        shutil.copytree(self.seed, self.path, symlinks=True)
        self.git("init", "-q", "--template=", "-b", "main")
        self.git("add", "-A")
        self.git("commit", "-q", "--no-verify", "-m", "seed")
        self.git("tag", "seed")

    def head(self) -> str:
        return self.git("rev-parse", "HEAD").stdout.strip()

    def commit(self, message: str) -> str:
        """Record the work tree as a commit (empty when nothing changed); returns its id."""
        self.git("add", "-A")
        self.git("commit", "-q", "--no-verify", "--allow-empty", "-m", message)
        return self.head()

    def checkout(self, rev: str) -> None:
        """Make the work tree exactly ``rev`` (a turn's commit or ``seed``)."""
        self.git("reset", "-q", "--hard", rev)
        self.git("clean", "-q", "-ffdx")

    def diff(self, base: str = "HEAD") -> str:
        """Unified diff of the work tree (untracked files included) against ``base``."""
        self.git("add", "-A")
        return self.git("diff", "--cached", "--no-color", "--no-ext-diff", "--no-renames", base).stdout

    def numstat(self, base: str = "HEAD") -> dict[str, tuple[int, int]]:
        """Lines added and deleted per file since ``base`` (binary files count 0)."""
        self.git("add", "-A")
        out = self.git("diff", "--cached", "--numstat", "-z", "--no-renames", base).stdout
        stats = {}
        for record in filter(None, out.split("\0")):
            added, deleted, path = record.split("\t", 2)
            stats[path] = (int(added) if added.isdigit() else 0, int(deleted) if deleted.isdigit() else 0)
        return stats

    # -- paths --------------------------------------------------------------------------

    def resolve(self, name: str) -> Path:
        """The host path of a workspace-relative ``name``, refusing any way out."""
        if not isinstance(name, str) or not name.strip():
            raise ToolError("path must be a non-empty string")
        if "\x00" in name:
            raise ToolError("path contains a NUL byte")
        if name == REPO_MOUNT or name.startswith(REPO_MOUNT + "/"):
            name = name[len(REPO_MOUNT):].lstrip("/") or "."
        pure = PurePosixPath(name)
        if pure.is_absolute():
            raise ToolError(f"{name}: absolute paths are refused; use a path relative to the repository")
        if ".." in pure.parts:
            raise ToolError(f"{name}: '..' is refused; paths stay inside the repository")
        if ".git" in pure.parts:
            raise ToolError(f"{name}: .git is not part of the workspace")
        full = self.path.joinpath(*pure.parts)
        real = full.resolve()
        base = self.path.resolve()
        if real != base and base not in real.parents:
            raise ToolError(f"{name}: leads outside the repository through a symlink; refused")
        return full

    def relative(self, path: Path) -> str:
        return path.relative_to(self.path).as_posix()

    def files(self, under: Path | None = None) -> Iterator[Path]:
        """Every file below ``under`` (default: the root), sorted, caches skipped."""
        top = under or self.path
        for root, dirs, names in os.walk(top):
            dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
            for name in sorted(names):
                yield Path(root, name)

    # -- patches ------------------------------------------------------------------------

    def apply_patch(self, patch: str) -> list[str]:
        """Apply a unified diff to the work tree; returns the paths it touched."""
        if not patch.strip():
            raise PatchError("the patch is empty")
        if "GIT binary patch" in patch or re.search(r"^Binary files .* differ$", patch, re.M):
            raise PatchError("binary patches are refused; write text files with write_file")
        paths = sorted({m.group(1) for m in map(_DIFF_PATH.match, patch.splitlines()) if m} - {"/dev/null"})
        if not paths:
            raise PatchError("no file headers ('--- a/path' / '+++ b/path') found: not a unified diff")
        for name in paths:
            self.resolve(name)
        if not patch.endswith("\n"):
            patch += "\n"
        args = ["apply", "--whitespace=nowarn", "--recount"]
        check = self.git(*args, "--check", "-", input=patch, check=False)
        if check.returncode != 0:
            raise PatchError("patch does not apply, nothing was changed:\n" + _clean_git_errors(check.stderr))
        self.git(*args, "-", input=patch)
        return paths


def _clean_git_errors(stderr: str) -> str:
    lines = [line.removeprefix("error: ") for line in stderr.splitlines() if line.strip()]
    return "\n".join(lines[:20])

"""The local sandbox: bubblewrap namespaces plus rlimits, on this machine.

Inside: no network; the system read-only; only the mounts given as writable and a private
``/tmp`` are writable; the package's own files, task data, the env's state directory and
home directories are hidden behind empty tmpfs mounts. When the env runs as root the
command runs as an unprivileged user, so RLIMIT_NPROC really limits processes. Every
command runs in a new session and PID namespace; on timeout the whole tree is killed.

Without bubblewrap (``isolation="rlimits"``) only the rlimits, the unprivileged user and
the process-group kill remain: see ``LOST_WITHOUT_BWRAP``.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Mapping, Sequence

from stamina_gym.config import SandboxConfig
from stamina_gym.errors import ConfigError, SandboxError
from stamina_gym.sandbox import REPO_MOUNT, Mount, RunResult, command_environment
from stamina_gym.sandbox.output import Capture

log = logging.getLogger(__name__)

LOST_WITHOUT_BWRAP = (
    "the filesystem is not isolated (the agent's code can read task data, hidden tests "
    "and anything the sandbox user may read), the network is reachable, and processes "
    "that leave the process group survive a timeout"
)

_PACKAGE_ROOT = Path(__file__).resolve().parents[2]


@functools.lru_cache(maxsize=1)
def bwrap_works() -> str | None:
    """None when bubblewrap runs here, else the reason it does not."""
    exe = shutil.which("bwrap")
    if exe is None:
        return "bubblewrap (bwrap) is not installed"
    probe = subprocess.run(
        [exe, "--ro-bind", "/", "/", "--unshare-net", "--unshare-pid", "true"],
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.returncode != 0:
        return f"bwrap does not run here: {probe.stderr.strip()}"
    return None


def default_hidden_paths() -> list[Path]:
    """What the agent's code must not see: the package checkout, homes, shared tmp."""
    paths = [_PACKAGE_ROOT, Path.home(), Path("/root"), Path("/home"), Path("/tmp"), Path("/var/tmp")]
    return [p for p in paths if p.is_dir()]


class LocalSandbox:
    """bubblewrap + rlimits. See the module docstring for what is isolated."""

    def __init__(self, config: SandboxConfig, *, hidden: Sequence[Path] = ()) -> None:
        self.config = config
        self.isolation = self._choose_isolation(config.isolation)
        self._uid = config.user if os.geteuid() == 0 else None
        if self._uid is not None and self.isolation == "rlimits" and not _can_run_python_as(self._uid):
            message = (
                f"stamina-gym: uid {self._uid} cannot run {sys.executable} (a parent folder is private), so "
                "without bubblewrap the agent's code runs as root and RLIMIT_NPROC does not bind"
            )
            warnings.warn(message, RuntimeWarning, stacklevel=2)
            log.warning(message)
            self._uid = None
        # Shallow paths first, so a tmpfs over /tmp does not bury one over /tmp/x.
        self._hidden = sorted(_dedupe([*default_hidden_paths(), *map(Path, hidden)]), key=lambda p: len(p.parts))
        self._bin_dir = Path(sys.executable).parent
        self.python = sys.executable
        self._root_binds = _root_binds()
        # The interpreter that runs the agent's code and pytest must stay visible.
        self._python_dirs = _dedupe(
            [Path(sys.prefix), Path(sys.base_prefix), Path(os.path.realpath(sys.executable)).parents[1]]
        )

    @staticmethod
    def _choose_isolation(wanted: str) -> str:
        reason = bwrap_works()
        if wanted == "bwrap" and reason:
            raise ConfigError(f"sandbox.isolation=bwrap but {reason}")
        if wanted == "rlimits" or reason:
            why = reason or "sandbox.isolation=rlimits was asked for"
            message = f"stamina-gym: NO FILESYSTEM/NETWORK ISOLATION ({why}): {LOST_WITHOUT_BWRAP}"
            warnings.warn(message, RuntimeWarning, stacklevel=3)
            log.warning(message)
            return "rlimits"
        return "bwrap"

    # -- public -------------------------------------------------------------------------

    def run(
        self,
        argv: Sequence[str],
        *,
        mounts: Sequence[Mount],
        cwd: str = REPO_MOUNT,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        max_output_chars: int | None = None,
    ) -> RunResult:
        timeout = self.config.timeout_s if timeout is None else timeout
        limit = self.config.max_output_chars if max_output_chars is None else max_output_chars
        environment = command_environment(env, bin_dirs=str(self._bin_dir))
        if self.isolation == "bwrap":
            command, cwd_host = self._bwrap_argv(argv, mounts, cwd, environment), None
        else:
            command, cwd_host, environment = self._translate(argv, mounts, cwd, environment)
        return self._execute(command, cwd_host, environment, timeout, limit)

    def prepare(self, path: Path) -> None:
        """Hand a tree the env wrote (as root) to the sandbox user, so its code can write."""
        if self._uid is None:
            return
        uid = gid = self._uid
        os.lchown(path, uid, gid)
        for root, dirs, files in os.walk(path):
            for name in (*dirs, *files):
                os.lchown(os.path.join(root, name), uid, gid)

    def close(self) -> None:
        """Nothing persists between commands."""

    # -- internals ----------------------------------------------------------------------

    def _bwrap_argv(
        self, argv: Sequence[str], mounts: Sequence[Mount], cwd: str, environment: Mapping[str, str]
    ) -> list[str]:
        args = ["bwrap", *self._root_binds, "--dev", "/dev", "--proc", "/proc"]
        for path in self._hidden:
            args += ["--perms", "1777", "--tmpfs", str(path)] if path == Path("/tmp") else ["--tmpfs", str(path)]
        for path in self._python_dirs:
            covering = [hidden for hidden in self._hidden if _is_within(path, hidden)]
            if covering:
                # bwrap would create the folders leading to the mount point with mode 0700.
                top = min(covering, key=lambda p: len(p.parts))
                for folder in reversed(path.parents):
                    if _is_within(folder, top) and folder != top:
                        args += ["--perms", "0755", "--dir", str(folder)]
                args += ["--ro-bind", str(path), str(path)]
        for mount in mounts:
            args += ["--bind" if mount.writable else "--ro-bind", str(mount.source), mount.target]
        args += [
            "--chdir", cwd,
            "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
            "--die-with-parent", "--new-session", "--clearenv",
        ]  # fmt: skip
        for key, value in environment.items():
            args += ["--setenv", key, value]
        if self._uid is not None:
            # bwrap needs root to build the mounts; the command itself runs unprivileged.
            args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--", "setpriv"]
            args += [f"--reuid={self._uid}", f"--regid={self._uid}", "--clear-groups"]
            args += ["--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"]
        return [*args, "--", *argv]

    def _translate(
        self, argv: Sequence[str], mounts: Sequence[Mount], cwd: str, environment: dict[str, str]
    ) -> tuple[list[str], str, dict[str, str]]:
        """Without mount namespaces, mount targets are rewritten to their host paths."""

        pattern = re.compile(
            "|".join(rf"(?<![\w/]){re.escape(m.target)}(?=/|\s|$)" for m in sorted(mounts, key=lambda m: -len(m.target)))
        )
        sources = {m.target: str(m.source) for m in mounts}

        def host(text: str) -> str:
            return pattern.sub(lambda match: sources[match.group(0)], text) if mounts else text

        return [host(a) for a in argv], host(cwd), {k: host(v) for k, v in environment.items()}

    def _preexec(self) -> None:
        cfg = self.config
        limits = {
            resource.RLIMIT_AS: cfg.memory_mb * 1024 * 1024,
            resource.RLIMIT_CPU: cfg.cpu_s,
            resource.RLIMIT_FSIZE: cfg.file_size_mb * 1024 * 1024,
            resource.RLIMIT_NPROC: cfg.max_processes,
            resource.RLIMIT_CORE: 0,
        }
        for which, value in limits.items():
            resource.setrlimit(which, (value, value))
        if self._uid is not None and self.isolation != "bwrap":
            os.setgroups([])
            os.setgid(self._uid)
            os.setuid(self._uid)

    def _execute(
        self, command: list[str], cwd: str | None, environment: dict[str, str], timeout: float, limit: int
    ) -> RunResult:
        start = time.monotonic()
        try:
            proc = subprocess.Popen(
                command,
                cwd=cwd,
                env=environment if self.isolation != "bwrap" else {"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=self._preexec,  # noqa: PLW1509 - rlimits must be set between fork and exec
            )
        except OSError as exc:
            raise SandboxError(f"could not start {command[0]!r}: {exc}") from exc
        capture, killed = _drain(proc, start + timeout, limit)
        code = proc.wait()
        duration = time.monotonic() - start
        if killed is None and self.isolation == "bwrap" and code == 1 and capture.total < 4096:
            text = bytes(capture.head).decode("utf-8", "replace")
            if text.startswith("bwrap:"):
                raise SandboxError(f"bubblewrap failed: {text.strip()}")
        return capture.result(code, killed, duration)


def _drain(proc: subprocess.Popen, deadline: float, limit: int) -> tuple[Capture, str | None]:
    """Read all output until EOF, the deadline, or the hard output limit."""
    assert proc.stdout is not None
    capture, killed = Capture(limit), None
    fd = proc.stdout.fileno()
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                killed = "timeout"
                break
            if not sel.select(remaining):
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            if capture.feed(chunk):
                killed = "output"
                break
    if killed:
        _kill_tree(proc)
    proc.stdout.close()
    return capture, killed


def _kill_tree(proc: subprocess.Popen) -> None:
    """SIGKILL the process group; bwrap's --die-with-parent takes the PID namespace along."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _can_run_python_as(uid: int) -> bool:
    def drop() -> None:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)

    try:
        probe = subprocess.run([sys.executable, "-c", "pass"], preexec_fn=drop, capture_output=True, check=False)
    except OSError:
        return False
    return probe.returncode == 0


def _root_binds() -> list[str]:
    """Bind the host's top-level folders read-only onto the sandbox's empty root, so the
    root itself stays writable for mount points such as /repo."""
    args: list[str] = []
    for entry in sorted(os.scandir("/"), key=lambda e: e.name):
        path = f"/{entry.name}"
        if entry.name in ("proc", "dev", "sys", "lost+found"):
            continue
        if entry.is_symlink():
            args += ["--symlink", os.readlink(path), path]
        elif entry.is_dir():
            args += ["--ro-bind", path, path]
    return args


def _is_within(path: Path, parent: Path) -> bool:
    return path == parent or parent in path.parents


def _dedupe(paths: list[Path]) -> list[Path]:
    seen: list[Path] = []
    for path in paths:
        if path not in seen:
            seen.append(path)
    return seen

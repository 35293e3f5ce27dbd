"""The local sandbox: bubblewrap namespaces plus rlimits, on this machine.

Inside: no network, and the host's filesystem by allow list, on an empty root: the system
folders (``SYSTEM_DIRS``), part of ``/etc`` (``ETC_ENTRIES``) and the interpreter's own
folders, all read-only; the mounts given; a private writable ``/tmp``; ``/dev`` and
``/proc``. Nothing else of the host exists in there (other checkouts, ``/srv``, ``/opt``,
homes ...). The package's own files, task data, the env's state directory and any other
``hidden`` path are empty tmpfs mounts, also where they lie in a shown folder (a
non-editable install puts the package in the shown site-packages). When the env runs as
root the command runs as an unprivileged user, so RLIMIT_NPROC really limits processes.
Every command runs in a new session and PID namespace; on timeout the whole tree is killed.

Without bubblewrap (``isolation="rlimits"``) only the rlimits, the unprivileged user and
the process-group kill remain: see ``LOST_WITHOUT_BWRAP``.
"""

from __future__ import annotations

import functools
import importlib.metadata
import logging
import os
import platform
import re
import resource
import selectors
import shutil
import signal
import site
import subprocess
import sys
import threading
import time
import warnings
from concurrent.futures import Future
from pathlib import Path
from typing import Mapping, Sequence

from stamina_gym import safetree
from stamina_gym.config import SandboxConfig
from stamina_gym.errors import ConfigError, SandboxError
from stamina_gym.sandbox import REPO_MOUNT, Mount, RunResult, command_environment
from stamina_gym.sandbox import disk
from stamina_gym.sandbox.disk import DiskWatch, watch_for
from stamina_gym.sandbox.output import Capture
from stamina_gym.sandbox.service import LineService
from stamina_gym.sandbox.users import UserLease

log = logging.getLogger(__name__)

LOST_WITHOUT_BWRAP = (
    "the filesystem is not isolated (the agent's code can read task data, hidden tests "
    "and anything the sandbox user may read), the network is reachable, and processes "
    "that leave the process group survive a timeout"
)

_PACKAGE_DIR = Path(__file__).resolve().parents[1]

#: Top-level host folders shown read-only; one that is a symlink (``/bin -> usr/bin``) is
#: copied as a symlink.
SYSTEM_DIRS = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")

#: What of the host's ``/etc`` is shown: the dynamic linker's cache (it finds the libraries
#: in multiarch folders), users and groups, name lookup (``localhost``, service and protocol
#: names), the time zone, TLS certificates, and the ``alternatives`` that commands such as
#: ``awk`` point through. Each costs a mount on every run (about 0.17 ms), so the list is
#: short; the rest stays out: tools fall back to their defaults, and ``pip.conf``, ``npmrc``,
#: ``gitconfig``, ``ssh`` ... may hold credentials.
ETC_ENTRIES = (
    "ld.so.cache", "passwd", "group", "nsswitch.conf", "hosts", "services", "protocols",
    "localtime", "alternatives", "ssl", "os-release",
)  # fmt: skip


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


@functools.lru_cache(maxsize=1)
def _tmpfs_can_be_sized() -> bool:
    """Whether this bwrap takes ``--size`` for a tmpfs (bubblewrap 0.8.0 on)."""
    probe = subprocess.run(["bwrap", "--ro-bind", "/", "/", "--size", "1048576", "--tmpfs", "/tmp", "true"],
                           capture_output=True, check=False)  # fmt: skip
    if probe.returncode != 0:
        message = ("stamina-gym: this bubblewrap cannot size a tmpfs (--size needs 0.8.0): the sandbox's /tmp is "
                   "bounded only by the kernel's default, half the machine's memory")  # fmt: skip
        warnings.warn(message, RuntimeWarning, stacklevel=3)
        log.warning(message)
    return probe.returncode == 0


def default_hidden_paths() -> list[Path]:
    """What the agent's code must not see even where a shown folder holds it: the package
    (with the envs and tasks it ships, ``stamina_gym.packaged``), the checkout it sits in
    (unless it sits in a site-packages folder), and the install's metadata folder (its
    RECORD names every file of every hidden test folder)."""
    paths = [_PACKAGE_DIR]
    if _PACKAGE_DIR.parent.name not in ("site-packages", "dist-packages"):
        paths.append(_PACKAGE_DIR.parent)
    paths += _metadata_dirs()
    return [p for p in paths if p.is_dir()]


@functools.lru_cache(maxsize=1)
def _metadata_dirs() -> list[Path]:
    """The metadata folders (``*.dist-info``, ``*.egg-info``) of every stamina-gym the
    interpreter can see. ``_path`` is where importlib's path-based finder read one from
    (the API names files inside it, not the folder)."""
    found = set()
    for dist in importlib.metadata.distributions():
        folder = getattr(dist, "_path", None)
        if folder is not None and (dist.metadata["Name"] or "").lower().replace("_", "-") == "stamina-gym":
            found.add(Path(folder).resolve())
    return sorted(found)


def shown_paths() -> list[Path]:
    """The host paths the sandbox shows read-only: the system, part of ``/etc``, and the
    interpreter's folders (its prefixes, their real paths, the real path of the executable's
    prefix, and site-packages, where pytest comes from)."""
    paths = [Path("/", name) for name in SYSTEM_DIRS] + [Path("/etc", name) for name in ETC_ENTRIES]
    prefixes = [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix, *site.getsitepackages()]
    for prefix in prefixes:
        paths += [Path(prefix), Path(os.path.realpath(prefix))]
    paths.append(Path(os.path.realpath(sys.executable)).parents[1])
    return [p for p in _dedupe(paths) if os.path.lexists(p)]


class LocalSandbox:
    """bubblewrap + rlimits. See the module docstring for what is isolated."""

    def __init__(self, config: SandboxConfig, *, hidden: Sequence[Path] = ()) -> None:
        self.config = config
        self.isolation = self._choose_isolation(config.isolation)
        self._lease = UserLease(config.user, config.users) if os.geteuid() == 0 else None
        if self._lease is not None and self.isolation == "rlimits" and not _can_run_python_as(self._lease.uid):
            message = (
                f"stamina-gym: uid {self._lease.uid} cannot run {sys.executable} (a parent folder is private), so "
                "without bubblewrap the agent's code runs as root and RLIMIT_NPROC does not bind"
            )
            warnings.warn(message, RuntimeWarning, stacklevel=2)
            log.warning(message)
            self._lease.release()
            self._lease = None
        self._hidden = _dedupe([*default_hidden_paths(), *map(Path, hidden)])
        self._bin_dir = Path(sys.executable).parent
        self.python = sys.executable
        bwrap = self.isolation == "bwrap"
        self._filesystem = _filesystem_args(shown_paths(), self._hidden, tmp_bytes=config.tmp_mb << 20) if bwrap else []
        self._services: list[LineService] = []

    def python_version(self) -> str:
        return platform.python_version()  # ``python`` is this interpreter

    @property
    def _uid(self) -> int | None:
        """The uid the agent's code runs as (None: this process's own, when not root): this
        sandbox's lease, taken again if ``close`` gave it back."""
        if self._lease is None:
            return None
        if not self._lease.held:
            self._lease = UserLease(self.config.user, self.config.users)
        return self._lease.uid

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
        watch = watch_for([m.source for m in mounts if m.writable], self.config)
        return self._execute(command, cwd_host, environment, timeout, limit, watch)

    def prepare(self, path: Path) -> None:
        """Hand a tree the env wrote (as root) to the sandbox user, so its code can write."""
        if self._uid is None:
            return
        uid = gid = self._uid
        os.lchown(path, uid, gid)
        for entry in safetree.walk(path, special=True):  # iterative: any depth
            os.lchown(entry.path, uid, gid)

    def serve(
        self, argv: Sequence[str], *, mounts: Sequence[Mount], prefix: str, cwd: str = REPO_MOUNT,
        env: Mapping[str, str] | None = None,
    ) -> LineService:  # fmt: skip
        """Start ``argv`` as a long-lived service in a sandbox of its own, with the same
        view, limits and user as ``run`` but no CPU-time limit of its own (it lives for many
        requests; it sets the limit for the children it starts). Closed with the sandbox."""
        if self.isolation != "bwrap":
            raise SandboxError("a warm service needs bubblewrap: without it nothing of the host is hidden")
        environment = command_environment(env, bin_dirs=str(self._bin_dir))
        command = self._bwrap_argv(argv, mounts, cwd, environment)
        started: Future[subprocess.Popen] = Future()

        def keep() -> None:
            # bwrap's --die-with-parent follows the thread that started it: this one lives
            # as long as the service does (the caller may be a short-lived pool thread).
            try:
                proc = subprocess.Popen(
                    command,
                    env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    preexec_fn=functools.partial(self._preexec, cpu=False),  # noqa: PLW1509 - rlimits between fork and exec
                )
            except OSError as exc:
                started.set_exception(SandboxError(f"could not start {command[0]!r}: {exc}"))
                return
            started.set_result(proc)
            proc.wait()

        threading.Thread(target=keep, name="stamina-gym-warm-runner", daemon=True).start()
        proc = started.result()
        assert proc.stdin is not None and proc.stdout is not None

        def write(data: bytes) -> None:
            proc.stdin.write(data)
            proc.stdin.flush()

        def kill() -> None:
            _kill_tree(proc)
            proc.wait()
            for stream in (proc.stdin, proc.stdout):
                try:
                    stream.close()
                except OSError:
                    pass

        fd = proc.stdout.fileno()
        writable = [m.source for m in mounts if m.writable]
        service = LineService(write=write, read=lambda: os.read(fd, 65536), fileno=fd, prefix=prefix, kill=kill,
                              exit_code=proc.poll, disk=lambda: watch_for(writable, self.config))  # fmt: skip
        self._services.append(service)
        return service.start(self.config.timeout_s)

    def close(self) -> None:
        """Only warm services persist between commands: they end here, and the uid goes back."""
        for service in self._services:
            service.close()
        self._services.clear()
        if self._lease is not None:
            self._lease.release()

    # -- internals ----------------------------------------------------------------------

    def _bwrap_argv(
        self, argv: Sequence[str], mounts: Sequence[Mount], cwd: str, environment: Mapping[str, str]
    ) -> list[str]:
        args = ["bwrap", *self._filesystem]
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
            args += ["--ro-bind", str(self._lease.passwd), "/etc/passwd", "--ro-bind", str(self._lease.group), "/etc/group"]
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

    def _preexec(self, cpu: bool = True) -> None:
        cfg = self.config
        limits = {
            resource.RLIMIT_AS: cfg.memory_mb * 1024 * 1024,
            resource.RLIMIT_CPU: cfg.cpu_s if cpu else resource.RLIM_INFINITY,
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
        self, command: list[str], cwd: str | None, environment: dict[str, str], timeout: float, limit: int,
        watch: DiskWatch | None = None,
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
        capture, killed = _drain(proc, start + timeout, limit, watch)
        code = proc.wait()
        duration = time.monotonic() - start
        if killed is None and self.isolation == "bwrap" and code == 1 and capture.total < 4096:
            text = bytes(capture.head).decode("utf-8", "replace")
            if text.startswith("bwrap:"):
                raise SandboxError(f"bubblewrap failed: {text.strip()}")
        return capture.result(code, killed, duration)


def _drain(proc: subprocess.Popen, deadline: float, limit: int, watch: DiskWatch | None = None) -> tuple[Capture, str | None]:
    """Read all output until EOF, the deadline, the hard output limit, or (``watch``) the
    disk budget."""
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
            if watch is not None and (written := watch.exceeded()):
                killed = f"disk {written}"
                break
            if not sel.select(min(remaining, disk.POLL_S) if watch is not None else remaining):
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


def _filesystem_args(shown: Sequence[Path], hidden: Sequence[Path], tmp_bytes: int) -> list[str]:
    """bwrap arguments that build the sandbox's filesystem on its empty root: each ``shown``
    path bound read-only at its own place (a symlink copied as a symlink), each ``hidden``
    path an empty tmpfs, a private writable /tmp of ``tmp_bytes`` at most (a tmpfs is
    memory: unbounded, the agent could fill half the machine's RAM), /dev and /proc.

    Shallow paths go first, and at one depth a hidden path before a shown one: so the
    interpreter shown inside a hidden checkout stays visible, and the package hidden inside
    a shown site-packages stays hidden. The folders leading to a mount point are made 0755
    (bwrap would make them 0700, which the sandbox user could not enter)."""
    tmp = Path("/tmp")
    steps = [(path, "hide") for path in hidden if path != tmp] + [(tmp, "tmp")] + [(path, "show") for path in shown]
    steps.sort(key=lambda step: (len(step[0].parts), step[1] == "show"))
    args, made = ["--dev", "/dev", "--proc", "/proc"], []
    for path, kind in steps:
        inside = _inside(path, made)
        if kind == "show" and inside == "show":
            continue  # already visible through a bound folder, with nothing hidden between
        if kind == "hide" and (inside in ("hide", "tmp") or (inside == "show" and not path.is_dir())):
            continue  # already in an empty tmpfs, or not there to hide in a read-only folder
        for folder in reversed(path.parents[:-1]):
            if _inside(folder, made) not in ("show", "here"):
                args += ["--perms", "0755", "--dir", str(folder)]
                made.append((folder, "dir"))
        if kind == "tmp":
            sized = ["--size", str(tmp_bytes)] if _tmpfs_can_be_sized() else []
            args += ["--perms", "1777", *sized, "--tmpfs", str(path)]
        elif kind == "hide":
            args += ["--tmpfs", str(path)]
        elif path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        else:
            args += ["--ro-bind", str(path), str(path)]
        made.append((path, kind))
    return args


def _inside(path: Path, made: list[tuple[Path, str]]) -> str | None:
    """What ``path`` lies in, of what was made so far: ``here`` when something was made at
    exactly this path, else the kind of the deepest mount or folder above it."""
    covering = [(where, kind) for where, kind in made if _is_within(path, where)]
    if not covering:
        return None
    where, kind = max(covering, key=lambda item: len(item[0].parts))
    return "here" if where == path else kind


def _is_within(path: Path, parent: Path) -> bool:
    return path == parent or parent in path.parents


def _dedupe(paths: list[Path]) -> list[Path]:
    seen: list[Path] = []
    for path in paths:
        if path not in seen:
            seen.append(path)
    return seen

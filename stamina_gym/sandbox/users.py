"""A uid of its own for every sandbox, so that no sandbox's processes count against another's.

RLIMIT_NPROC (``SandboxConfig.max_processes``) counts the processes of a *uid*, across the
whole machine, whatever namespace or container they run in. Were every sandbox to run its
commands as one uid, a fork bomb in one env would leave the others of the same machine
(a vector env, a fleet of rollout workers) unable to start a process until its command is
killed: their tests would fail for what another episode's agent did. So each sandbox leases
one uid of the range ``SandboxConfig.user .. user + users - 1`` for its life: an exclusive
``flock`` on one file per uid in a folder every process of the machine sees
(``lease_folder``). The kernel drops the lock when the holder closes it or dies, so a
crashed process frees its uids; whatever processes it left running as that uid are killed
by the next lease of it, which is the only one that may use the uid.
"""

from __future__ import annotations

import fcntl
import os
import signal
import tempfile
import weakref
from pathlib import Path

from stamina_gym.errors import SandboxError


def lease_folder() -> Path:
    """Where the lock files live: ``/run/stamina-gym/sandbox-users`` (root's, machine-wide),
    else a folder in the temporary directory."""
    for folder in (Path("/run/stamina-gym/sandbox-users"), Path(tempfile.gettempdir(), "stamina-gym-sandbox-users")):
        try:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            return folder
        except OSError:
            continue
    raise SandboxError("no folder for the sandbox uid leases: neither /run nor the temporary directory is writable")


class UserLease:
    """One uid of ``first .. first + count - 1`` held by this process until ``release``
    (or until the object is collected, or the process ends)."""

    def __init__(self, first: int, count: int, folder: Path | None = None) -> None:
        folder = folder or lease_folder()
        for uid in range(first, first + count):
            fd = os.open(folder / f"{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            self.uid = uid
            self._release = weakref.finalize(self, os.close, fd)
            kill_processes_of(uid)  # left by a holder that died: the uid is ours alone now
            self.passwd, self.group = _accounts(folder, uid)
            return
        raise SandboxError(
            f"every sandbox uid of {first}..{first + count - 1} is leased by a running sandbox: "
            "close some envs, or give sandbox.users a larger range"
        )

    @property
    def held(self) -> bool:
        return self._release.alive

    def release(self) -> None:
        """Give the uid back (its processes are the sandbox's to have ended)."""
        self._release()


#: The user name and group the leased uid has inside the sandbox.
NAME = "sandbox"


def _accounts(folder: Path, uid: int) -> tuple[Path, Path]:
    """``/etc/passwd`` and ``/etc/group`` for a sandbox running as ``uid``: the host's, and
    an entry naming the uid, so ``id -un``, ``getpass`` and git find a user (the local
    sandbox binds them over the host's). Written while the lease is held, renamed into
    place."""
    out = []
    for name, line in (("passwd", f"{NAME}:x:{uid}:{uid}:stamina-gym sandbox:/tmp:/usr/sbin/nologin\n"),
                       ("group", f"{NAME}:x:{uid}:\n")):  # fmt: skip
        try:
            host = Path("/etc", name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            host = ""
        kept = [entry for entry in host.splitlines(keepends=True) if entry.split(":")[2:3] != [str(uid)]]
        text = "".join(kept) + ("" if not kept or kept[-1].endswith("\n") else "\n") + line
        path, tmp = folder / f"{uid}.{name}", folder / f".{uid}.{name}.{os.getpid()}"
        tmp.write_text(text, encoding="utf-8")
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
        out.append(path)
    return out[0], out[1]


def kill_processes_of(uid: int) -> int:
    """SIGKILL every process whose real uid is ``uid`` (as root; a no-op otherwise);
    returns how many were signalled."""
    if os.geteuid() != 0:
        return 0
    killed = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status", encoding="ascii", errors="replace") as status:
                real = next((line.split()[1] for line in status if line.startswith("Uid:")), None)
            if real == str(uid):
                os.kill(int(entry.name), signal.SIGKILL)
                killed += 1
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile, or not ours to read
    return killed

"""A bound on what the agent's code may write to the host's disk while it runs.

The workspace (and, on the local backend, each grading copy) is a host folder the sandbox
writes through: RLIMIT_FSIZE bounds one file, nothing bounds how many. Without a bound a
loop of large files (or of millions of empty ones) fills the host's disk or its inodes,
and every env, log and trainer on the machine with it. While a command or a call of a
warm service runs, the backend polls the free space and free inodes of the filesystems
holding its writable host folders (``statvfs``, microseconds) and kills it once they have
lost more than ``SandboxConfig.disk_mb`` or ``disk_files`` since it started. Since another
env may write to the same disk, that is only a suspicion: the run's own folders are then
read, and the run is killed only when what changed there since it started is past the
budget; the result carries ``limit="disk"``, a resource failure of the agent's.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Iterable, Sequence

from stamina_gym import safetree

#: Seconds between two looks at the free space while a command runs.
POLL_S = 0.05
#: Seconds between two readings of a run's own folders, once its filesystem lost more
#: than the budget.
CONFIRM_S = 1.0


class DiskWatch:
    """The free space and inodes of the filesystems holding ``folders`` now; ``exceeded``
    says what this run wrote past the budget since."""

    def __init__(self, folders: Iterable[Path | str], max_bytes: int, max_files: int) -> None:
        self.max_bytes, self.max_files = max_bytes, max_files
        self.folders = [str(folder) for folder in folders]
        self.started = time.time()
        self._checked = 0.0
        self._start: dict[int, tuple[str, int, int]] = {}
        for folder in self.folders:
            try:
                device = os.stat(folder).st_dev
                if device not in self._start:
                    self._start[device] = (folder, *_free(folder))
            except OSError:
                continue

    def exceeded(self) -> str | None:
        """What this run wrote past the budget (``"2100 MB"``, ``"120000 files"``), or None.
        A filesystem that lost more than the budget is a suspicion only (another env may
        write to the same disk): the run's own folders are then read for what changed
        since it started, at most once a second."""
        lost = self._lost()
        if lost is None or time.monotonic() - self._checked < CONFIRM_S:
            return None
        self._checked = time.monotonic()
        written, files = self._own_writes()
        if written > self.max_bytes:
            return f"{written >> 20} MB"
        if files > self.max_files:
            return f"{files} files"
        return None

    def _lost(self) -> tuple[int, int] | None:
        for folder, space, inodes in self._start.values():
            try:
                now_space, now_inodes = _free(folder)
            except OSError:
                continue
            if space - now_space > self.max_bytes or inodes - now_inodes > self.max_files:
                return space - now_space, inodes - now_inodes
        return None

    def _own_writes(self) -> tuple[int, int]:
        """Bytes and entries under the run's folders changed since it started (a change
        time is the kernel's: no command can set it back)."""
        written = files = 0
        for folder in self.folders:
            for entry in safetree.walk(folder, special=True):
                info = entry.stat
                if info.st_ctime >= self.started - 1:
                    written += info.st_blocks * 512
                    files += 1
        return written, files


def _free(folder: str) -> tuple[int, int]:
    info = os.statvfs(folder)
    return info.f_bavail * info.f_frsize, info.f_favail


def watch_for(folders: Sequence[Path | str], config) -> DiskWatch | None:
    """The watch of a run writing to ``folders`` (host folders) under ``config`` (a
    ``SandboxConfig``), or None when it writes to none."""
    return DiskWatch(folders, config.disk_mb << 20, config.disk_files) if folders else None


def note(what: str) -> str:
    return f"\n[stamina-gym: command killed after writing {what} to disk, past the sandbox's disk budget]"

"""A bound on what the agent's code may write to the host's disk while it runs.

The workspace (and, on the local backend, each grading copy) is a host folder the sandbox
writes through: RLIMIT_FSIZE bounds one file, nothing bounds how many. Without a bound a
loop of large files (or of millions of empty ones) fills the host's disk or its inodes,
and every env, log and trainer on the machine with it. While a command or a call of a
warm service runs, the backend polls the free space and free inodes of the filesystems
holding its writable host folders (``statvfs``, microseconds) and kills it once they have
lost more than ``SandboxConfig.disk_mb`` or ``disk_files`` since it started; the result
carries ``limit="disk"``, a resource failure of the agent's. The figures are the
filesystem's, so another process writing to the same disk at that moment counts too: the
budget is set far above what a test run writes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Sequence

#: Seconds between two looks at the free space while a command runs.
POLL_S = 0.05


class DiskWatch:
    """The free space and inodes of the filesystems holding ``folders`` now; ``exceeded``
    says what was lost past the budget since."""

    def __init__(self, folders: Iterable[Path | str], max_bytes: int, max_files: int) -> None:
        self.max_bytes, self.max_files = max_bytes, max_files
        self._start: dict[int, tuple[str, int, int]] = {}
        for folder in folders:
            try:
                device = os.stat(folder).st_dev
                if device not in self._start:
                    self._start[device] = (str(folder), *_free(str(folder)))
            except OSError:
                continue

    def exceeded(self) -> str | None:
        """What was written past the budget (``"2100 MB"``, ``"120000 files"``), or None."""
        for folder, space, inodes in self._start.values():
            try:
                now_space, now_inodes = _free(folder)
            except OSError:
                continue
            if space - now_space > self.max_bytes:
                return f"{(space - now_space) >> 20} MB"
            if inodes - now_inodes > self.max_files:
                return f"{inodes - now_inodes} files"
        return None


def _free(folder: str) -> tuple[int, int]:
    info = os.statvfs(folder)
    return info.f_bavail * info.f_frsize, info.f_favail


def watch_for(folders: Sequence[Path | str], config) -> DiskWatch | None:
    """The watch of a run writing to ``folders`` (host folders) under ``config`` (a
    ``SandboxConfig``), or None when it writes to none."""
    return DiskWatch(folders, config.disk_mb << 20, config.disk_files) if folders else None


def note(what: str) -> str:
    return f"\n[stamina-gym: command killed after writing {what} to disk, past the sandbox's disk budget]"

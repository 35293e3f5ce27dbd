"""The reference solution's code quality, state by state, for the quality term of the
reward: an agent is paid for the change of its quality *relative to the reference at the
same turn*, so the oracle's quality term is 0 on every turn and growing code costs
nothing by itself (``stamina_gym.quality.review``).

A ``ReferenceTrack`` replays the task's reference patches, rendered with the episode's
params, in a scratch work tree, and measures each state with the meter that measures the
agent (so the per-file analysis cache serves both: the oracle's states cost nothing to
measure twice). Snapshots are kept per process, keyed by task version, params, state and
meter settings: envs of one process, and every later episode with the same params, share
them. The reference's per-file results are also kept in a folder (``reference_store``;
``quality.reference_cache_dir``), so that each of its file versions is analysed once per
machine: a new process, a new episode or another seed's params only read them back.
``stamina-gym validate --quality`` fills the folder for the seeds it validates
(``measure_reference``).
"""

from __future__ import annotations

import os
from collections import OrderedDict
from dataclasses import replace
from pathlib import Path
from typing import Callable, Mapping

from stamina_gym.config import QualityConfig
from stamina_gym.errors import PatchError, TaskError
from stamina_gym.quality.measure import AnalysisCache, QualityMeter, Snapshot, read_tree
from stamina_gym.task import Task
from stamina_gym.workspace import Workspace

_SNAPSHOTS: OrderedDict[tuple, Snapshot] = OrderedDict()
_MAX_SNAPSHOTS = 4096


def reference_store(config: QualityConfig) -> AnalysisCache | None:
    """The folder cache of the reference's per-file results ``config`` names (its
    ``reference_cache_dir``, else ``STAMINA_GYM_QUALITY_CACHE``, else
    ``~/.cache/stamina-gym/reference-quality``); None when set to ``""`` or when the folder
    cannot be made (the reference is then measured in each process)."""
    folder = config.reference_cache_dir
    if folder is None:
        folder = os.environ.get("STAMINA_GYM_QUALITY_CACHE") or "~/.cache/stamina-gym/reference-quality"
    if not folder:
        return None
    try:
        return AnalysisCache(Path(folder).expanduser(), max_entries=0)
    except OSError:
        return None


def measure_reference(task: Task, params: Mapping[str, str | int], meter: QualityMeter, scratch: Path,
                      progress: Callable[[int, Snapshot], None] | None = None) -> list[Snapshot]:  # fmt: skip
    """The reference's quality after every turn (state 0, the seed, first), pylint included,
    each state measured by ``meter`` (which keeps what it analyses in its ``persist``
    folder); ``progress(state, snapshot)`` after each."""
    track = ReferenceTrack(task, params, meter, scratch)
    out = []
    for state in range(len(task.turns) + 1):
        out.append(track.snapshot(state))
        if progress is not None:
            progress(state, out[-1])
    return out


def forget_snapshots() -> None:
    """Drop the snapshots this process keeps (a benchmark measuring cold runs)."""
    _SNAPSHOTS.clear()


class ReferenceTrack:
    """The reference's quality after each turn of one episode's params."""

    def __init__(self, task: Task, params: Mapping[str, str | int], meter: QualityMeter, scratch: Path) -> None:
        self.task, self.params, self.meter = task, dict(params), meter
        self.scratch = scratch
        self._workspace: Workspace | None = None
        self._state = 0  # turns applied to the work tree

    def snapshot(self, state: int, *, pylint: bool = True, carried: Snapshot | None = None,
                 files: tuple[Mapping[str, bytes], list[str]] | None = None) -> Snapshot:  # fmt: skip
        """The reference after ``state`` turns (0: the seed). Without ``pylint`` the lint
        note is carried from ``carried``, as the agent's is from its previous state.
        ``files``: ``read_tree``'s reading of a tree that holds that state already (the
        caller laid the same patches), measured instead of laying them here."""
        key = (
            str(self.task.root), self.task.meta.version, tuple(sorted(self.params.items())), state, pylint,
            self.meter.exclude, self.meter.max_bytes, self.meter.max_files,
            self.meter.persist and str(self.meter.persist.directory),  # a folder to fill gets every state
        )  # fmt: skip
        found = _SNAPSHOTS.get(key)
        if found is None:
            if files is None:
                files = read_tree(self._at(state), self.meter.max_bytes, self.meter.max_files)
            found = self.meter.measure_files(*files, pylint=pylint)
            _SNAPSHOTS[key] = found
            while len(_SNAPSHOTS) > _MAX_SNAPSHOTS:
                _SNAPSHOTS.popitem(last=False)
        _SNAPSHOTS.move_to_end(key)
        if not pylint and carried is not None:
            return replace(found, lint_carried=carried.lint_note())
        return found

    def _at(self, state: int) -> Path:
        """The work tree holding the reference after ``state`` turns."""
        if self._workspace is None:
            self._workspace = Workspace(self.scratch / "tree", self.task.seed_dir)
            self._workspace.reset()
            self._state = 0
        elif state < self._state:
            self._workspace.reset()
            self._state = 0
        while self._state < state:
            turn = self.task.turns[self._state]
            patch = self.task.reference_patch(turn, self.params)
            try:
                if patch.strip():
                    self._workspace.apply_patch(patch)
            except PatchError as exc:  # the task's fault, not the agent's: never shown to it
                raise TaskError(f"task {self.task.id}: the reference patch of turn {turn.index} does not apply after "
                                f"the earlier ones ({exc}); `stamina-gym validate {self.task.id}` shows it") from None
            self._state += 1
        return self._workspace.path

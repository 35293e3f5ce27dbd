"""What a submit is judged on besides the hidden tests: code quality, the project's
consistency rules, memory probes, and (strict mode) edits outside the turn's paths.
``Reviewer`` keeps the state between submits.

The quality term (``stamina_gym.reward.quality``) pays the change over the turn of the agent's quality *relative to the
reference solution at the same turn* (``quality.reference``): ``relative = score -
reference score``, and the term is ``reward.quality x (relative now - relative at the
last submit)``. The oracle's term is therefore 0 on every turn, and code that grows as the
reference's does costs nothing. A loss is paid at every submit; a gain only on a turn
whose tests all pass, and a gain not paid is not carried over: junk added on a failed turn
and deleted on a passed one nets at most 0, and a skipped turn, on which the reference's
score may fall while the agent's stays, banks nothing. The absolute score and its change
stay in the grade (``score``, ``score_delta``) for curves and the G score."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Mapping

from stamina_gym.config import QualityConfig
from stamina_gym.quality.analyzers import DECODE_ERRORS, decode_python
from stamina_gym.quality.measure import (PYTHON_SUFFIXES, AnalysisCache, QualityMeter, Snapshot, quality_report, read_tree,
                                         score)
from stamina_gym.quality.reference import ReferenceTrack, reference_store
from stamina_gym.rules import check_rules, matches
from stamina_gym.task import Task, Turn

#: Never out of scope: writing tests and documentation is always welcome.
ALWAYS_IN_SCOPE = ("tests/**", "**/tests/**", "**/test_*.py", "**/*.md")


@dataclass(frozen=True)
class Review:
    quality: dict | None
    rules: dict
    memory: dict | None
    """Filled by :meth:`with_memory` once the hidden tests have run (the review itself runs
    while they do)."""
    scope: dict
    sources: Mapping[str, str] = field(default_factory=dict, repr=False)
    """The text of the tree's files as read for the review (not part of the grade): the
    plan-adherence detectors read the same snapshot instead of the disk again."""

    def with_memory(self, turn: Turn, statuses: Mapping[str, str]) -> "Review":
        """This review with the memory probes scored from the turn's test outcomes."""
        return replace(self, memory=memory_result(turn, statuses))

    def to_info(self) -> dict:
        return {"quality": self.quality, "rules": self.rules, "memory": self.memory, "scope": self.scope}

    def summary(self) -> str:
        """What the agent may read: the quality score and counts, no rule or test names."""
        parts = []
        if self.quality:
            parts.append(f"code quality {self.quality['score']:.2f} ({self.quality['score_delta']:+.3f})")
        if self.rules["broken"]:
            parts.append(f"{len(self.rules['broken'])} project convention(s) broken")
        if self.scope["mode"] == "strict" and self.scope["outside"]:
            parts.append(f"{len(self.scope['outside'])} file(s) changed outside the request's scope")
        return "; ".join(parts)


def as_text(path: str, data: bytes) -> str | None:
    """A file's text as the rules and detectors read it: a ``.py`` file as the interpreter
    decodes it (coding cookie, BOM), and when even the interpreter could not, as much of it
    as UTF-8 gives (the meter counts it as the worst file); any other file as UTF-8, or
    None."""
    if path.endswith(".py"):
        try:
            return decode_python(data)[0]
        except DECODE_ERRORS:
            return data.decode("utf-8", "replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def memory_result(turn: Turn, statuses: Mapping[str, str]) -> dict:
    """Per probe: the fact, its turn, tests passed of total; accuracy over all probe tests."""
    probes, passed, total = [], 0, 0
    for probe in turn.spec.memory:
        ids = turn.memory_ids(probe)
        ok = sum(statuses.get(tid) == "passed" for tid in ids)
        probes.append({"fact": probe.fact, "from_turn": probe.from_turn, "passed": ok, "total": len(ids)})
        passed, total = passed + ok, total + len(ids)
    return {"probes": probes, "accuracy": round(passed / total, 4) if total else None}


def scope_result(turn: Turn, mode: str, changed: Mapping[str, tuple[int, int]]) -> dict:
    allowed = turn.spec.paths
    outside = [] if not allowed else [p for p in sorted(changed) if not matches(p, allowed + ALWAYS_IN_SCOPE)]
    return {"mode": mode, "paths": list(allowed), "outside": outside}


class Reviewer:
    """Judges each submit of an episode against the state before it.

    The reference's state after a turn is measured on a thread of its own while the agent
    works on the turn (:meth:`prefetch`), with a meter of its own (its own staging folder;
    the analysis cache and worker are shared), so a submit rarely waits for it."""

    def __init__(self, task: Task, config: QualityConfig, mode: str, scratch: Path, cache: AnalysisCache | None = None):
        self.task, self.config, self.mode = task, config, mode
        if cache is None and config.cache_dir:
            cache = AnalysisCache(Path(config.cache_dir).expanduser())
        self.meter, reference_meter = (
            QualityMeter(folder, cache, max_file_kb=config.max_file_kb, exclude=(*config.exclude, *task.meta.quality_exclude),
                         budget_s=config.analysis_budget_s, review_budget_s=review_budget, persist=persist)
            for folder, persist, review_budget in ((scratch, None, config.review_budget_s),
                                                   (scratch / "reference", reference_store(config), None))
        )  # fmt: skip
        self._before: Snapshot | None = None
        self._reference_before: Snapshot | None = None
        self._reference = ReferenceTrack(task, task.choose_params(lambda n: 0), reference_meter, scratch / "reference")
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="reference-quality")
        self._pending: tuple[int, bool, Future] | None = None
        self._resumed: Future | None = None
        """A restored episode's first measures (``resume_from``), until a submit needs them."""
        self._submits = 0

    def reset(self, params: Mapping[str, str | int]) -> None:
        """A new episode with these params (the reference is rendered with them)."""
        self._before = self._reference_before = self._pending = self._resumed = None
        self._submits = 0
        if self._reference.params != dict(params):
            track = self._reference
            self._reference = ReferenceTrack(self.task, params, track.meter, track.scratch)

    def resume_from(self, tree: Path, submits: int, *, reference: bool = False) -> None:
        """Continue an episode restored after ``submits`` turns: ``tree`` is the state the
        next turn's quality is measured against; ``reference``: it is the reference's own
        state after those turns (a start at a later turn), measured there rather than laid
        again in the reference's work tree. The tree is read now; it is measured on the
        reference's thread while the agent works, and the first submit waits for it."""
        self._pending = None
        self._submits = submits
        if self.config.enabled:
            files, skipped = read_tree(tree, self.meter.max_bytes, self.meter.max_files, suffix=PYTHON_SUFFIXES)
            # The track is bound now: a reset before the job runs gives a new one, of other params.
            self._resumed = self._pool.submit(self._measure_resumed, self._reference, submits, files, skipped, reference)

    def _measure_resumed(self, track: ReferenceTrack, submits: int, files: Mapping[str, bytes], skipped: list[str],
                         reference: bool) -> tuple[Snapshot, Snapshot]:  # fmt: skip
        """The restored tree's snapshot and the reference's at the same state. The
        reference first: its kept analysis serves a tree that is the reference's."""
        ours = (files, skipped) if reference else None
        reference_before = track.snapshot(submits, files=ours)
        return self.meter.measure_files(files, skipped), reference_before

    def _settle_resumed(self) -> None:
        if self._resumed is not None:
            self._before, self._reference_before = self._resumed.result()
            self._resumed = None

    def prefetch(self, last: bool) -> None:
        """Start measuring the reference after the coming turn (``last``: the episode's last)."""
        if self.config.enabled:
            state = self._submits + 1
            pylint = last or state % self.config.pylint_every == 0
            before = self._resumed or self._reference_before  # the pool runs the resumed measure first
            job = self._pool.submit(_reference_pair, self._reference, state, pylint, before)
            self._pending = (state, pylint, job)

    def close(self) -> None:
        self._pool.shutdown(wait=True)

    def review(self, turn: Turn, tree: Path, changed: Mapping[str, tuple[int, int]], last: bool) -> Review:
        """``changed``: lines added/deleted per file this turn. Reads only the tree, so it
        can run while the hidden tests do; the memory probes come after
        (:meth:`Review.with_memory`)."""
        self._submits += 1
        files, skipped = read_tree(tree, self.config.max_file_kb * 1024, self.meter.max_files)
        decoded = {rel: text for rel, data in files.items() if (text := as_text(rel, data)) is not None}
        in_force, violations = check_rules(self.task.meta.rules, decoded, turn.index)
        rules = {
            "in_force": in_force,
            "broken": sorted({v.rule for v in violations}),
            "violations": [v.to_info() for v in violations[:50]],
        }
        quality = None
        if self.config.enabled:
            quality = self._quality(files, skipped, changed, last)
        scope = scope_result(turn, self.mode, changed)
        return Review(quality, rules, None, scope, sources=decoded)

    def _quality(self, files: Mapping[str, bytes], skipped: list[str], changed: Mapping[str, tuple[int, int]], last: bool) -> dict:
        weights = self.config.weights.model_dump()
        self._settle_resumed()
        if self._before is None:
            self._before = self.meter.measure(self.task.seed_dir)
        run_pylint = last or self._submits % self.config.pylint_every == 0
        after = self.meter.measure_files(files, skipped, pylint=run_pylint)
        if not run_pylint:
            after.lint_carried = self._before.lint_note()
        if self._pending is not None and self._pending[:2] == (self._submits, run_pylint):
            job = self._pending[2]
        else:
            job = self._pool.submit(_reference_pair, self._reference, self._submits, run_pylint, self._reference_before)
        self._pending = None
        self._reference_before, reference = job.result()
        report = quality_report(self._before, after, weights, changed)
        reference_score = score(reference.components(), weights)
        relative_before = score(self._before.components(), weights) - score(self._reference_before.components(), weights)
        relative = score(after.components(), weights) - reference_score
        report["reference_score"] = round(reference_score, 4)
        report["relative"] = round(relative, 4)
        report["relative_delta"] = round(relative - relative_before, 4)
        self._before, self._reference_before = after, reference
        return report


def _reference_pair(track: ReferenceTrack, state: int, pylint: bool,
                    before: Snapshot | Future | None) -> tuple[Snapshot, Snapshot]:  # fmt: skip
    """The reference before the turn (the seed's when ``before`` is None; a restored
    episode's resumed measure when it is that job) and after it."""
    if isinstance(before, Future):
        before = before.result()[1]
    before = before or track.snapshot(0)
    return before, track.snapshot(state, pylint=pylint, carried=before)

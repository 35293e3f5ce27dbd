"""Quality of a whole work tree: per-file analysis cached by content, aggregated to metrics
and to four component scores in [0, 1] whose weighted sum is the quality score.

Component scores (``QualityConfig.weights`` weighs them):

* ``lint``: pylint's own formula over all files, ``10 - 10 * (5 * errors + warnings +
  refactors + conventions) / statements``, clamped to [0, 10], divided by 10.
* ``complexity``: 1 minus the mean, over functions, of ``min(1, max(0, cc - 5) / 10)``:
  a function of cyclomatic complexity up to 5 (radon rank A) costs nothing, one of 15 or
  more costs fully.
* ``maintainability``: radon's maintainability index, mean over files weighted by SLOC,
  divided by 100.
* ``security``: ``1 / (1 + sum of severity x confidence weights)`` over bandit findings,
  severity high 1, medium 0.5, low 0.1, confidence high 1, medium 0.5, low 0.2: a single
  sure high-severity hole halves it, whatever the size of the code, while a
  low-confidence guess barely moves it.

Test files (``QualityConfig.exclude``) are left out: the quality of the product is measured.

The reward pays ``reward.quality`` times the change of the weighted score over the turn.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from stamina_gym.quality import analyzers
from stamina_gym.quality.analyzers import PYLINT_CATEGORIES, SEVERITIES, FileQuality
from stamina_gym.quality.rules import matches

COMPONENTS = ("lint", "complexity", "maintainability", "security")
_SEVERITY_WEIGHT = {"high": 1.0, "medium": 0.5, "low": 0.1}
_CONFIDENCE_WEIGHT = {"high": 1.0, "medium": 0.5, "low": 0.2}
_SKIP_DIRS = {".git", "__pycache__", ".pytest_cache", ".venv", "venv", "node_modules"}


def cc_rank(cc: int) -> str:
    """radon's letter for a cyclomatic complexity."""
    for letter, top in (("A", 5), ("B", 10), ("C", 20), ("D", 30), ("E", 40)):
        if cc <= top:
            return letter
    return "F"


class AnalysisCache:
    """Per-file results keyed by (analyser versions, file content): in memory for the
    process, and in ``directory`` (when given) for every process on the machine.

    Safe to share: a key names exactly what was analysed, entries are written to a
    temporary name and renamed into place, so concurrent writers never leave half a file.
    """

    def __init__(self, directory: Path | None = None, max_entries: int = 20_000) -> None:
        self.directory = directory
        self.max_entries = max_entries
        """Entries kept in memory (least recently used go first): a long training run
        sees many file versions; the disk cache, when given, keeps them all."""
        self._memory: OrderedDict[str, FileQuality] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0
        self.salt = analyzers.analyser_versions()
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)

    def key(self, data: bytes) -> str:
        return hashlib.sha256(self.salt.encode() + b"\0" + data).hexdigest()

    def get(self, key: str) -> FileQuality | None:
        with self._lock:
            found = self._memory.get(key)
            if found is not None:
                self._memory.move_to_end(key)
        if found is None and self.directory is not None:
            try:
                found = FileQuality.from_json(json.loads((self.directory / f"{key}.json").read_text()))
            except (OSError, ValueError, TypeError):
                found = None
        return found

    def put(self, key: str, value: FileQuality) -> None:
        with self._lock:
            self._memory[key] = value
            self._memory.move_to_end(key)
            while len(self._memory) > self.max_entries:
                self._memory.popitem(last=False)
        if self.directory is not None:
            tmp = self.directory / f".{key}.{os.getpid()}.{threading.get_ident()}.tmp"
            tmp.write_text(json.dumps(value.to_json()))
            os.replace(tmp, self.directory / f"{key}.json")


#: The process-wide cache used when an env is given none: episodes share it.
SHARED_CACHE = AnalysisCache()


@dataclass
class Snapshot:
    """The quality of one state of the work tree."""

    files: dict[str, FileQuality]
    skipped: list[str] = field(default_factory=list)
    pylint_measured: bool = True
    lint_carried: float | None = None
    """pylint's note (0-10) carried from the last state it ran on, when it did not run here."""

    def metrics(self) -> dict:
        """Absolute values over the whole tree (all numbers, for curves and tables)."""
        cc = [c for fq in self.files.values() for (_, _, c) in fq.functions]
        sloc = sum(fq.sloc for fq in self.files.values())
        counts = Counter(cat for fq in self.files.values() for (_, _, cat) in fq.pylint)
        bandit = Counter(sev for fq in self.files.values() for (_, _, sev, _, _) in fq.bandit)
        out = {
            "files": len(self.files),
            "sloc": sloc,
            "functions": len(cc),
            "cc_mean": round(sum(cc) / len(cc), 3) if cc else 0.0,
            "cc_max": max(cc, default=0),
            "cc_ranks": {letter: sum(cc_rank(c) == letter for c in cc) for letter in "ABCDEF"},
            "mi_mean": round(self._mi_mean(), 3),
            "mi_min": round(min((fq.mi for fq in self.files.values() if fq.sloc), default=100.0), 3),
            "statements": sum(fq.statements for fq in self.files.values()),
            "pylint_score": round(self._pylint_note(), 3),
            "pylint_messages": {cat: counts.get(cat, 0) for cat in PYLINT_CATEGORIES},
            "bandit": {sev: bandit.get(sev, 0) for sev in SEVERITIES},
            "unreadable": sum(bool(fq.error) for fq in self.files.values()),
        }
        return out

    def components(self) -> dict[str, float]:
        cc = [c for fq in self.files.values() for (_, _, c) in fq.functions]
        risk = sum(
            _SEVERITY_WEIGHT.get(sev, 1.0) * _CONFIDENCE_WEIGHT.get(conf, 1.0)
            for fq in self.files.values()
            for (_, _, sev, conf, _) in fq.bandit
        )
        return {
            "lint": round(self._pylint_note() / 10, 4),
            "complexity": round(1 - (sum(min(1.0, max(0, c - 5) / 10) for c in cc) / len(cc) if cc else 0.0), 4),
            "maintainability": round(self._mi_mean() / 100, 4),
            "security": round(1 / (1 + risk), 4),
        }

    def worst(self, limit: int = 5) -> dict:
        """The worst offenders: complex functions, unmaintainable files, noisy files, findings."""
        functions = sorted(
            ((c, f"{path}:{line} {name}") for path, fq in self.files.items() for (name, line, c) in fq.functions),
            reverse=True,
        )
        return {
            "complex_functions": [{"where": where, "cc": c} for c, where in functions[:limit]],
            "low_mi_files": [
                {"file": p, "mi": fq.mi} for p, fq in sorted(self.files.items(), key=lambda kv: kv[1].mi)[:limit] if fq.sloc
            ],
            "lint_files": [
                {"file": p, "messages": len(fq.pylint)}
                for p, fq in sorted(self.files.items(), key=lambda kv: -len(kv[1].pylint))[:limit]
                if fq.pylint
            ],
            "security_findings": [
                {"file": p, "line": line, "test": test, "severity": sev, "confidence": conf, "text": text}
                for p, fq in sorted(self.files.items())
                for (line, test, sev, conf, text) in fq.bandit
            ][: 2 * limit],
            "unreadable": {p: fq.error for p, fq in self.files.items() if fq.error},
        }

    def _mi_mean(self) -> float:
        weighted = [(fq.mi, fq.sloc) for fq in self.files.values() if fq.sloc]
        total = sum(w for _, w in weighted)
        return sum(mi * w for mi, w in weighted) / total if total else 100.0

    def _pylint_note(self) -> float:
        if self.lint_carried is not None:
            return self.lint_carried
        counts = Counter(cat for fq in self.files.values() for (_, _, cat) in fq.pylint)
        statements = sum(fq.statements for fq in self.files.values())
        if not statements:
            return 10.0
        bad = 5 * (counts["error"] + counts["fatal"]) + counts["warning"] + counts["refactor"] + counts["convention"]
        return max(0.0, min(10.0, 10 - 10 * bad / statements))


def read_tree(tree: Path, max_bytes: int, max_files: int, suffix: str = "") -> tuple[dict[str, bytes], list[str]]:
    """Relative path -> content of the tree's regular files (ending in ``suffix``), and
    what was skipped with the reason: symlinks (never followed: they could point at
    anything on the host), files over ``max_bytes``, files past ``max_files``."""
    found: dict[str, bytes] = {}
    skipped = []
    for root, dirs, names in os.walk(tree):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not Path(root, d).is_symlink())
        for name in sorted(names):
            if not name.endswith(suffix):
                continue
            path = Path(root, name)
            rel = path.relative_to(tree).as_posix()
            if path.is_symlink() or not path.is_file():
                skipped.append(f"{rel}: not a regular file")
            elif path.stat().st_size > max_bytes:
                skipped.append(f"{rel}: larger than {max_bytes // 1024} KiB")
            elif len(found) >= max_files:
                skipped.append(f"{rel}: more than {max_files} files")
            else:
                found[rel] = path.read_bytes()
    return found, skipped


def score(components: Mapping[str, float], weights: Mapping[str, float]) -> float:
    """The weighted mean of the component scores (weights need not sum to 1)."""
    total = sum(weights.values())
    return sum(weights[k] * components[k] for k in COMPONENTS) / total if total else 0.0


class QualityMeter:
    """Measures a work tree: stages its Python files, analyses those not in the cache."""

    def __init__(
        self,
        scratch: Path,
        cache: AnalysisCache | None = None,
        max_file_kb: int = 256,
        max_files: int = 2000,
        exclude: tuple[str, ...] = (),
    ):
        self.stage = scratch / "quality-stage"
        """Holds a copy of the tree's Python files only, kept between measurements."""
        self._staged: dict[str, bytes] = {}
        self.exclude = exclude
        self.cache = cache or SHARED_CACHE
        self.max_bytes = max_file_kb * 1024
        self.max_files = max_files
        self.analysed = Counter()
        """Files handed to each analyser by this meter (the cache's effect, counted)."""

    def measure(self, tree: Path, *, pylint: bool = True) -> Snapshot:
        """The quality of the ``.py`` files under ``tree``."""
        sources, skipped = read_tree(tree, self.max_bytes, self.max_files, suffix=".py")
        return self.measure_files(sources, skipped, pylint=pylint)

    def measure_files(self, files: Mapping[str, bytes], skipped: list[str], *, pylint: bool = True) -> Snapshot:
        """The quality of ``files`` (repository path -> content, as ``read_tree`` gives them;
        only ``.py`` files outside ``exclude`` count)."""
        sources = {rel: data for rel, data in files.items() if rel.endswith(".py") and not matches(rel, self.exclude)}
        skipped = [reason for reason in skipped if reason.split(":")[0].endswith(".py")]
        results: dict[str, FileQuality] = {}
        keys = {}
        need_basic, need_pylint = [], []
        for rel, data in sources.items():
            data = analyzers.neutralise_suppressions(data)
            sources[rel] = data
            keys[rel] = key = self.cache.key(data)
            cached = self.cache.get(key)
            if cached is None:
                self.cache.misses += 1
                need_basic.append(rel)
                if pylint:
                    need_pylint.append(rel)
            else:
                self.cache.hits += 1
                results[rel] = cached
                if pylint and not cached.pylint_measured and not cached.error:
                    need_pylint.append(rel)
        if need_basic or need_pylint:
            self._analyse(sources, results, need_basic, need_pylint)
            for rel in {*need_basic, *need_pylint}:
                self.cache.put(keys[rel], results[rel])
        return Snapshot(dict(sorted(results.items())), skipped, pylint_measured=pylint)

    def _sync_stage(self, sources: dict[str, bytes]) -> set[Path]:
        """Make the staging folder hold exactly ``sources``; returns the files that changed
        or went away (their parsed modules are stale)."""
        stage = self.stage
        stale = set()
        for rel in list(self._staged):
            if rel not in sources:
                (stage / rel).unlink(missing_ok=True)
                stale.add(stage / rel)
                del self._staged[rel]
        for rel, data in sources.items():
            if self._staged.get(rel) != data:
                (stage / rel).parent.mkdir(parents=True, exist_ok=True)
                (stage / rel).write_bytes(data)
                stale.add(stage / rel)
                self._staged[rel] = data
        return stale

    def _analyse(self, sources: dict[str, bytes], results: dict[str, FileQuality], basic: list[str], lint: list[str]) -> None:
        stage = self.stage
        try:
            stale = self._sync_stage(sources)
        except OSError:
            shutil.rmtree(stage, ignore_errors=True)
            self._staged.clear()
            raise
        for rel in basic:
            results[rel] = self._basic(sources[rel])
        self.analysed["radon"] += len(basic)
        readable = [rel for rel in basic if not results[rel].error]
        self.analysed["bandit"] += len(readable)
        for path, findings in analyzers.bandit_findings(stage / rel for rel in readable).items():
            results[path.relative_to(stage).as_posix()].bandit = findings
        lint = [rel for rel in lint if not results[rel].error]
        self.analysed["pylint"] += len(lint)
        for path, messages in analyzers.pylint_messages([stage / rel for rel in lint], stale).items():
            fq = results[path.relative_to(stage).as_posix()]
            fq.pylint, fq.pylint_measured = messages, True

    @staticmethod
    def _basic(data: bytes) -> FileQuality:
        try:
            source = data.decode("utf-8")
            sloc, functions, mi = analyzers.radon_metrics(source)
            statements = analyzers.statement_count(source)
        except (UnicodeDecodeError, SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            return FileQuality(error=f"{type(exc).__name__}: {exc}"[:300])
        return FileQuality(sloc=sloc, functions=functions, mi=mi, statements=statements)


def quality_report(
    before: Snapshot,
    after: Snapshot,
    weights: Mapping[str, float],
    churn: Mapping[str, tuple[int, int]],
) -> dict:
    """The per-turn quality entry of a grade: absolute values, deltas, worst offenders."""
    b, a = before.components(), after.components()
    mb, ma = before.metrics(), after.metrics()
    delta = {k: round(a[k] - b[k], 4) for k in COMPONENTS}
    return {
        "score": round(score(a, weights), 4),
        "score_delta": round(score(a, weights) - score(b, weights), 4),
        "components": a,
        "delta": delta,
        "metrics": ma,
        "metrics_delta": {k: round(ma[k] - mb[k], 3) for k, v in ma.items() if isinstance(v, (int, float))},
        "pylint_measured": after.pylint_measured,
        "worst": after.worst(),
        "skipped": after.skipped,
        "churn": {path: list(lines) for path, lines in sorted(churn.items())},
    }

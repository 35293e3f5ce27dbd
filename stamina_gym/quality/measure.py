"""Quality of a whole work tree: per-file analysis cached by content, aggregated to metrics
and to four component scores in [0, 1] whose weighted sum is the quality score.

Component scores (``QualityConfig.weights`` weighs them):

* ``lint``: pylint's own formula over all files, ``10 - 10 * (5 * errors + warnings +
  refactors + conventions) / statements``, clamped to [0, 10], divided by 10.
* ``complexity``: 1 minus the mean, over functions, of ``min(1, max(0, cc - 5) / 10)``:
  a function of cyclomatic complexity up to 5 (radon rank A) costs nothing, one of 15 or
  more costs fully.
* ``maintainability``: radon's maintainability index of each function alone (a file
  without functions counts as one unit), mean weighted by logical lines, divided by 100.
  A file's own index falls as the file grows whatever its code (the reference of the todo
  task goes from 95 to 29 over 100 turns); a function's falls with its size and tangle.
* ``security``: ``1 / (1 + risk x 1000 / max(1000, statements))``, where risk sums
  severity x confidence weights over bandit findings (severity high 1, medium 0.5, low
  0.1; confidence high 1, medium 0.5, low 0.2): up to 1000 statements a single sure
  high-severity hole halves it, in larger code it is the density of findings that counts,
  and a low-confidence guess barely moves it. B608 findings (SQL built from strings) on
  strings proved to splice in constant text only are left out (``constant_sql``: column
  lists, ``?`` placeholders), unless some file assigns a name the proof relies on.

Test files (``QualityConfig.exclude``) are left out: the quality of the product is measured.

Every other file the interpreter could run counts. One that cannot be measured counts as
the worst possible file, which would take each component to 0, so the whole score is 0:
a ``.py`` file that cannot be decoded or parsed, that an analyser fails on or that runs
past its time budget (``QualityConfig.analysis_budget_s``), one too large or past the
file count, one reached through a symbolic link (or a linked folder), and a compiled
module (``.pyc``, extension) that Python would import. The grade names each with why
(``worst["unreadable"]``): hiding code from the meter never pays.

The reward pays ``reward.quality`` times the change of the weighted score over the turn.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
import time
from collections import Counter, OrderedDict
from dataclasses import dataclass, field, replace
from importlib.machinery import BYTECODE_SUFFIXES, EXTENSION_SUFFIXES
from pathlib import Path
from typing import Callable, Iterator, Mapping

from stamina_gym import safetree
from stamina_gym.quality import analyzers, lint_context
from stamina_gym.quality.analyzers import PYLINT_CATEGORIES, SEVERITIES, FileQuality
from stamina_gym.quality.constant_sql import DEFINED
from stamina_gym.rules import matches

COMPONENTS = ("lint", "complexity", "maintainability", "security")
_SEVERITY_WEIGHT = {"high": 1.0, "medium": 0.5, "low": 0.1}
_CONFIDENCE_WEIGHT = {"high": 1.0, "medium": 0.5, "low": 0.2}
#: Folders never read: the interpreter imports nothing from them by name and the grading
#: copy leaves the caches out. A virtual environment (a folder holding ``pyvenv.cfg``) is
#: skipped too, whatever its name.
_SKIP_DIRS = {".git", "__pycache__", ".pytest_cache", ".venv"}
#: Files the interpreter imports: source, and modules it runs without source.
PYTHON_SUFFIXES = (".py", *BYTECODE_SUFFIXES, *EXTENSION_SUFFIXES)


def cc_rank(cc: int) -> str:
    """radon's letter for a cyclomatic complexity."""
    for letter, top in (("A", 5), ("B", 10), ("C", 20), ("D", 30), ("E", 40)):
        if cc <= top:
            return letter
    return "F"


class AnalysisCache:
    """Per-file results keyed by analyser versions and what was analysed (a file's text for
    radon and bandit; for pylint, also the text of the modules it reaches and the names of
    the tree's files): in memory for the process, and in ``directory`` (when given) for
    every process on the machine.

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
        self.analysing = threading.Lock()
        """Held by a meter from finding what it misses until it has stored what it analysed:
        two meters (the agent's and the reference's) never analyse the same thing twice."""
        self.hits = self.misses = 0
        self.on_disk: set[str] = set()
        """Keys this process read from or wrote to the folder (no stat to know again)."""
        self.salt = analyzers.analyser_versions()
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)

    def forget(self) -> None:
        """Drop what is kept in memory (the folder stays): a cold start."""
        with self._lock:
            self._memory.clear()

    def key(self, data: bytes) -> str:
        return hashlib.sha256(self.salt.encode() + b"\0" + data).hexdigest()

    def get(self, key: str) -> FileQuality | None:
        with self._lock:
            found = self._memory.get(key)
            if found is not None:
                self._memory.move_to_end(key)
        if found is None:
            found = self.stored(key)
        return found

    def put(self, key: str, value: FileQuality) -> None:
        with self._lock:
            self._memory[key] = value
            self._memory.move_to_end(key)
            while len(self._memory) > self.max_entries:
                self._memory.popitem(last=False)
        if self.directory is not None:
            self.store(key, value)

    def stored(self, key: str) -> FileQuality | None:
        """The result kept on disk for ``key`` (None without a folder or an entry)."""
        if self.directory is None:
            return None
        try:
            found = FileQuality.from_json(json.loads((self.directory / f"{key}.json").read_text()))
        except (OSError, ValueError, TypeError):
            return None
        self.on_disk.add(key)
        return found

    def store(self, key: str, value: FileQuality) -> None:
        """Write ``value`` to the folder (not to memory)."""
        if self.directory is None:
            return
        tmp = self.directory / f".{key}.{os.getpid()}.{threading.get_ident()}.tmp"
        tmp.write_text(json.dumps(value.to_json()))
        os.replace(tmp, self.directory / f"{key}.json")
        self.on_disk.add(key)


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

    @property
    def unreadable(self) -> dict[str, str]:
        """The files counted as the worst possible file, with why."""
        out = {path: fq.error for path, fq in self.files.items() if fq.error}
        for entry in self.skipped:
            path, _, why = entry.partition(": ")
            out[path] = why
        return out

    def metrics(self) -> dict:
        """Absolute values over the whole tree (all numbers, for curves and tables)."""
        cc = [c for fq in self.files.values() for (_, _, c) in fq.functions]
        sloc = sum(fq.sloc for fq in self.files.values())
        counts = Counter(cat for fq in self.files.values() for (_, _, cat) in fq.pylint)
        bandit = Counter(sev for _, (_, _, sev, _, _) in self.findings())
        out = {
            "files": len(self.files),
            "sloc": sloc,
            "functions": len(cc),
            "cc_mean": round(sum(cc) / len(cc), 3) if cc else 0.0,
            "cc_max": max(cc, default=0),
            "cc_ranks": {letter: sum(cc_rank(c) == letter for c in cc) for letter in "ABCDEF"},
            "mi_mean": round(self._mi_mean(), 3),
            "mi_function_mean": round(self._function_mi_mean(), 3),
            "mi_min": round(min((fq.mi for fq in self.files.values() if fq.sloc), default=100.0), 3),
            "statements": sum(fq.statements for fq in self.files.values()),
            "pylint_score": round(self.lint_note(), 3),
            "pylint_messages": {cat: counts.get(cat, 0) for cat in PYLINT_CATEGORIES},
            "bandit": {sev: bandit.get(sev, 0) for sev in SEVERITIES},
            "bandit_constant_sql": sum(len(fq.bandit) for fq in self.files.values()) - sum(bandit.values()),
            "unreadable": len(self.unreadable),
        }
        return out

    def components(self) -> dict[str, float]:
        if self.unreadable:
            return dict.fromkeys(COMPONENTS, 0.0)
        cc = [c for fq in self.files.values() for (_, _, c) in fq.functions]
        risk = sum(_SEVERITY_WEIGHT.get(sev, 1.0) * _CONFIDENCE_WEIGHT.get(conf, 1.0) for _, (_, _, sev, conf, _) in self.findings())
        statements = sum(fq.statements for fq in self.files.values())
        return {
            "lint": round(self.lint_note() / 10, 4),
            "complexity": round(1 - (sum(min(1.0, max(0, c - 5) / 10) for c in cc) / len(cc) if cc else 0.0), 4),
            "maintainability": round(self._function_mi_mean() / 100, 4),
            "security": round(1 / (1 + risk * 1000 / max(1000, statements)), 4),
        }

    def findings(self) -> list[tuple[str, tuple[int, str, str, str, str]]]:
        """(file, finding) of every bandit finding that counts: B608 findings on SQL
        proved constant are left out, unless a file assigns a name the proof relies on."""
        written = {name for fq in self.files.values() for name in fq.attribute_writes}
        defined = Counter(name for fq in self.files.values() for name in fq.defined)
        written |= {f"{DEFINED}{name}" for name, count in defined.items() if count > 1}  # see constant_sql
        out = []
        for path, fq in sorted(self.files.items()):
            proved = {line for line, names in fq.sql_constant if "*" not in written and not written & set(names)}
            out += [(path, finding) for finding in fq.bandit if not (finding[1] == "B608" and finding[0] in proved)]
        return out

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
                for p, (line, test, sev, conf, text) in self.findings()
            ][: 2 * limit],
            "unreadable": self.unreadable,
        }

    def _function_mi_mean(self) -> float:
        units = [unit for fq in self.files.values() for unit in fq.function_mi]
        units += [(fq.mi, max(fq.statements, 1)) for fq in self.files.values() if fq.sloc and not fq.function_mi]
        total = sum(lines for _, lines in units)
        return sum(mi * lines for mi, lines in units) / total if total else 100.0

    def _mi_mean(self) -> float:
        weighted = [(fq.mi, fq.sloc) for fq in self.files.values() if fq.sloc]
        total = sum(w for _, w in weighted)
        return sum(mi * w for mi, w in weighted) / total if total else 100.0

    def lint_note(self) -> float:
        """pylint's note (0-10) over the files analysed, or the one carried."""
        if self.lint_carried is not None:
            return self.lint_carried
        counts = Counter(cat for fq in self.files.values() for (_, _, cat) in fq.pylint)
        statements = sum(fq.statements for fq in self.files.values())
        if not statements:
            return 10.0
        bad = 5 * (counts["error"] + counts["fatal"]) + counts["warning"] + counts["refactor"] + counts["convention"]
        return max(0.0, min(10.0, 10 - 10 * bad / statements))


def _walk(tree: Path, onerror: Callable[[OSError], None]) -> Iterator[tuple[str, list[str], list[str]]]:
    """``os.walk`` top-down without following links, with an explicit stack: a tree nested
    thousands deep meets no recursion limit (``os.walk`` recurses before Python 3.12)."""
    stack = [str(tree)]
    while stack:
        root = stack.pop()
        try:
            with os.scandir(root) as listing:
                entries = list(listing)
        except OSError as error:
            onerror(error)
            continue
        dirs = [e.name for e in entries if _is_folder(e)]
        names = [e.name for e in entries if not _is_folder(e)]
        yield root, dirs, names
        stack += [os.path.join(root, name) for name in reversed(dirs)]


def _is_folder(entry: os.DirEntry) -> bool:
    """A folder, or a link to one (listed among folders, as ``os.walk`` does; the caller
    never descends into links). A link loop or a dangling link is not a folder."""
    if entry.is_dir(follow_symlinks=False):
        return True
    try:
        return entry.is_symlink() and entry.is_dir(follow_symlinks=True)
    except OSError:
        return False


def read_tree(
    tree: Path, max_bytes: int, max_files: int, suffix: str | tuple[str, ...] = ""
) -> tuple[dict[str, bytes], list[str]]:
    """Relative path -> content of the tree's regular files (ending in ``suffix``), and
    what was skipped as ``"path: reason"``: symlinks (never followed: they could point at
    anything on the host; a linked folder's path ends in ``/``), files over ``max_bytes``,
    files past ``max_files``, files and folders the env may not read."""
    found: dict[str, bytes] = {}
    skipped = []

    def unlisted(error: OSError) -> None:
        skipped.append(f"{Path(error.filename).relative_to(tree).as_posix()}/: cannot be listed ({error.strerror})")

    for root, dirs, names in _walk(tree, unlisted):
        kept = []
        for name in sorted(dirs):
            path = Path(root, name)
            if name in _SKIP_DIRS:
                continue
            if path.is_symlink():
                skipped.append(f"{path.relative_to(tree).as_posix()}/: a link to a folder, not followed")
            elif not (path / "pyvenv.cfg").is_file():
                kept.append(name)
        dirs[:] = kept
        for name in sorted(names):
            if not name.endswith(suffix):
                continue
            path = Path(root, name)
            rel = path.relative_to(tree).as_posix()
            try:
                if path.is_symlink() or not path.is_file():
                    skipped.append(f"{rel}: not a regular file")
                elif path.stat().st_size > max_bytes:
                    skipped.append(f"{rel}: larger than {max_bytes // 1024} KiB")
                elif len(found) >= max_files:
                    skipped.append(f"{rel}: more than {max_files} files")
                else:
                    found[rel] = path.read_bytes()
            except OSError as exc:
                skipped.append(f"{rel}: cannot be read ({exc.strerror})")
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
        budget_s: float = 10.0,
        review_budget_s: float | None = None,
        worker: analyzers.AnalysisWorker | None = None,
        persist: AnalysisCache | None = None,
    ):
        self.persist = persist if persist is not None and persist.directory is not None else None
        """A folder cache this meter also reads its results from (after ``cache``) and
        writes every result it uses to: the reference's, kept across processes and runs
        (``stamina_gym.quality.reference``)."""
        self.stage = scratch / "quality-stage"
        """Holds a copy of the tree's Python files only, kept between measurements."""
        self._staged: dict[str, bytes] = {}
        self._changed = False
        """The stage changed since pylint last ran on it."""
        self.exclude = exclude
        self.budget_s = budget_s
        """Seconds the analysers may spend on one file."""
        self.review_budget_s = review_budget_s
        """Seconds the analyses of one measurement may take together (None: no bound)."""
        self._deadline: float | None = None
        self.worker = worker or analyzers.WORKER
        self.cache = cache or SHARED_CACHE
        self.max_bytes = max_file_kb * 1024
        self.max_files = max_files
        self.analysed = Counter()
        """Files handed to each analyser by this meter (the cache's effect, counted)."""

    def measure(self, tree: Path, *, pylint: bool = True) -> Snapshot:
        """The quality of the Python files under ``tree``."""
        sources, skipped = read_tree(tree, self.max_bytes, self.max_files, suffix=PYTHON_SUFFIXES)
        return self.measure_files(sources, skipped, pylint=pylint)

    def measure_files(self, files: Mapping[str, bytes], skipped: list[str], *, pylint: bool = True) -> Snapshot:
        """The quality of ``files`` (repository path -> content, as ``read_tree`` gives them;
        only Python files outside ``exclude`` count). ``skipped`` (``read_tree``'s) names
        files that could not be read: those that count are the worst possible file."""
        sources = {rel: data for rel, data in files.items() if rel.endswith(".py") and not matches(rel, self.exclude)}
        unread = [entry for entry in skipped if self._counts(entry.partition(": ")[0])]
        unread += [
            f"{rel}: a compiled module: Python imports it, the analysers cannot read it"
            for rel in files
            if rel.endswith(PYTHON_SUFFIXES) and not rel.endswith(".py") and self._counts(rel)
        ]
        self._deadline = None if self.review_budget_s is None else time.monotonic() + self.review_budget_s
        with self.cache.analysing:
            results = self._results(sources, pylint)
        return Snapshot(dict(sorted(results.items())), sorted(unread), pylint_measured=pylint)

    def _results(self, sources: Mapping[str, bytes], pylint: bool) -> dict[str, FileQuality]:
        """Each file's analysis, from the cache or run now and stored in it. radon's and
        bandit's results are keyed by the file's text; pylint's by the text of the file, of
        every module its imports reach and the names of all files staged (``lint_context``):
        its verdict depends on them. Without ``pylint``, a file gets pylint's verdict only
        where one is kept for that exact context."""
        keys = {rel: self.cache.key(data) for rel, data in sources.items()}
        results: dict[str, FileQuality | None] = {rel: self._lookup(key) for rel, key in keys.items()}
        missing = [rel for rel, found in results.items() if found is None]
        staged = bool(missing)
        if missing:
            self._stage(sources)
            for rel in missing:
                results[rel] = self._run(rel, basic=True)
                self._keep(keys[rel], results[rel], fresh=True)
        for rel, found in results.items():
            if rel not in missing:
                self._keep(keys[rel], found, fresh=False)
        reached = lint_context.reached({rel: found.imports for rel, found in results.items()})
        listing = lint_context.listing(sources)
        isolate = pylint and lint_context.ambiguous(sources)
        for rel, found in results.items():
            if found.error:
                continue
            key = self.cache.key(b"pylint\0" + listing + lint_context.context_digest(reached[rel], keys))
            lint = self._lookup(key)
            if lint is None and not pylint:
                continue
            if lint is None:
                if not staged:
                    self._stage(sources)
                    staged = True
                lint = self._run(rel, basic=False, isolate=isolate)
                self._keep(key, lint, fresh=True)
            else:
                self._keep(key, lint, fresh=False)
            results[rel] = replace(found, pylint=lint.pylint, pylint_measured=lint.pylint_measured,
                                   error=lint.error, transient=lint.transient)  # fmt: skip
        return results

    def _lookup(self, key: str) -> FileQuality | None:
        """The result kept for ``key``: in the cache, else in the ``persist`` folder."""
        found = self.cache.get(key)
        if found is None and self.persist is not None:
            found = self.persist.stored(key)
            if found is not None:
                self.cache.put(key, found)
                self.persist.hits += 1
        if found is None:
            self.cache.misses += 1
        else:
            self.cache.hits += 1
        return found

    def _keep(self, key: str, found: FileQuality, *, fresh: bool) -> None:
        """Store a result just analysed (``fresh``) in the cache, and any result used in the
        ``persist`` folder; a verdict of the clock or of a dead worker is not kept."""
        if found.transient:
            return
        if fresh:
            self.cache.put(key, found)
        if self.persist is not None and (fresh or key not in self.persist.on_disk):
            self.persist.store(key, found)

    def _counts(self, rel: str) -> bool:
        """A path of ``read_tree`` the interpreter may run (linked folders end in ``/``)."""
        return (rel.endswith("/") or rel.endswith(PYTHON_SUFFIXES)) and not matches(rel.rstrip("/"), self.exclude)

    def _sync_stage(self, sources: Mapping[str, bytes]) -> None:
        """Make the staging folder hold exactly ``sources``, pragmas neutralised."""
        stage = self.stage
        for rel in list(self._staged):
            if rel not in sources:
                (stage / rel).unlink(missing_ok=True)
                self._changed = True
                del self._staged[rel]
        for rel, data in sources.items():
            if self._staged.get(rel) != data:
                try:
                    staged = analyzers.neutralise_suppressions(data)
                except analyzers.DECODE_ERRORS:
                    staged = data  # the worker finds it undecodable and says so
                safetree.make_folders((stage / rel).parent)
                (stage / rel).write_bytes(staged)
                self._changed = True
                self._staged[rel] = data

    def _stage(self, sources: Mapping[str, bytes]) -> None:
        try:
            self._sync_stage(sources)
        except OSError:
            with contextlib.suppress(OSError):
                safetree.rmtree(self.stage)
            self._staged.clear()
            raise

    def _run(self, rel: str, *, basic: bool, isolate: bool = False) -> FileQuality:
        """radon, the statement count and bandit (``basic``) or pylint on the staged ``rel``.
        The first pylint run after the stage changed makes the worker forget every module
        it parsed from the stage: one parsed before keeps the inferences it made against
        its old neighbours, and a package the names of its modules."""
        budget = self.budget_s
        if self._deadline is not None:
            budget = min(budget, self._deadline - time.monotonic())
            if budget <= 0:
                return FileQuality(error=f"the review ran past its budget of {self.review_budget_s:g} s", transient=True)
        fresh = not basic and self._changed
        if fresh:
            self._changed = False
        self.analysed.update(("radon", "bandit") if basic else ("pylint",))
        return self.worker.analyse(self.stage / rel, self.stage, basic=basic, lint=not basic, budget=budget,
                                   fresh=fresh or isolate)  # fmt: skip


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

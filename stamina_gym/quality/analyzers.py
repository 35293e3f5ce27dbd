"""Per-file code analysis with radon, bandit and pylint: pure functions of a file's text.

Each analyser reads source only; nothing the agent wrote is imported or executed. The
three run in-process (the benchmark showed a subprocess per submit costs more than the
analysis itself), on a staged copy that holds nothing but the agent's ``.py`` files, with
our own settings:

* pylint gets an explicit empty rcfile, so no ``pylintrc``/``pyproject.toml``/``setup.cfg``
  of the agent is read (their ``load-plugins`` and ``init-hook`` would run code); the copy
  holds no compiled extension that astroid could be tricked into loading; inline
  ``# pylint: disable`` comments are neutralised in the copy so they hide nothing.
* bandit runs with its defaults and ``ignore_nosec``: ``# nosec`` hides nothing. B101
  (``assert`` used) is skipped: asserts in tests are not a security finding.
* radon needs no configuration.
"""

from __future__ import annotations

import ast
import re
import warnings
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Iterable, Mapping

#: pylint's message categories, counted per file.
PYLINT_CATEGORIES = ("fatal", "error", "warning", "refactor", "convention", "info")
#: bandit's severities, counted per file.
SEVERITIES = ("high", "medium", "low")
_SUPPRESSION = re.compile(rb"#\s*pylint\s*:")


def analyser_versions() -> str:
    """Part of every cache key: results of other analyser versions are not reused."""
    return ";".join(f"{name}={metadata.version(name)}" for name in ("radon", "bandit", "pylint", "astroid"))


@dataclass
class FileQuality:
    """What the analysers found in one file. Plain data, stored in the cache as JSON."""

    sloc: int = 0
    functions: list[tuple[str, int, int]] = field(default_factory=list)
    """(qualified name, line, cyclomatic complexity) of every function and method."""
    mi: float = 100.0
    """radon's maintainability index, 0 (worst) to 100."""
    bandit: list[tuple[int, str, str, str, str]] = field(default_factory=list)
    """(line, test id, severity, confidence, text) of every bandit finding."""
    statements: int = 0
    """pylint's statement count, the denominator of its score."""
    pylint: list[tuple[int, str, str]] = field(default_factory=list)
    """(line, message symbol, category) of every pylint message."""
    pylint_measured: bool = False
    error: str = ""
    """Why an analyser could not read the file (a syntax error, for instance)."""

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping) -> "FileQuality":
        out = cls(**data)
        out.functions = [tuple(f) for f in out.functions]
        out.bandit = [tuple(b) for b in out.bandit]
        out.pylint = [tuple(p) for p in out.pylint]
        return out


def radon_metrics(source: str) -> tuple[int, list[tuple[str, int, int]], float]:
    """SLOC, per-function complexity and maintainability index of one file's text."""
    from radon.complexity import cc_visit
    from radon.metrics import mi_visit
    from radon.raw import analyze
    from radon.visitors import Class

    functions = []
    for block in cc_visit(source):  # methods come both inside their class and on their own
        if not isinstance(block, Class):
            name = f"{block.classname}.{block.name}" if block.classname else block.name
            functions.append((name, block.lineno, block.complexity))
    return analyze(source).sloc, functions, round(mi_visit(source, multi=True), 2)


def statement_count(source: str) -> int:
    """Statements in the file, the denominator of pylint's score formula."""
    return sum(isinstance(node, ast.stmt) for node in ast.walk(ast.parse(source)))


def bandit_findings(paths: Iterable[Path]) -> dict[Path, list[tuple[int, str, str, str, str]]]:
    """bandit's findings for each file, ``# nosec`` ignored, B101 skipped."""
    import logging

    found: dict[Path, list] = {}
    paths = [str(p) for p in paths]
    if not paths:
        return found
    # bandit's plugin loader warns about its own arguments and logs formatters it lacks
    logging.getLogger("stevedore").setLevel(logging.CRITICAL)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from bandit.core import config as bandit_config
        from bandit.core import manager

        logging.getLogger("bandit").setLevel(logging.ERROR)
        conf = bandit_config.BanditConfig()
        mgr = manager.BanditManager(conf, "file", ignore_nosec=True, quiet=True)
        mgr.discover_files(paths, recursive=False)
        mgr.run_tests()
    for issue in mgr.get_issue_list():
        if issue.test_id == "B101":
            continue
        found.setdefault(Path(issue.fname), []).append(
            (issue.lineno, issue.test_id, issue.severity.lower(), issue.confidence.lower(), issue.text)
        )
    return found


def neutralise_suppressions(data: bytes) -> bytes:
    """``# pylint: disable=...`` -> ``# pylint- disable=...``: same lines, no effect."""
    return _SUPPRESSION.sub(b"# pylint- ", data)


def pylint_messages(paths: list[Path], stale: set[Path]) -> dict[Path, list[tuple[int, str, str]]]:
    """pylint's messages per file, with our empty configuration.

    astroid keeps parsed modules in a process-wide cache; those read from the ``stale``
    files (changed or removed since the last run) are dropped first, so an edited file is
    never judged by its old text, while unchanged modules and the standard library stay
    parsed (re-parsing them is most of a cold run's cost).
    """
    import astroid
    from pylint.lint import Run
    from pylint.reporters import CollectingReporter

    found: dict[Path, list] = {p: [] for p in paths}
    forget_modules(astroid.MANAGER, stale)
    if not paths:
        return found
    reporter = CollectingReporter()
    args = ["--rcfile=/dev/null", "--persistent=n", "--score=n", "--jobs=1", "--unsafe-load-any-extension=n"]
    Run([*args, *(str(p) for p in paths)], reporter=reporter, exit=False)
    for msg in reporter.messages:
        path = Path(msg.abspath)
        if path in found:
            found[path].append((msg.line, msg.symbol, msg.category))
    return found


def forget_modules(manager, files: set[Path]) -> None:
    """Drop the modules parsed from ``files`` from astroid's cache."""
    names = {str(f) for f in files}
    cache = manager.astroid_cache
    for name in [n for n, mod in cache.items() if getattr(mod, "file", None) in names]:
        del cache[name]

"""Per-file code analysis with radon, bandit and pylint, in a worker process with a deadline.

Each analyser reads source only; nothing the agent wrote is imported or executed. They see
a staged copy that holds nothing but the agent's ``.py`` files, read as the interpreter
reads them (a PEP 263 coding cookie or a UTF-8 BOM says how to decode), with our own
settings:

* pylint gets an explicit empty rcfile, so no ``pylintrc``/``pyproject.toml``/``setup.cfg``
  of the agent is read (their ``load-plugins`` and ``init-hook`` would run code); the copy
  holds no compiled extension that astroid could be tricked into loading. Every inline
  pragma is neutralised in the copy: pylint honours none without the literal ``pylint:``
  (see ``_PRAGMA``), which becomes ``pylint-``. Should pylint still report a suppression
  or a skipped file, the file counts as unreadable.
* bandit runs with its defaults and ``ignore_nosec``: ``# nosec`` hides nothing. B101
  (``assert`` used) is skipped: asserts in tests are not a security finding.
* radon needs no configuration.

A file an analyser cannot read (undecodable, a syntax error, a crash, a RecursionError)
comes back with ``FileQuality.error`` set; the meter counts it as the worst possible file.

The analysers run in one long-lived process (``AnalysisWorker``), one file at a time, so
that no file can stall the env: past its budget the process is killed, the file counts
as unreadable, and the next file starts a fresh process. The process is kept between
submits because starting one costs more than analysing a submit's files. One file per
pylint run also makes a file's messages depend on the tree only, not on which files changed
with it: pylint's checks across the files of a run (``duplicate-code``, ``cyclic-import``)
find nothing. What astroid keeps between files is forgotten whenever the stage changes
(``forget_stage``), and the meter keys pylint's results by the modules a file reaches
(``lint_context``).
"""

from __future__ import annotations

import ast
import atexit
import functools
import io
import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tokenize
import warnings
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Mapping

from stamina_gym.quality import constant_sql
from stamina_gym.quality.lint_context import module_imports

#: pylint's message categories, counted per file.
PYLINT_CATEGORIES = ("fatal", "error", "warning", "refactor", "convention", "info")
#: bandit's severities, counted per file.
SEVERITIES = ("high", "medium", "low")
#: What reading a file as Python source can raise: a bad coding cookie (SyntaxError), bytes
#: the encoding cannot decode (UnicodeDecodeError, a ValueError), a codec that is no text
#: encoding (LookupError).
DECODE_ERRORS = (SyntaxError, ValueError, LookupError)
#: The literal that every pragma pylint honours holds: its ``OPTION_RGX``
#: (``pylint/utils/pragma_parser.py``) requires ``\bpylint:`` in the comment, and its
#: line-length check applies the same regex to whole lines, docstrings included. Text
#: without it can hide nothing; ``tests/test_quality_hostile.py`` pins this against
#: pylint's regex and against pylint itself. Matching the literal, not pylint's regex,
#: also keeps the neutraliser linear: that regex backtracks badly on lines full of ``#``.
_PRAGMA = re.compile(r"\bpylint:")
#: Messages by which pylint says it honoured a suppression or skipped a file. They are
#: enabled, and any of them makes the file unreadable: a pragma form the neutraliser
#: missed cannot pass unnoticed.
_SUPPRESSED = ("locally-disabled", "suppressed-message", "file-ignored")
_PYLINT_ARGS = (
    "--rcfile=/dev/null", "--persistent=n", "--score=n", "--jobs=1", "--unsafe-load-any-extension=n",
    "--ignore=", "--ignore-patterns=", f"--enable={','.join(_SUPPRESSED)}",
)  # fmt: skip
#: Version of what the meter does around the analysers (decoding, neutralising, what
#: counts as unreadable); part of every cache key, like the analysers' versions.
_METHOD = 6
#: Seconds a worker process may take to start (importing the analysers), apart from any
#: file's budget.
_START_TIMEOUT_S = 120.0
#: Address space of a worker process: a file that makes an analyser balloon ends in a
#: MemoryError (or the worker's death), never in the host swapping.
_WORKER_MEMORY = 4 << 30


class Unreadable(Exception):
    """An analyser could not analyse a file, or did so other than as told."""


def analyser_versions() -> str:
    """Part of every cache key: results of other analyser versions are not reused."""
    versions = ";".join(f"{name}={metadata.version(name)}" for name in ("radon", "bandit", "pylint", "astroid"))
    return f"{versions};meter={_METHOD}"


def decode_python(data: bytes) -> tuple[str, str]:
    """``data`` as the interpreter reads it: the text and its encoding (a PEP 263 coding
    cookie, a UTF-8 BOM, else UTF-8). Raises one of ``DECODE_ERRORS`` where the
    interpreter would refuse the file."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding), encoding


@dataclass
class FileQuality:
    """What the analysers found in one file. Plain data, stored in the cache as JSON."""

    sloc: int = 0
    functions: list[tuple[str, int, int]] = field(default_factory=list)
    """(qualified name, line, cyclomatic complexity) of every function and method."""
    mi: float = 100.0
    """radon's maintainability index of the whole file, 0 (worst) to 100."""
    function_mi: list[tuple[float, int]] = field(default_factory=list)
    """(maintainability index, logical lines) of every function and method: radon's
    formula on the function alone (``function_maintainability``)."""
    bandit: list[tuple[int, str, str, str, str]] = field(default_factory=list)
    """(line, test id, severity, confidence, text) of every bandit finding."""
    statements: int = 0
    """pylint's statement count, the denominator of its score."""
    pylint: list[tuple[int, str, str]] = field(default_factory=list)
    """(line, message symbol, category) of every pylint message."""
    pylint_measured: bool = False
    sql_constant: list[tuple[int, list[str]]] = field(default_factory=list)
    """Lines of B608 findings whose SQL splices in constant text only (``constant_sql``),
    each with the module-level names that proof relies on."""
    attribute_writes: list[str] = field(default_factory=list)
    """Attributes the file assigns on other objects (``constant_sql.attribute_writes``):
    one that names a name a proof relies on voids the proof."""
    defined: list[str] = field(default_factory=list)
    """Names of the functions and methods the file defines (``constant_sql.defined_names``):
    a proof that believed an annotation holds only while its method's name is defined once."""
    imports: list[tuple[int, str]] = field(default_factory=list)
    """(level, dotted name) of the modules the file imports (``lint_context.module_imports``):
    what pylint's verdict on it may depend on."""
    error: str = ""
    """Why the file could not be analysed (it cannot be decoded or parsed, an analyser
    failed on it or ran past its budget): the meter counts it as the worst possible file."""
    transient: bool = False
    """The error came from the clock or a dead worker, not from the text: not cached."""

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping) -> "FileQuality":
        out = cls(**data)
        out.functions = [tuple(f) for f in out.functions]
        out.function_mi = [tuple(f) for f in out.function_mi]
        out.sql_constant = [(line, list(names)) for line, names in out.sql_constant]
        out.bandit = [tuple(b) for b in out.bandit]
        out.pylint = [tuple(p) for p in out.pylint]
        out.imports = [tuple(i) for i in out.imports]
        return out


def radon_metrics(source: str, tree: ast.Module) -> tuple[int, list[tuple[str, int, int]], float, list[tuple[float, int]]]:
    """SLOC, per-function complexity, maintainability index and per-function
    maintainability of one file's text (``tree``: its syntax tree). What ``cc_visit``,
    ``analyze`` and ``mi_visit`` give, from one complexity visit and one tokenisation
    (``mi_visit`` would parse, visit and tokenise again)."""
    from radon.metrics import h_visit_ast, mi_compute
    from radon.raw import analyze
    from radon.visitors import Class, ComplexityVisitor

    visitor = ComplexityVisitor.from_ast(tree)
    functions = []
    blocks = [block for block in visitor.blocks if not isinstance(block, Class)]  # methods come on their own too
    for block in blocks:
        name = f"{block.classname}.{block.name}" if block.classname else block.name
        functions.append((name, block.lineno, block.complexity))
    raw = analyze(source)
    comments = (raw.comments + raw.multi) / float(raw.sloc) * 100 if raw.sloc else 0
    mi = mi_compute(h_visit_ast(tree).total.volume, visitor.total_complexity, raw.lloc, comments)
    return raw.sloc, functions, round(mi, 2), function_maintainability(source, tree, blocks)


def function_maintainability(source: str, tree: ast.Module, blocks: list) -> list[tuple[float, int]]:
    """radon's maintainability index of each function alone, with its logical lines (its
    statements): a file's index falls with its length whatever its code, a function's
    with the function's size and tangle. Comment and docstring lines count as radon
    counts them (their share of the function's non-blank lines)."""
    from radon.metrics import h_visit_ast, mi_compute

    lines = source.splitlines()
    commented: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            commented.add(token.start[0])
        elif token.type == tokenize.STRING and token.end[0] > token.start[0]:
            commented.update(range(token.start[0], token.end[0] + 1))
    nodes = {(n.lineno, n.name): n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    out = []
    for block in blocks:
        node = nodes.get((block.lineno, block.name))
        if node is None:
            continue
        span = range(block.lineno, block.endline + 1)
        sloc = sum(bool(lines[i - 1].strip()) for i in span if i <= len(lines))
        comments = sum(i in commented for i in span) / sloc * 100 if sloc else 0
        lloc = sum(isinstance(n, ast.stmt) for n in ast.walk(node))
        out.append((round(mi_compute(h_visit_ast(node).total.volume, block.complexity, lloc, comments), 2), lloc))
    return out


def bandit_findings(path: Path) -> list[tuple[int, str, str, str, str]]:
    """bandit's findings in one file, ``# nosec`` ignored, B101 skipped. Raises
    ``Unreadable`` when bandit skipped the file (it logs and goes on, finding nothing)."""
    import logging

    # bandit's plugin loader warns about its own arguments and logs formatters it lacks
    logging.getLogger("stevedore").setLevel(logging.CRITICAL)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from bandit.core import config as bandit_config
        from bandit.core import manager

        logging.getLogger("bandit").setLevel(logging.CRITICAL)
        mgr = manager.BanditManager(bandit_config.BanditConfig(), "file", ignore_nosec=True, quiet=True)
        mgr.discover_files([str(path)], recursive=False)
        mgr.run_tests()
    if mgr.skipped or not mgr.files_list:
        reasons = "; ".join(reason for _, reason in mgr.skipped) or "not scanned"
        raise Unreadable(f"bandit skipped it ({reasons})")
    return [
        (issue.lineno, issue.test_id, issue.severity.lower(), issue.confidence.lower(), issue.text)
        for issue in mgr.get_issue_list()
        if issue.test_id != "B101"
    ]


def neutralise_suppressions(data: bytes) -> bytes:
    """``# pylint: disable=...`` -> ``# pylint- disable=...`` in every form pylint accepts,
    in the text as the interpreter decodes it (a pragma may be spelt in UTF-7), written back
    in the file's own encoding: the same lines, no effect. Raises one of ``DECODE_ERRORS``
    for a file the interpreter could not read either."""
    text, encoding = decode_python(data)
    if "pylint:" not in text:
        return data
    return _PRAGMA.sub("pylint-", text).encode(encoding)


@functools.cache
def _pylint() -> tuple:
    """pylint's linter with our settings and the reporter class it reports to, set up once
    per process: the checkers load and the options parse once, not for every file."""
    from pylint.lint import Run
    from pylint.reporters import CollectingReporter

    class Reporter(CollectingReporter):
        """The messages, and the files pylint really looked at."""

        def __init__(self) -> None:
            super().__init__()
            self.files: set[Path] = set()

        def on_set_current_module(self, module: str, filepath: str | None) -> None:
            super().on_set_current_module(module, filepath)
            if filepath:
                self.files.add(Path(filepath))

    with tempfile.TemporaryDirectory() as folder:
        empty = Path(folder, "empty.py")
        empty.write_text("")
        linter = Run([*_PYLINT_ARGS, str(empty)], reporter=Reporter(), exit=False).linter
    return linter, Reporter


def pylint_messages(path: Path) -> list[tuple[int, str, str]]:
    """pylint's messages in one file, with our empty configuration. Raises ``Unreadable``
    when pylint could not analyse the file (a fatal message, a syntax error), did not
    check it, or honoured a suppression after all."""
    linter, reporter_class = _pylint()
    reporter = reporter_class()
    linter.set_reporter(reporter)
    try:
        linter.check([str(path)])
    except SystemExit as exc:
        raise Unreadable(f"pylint exited with status {exc.code}") from None
    if path not in reporter.files:
        raise Unreadable("pylint did not check it")
    found = []
    for msg in reporter.messages:
        if Path(msg.abspath) != path:
            continue
        if msg.category == "fatal" or msg.symbol in (*_SUPPRESSED, "syntax-error"):
            raise Unreadable(f"pylint {msg.symbol} at line {msg.line}: {msg.msg}")
        found.append((msg.line, msg.symbol, msg.category))
    return found


def forget_modules(manager, folder: Path) -> None:
    """Drop from astroid's cache the modules parsed from anywhere under ``folder``, and the
    namespace packages built from folders there (they have no file, only a path)."""
    prefix = f"{folder}{os.sep}"
    cache = manager.astroid_cache
    for name, module in list(cache.items()):
        places = [getattr(module, "file", None) or "", *(getattr(module, "path", None) or ())]
        if any(place.startswith(prefix) for place in places):
            del cache[name]


_LRU = type(functools.lru_cache(lambda: None))


@functools.cache
def _astroid_memos() -> tuple:
    """Every memo (``functools.lru_cache``) of astroid's modules and classes: what it
    remembers of the file system (which files exist, where a name was found) and of the
    modules it parsed. ``AstroidManager.clear_cache`` clears these too, then re-parses the
    standard library and re-registers its brains (seconds), which a changed stage does not
    need."""
    found = []
    for name, module in list(sys.modules.items()):
        if name != "astroid" and not name.startswith("astroid."):
            continue
        for value in list(vars(module).values()):
            members = [value]
            if isinstance(value, type) and value.__module__ == name:
                members += [getattr(m, "__func__", m) for m in vars(value).values()]
            found += [m for m in members if isinstance(m, _LRU) and m not in found]
    return tuple(found)


def forget_stage(manager, folder: Path) -> None:
    """Make astroid see the stage ``folder`` afresh: the modules it parsed there (they keep
    the inferences they made against their old neighbours), where it found each name or
    that it found none, and its memos of both; the standard library's modules stay."""
    from astroid import context

    forget_modules(manager, folder)
    manager._mod_file_cache.clear()  # pylint: disable=protected-access
    getattr(context, "_invalidate_cache", lambda: None)()  # inferences kept by node
    for memo in _astroid_memos():
        memo.cache_clear()


def analyse_file(path: Path, *, basic: bool, lint: bool) -> tuple[FileQuality, bool]:
    """What the analysers say about one staged file (radon, the statement count and bandit
    when ``basic``, pylint when ``lint``), and whether an analyser failed on it. Any
    failure of any kind is a finding about the file, not a crash: the text is hostile, and
    a RecursionError or MemoryError is what it may aim at. An analyser that failed midway
    may have left its state dirty (pylint's checkers keep theirs between files), so the
    process that saw it should analyse nothing more."""
    out, step = FileQuality(), "reading"
    try:
        if basic:
            step = "decoding"
            text, _ = decode_python(path.read_bytes())
            step = "parsing"
            tree = ast.parse(text)
            out.statements = sum(isinstance(node, ast.stmt) for node in ast.walk(tree))
            step = "radon"
            out.sloc, out.functions, out.mi, out.function_mi = radon_metrics(text, tree)
            step = "bandit"
            out.bandit = bandit_findings(path)
            flagged = {line for (line, test, _, _, _) in out.bandit if test == "B608"}
            if flagged:
                proofs = constant_sql.constant_lines(tree)
                out.sql_constant = [(line, sorted(proofs[line])) for line in sorted(flagged) if line in proofs]
            out.attribute_writes = sorted(constant_sql.attribute_writes(tree))
            out.defined = constant_sql.defined_names(tree)
            out.imports = module_imports(tree)
        if lint:
            step = "pylint"
            out.pylint, out.pylint_measured = pylint_messages(path), True
    except Exception as exc:  # any failure at all: see the docstring
        why = str(exc) if isinstance(exc, Unreadable) else f"{type(exc).__name__}: {exc}"
        return FileQuality(error=f"{step}: {why}"[:300]), step not in ("reading", "decoding", "parsing")
    return out, False


def _confine() -> None:
    """Make the worker the process the kernel's out-of-memory killer takes first and cap
    its address space: a file that makes an analyser balloon takes down the worker only."""
    try:
        Path("/proc/self/oom_score_adj").write_text("1000")
    except OSError:
        pass
    try:
        import resource

        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        soft = _WORKER_MEMORY if hard == resource.RLIM_INFINITY else min(_WORKER_MEMORY, hard)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    except (ImportError, ValueError, OSError):
        pass


def serve() -> None:
    """The worker process: one JSON request per line on stdin, one ``FileQuality`` per line
    back on what was stdout. stdout and stderr themselves go to /dev/null once the
    analysers are loaded, so nothing an analyser prints can garble a reply or fill a log."""
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    _confine()
    warnings.simplefilter("ignore")
    import astroid
    from pylint.lint import PyLinter

    PyLinter.crash_file_path = os.devnull  # a crash writes no report into the home folder
    with tempfile.TemporaryDirectory() as folder:  # load everything before the first file's budget runs
        warm = Path(folder, "warm.py")
        warm.write_text('"""Warm-up."""\n')
        broken = analyse_file(warm, basic=True, lint=True)[0].error
        forget_modules(astroid.MANAGER, Path(folder))
    if broken:  # our fault, not a file's: the meter reports it as an infrastructure error
        sys.exit(f"the analysers fail on an empty module: {broken}")
    replies.write(json.dumps({"ready": analyser_versions()}) + "\n")
    replies.flush()
    os.dup2(devnull, 2)
    root = None
    for line in sys.stdin:
        request = json.loads(line)
        if request["root"] != root:  # another meter's stage: its modules would shadow this one's
            if root is not None:
                forget_stage(astroid.MANAGER, Path(root))
            root = request["root"]
        if request["fresh"]:  # the stage changed, or two of its files share a module name
            forget_stage(astroid.MANAGER, Path(root))
        result, failed = analyse_file(Path(request["path"]), basic=request["basic"], lint=request["lint"])
        replies.write(json.dumps({"quality": result.to_json(), "retire": failed}) + "\n")
        replies.flush()


class AnalysisWorker:
    """The analysers' process, seen from the meter. Started on first use (the analysers
    are imported there, not here) and kept for every later file; killed with its process
    group when a file runs past its budget or the process dies, and started afresh for the
    next file. One file at a time: callers on several threads take turns."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._pending = bytearray()
        self._errors = None
        self._pid = os.getpid()
        self.started = 0
        """Processes started so far."""

    def analyse(
        self, path: Path, root: Path, *, basic: bool, lint: bool, budget: float, fresh: bool = False
    ) -> FileQuality:
        """What the analysers say about ``path`` (a file of the stage ``root``; with
        ``fresh``, astroid first forgets every module it parsed from the stage), or an error
        when they run past ``budget`` seconds or their process dies. A process in which an
        analyser failed is retired: the next file gets a clean one."""
        if self._pid != os.getpid():  # inherited through fork: that process is the parent's
            self._pid, self._proc, self._pending, self._lock = os.getpid(), None, bytearray(), threading.Lock()
        request = {"path": str(path), "root": str(root), "basic": basic, "lint": lint, "fresh": fresh}
        with self._lock:
            proc = self._running()
            try:
                data = memoryview(json.dumps(request).encode() + b"\n")
                while data:  # the worker waits for it: it reads every request whole
                    data = data[os.write(proc.stdin.fileno(), data) :]
                reply = json.loads(self._line(proc, time.monotonic() + budget))
            except TimeoutError:
                self._stop()
                return FileQuality(error=f"the analysis ran past its budget of {budget:g} s", transient=True)
            except (OSError, EOFError, ValueError):
                status = self._stop()
                return FileQuality(error=f"the analysis process died (exit status {status})", transient=True)
            if reply["retire"]:
                self._stop()
        return FileQuality.from_json(reply["quality"])

    def close(self) -> None:
        """Stop the process (a later ``analyse`` starts another)."""
        with self._lock:
            self._stop()

    def _running(self) -> subprocess.Popen:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        self._stop()
        if self._errors is None:
            self._errors = tempfile.TemporaryFile()
            atexit.register(self.close)
        self._errors.seek(0)
        self._errors.truncate()
        # -I: neither the working folder nor PYTHON* variables shape what the worker imports
        self._proc = subprocess.Popen(
            [sys.executable, "-I", str(Path(__file__).resolve())],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._errors,
            cwd="/", bufsize=0, start_new_session=True,
        )  # fmt: skip
        try:
            json.loads(self._line(self._proc, time.monotonic() + _START_TIMEOUT_S))["ready"]
        except (TimeoutError, OSError, EOFError, ValueError, KeyError) as exc:
            status = self._stop()
            self._errors.seek(0)
            log = self._errors.read()[-2000:].decode("utf-8", "replace")
            from stamina_gym.errors import StaminaError

            raise StaminaError(
                f"the quality analysis process did not start ({type(exc).__name__}, exit status {status}): {log}"
            ) from None
        self.started += 1
        return self._proc

    def _line(self, proc: subprocess.Popen, deadline: float) -> bytes:
        fd = proc.stdout.fileno()
        waiting = select.poll()  # not select.select: it fails on descriptors past 1023
        waiting.register(fd, select.POLLIN)
        while b"\n" not in self._pending:
            left = deadline - time.monotonic()
            if left <= 0 or not waiting.poll(left * 1000):
                raise TimeoutError
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise EOFError
            self._pending += chunk
        line, _, rest = bytes(self._pending).partition(b"\n")
        self._pending = bytearray(rest)
        return line

    def _stop(self) -> int | None:
        proc, self._proc, self._pending = self._proc, None, bytearray()
        if proc is None:
            return None
        if proc.poll() is None:  # not reaped yet, so its process group id is still ours
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        status = proc.wait()
        proc.stdin.close()
        proc.stdout.close()
        return status


#: The process-wide worker, shared by every meter of the process.
WORKER = AnalysisWorker()


if __name__ == "__main__":
    serve()

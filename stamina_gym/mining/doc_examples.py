"""A documentation example as the release prints it.

A project's README often shows sessions (``>>> print(tabulate(rows, tablefmt="github"))``
and the table it prints). Written by hand, an example's output goes stale: tabulate
0.8.3's README shows the github format's number column left-aligned where the release, and
its tests, right-align it. A prompt quoting that page would contradict the tests it is
meant to tell. So the examples of a page a prompt quotes are run, in the sandbox, on the
release's own product (``doctest`` reads and runs them), and an example that prints
otherwise than the page says is quoted with what the release prints.

Python 2's ``print x``, as older READMEs write it, is run as ``print(x)``. Only an example
that expects no exception and raised none is corrected, and not one that
reads a name an example that raised would have bound (tabulate's README imports Python 2's
``StringIO``: what follows would print another table than the page's). One whose output
shows an object's address (``at 0x7f...``) is left as written, and so is every example of a
page whose run did not finish. Markdown's code fences are read as blank lines, so that an
example's output ends where its block does.
"""

from __future__ import annotations

import doctest
import json
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from stamina_gym.mining.sources import write_tree
from stamina_gym.sandbox import REPO_MOUNT, Mount, Sandbox

DOCS_MOUNT = "/docs"
TIMEOUT_S = 60.0
FENCE = re.compile(r"^\s*(```|~~~)")
_ADDRESS = re.compile(r"\bat 0x[0-9a-fA-F]+")
#: Run in the sandbox: each page's examples in one namespace, as doctest runs a docstring;
#: what an example printed where the page says otherwise is written out by its line, and
#: None for one that could not be run as the page has it (it raised, or read what one that
#: raised would have bound).
_RUNNER = """\
import ast, doctest, json, re, sys
pages = json.load(open(sys.argv[1], encoding="utf-8"))
printed = {}


def names(source, ctx):
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    found = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ctx)}
    if ctx is ast.Store:
        found |= {(alias.asname or alias.name).split(".")[0] for node in ast.walk(tree)
                  if isinstance(node, (ast.Import, ast.ImportFrom)) for alias in node.names}
    return found


class Recorder(doctest.DocTestRunner):
    # An example that raised leaves the names it binds unbound or stale (a Python 2 import
    # in a README): what later reads them printed for another context than the page's.
    def report_start(self, out, test, example):
        statement = re.match(r"print\\s+(?![\\s(=])(.+?)\\s*$", example.source, re.S)
        if statement:  # Python 2's print statement, as older READMEs write it
            try:
                compile(example.source, "<example>", "single")
            except SyntaxError:
                example.source = f"print({statement.group(1)})\\n"
        example.stale = bool(names(example.source, ast.Load) & self.stale)
        if example.stale:
            self.stale |= names(example.source, ast.Store)
        else:  # bound afresh (and again stale if it raises)
            self.stale -= names(example.source, ast.Store)
    def report_success(self, out, test, example, got):
        if example.stale:
            printed[test.name].append([example.lineno, None])
    def report_unexpected_exception(self, out, test, example, exc_info):
        self.stale |= names(example.source, ast.Store)
        printed[test.name].append([example.lineno, None])
    def report_failure(self, out, test, example, got):
        if example.exc_msg is None:
            printed[test.name].append([example.lineno, None if example.stale else got])

for rel, text in pages.items():
    printed[rel] = []
    try:
        test = doctest.DocTestParser().get_doctest(text, {"__name__": "__main__"}, rel, rel, 0)
    except ValueError:  # a session doctest cannot read (uneven indentation): left as written
        continue
    runner = Recorder(verbose=False, optionflags=doctest.ELLIPSIS)
    runner.stale = set()
    runner.run(test, out=lambda s: None)
with open(sys.argv[2], "w", encoding="utf-8") as out:
    json.dump(printed, out)
"""


def unfenced(text: str) -> str:
    """``text`` with markdown's code fences blank (line numbers kept)."""
    return "\n".join("" if FENCE.match(line) else line for line in text.split("\n"))


@dataclass
class Quoted:
    """Documentation pages with their examples as a release prints them."""

    pages: dict[str, str]
    """Each page, an example that printed otherwise than it says quoted with what it printed."""
    fixed: list[str] = field(default_factory=list)
    """The first line (``>>> ...``) of each example quoted with the release's output."""
    unrun: list[str] = field(default_factory=list)
    """The first line of each example with an output that could not be run as written."""

    def told(self, docs: str) -> str:
        """What a prompt says after ``docs`` (its quoted documentation lines) of the examples
        they show that were quoted as printed, or could not be run: "" when there is none."""
        shown = {line.strip() for line in docs.splitlines()}
        fixed, unrun = ([line for line in lines if line in shown] for lines in (self.fixed, self.unrun))
        said = []
        if fixed:
            said.append("Run on this release, these examples of the documentation lines above print what they show, "
                        "not what the documentation writes:\n" + "\n".join(f"- {line}" for line in fixed))  # fmt: skip
        if unrun:
            said.append("These examples could not be run on this release as the documentation writes them, so their "
                        "output is the documentation's own:\n" + "\n".join(f"- {line}" for line in unrun))  # fmt: skip
        return "\n\n".join(said)


def as_printed(sandbox: Sandbox, product: Mapping[str, str], pages: Mapping[str, str], scratch: Path,
               timeout: float = TIMEOUT_S) -> Quoted:  # fmt: skip
    """``pages`` (path -> text) with each example's output as ``product`` (path -> text,
    the release's product files) prints it, where the page says otherwise."""
    runnable = {rel: unfenced(text) for rel, text in pages.items() if ">>>" in text}
    if not runnable:
        return Quoted(dict(pages))
    stage = Path(tempfile.mkdtemp(prefix="docs-", dir=scratch))
    try:
        write_tree(stage / "repo", product)
        (stage / "docs").mkdir()
        (stage / "docs" / "run.py").write_text(_RUNNER, encoding="utf-8")
        (stage / "docs" / "pages.json").write_text(json.dumps(runnable), encoding="utf-8")
        sandbox.prepare(stage / "docs")
        result = sandbox.run([sandbox.python, "-B", f"{DOCS_MOUNT}/run.py", f"{DOCS_MOUNT}/pages.json", f"{DOCS_MOUNT}/printed.json"],
                             mounts=[Mount(stage / "repo", REPO_MOUNT), Mount(stage / "docs", DOCS_MOUNT, writable=True)],
                             timeout=timeout, env={"PYTHONPATH": REPO_MOUNT})  # fmt: skip
        written = stage / "docs" / "printed.json"
        printed = _read(written) if result.exit_code == 0 and written.is_file() else {}
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    quoted = Quoted({})
    for rel, text in pages.items():
        quoted.pages[rel] = corrected(text, printed.get(rel, []), quoted)
    return quoted


def _read(path: Path) -> dict[str, list[tuple[int, str | None]]]:
    """What the run wrote, where it has the runner's shape: the pages' code wrote that file
    and could have written anything, so anything else counts as nothing run."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {rel: [(line, got) for line, got in runs]
            for rel, runs in data.items()
            if isinstance(rel, str) and isinstance(runs, list)
            and all(isinstance(run, list) and len(run) == 2 and isinstance(run[0], int) and isinstance(run[1], (str, type(None)))
                    for run in runs)}  # fmt: skip


def corrected(text: str, printed: Sequence[Sequence], quoted: Quoted) -> str:
    """``text`` with the output of the example at each line of ``printed`` (0-based, as
    doctest numbers them) replaced by what was printed: its lines, at the example's indent.
    The first lines of the examples corrected, and of those with an output that could not
    be run (printed None), go to ``quoted``."""
    got = {line: output for line, output in printed}
    lines = text.split("\n")
    try:
        examples = doctest.DocTestParser().get_examples(unfenced(text)) if got else []
    except ValueError:
        return text
    for example in reversed(examples):
        if example.lineno not in got:
            continue
        output = got[example.lineno]
        first = ">>> " + example.source.split("\n", 1)[0].replace("`", "")
        if output is None:
            if example.want.strip():
                quoted.unrun.insert(0, first)
            continue
        if _ADDRESS.search(output) or _same(example.want, output):
            continue
        start = example.lineno + example.source.count("\n")
        end = start + example.want.count("\n")
        lines[start:end] = [" " * example.indent + line if line else "" for line in output.rstrip("\n").split("\n")]
        quoted.fixed.insert(0, first)
    return "\n".join(lines)


def _same(want: str, got: str) -> bool:
    """Whether ``want`` and ``got`` differ only in trailing whitespace."""
    return [line.rstrip() for line in want.rstrip().split("\n")] == [line.rstrip() for line in got.rstrip().split("\n")]

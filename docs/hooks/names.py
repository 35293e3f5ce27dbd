"""MkDocs hook: the files, tests and subcommands a page names must exist.

Cross-references to Python names are checked by mkdocstrings and autorefs; this hook checks
what they cannot see. In inline code and in shell blocks it looks for

* a path of the checkout (``tests/test_sandbox.py``, ``scripts/ladder.py``,
  ``stamina_gym/reward.py``), which must exist;
* a test (``test_values_that_equal_anything_earn_nothing``, or
  ``tests/test_sandbox.py::test_...``), which must be defined in ``tests/`` (in that file);
* a subcommand (``stamina-gym validate``), which must be one of ``stamina_gym.cli``'s.

Each miss is a warning, which ``mkdocs build --strict`` turns into a failed build.
"""

from __future__ import annotations

import functools
import logging
import re
from pathlib import Path

log = logging.getLogger("mkdocs.plugins.stamina_names")
ROOT = Path(__file__).resolve().parents[2]

#: Paths a page names on purpose that a checkout does not hold (made when the wheel is built).
ABSENT_ON_PURPOSE = {"stamina_gym/_data"}

PATH = re.compile(r"(?<![\w/.-])((?:tests|scripts|stamina_gym|stamina_gym_verifiers|tasks|envs|docs|\.ci)/[\w/.-]*\w)"
                  r"(?:::(test_\w+))?(?![\w/.*<{-])")
TEST = re.compile(r"^(test_\w+)$")
SUBCOMMAND = re.compile(r"(?<![\w-])stamina-gym ([a-z][\w-]*)")
INLINE = re.compile(r"(`+)(.+?)\1", re.S)
FENCE = re.compile(r"^(`{3,})(\w*)[^\n]*\n(.*?)^\1\s*$", re.S | re.M)


@functools.cache
def subcommands() -> frozenset[str]:
    import argparse

    from stamina_gym.cli import build_parser

    return frozenset(name for action in build_parser()._actions if isinstance(action, argparse._SubParsersAction)
                     for name in action.choices)


@functools.cache
def tests_defined(rel: str | None) -> frozenset[str]:
    files = [ROOT / rel] if rel else sorted((ROOT / "tests").rglob("*.py"))
    pattern = re.compile(r"^\s*(?:async\s+)?def (test_\w+)", re.M)
    return frozenset(name for f in files if f.is_file() for name in pattern.findall(f.read_text(encoding="utf-8")))


def problems(text: str) -> list[str]:
    found = []
    for match in PATH.finditer(text):
        rel, test = match.group(1).rstrip("/."), match.group(2)
        if rel not in ABSENT_ON_PURPOSE and not (ROOT / rel).exists():
            found.append(f"no such path: {rel}")
        elif test and test not in tests_defined(rel):
            found.append(f"no test {test} in {rel}")
    for match in SUBCOMMAND.finditer(text):
        if match.group(1) not in subcommands():
            found.append(f"no such subcommand: stamina-gym {match.group(1)}")
    return found


def on_page_markdown(markdown: str, page, config, files) -> str:
    spans = []
    for fence in FENCE.finditer(markdown):
        if fence.group(2) in ("bash", "sh", "shell", "console", ""):  # commands, without their comments
            spans.append(re.sub(r"(^|\s)#.*", "", fence.group(3)))
    prose = FENCE.sub("", markdown)
    for match in INLINE.finditer(prose):
        code = match.group(2).strip()
        spans.append(code)
        if TEST.match(code) and code not in tests_defined(None):
            log.warning("%s: no test named %s in tests/", page.file.src_uri, code)
    for span in spans:
        for problem in problems(span):
            log.warning("%s: %s", page.file.src_uri, problem)
    return markdown

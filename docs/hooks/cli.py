"""MkDocs hook: the command-line page is rendered at build time from the argparse parser
that ``stamina-gym`` itself runs (``stamina_gym.cli.build_parser``), so it cannot drift.

``docs/cli.md`` holds the marker ``<!-- cli-reference -->``; this hook replaces it with the
help of the program and of every subcommand, nested ones included, each under a heading
whose anchor is the subcommand's path (``#run``, ``#review``). Widths and colours are fixed
so that the page is the same on every machine, and the builder's home folder is written
``~``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from pathlib import Path

MARKER = "<!-- cli-reference -->"


@contextlib.contextmanager
def _plain_terminal():
    saved = {k: os.environ.get(k) for k in ("COLUMNS", "NO_COLOR", "PYTHON_COLORS")}
    os.environ.update(COLUMNS="100", NO_COLOR="1", PYTHON_COLORS="0")
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(name, one-line help, parser) of each subcommand, in the order they were added."""
    found = []
    for action in parser._actions:  # argparse keeps no public list of its subparsers
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            found += [(name, helps.get(name, ""), sub) for name, sub in action.choices.items()]
    return found


def _sections(parser: argparse.ArgumentParser, path: tuple[str, ...], level: int) -> list[str]:
    home = str(Path.home())
    out = []
    for name, summary, sub in _subcommands(parser):
        here = (*path, name)
        out.append(f"{'#' * level} `{sub.prog}` {{ #{'-'.join(here)} }}\n")
        if summary:
            out.append(f"{summary[0].upper()}{summary[1:]}.\n")
        out.append("```text\n" + sub.format_help().replace(home, "~").rstrip() + "\n```\n")
        out += _sections(sub, here, min(level + 1, 6))
    return out


def render() -> str:
    from stamina_gym.cli import build_parser

    with _plain_terminal():
        parser = build_parser()
        names = ", ".join(f"[`{name}`](#{name})" for name, _, _ in _subcommands(parser))
        head = [f"Subcommands: {names}.\n", "```text\n" + parser.format_help().rstrip() + "\n```\n"]
        return "\n".join(head + _sections(parser, (), 2))


def on_page_markdown(markdown: str, page, config, files) -> str:
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, render())

"""The README is the front door: short, and every block in it works as written. Its Python
blocks run for real (the episode example plays two turns of StaminaTodo-v2); its shell
blocks name only scripts, extras and subcommands that exist; its links reach pages and
headings of docs/ that exist. The trainer examples are docs/trainers.md's
(tests/test_readme_examples.py)."""

from __future__ import annotations

import argparse
import re
import shlex
import unicodedata
from importlib.metadata import metadata
from pathlib import Path

import pytest

from stamina_gym.cli import build_parser

ROOT = Path(__file__).parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
EXTRAS = set(metadata("stamina-gym").get_all("Provides-Extra"))


def blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", README, flags=re.S | re.M)


def commands() -> list[list[str]]:
    """Each command line of the shell blocks, split as the shell splits it, comments left out."""
    return [shlex.split(line, comments=True) for block in blocks("bash") for line in block.splitlines() if line.strip()]


def subcommands() -> set[str]:
    return {name for action in build_parser()._actions if isinstance(action, argparse._SubParsersAction)
            for name in action.choices}


def test_the_readme_stays_one_screen():
    assert len(README.splitlines()) <= 200


def test_the_readme_has_an_episode_example_and_shell_blocks():
    assert len(blocks("python")) >= 1 and len(blocks("bash")) >= 1


@pytest.mark.parametrize("index", range(len(blocks("python"))))
def test_each_python_block_runs_as_written(index, capsys):
    code = blocks("python")[index]
    exec(compile(code, "README.md", "exec"), {"__name__": "readme"})  # noqa: S102 - the README's own example
    if "gym.make(" in code:  # the episode: the request of turn 1, then one graded line per turn played
        printed = capsys.readouterr().out
        graded = re.findall(r"^(\d+) (-?[\d.]+) (\w+)$", printed, flags=re.M)
        assert [int(turn) for turn, _, _ in graded] == [1, 2], printed
        assert printed.split("\n", 1)[0].strip(), "the request of turn 1 is printed first"


def test_the_shell_blocks_name_scripts_extras_and_tools_that_exist():
    named = commands()
    assert ["bash", "scripts/setup.sh"] in named and ["bash", "scripts/test.sh"] in named
    for words in named:
        for word in words:
            if word.startswith(("scripts/", ".ci/")):
                assert (ROOT / word).is_file(), word
            if extras := re.fullmatch(r"\.\[([\w,]+)\]", word):  # pip install '.[skyrl,serve]'
                assert set(extras.group(1).split(",")) <= EXTRAS, word
        if words[:2] == [".venv/bin/mkdocs", "serve"]:
            docs = [r for r in metadata("stamina-gym").get_all("Requires-Dist") if 'extra == "docs"' in r]
            assert (ROOT / "mkdocs.yml").is_file() and any(r.startswith("mkdocs") for r in docs), docs


def test_the_ci_command_is_the_readmes_test_command():
    assert "exec bash scripts/test.sh" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert ["bash", "scripts/test.sh"] in commands()


def test_every_extra_and_subcommand_the_readme_names_exists():
    listed = re.search(r"# extras: ([\w, ]+)", README)
    assert listed and set(listed.group(1).replace(" ", "").split(",")) <= EXTRAS
    for name in re.findall(r"`stamina-gym ([a-z][\w-]*)", README):
        assert name in subcommands(), name


def _slug(text: str) -> str:
    """A heading's id as Python-Markdown's toc extension makes it (its ``slugify``)."""
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", text).strip().lower())


def _anchors(page: Path) -> set[str]:
    """The ids of a page's headings, as the site's Markdown gives them (an explicit
    ``{ #id }`` or the heading's text slugified)."""
    found = set()
    for heading in re.findall(r"^#{1,6} (.+)$", re.sub(r"^```.*?^```$", "", page.read_text(encoding="utf-8"),
                                                      flags=re.S | re.M), flags=re.M):
        explicit = re.search(r"\{ *#([\w-]+) *\}$", heading)
        found.add(explicit.group(1) if explicit else _slug(heading.replace("`", "")))
    return found


def test_every_link_reaches_a_page_and_a_heading_that_exist():
    links = re.findall(r"\]\((docs/[^)#\s]+)(?:#([^)\s]+))?\)", README)
    assert len(links) >= 20
    for path, anchor in links:
        page = ROOT / path
        assert page.is_file(), path
        assert not anchor or anchor in _anchors(page), f"{path}#{anchor}"

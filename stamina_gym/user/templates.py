"""The user's messages as templates: ``{{ name }}`` filled from the episode's variant,
from the agent's own repository, and from the real output of a reproduction script (run
by the env, ``stamina_gym.reproduce``, and handed in).

Only turns that declare ``variables`` or ``repro`` are rendered (with Jinja2 and
``StrictUndefined``, so a misspelt name is an error, never an empty string); other
prompts are shown as written, braces and all.
"""

from __future__ import annotations

import ast
import functools
import re
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import jinja2

from stamina_gym import pyast, safetree
from stamina_gym.errors import TaskError, TreeTooLarge
from stamina_gym.safetree import MAX_FILES
from stamina_gym.task import RepoVariable, Turn

@functools.lru_cache(maxsize=1)
def _jinja() -> jinja2.Environment:
    return jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=True)


def is_template(turn: Turn) -> bool:
    return bool(turn.spec.variables or turn.spec.repro)


def template_names(text: str) -> set[str]:
    """Names a template uses (for checking task data)."""
    from jinja2 import meta

    return meta.find_undeclared_variables(_jinja().parse(text))


def render(text: str, values: dict[str, Any], where: str) -> str:
    try:
        return _jinja().from_string(text).render(**values)
    except jinja2.TemplateError as exc:
        raise TaskError(f"{where}: the prompt template does not render: {exc}") from None


def pick_values(turn: Turn, draw) -> dict[str, str]:
    """Values of the turn's list variables; ``draw(n)`` returns an index below n (the
    env passes its ``np_random``)."""
    return {name: spec[draw(len(spec))] for name, spec in sorted(turn.spec.variables.items()) if isinstance(spec, tuple)}


def _glob_match(parts: list[str], pattern: list[str]) -> bool:
    """``Path.glob``'s matching of one relative path (split at ``/``): ``*`` stays within
    a name, ``**`` spans any number of folders, none included."""
    if not pattern:
        return not parts
    if pattern[0] == "**":
        return any(_glob_match(parts[i:], pattern[1:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatchcase(parts[0], pattern[0]) and _glob_match(parts[1:], pattern[1:])


def _python_files(root: Path, glob: str) -> list[safetree.Entry]:
    """The regular files under ``root`` that ``glob`` matches, in ``Path.glob``'s sorted
    order. Symlinks are never followed: a link to a folder outside the tree must not let
    the agent read names out of the host's files through its next prompt. Past the work
    tree's caps, none."""
    pattern = glob.split("/")
    skip = lambda folder, names: {name for name in names if name == "__pycache__"}  # noqa: E731
    try:
        found = [entry for entry in safetree.walk(root, skip, max_files=MAX_FILES)
                 if entry.kind == "file" and _glob_match(entry.rel.split("/"), pattern)]  # fmt: skip
    except TreeTooLarge:
        return []
    return sorted(found, key=lambda entry: entry.rel.split("/"))


def repo_value(variable: RepoVariable, root: Path) -> str:
    """A file or function name found in the agent's repository (the work tree at
    ``root``), else the default."""
    pattern = re.compile(variable.pattern)
    for entry in _python_files(root, variable.glob):
        rel = entry.rel
        if variable.source == "file":
            if pattern.search(rel):
                return rel
            continue
        try:
            tree = pyast.parse(safetree.read_bytes(entry.path), filename=rel)
        except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and pattern.search(node.name):
                return node.name
    return variable.default


def render_prompt(turn: Turn, prompt: str, picked: dict[str, Any], tree: Path, repro: tuple[str, str] | None = None,
                  always: bool = False) -> str:  # fmt: skip
    """The prompt the agent sees at the start of ``turn``; ``picked`` holds the episode's
    values (task params and the turn's list variables), ``tree`` is the agent's work tree,
    ``repro`` the ``(script text, output)`` of the turn's reproduction script on it, which
    the caller ran (``stamina_gym.reproduce``: this package runs no code). ``always``:
    render even a turn without variables of its own (the task has params)."""
    if not (always or is_template(turn)):
        return prompt
    values: dict[str, Any] = dict(picked)
    for name, spec in turn.spec.variables.items():
        if isinstance(spec, RepoVariable):
            values[name] = repo_value(spec, tree)
    if turn.spec.repro:
        if repro is None:
            raise ValueError(f"turn {turn.index} has a reproduction script: render_prompt needs its output")
        values["repro_script"], values["repro_output"] = repro
    return render(prompt, values, f"{turn.dir}/turn.yaml")

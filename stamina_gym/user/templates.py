"""The user's messages as templates: ``{{ name }}`` filled from the episode's variant,
from the agent's own repository, and from the real output of a reproduction script.

Only turns that declare ``variables`` or ``repro`` are rendered (with Jinja2 and
``StrictUndefined``, so a misspelt name is an error, never an empty string); other
prompts are shown as written, braces and all.
"""

from __future__ import annotations

import ast
import functools
import re
import secrets
import shutil
from pathlib import Path
from typing import Any, Iterable

import jinja2

from stamina_gym import pyast
from stamina_gym.errors import TaskError
from stamina_gym.sandbox import REPO_MOUNT, Mount, RunResult, Sandbox
from stamina_gym.task import RepoVariable, Turn
from stamina_gym.workspace import Workspace

REPRO_MOUNT = "/repro"


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


def _python_files(workspace: Workspace, glob: str) -> Iterable[Path]:
    return sorted(p for p in workspace.path.glob(glob) if p.is_file() and not p.is_symlink() and "__pycache__" not in p.parts)


def repo_value(variable: RepoVariable, workspace: Workspace) -> str:
    """A file or function name found in the agent's repository, else the default."""
    pattern = re.compile(variable.pattern)
    for path in _python_files(workspace, variable.glob):
        rel = workspace.relative(path)
        if variable.source == "file":
            if pattern.search(rel):
                return rel
            continue
        try:
            tree = pyast.parse(path.read_bytes(), filename=rel)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and pattern.search(node.name):
                return node.name
    return variable.default


def run_repro_result(turn: Turn, workspace: Workspace, sandbox: Sandbox, scratch: Path) -> RunResult:
    """Run the turn's reproduction script in the sandbox on the agent's current code
    (mounted read-only; the script sits in a mount of its own, copied from the task)."""
    repro = turn.spec.repro
    assert repro is not None
    stage = scratch / f"repro-{secrets.token_hex(4)}"
    stage.mkdir(parents=True)
    try:
        shutil.copyfile(turn.dir / repro.script, stage / "repro.py")
        mounts = [Mount(workspace.path, REPO_MOUNT, writable=False), Mount(stage, REPRO_MOUNT)]
        return sandbox.run([sandbox.python, "-B", f"{REPRO_MOUNT}/repro.py"], mounts=mounts, timeout=repro.timeout_s,
                           env={"PYTHONPATH": REPO_MOUNT, "PYTHONDONTWRITEBYTECODE": "1"})  # fmt: skip
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def run_repro(turn: Turn, workspace: Workspace, sandbox: Sandbox, scratch: Path) -> tuple[str, str]:
    """``(script text, output)`` for the prompt; the output keeps its end."""
    repro = turn.spec.repro
    assert repro is not None
    script = (turn.dir / repro.script).read_text(encoding="utf-8")
    result = run_repro_result(turn, workspace, sandbox, scratch)
    output = result.output.rstrip()
    if result.timed_out:
        output += "\n(it hung; I stopped it)"
    if len(output) > repro.max_chars:
        output = "[...]\n" + output[-repro.max_chars :]
    return script.rstrip(), output or "(no output)"


def render_prompt(turn: Turn, prompt: str, picked: dict[str, Any], workspace: Workspace, sandbox: Sandbox, scratch: Path,
                  always: bool = False) -> str:  # fmt: skip
    """The prompt the agent sees at the start of ``turn``; ``picked`` holds the episode's
    values (task params and the turn's list variables). ``always``: render even a turn
    without variables of its own (the task has params)."""
    if not (always or is_template(turn)):
        return prompt
    values: dict[str, Any] = dict(picked)
    for name, spec in turn.spec.variables.items():
        if isinstance(spec, RepoVariable):
            values[name] = repo_value(spec, workspace)
    if turn.spec.repro:
        values["repro_script"], values["repro_output"] = run_repro(turn, workspace, sandbox, scratch)
    return render(prompt, values, f"{turn.dir}/turn.yaml")

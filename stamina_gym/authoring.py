"""Task authoring: a task's reference solution as a plain git repository, and back.

``checkout`` lays the seed repository and commits every turn's reference patch on top, one
commit per turn whose subject is the turn's folder name (``33-bulk-tags``). An author then
writes the next turns as ordinary commits (or rebases a block of turns onto another), and
``export`` writes each commit's diff back as its turn's ``reference.patch``.

Params are rendered at checkout with the values chosen there (the first value of each
param unless given), and remembered in the repository's git config. ``export`` leaves a
turn's patch alone when its rendered text still produces the commit exactly, so the
``{{ name }}`` templates in existing patches survive; a changed or new commit gets the
templates of the lines it shares with templated patches (see ``export``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Mapping

from stamina_gym.errors import TaskError
from stamina_gym.task import TaskMeta, _validate, render_params, turn_folders

_GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "stamina-gym",
    "GIT_AUTHOR_EMAIL": "author@stamina-gym.invalid",
    "GIT_COMMITTER_NAME": "stamina-gym",
    "GIT_COMMITTER_EMAIL": "author@stamina-gym.invalid",
    "LC_ALL": "C",
}
SEED_SUBJECT = "seed"


def _git(repo: Path, *args: str, input: str | None = None, env: Mapping[str, str] | None = None) -> str:
    proc = subprocess.run(
        ["git", "-c", "core.hooksPath=/dev/null", "-c", "commit.gpgsign=false", *args],
        cwd=repo, input=input, capture_output=True, text=True, check=False,
        env={**os.environ, **_GIT_ENV, **(env or {})},
    )  # fmt: skip
    if proc.returncode != 0:
        raise TaskError(f"git {' '.join(args)} failed in {repo}: {proc.stderr.strip()}")
    return proc.stdout


def _meta(task_dir: Path) -> TaskMeta:
    meta = _validate(TaskMeta, task_dir / "task.yaml")
    assert isinstance(meta, TaskMeta)
    return meta


def choose_params(meta: TaskMeta, given: Mapping[str, str]) -> dict[str, str | int]:
    """The first value of every param, overridden by ``given`` (which must name known
    params and values the task lists)."""
    unknown = sorted(set(given) - set(meta.params))
    if unknown:
        raise TaskError(f"unknown param(s) {unknown}; the task has {sorted(meta.params)}")
    params: dict[str, str | int] = {}
    for name, values in meta.params.items():
        if name not in given:
            params[name] = values[0]
            continue
        match = [value for value in values if str(value) == given[name]]
        if not match:
            raise TaskError(f"param {name}={given[name]!r} is not one of {list(values)}")
        params[name] = match[0]
    return params


def checkout(task_dir: Path, dest: Path, given: Mapping[str, str] | None = None, upto: int | None = None) -> dict:
    """Write the reference solution of ``task_dir`` as a git repository at ``dest``."""
    task_dir = task_dir.resolve()
    meta = _meta(task_dir)
    params = choose_params(meta, given or {})
    if dest.exists() and any(dest.iterdir()):
        raise TaskError(f"{dest} exists and is not empty")
    shutil.copytree(task_dir / "repo", dest, dirs_exist_ok=True)
    _git(dest, "init", "-q", "-b", "main")
    _git(dest, "config", "stamina.params", json.dumps(params, sort_keys=True))
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "-m", SEED_SUBJECT)
    dirs = turn_folders(task_dir)[:upto]
    for turn_dir in dirs:
        patch = render_params((turn_dir / "reference.patch").read_text(encoding="utf-8"), params, str(turn_dir))
        _git(dest, "apply", "--index", "--whitespace=nowarn", "-", input=patch)
        _git(dest, "commit", "-q", "--allow-empty", "-m", turn_dir.name)
    return {"params": params, "turns": len(dirs)}


def _produces(repo: Path, patch: str, parent: str, commit: str) -> bool:
    """Whether ``patch`` applied to ``parent`` gives exactly the tree of ``commit``."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        _git(repo, "read-tree", parent, env=env)
        try:
            _git(repo, "apply", "--cached", "--whitespace=nowarn", "-", input=patch, env=env)
        except TaskError:
            return False
        tree = _git(repo, "write-tree", env=env).strip()
    return tree == _git(repo, "rev-parse", f"{commit}^{{tree}}").strip()


def export(task_dir: Path, repo: Path) -> list[str]:
    """Write ``reference.patch`` of every turn whose text differs from its commit's diff
    (creating the turn folder for a new commit); returns the turn folders written.

    A line of a new diff that reads exactly like a rendered templated line of this or an
    earlier turn's patch gets its template back, so params keep varying in added and in
    context lines alike (a later patch whose context shows ``LIMIT = 7`` applies under every
    value of ``limit``)."""
    task_dir = task_dir.resolve()
    raw = _git(repo, "config", "--default", "{}", "stamina.params").strip()
    params = json.loads(raw)
    log = _git(repo, "log", "--reverse", "--format=%H %s", "main").splitlines()
    commits = [line.split(" ", 1) for line in log]
    if not commits or commits[0][1] != SEED_SUBJECT:
        raise TaskError(f"{repo}: the first commit on main must be {SEED_SUBJECT!r} (made by checkout)")
    names = [subject for _, subject in commits[1:]]
    for name in names:
        if "/" in name or name.startswith(".") or not name[:2].isdigit():
            raise TaskError(f"commit subject {name!r} is not a turn folder name like '34-slug'")
    for name in sorted({n for n in names if names.count(n) > 1}):
        raise TaskError(f"two commits name the turn {name!r}")
    written: list[str] = []
    templates: dict[str, str] = {}
    for (parent, _), (commit, name) in zip(commits, commits[1:]):
        path = task_dir / "turns" / name / "reference.patch"
        old = path.read_text(encoding="utf-8") if path.is_file() else None
        for line in _template_lines(old or ""):
            templates[render_params(line, params, str(path))] = line
        diff = _git(repo, "diff", "--no-color", "--no-ext-diff", "--no-renames", "--binary", parent, commit)
        new = _templated(diff, templates)
        # A patch that still applies, but with offsets or fuzz, is rewritten too: the hunk
        # headers must be exact, because the mutation check reads its line numbers there.
        if old is None or _body(new) != _body(old):
            lost = sorted(_template_lines(old or "") - _template_lines(new))
            if lost:
                raise TaskError(f"{path}: the commit changed and no longer shows the templated line(s) "
                                f"{lost}; write its templates by hand")  # fmt: skip
            if not _produces(repo, render_params(new, params, str(path)), parent, commit):
                raise TaskError(f"{path}: the templated diff does not reproduce the commit; write it by hand")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(new, encoding="utf-8")
            written.append(name)
            old = new
        for line in _template_lines(old):
            templates[render_params(line, params, str(path))] = line
    return written


def _body(patch: str) -> list[str]:
    """The patch without its ``index`` lines (blob ids say nothing a reader needs)."""
    return [line for line in patch.splitlines() if not line.startswith("index ")]


def _template_lines(patch: str) -> set[str]:
    """The contents (without the diff marker) of the patch's lines that hold a template."""
    return {line[1:] for line in patch.splitlines() if line[:1] in " +-" and "{{" in line and not line.startswith(("+++", "---"))}


def _templated(diff: str, templates: Mapping[str, str]) -> str:
    if not templates:
        return diff
    out = []
    for line in diff.splitlines(keepends=True):
        body, end = (line[:-1], "\n") if line.endswith("\n") else (line, "")
        if body[:1] in " +-" and not body.startswith(("+++", "---")) and body[1:] in templates:
            line = body[0] + templates[body[1:]] + end
        out.append(line)
    return "".join(out)

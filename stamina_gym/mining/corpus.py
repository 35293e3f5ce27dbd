"""The corpus: real projects' release histories as tasks, rebuilt from a manifest.

``corpus.yaml`` beside this module (in the wheel) names each package, the releases that
make its history (the first is the seed), its recipe, its split (``train`` or ``eval``,
so that evaluation can use projects training never saw), its licence, the sha256 of every
sdist (or a git repository and its range of commits), and the kept steps with their tests.
``stamina-gym corpus build`` downloads the sdists (each checked against its digest; a git
history is cloned), mines each package with its recipe and its pins
(``mine(pinned=...)``: the kept steps and tests are the manifest's, not what looked flaky
on this machine; each pinned test still has to fail before its step and pass after),
validates each task, and writes it under ``~/.cache/stamina-gym/corpus`` (or ``--out``),
with ``corpus-build.yaml`` saying what each build gave and how long it took. Built tasks
are not in the wheel: only the manifest and the recipes are.

A built corpus is a tasks folder: ``STAMINA_GYM_TASKS=~/.cache/stamina-gym/corpus`` gives
each task its env id ``Stamina-<name>-v1``. ``stamina-gym corpus pin NAME TASK`` writes a
mined task's releases, digests, kept steps and tests into the manifest (how an entry is
made: mine it once with ``stamina-gym mine``, read it, pin it).
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Callable, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from stamina_gym.config import format_validation_error, load_yaml
from stamina_gym.errors import ConfigError

MANIFEST = Path(__file__).parent / "corpus.yaml"
DEFAULT_OUT = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "stamina-gym" / "corpus"
BUILD_REPORT = "corpus-build.yaml"


class Entry(BaseModel):
    """One package of the corpus."""

    model_config = ConfigDict(extra="forbid")

    versions: tuple[str, ...] = Field(min_length=2)
    """The releases, oldest first; the first is the seed. With ``git``: the seed commit
    and the last one (full hashes)."""
    git: str | None = None
    """A git repository (a URL, or a path) whose first-parent commits after the seed, up
    to the last, are the history, instead of the releases' sdists: for a project whose
    releases give too few steps. A build clones it, so it needs the network (``corpus
    build --no-git`` leaves such entries out)."""
    recipe: str | None = None
    """The shipped recipe it is mined with (``stamina_gym.mining.recipe``)."""
    split: Literal["train", "eval"]
    licence: str = Field(min_length=1)
    """The licence of the product and test files (only packages that allow redistribution)."""
    sdists: dict[str, str] = Field(default_factory=dict)
    """Release -> sha256 of its sdist."""
    turns: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    """Kept release (or commit) -> its tests, relative to the turn's tests folder."""
    notes: dict[str, str] = Field(default_factory=dict)
    """Kept release (or commit) -> a curated note, a paragraph added to every prompt of its
    turn: what its tests hold the step to that the project's own words leave unsaid (a
    folded release's unlisted work, a rule its docstring gets wrong), read from the
    reference change. It adds to what the prompt tells and never changes which tests count."""
    task_version: int = Field(default=1, ge=1)
    """The built task's version (task.yaml's ``version``, which every record carries):
    moved whenever its pins or what its prompts ask change, so that results of another
    build are told apart."""

    @model_validator(mode="after")
    def _git_names_a_range(self) -> "Entry":
        if self.git and (len(self.versions) != 2 or self.sdists):
            raise ValueError("an entry with git names two versions, the seed commit and the last, and no sdists")
        return self

    @model_validator(mode="after")
    def _notes_of_pinned_steps(self) -> "Entry":
        unpinned = sorted(set(self.notes) - set(self.turns))
        if unpinned:
            raise ValueError(f"notes for steps that are not pinned turns: {', '.join(unpinned)}")
        return self


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = 1
    packages: dict[str, Entry] = Field(default_factory=dict)

    def split(self, name: str) -> list[str]:
        return sorted(package for package, entry in self.packages.items() if entry.split == name)


def load_manifest(path: Path = MANIFEST) -> Manifest:
    data = load_yaml(path)
    try:
        return Manifest.model_validate(data or {})
    except ValidationError as exc:
        raise ConfigError(f"{path}: {format_validation_error(exc)}") from None


def build(
    manifest: Manifest,
    out: Path = DEFAULT_OUT,
    *,
    only: list[str] | None = None,
    validate: bool = True,
    cache: Path | None = None,
    git: bool = True,
    progress: Callable[[str], None] = lambda line: None,
) -> dict[str, dict]:
    """Rebuild the corpus's tasks (``only`` these packages; without ``git``, none mined
    from a git history) into ``out``; the report of each package (also written to ``out /
    corpus-build.yaml``, merged with earlier builds'). A git history that cannot be cloned
    is a problem of its package's row; the others still build."""
    from stamina_gym.mining.mine import mine
    from stamina_gym.mining.recipe import find_recipe
    from stamina_gym.mining.sources import DEFAULT_CACHE, git_snapshots, pypi_snapshots
    from stamina_gym.task import load_task_dir
    from stamina_gym.validate import validate_task

    names = list(manifest.packages) if not only else only
    unknown = [name for name in names if name not in manifest.packages]
    if unknown:
        raise ConfigError(f"not in the corpus manifest: {', '.join(unknown)} (it has {', '.join(manifest.packages)})")
    names = [name for name in names if git or not manifest.packages[name].git]
    out.mkdir(parents=True, exist_ok=True)
    report_path = out / BUILD_REPORT
    report = (yaml.safe_load(report_path.read_text(encoding="utf-8")) or {}) if report_path.is_file() else {}
    for number, name in enumerate(names, 1):
        entry = manifest.packages[name]
        progress(f"[{number}/{len(names)}] {name} {entry.versions[0]}..{entry.versions[-1]} ({entry.split})")
        start = time.monotonic()
        task_dir = out / name.replace("-", "_")
        shutil.rmtree(task_dir, ignore_errors=True)
        if entry.git:
            try:
                clone = _clone(entry.git, (cache or DEFAULT_CACHE).parent / "git" / name, progress)
            except ConfigError as exc:
                report[name] = {"split": entry.split, "licence": entry.licence, "licence_file": None, "turns": 0, "tests": 0,
                                "pinned": bool(entry.turns), "pins_broken": {}, "pinned_steps_not_kept": [],
                                "validated": False, "problems": [str(exc)], "seconds": round(time.monotonic() - start, 1)}  # fmt: skip
                progress(f"  {name}: {exc}")
                report_path.write_text(yaml.safe_dump(report, sort_keys=False), encoding="utf-8")
                continue
            snapshots = git_snapshots(clone, seed=entry.versions[0], until=entry.versions[-1])
        else:
            snapshots = pypi_snapshots(name, list(entry.versions), cache or DEFAULT_CACHE, progress,
                                       digests=entry.sdists or None)  # fmt: skip
        result = mine(snapshots, task_dir, recipe=find_recipe(entry.recipe) if entry.recipe else None,
                      pinned=entry.turns or None, progress=lambda line: progress(f"  {line}"), version=entry.task_version)  # fmt: skip
        _add_notes(task_dir, {step.ref: step.turn for step in result.kept}, entry.notes)
        broken = {step.ref: step.pin_broken for step in result.steps if step.pin_broken}
        missing = sorted(set(entry.turns) - {step.ref for step in result.kept})
        problems = [str(problem) for problem in validate_task(load_task_dir(task_dir))] if validate else []
        report[name] = {
            "split": entry.split, "licence": entry.licence, "licence_file": _licence_file(task_dir), "turns": len(result.kept), "tests": sum(len(step.tests) for step in result.kept),
            "pinned": bool(entry.turns), "pins_broken": broken, "pinned_steps_not_kept": missing,
            "validated": validate, "problems": problems[:20], "seconds": round(time.monotonic() - start, 1),
        }  # fmt: skip
        progress(f"  {name}: {len(result.kept)} turn(s), {len(problems)} problem(s), {report[name]['seconds']} s")
        report_path.write_text(yaml.safe_dump(report, sort_keys=False), encoding="utf-8")
    return {name: report[name] for name in names}


def _add_notes(task_dir: Path, turns: dict[str, str], notes: dict[str, str]) -> None:
    """Add each curated note to every prompt of its step's turn (``turns``: kept step ->
    turn id). A note of a step that was not kept has no turn to go to: its pin is broken,
    which the build reports."""
    from stamina_gym.mining.mine import write_turn

    for ref, note in notes.items():
        if ref not in turns:
            continue
        path = task_dir / "turns" / turns[ref] / "turn.yaml"
        spec = yaml.safe_load(path.read_text(encoding="utf-8"))
        spec["prompts"] = [f"{prompt}\n\n{note.strip()}" for prompt in spec["prompts"]]
        write_turn(path, spec)


def _clone(source: str, folder: Path, progress: Callable[[str], None]) -> Path:
    """A clone of the repository at ``source`` in ``folder`` (made once, fetched after)."""
    import subprocess

    if (folder / ".git").is_dir():
        command, what = ["git", "-C", str(folder), "fetch", "--quiet", "origin"], f"fetching {source}"
    else:
        folder.parent.mkdir(parents=True, exist_ok=True)
        command, what = ["git", "clone", "--quiet", "--no-checkout", source, str(folder)], f"cloning {source}"
    progress(f"  {what}")
    try:
        run = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    except subprocess.TimeoutExpired:
        raise ConfigError(f"{what}: no answer in 30 minutes") from None
    if run.returncode != 0:
        raise ConfigError(f"{what} failed (a git history needs the network): {run.stderr.strip()[-300:]}")
    return folder


def _licence_file(task_dir: Path) -> str | None:
    """The project's own licence file in the seed repository (the sdist's), if any."""
    found = sorted(p.name for p in (task_dir / "repo").glob("*") if p.name.upper().startswith(("LICEN", "COPYING")))
    return found[0] if found else None


def pin(manifest_path: Path, name: str, task_dir: Path) -> Entry:
    """Write the releases, sdist digests, kept steps and tests of ``task_dir`` (a task
    ``stamina-gym mine`` wrote, its ``mining.yaml`` beside it) into ``name``'s entry."""
    manifest = load_manifest(manifest_path)
    if name not in manifest.packages:
        raise ConfigError(f"{manifest_path}: no entry {name!r}: add its versions, recipe, split and licence first")
    mined = load_yaml(task_dir / "mining.yaml")
    if not isinstance(mined, dict) or "steps" not in mined:
        raise ConfigError(f"{task_dir / 'mining.yaml'}: not a mining report")
    entry = manifest.packages[name]
    turns = {step["ref"]: tuple(tid.split("/", 1)[1] for tid in step["tests"])
             for step in mined["steps"] if step["status"] == "kept"}  # fmt: skip
    if entry.git:  # the manifest's two commits are the range; the mined steps are its kept commits
        pinned = entry.model_copy(update={"turns": turns})
        manifest.packages[name] = pinned
        _write_manifest(manifest_path, manifest)
        return pinned
    sdists = mined.get("sdists") or {}
    if not sdists or not set(sdists) <= set(entry.versions):
        raise ConfigError(f"{task_dir}: mined from releases {sorted(sdists)}, the manifest names {list(entry.versions)}")
    versions = tuple(version for version in entry.versions if version in sdists)  # a release without an sdist is no step
    pinned = entry.model_copy(update={"versions": versions, "sdists": sdists, "turns": turns})
    manifest.packages[name] = pinned
    _write_manifest(manifest_path, manifest)
    return pinned


def _write_manifest(path: Path, manifest: Manifest) -> None:
    from stamina_gym.mining.mine import dump_yaml

    # a note of several lines as a literal block, as a curator edits it
    data = manifest.model_dump(mode="json", exclude_none=True)
    for entry in data["packages"].values():
        if not entry["notes"]:
            del entry["notes"]
    path.write_text(_HEADER + dump_yaml(data, width=120), encoding="utf-8")


_HEADER = "# The corpus manifest (stamina_gym.mining.corpus): `stamina-gym corpus build` rebuilds it.\n"

"""The corpus: real projects' release histories as tasks, rebuilt from a manifest.

``corpus.yaml`` beside this module (in the wheel) names each package, the releases that
make its history (the first is the seed), its recipe, its split (``train`` or ``eval``,
so that evaluation can use projects training never saw), its licence, the sha256 of every
sdist, and the kept steps with their tests. ``stamina-gym corpus build`` downloads the
sdists (each checked against its digest), mines each package with its recipe and its pins
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
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from stamina_gym.config import format_validation_error, load_yaml
from stamina_gym.errors import ConfigError

MANIFEST = Path(__file__).parent / "corpus.yaml"
DEFAULT_OUT = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "stamina-gym" / "corpus"
BUILD_REPORT = "corpus-build.yaml"


class Entry(BaseModel):
    """One package of the corpus."""

    model_config = ConfigDict(extra="forbid")

    versions: tuple[str, ...] = Field(min_length=2)
    """The releases, oldest first; the first is the seed."""
    recipe: str | None = None
    """The shipped recipe it is mined with (``stamina_gym.mining.recipe``)."""
    split: Literal["train", "eval"]
    licence: str = Field(min_length=1)
    """The licence of the product and test files (only packages that allow redistribution)."""
    sdists: dict[str, str] = Field(default_factory=dict)
    """Release -> sha256 of its sdist."""
    turns: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    """Kept release -> its tests, relative to the turn's tests folder."""


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
    progress: Callable[[str], None] = lambda line: None,
) -> dict[str, dict]:
    """Rebuild the corpus's tasks (``only`` these packages) into ``out``; the report of
    each package (also written to ``out / corpus-build.yaml``, merged with earlier builds')."""
    from stamina_gym.mining.mine import mine
    from stamina_gym.mining.recipe import find_recipe
    from stamina_gym.mining.sources import DEFAULT_CACHE, pypi_snapshots
    from stamina_gym.task import load_task_dir
    from stamina_gym.validate import validate_task

    names = list(manifest.packages) if not only else only
    unknown = [name for name in names if name not in manifest.packages]
    if unknown:
        raise ConfigError(f"not in the corpus manifest: {', '.join(unknown)} (it has {', '.join(manifest.packages)})")
    out.mkdir(parents=True, exist_ok=True)
    report_path = out / BUILD_REPORT
    report = (yaml.safe_load(report_path.read_text(encoding="utf-8")) or {}) if report_path.is_file() else {}
    for number, name in enumerate(names, 1):
        entry = manifest.packages[name]
        progress(f"[{number}/{len(names)}] {name} {entry.versions[0]}..{entry.versions[-1]} ({entry.split})")
        start = time.monotonic()
        task_dir = out / name.replace("-", "_")
        shutil.rmtree(task_dir, ignore_errors=True)
        snapshots = pypi_snapshots(name, list(entry.versions), cache or DEFAULT_CACHE, progress,
                                   digests=entry.sdists or None)  # fmt: skip
        result = mine(snapshots, task_dir, recipe=find_recipe(entry.recipe) if entry.recipe else None,
                      pinned=entry.turns or None, progress=lambda line: progress(f"  {line}"))  # fmt: skip
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
    sdists = mined.get("sdists") or {}
    if not sdists or not set(sdists) <= set(entry.versions):
        raise ConfigError(f"{task_dir}: mined from releases {sorted(sdists)}, the manifest names {list(entry.versions)}")
    turns = {step["ref"]: tuple(tid.split("/", 1)[1] for tid in step["tests"])
             for step in mined["steps"] if step["status"] == "kept"}  # fmt: skip
    versions = tuple(version for version in entry.versions if version in sdists)  # a release without an sdist is no step
    pinned = entry.model_copy(update={"versions": versions, "sdists": sdists, "turns": turns})
    manifest.packages[name] = pinned
    manifest_path.write_text(_HEADER + yaml.safe_dump(manifest.model_dump(mode="json"), sort_keys=False, width=120),
                             encoding="utf-8")  # fmt: skip
    return pinned


_HEADER = "# The corpus manifest (stamina_gym.mining.corpus): `stamina-gym corpus build` rebuilds it.\n"

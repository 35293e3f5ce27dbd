"""``stamina-gym mine``: a task from a local git repository's commits or a package's releases."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from stamina_gym.errors import ConfigError

DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "stamina-gym" / "sdists"


def add_parser(sub) -> None:
    mine = sub.add_parser("mine", help="turn a repository's commits or a package's releases into a validated task")
    mine.add_argument("source", help="a local git repository, or pypi:NAME (its releases' sdists)")
    mine.add_argument("--out", required=True, help="the task folder to write (new or empty; its name is the task id)")
    mine.add_argument("--seed", help="git: the commit the task starts from (the seed repository)")
    mine.add_argument("--until", help="git: the last commit of the range (default HEAD); first-parent history")
    mine.add_argument("--commits", nargs="+", metavar="REF", help="git: the steps, in order, instead of a range")
    mine.add_argument("--versions", nargs="+", metavar="V",
                      help="pypi: FIRST:LAST (every release between, inclusive) or the releases in order; the first is the seed")
    mine.add_argument("--cache", default=str(DEFAULT_CACHE), help="pypi: where sdists are kept (default: %(default)s)")
    mine.add_argument("--recipe", metavar="FILE|NAME",
                      help="what the project needs: test dependencies, the tests' import roots, source fixes, files to "
                           "ignore (a YAML file, or the name of a shipped one: six, tabulate, ...; copied into the task)")
    mine.add_argument("--fix", nargs=3, action="append", default=[], metavar=("GLOB", "OLD", "NEW"),
                      help="a source fix applied to every snapshot, e.g. '**/*.py' 'collections.Mapping' "
                           "'collections.abc.Mapping' (repeatable; recorded in task.yaml)")
    mine.add_argument("--runs", type=int, default=3, help="runs of each step's tests before and after (flaky ones drop)")
    mine.add_argument("--no-validate", action="store_true", help="skip validating the mined task")
    mine.set_defaults(func=cmd_mine)


def cmd_mine(args: argparse.Namespace) -> int:
    from stamina_gym.mining.mine import mine
    from stamina_gym.mining.recipe import find_recipe
    from stamina_gym.mining.sources import git_snapshots, index_versions, pypi_snapshots
    from stamina_gym.task import SourceFix
    from stamina_gym.task import load_task_dir
    from stamina_gym.validate import validate_task

    def progress(line: str) -> None:
        print(line, flush=True)

    if args.runs < 1:
        raise ConfigError(f"--runs {args.runs}: at least one run is needed")
    fixes = [SourceFix(path=glob, old=old, new=new) for glob, old, new in args.fix]
    recipe = find_recipe(args.recipe) if args.recipe else None
    if args.source.startswith("pypi:"):
        name = args.source.removeprefix("pypi:")
        if not args.versions:
            raise ConfigError("pypi sources need --versions FIRST:LAST or a list of releases")
        versions = expand_versions(name, args.versions, index_versions)
        snapshots = pypi_snapshots(name, versions, Path(args.cache), progress)
    else:
        if not args.seed:
            raise ConfigError("git sources need --seed REF (the commit the task starts from)")
        snapshots = git_snapshots(Path(args.source), seed=args.seed, until=args.until, commits=args.commits or ())
    progress(f"{len(snapshots)} snapshots: {snapshots[0].ref[:12]} .. {snapshots[-1].ref[:12]}")
    result = mine(snapshots, Path(args.out), fixes=fixes, recipe=recipe, runs=args.runs, progress=progress)
    print(f"\nyield: {len(result.kept)} turn(s) from {result.candidates} candidate step(s) ({result.rate:.0%}); "
          f"report in {result.task / 'mining.yaml'}")  # fmt: skip
    for step in result.steps:
        print(f"  {step.ref[:12]:<12}  {step.status:<7}  " + (step.turn if step.status == "kept" else step.reason))
    if args.no_validate:
        return 0
    problems = validate_task(load_task_dir(result.task), progress=progress)
    for problem in problems:
        print(f"PROBLEM {problem}")
    print("valid" if not problems else f"{len(problems)} problem(s)")
    return 0 if not problems else 1


def expand_versions(name: str, wanted: list[str], listing) -> list[str]:
    """``FIRST:LAST`` expanded over the index's releases, or the list as given."""
    from packaging.version import Version

    if len(wanted) == 1 and ":" in wanted[0]:
        first, _, last = wanted[0].partition(":")
        available = listing(name)
        try:
            low, high = Version(first), Version(last)
        except ValueError as exc:
            raise ConfigError(f"--versions {wanted[0]}: {exc}") from None
        chosen = [v for v in available if low <= Version(v) <= high]
        if len(chosen) < 2:
            raise ConfigError(f"pypi:{name}: {len(chosen)} release(s) between {first} and {last} "
                              f"(the index has {', '.join(available[-12:])})")  # fmt: skip
        return chosen
    return list(wanted)

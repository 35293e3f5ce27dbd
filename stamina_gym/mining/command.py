"""``stamina-gym mine``: a task from a local git repository's commits or a package's releases."""

from __future__ import annotations

import argparse
from pathlib import Path

from stamina_gym.errors import ConfigError
from stamina_gym.mining.sources import DEFAULT_CACHE  # where sdists are kept (scripts import it from here)


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
    mine.add_argument("--max-turn-lines", type=int, default=None, metavar="N",
                      help="the most changed lines of product code one turn holds (default: the recipe's "
                           "max_turn_lines, else 1500, the miner's MAX_TURN_LINES): a step past it moves the seed forward before the first kept turn, and is "
                           "dropped after")  # fmt: skip
    mine.add_argument("--no-validate", action="store_true", help="skip validating the mined task")
    mine.set_defaults(func=cmd_mine)

    corpus = sub.add_parser("corpus", help="the corpus of mined real projects: build it from its manifest, pin an entry")
    actions = corpus.add_subparsers(dest="action", required=True)
    build = actions.add_parser("build", help="rebuild the corpus's tasks from the package index into a folder")
    build.add_argument("--out", default=None, help="where the tasks go (default: ~/.cache/stamina-gym/corpus)")
    build.add_argument("--only", nargs="+", metavar="NAME", help="build only these packages")
    build.add_argument("--split", choices=["train", "eval"], help="build only the packages of this split")
    build.add_argument("--manifest", default=None, help="another manifest (default: the shipped one)")
    build.add_argument("--no-validate", action="store_true", help="skip validating each task")
    build.add_argument("--no-git", action="store_true", help="leave out the packages mined from a git history (they need the network)")
    build.set_defaults(func=cmd_corpus_build)
    show = actions.add_parser("list", help="the manifest's packages: releases, split, pinned turns")
    show.add_argument("--manifest", default=None)
    show.set_defaults(func=cmd_corpus_list)
    pin = actions.add_parser("pin", help="write a mined task's releases, sdist digests, kept steps and tests into the manifest")
    pin.add_argument("name", help="the package's entry in the manifest")
    pin.add_argument("task", help="the task folder stamina-gym mine wrote (its mining.yaml beside it)")
    pin.add_argument("--manifest", required=True, help="the manifest file to update (the repository's: stamina_gym/mining/corpus.yaml)")
    pin.set_defaults(func=cmd_corpus_pin)


def cmd_corpus_build(args: argparse.Namespace) -> int:
    from stamina_gym.mining.corpus import DEFAULT_OUT, MANIFEST, build, load_manifest

    manifest = load_manifest(Path(args.manifest) if args.manifest else MANIFEST)
    only = args.only or (manifest.split(args.split) if args.split else None)
    out = Path(args.out) if args.out else DEFAULT_OUT
    report = build(manifest, out, only=only, validate=not args.no_validate, git=not args.no_git,
                   progress=lambda line: print(line, flush=True))  # fmt: skip
    print(f"\n| package | split | turns | tests | pins broken | problems | seconds |\n|---|---|---:|---:|---:|---:|---:|")
    for name, row in report.items():
        print(f"| {name} | {row['split']} | {row['turns']} | {row['tests']} | {len(row['pins_broken']) + len(row['pinned_steps_not_kept'])} "
              f"| {len(row['problems'])} | {row['seconds']} |")  # fmt: skip
    print(f"\ntasks in {out}: STAMINA_GYM_TASKS={out} gives each its env id Stamina-<name>-v1")
    failed = [name for name, row in report.items() if row["problems"] or row["pins_broken"] or row["pinned_steps_not_kept"]]
    if failed:
        print(f"FAILED: {', '.join(failed)} (see {out / 'corpus-build.yaml'})")
    return 1 if failed else 0


def cmd_corpus_list(args: argparse.Namespace) -> int:
    from stamina_gym.mining.corpus import MANIFEST, load_manifest

    manifest = load_manifest(Path(args.manifest) if args.manifest else MANIFEST)
    print("| package | releases | split | recipe | licence | pinned turns |\n|---|---|---|---|---|---:|")
    for name, entry in manifest.packages.items():
        history = f"git {entry.git} {entry.versions[0][:10]}..{entry.versions[-1][:10]}" if entry.git else \
            f"{entry.versions[0]}..{entry.versions[-1]} ({len(entry.versions)})"
        print(f"| {name} | {history} | {entry.split} "
              f"| {entry.recipe or '-'} | {entry.licence} | {len(entry.turns)} |")  # fmt: skip
    return 0


def cmd_corpus_pin(args: argparse.Namespace) -> int:
    from stamina_gym.mining.corpus import pin

    entry = pin(Path(args.manifest), args.name, Path(args.task))
    print(f"{args.name}: {len(entry.versions)} releases, {len(entry.turns)} kept step(s), "
          f"{sum(map(len, entry.turns.values()))} test(s) pinned in {args.manifest}")  # fmt: skip
    return 0


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
    if args.max_turn_lines is not None and args.max_turn_lines < 1:
        raise ConfigError(f"--max-turn-lines {args.max_turn_lines}: a turn holds at least one changed line")
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
    bound = {} if args.max_turn_lines is None else {"max_turn_lines": args.max_turn_lines}
    result = mine(snapshots, Path(args.out), fixes=fixes, recipe=recipe, runs=args.runs, progress=progress, **bound)
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

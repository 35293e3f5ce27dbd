"""Mine real packages' full release ranges from the package index into tasks, validate
each, and print the yield table.

    .venv/bin/python scripts/mine_index.py [--out DIR] [--only NAME ...]

The suite mines a short range of one package (``tests/test_mining_index.py``, a few
minutes); this is the whole build: six packages over every release of the ranges below,
each with its shipped recipe where it has one, each expected to give a task of at least
its number of turns that validates, with at least 60% of its candidate steps kept. Half an
hour and more on a 2-core machine; sdists are cached in ``~/.cache/stamina-gym/sdists``.
Exits 1 when a package misses its goal.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from stamina_gym.mining.command import DEFAULT_CACHE, expand_versions
from stamina_gym.mining.mine import mine
from stamina_gym.mining.recipe import find_recipe, shipped_recipes
from stamina_gym.mining.sources import index_versions, pypi_snapshots
from stamina_gym.task import load_task_dir
from stamina_gym.validate import validate_task

#: Package, release range, the fewest turns it must give. Each is mined with its shipped
#: recipe where there is one (``stamina_gym/mining/recipes``): a module and its test file
#: (parse), unittest classes with mixins and code older than today's Python (cachetools),
#: subtests, unittest.mock and a 600-test module (more-itertools); and three packages the
#: miner was not tuned on: tests under ``if six.PY3:`` (six), a test dependency and helpers
#: imported by top-level name (tabulate), a stub library (packaging).
PACKAGES = [("parse", "1.8.0:1.22.4", 15), ("cachetools", "2.0.0:6.0.0", 15), ("more-itertools", "8.6.0:10.8.0", 15),
            ("six", "1.4.0:1.17.0", 10), ("tabulate", "0.7.2:0.10.0", 10), ("packaging", "20.0:24.2", 10)]  # fmt: skip
MIN_RATE = 0.6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="where the tasks go (default: a temporary folder)")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="mine only these packages")
    args = parser.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="stamina-mine-index-"))
    rows, failed = [], False
    for name, versions, min_turns in PACKAGES:
        if args.only and name not in args.only:
            continue
        print(f"mining {name} {versions} ...", file=sys.stderr, flush=True)
        start = time.monotonic()
        releases = expand_versions(name, [versions], index_versions)
        snapshots = pypi_snapshots(name, releases, DEFAULT_CACHE)
        recipe = find_recipe(name) if name in shipped_recipes() else None
        result = mine(snapshots, out / name.replace("-", "_"), recipe=recipe, runs=3,
                      progress=lambda line: print(f"  {line}", file=sys.stderr, flush=True))
        problems = validate_task(load_task_dir(result.task))
        elapsed = time.monotonic() - start
        ok = len(result.kept) >= min_turns and result.rate >= MIN_RATE and not problems
        failed |= not ok
        rows.append((name, versions, len(releases), result.candidates, len(result.kept), result.rate, len(problems), elapsed,
                     f">= {min_turns} turns: {'met' if ok else 'MISSED'}"))  # fmt: skip
    print(f"| package | range | releases | candidates | kept turns | kept share | validate problems | time (s) | goal (>= {MIN_RATE:.0%} kept, valid) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    for name, versions, releases, steps, kept, rate, problems, elapsed, goal in rows:
        print(f"| {name} | {versions} | {releases} | {steps} | {kept} | {rate:.0%} | {problems} | {elapsed:.0f} | {goal} |")
    print(f"tasks in {out}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

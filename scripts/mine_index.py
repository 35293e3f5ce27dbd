"""Mine real packages' full release ranges from the package index into tasks, validate
each, and print the yield table.

    .venv/bin/python scripts/mine_index.py [--out DIR] [--only NAME ...]

The suite mines a short range of one package (``tests/test_mining_index.py``, a few
minutes); this is the whole build: parse, cachetools (with its one declared source fix)
and more-itertools over every release of the ranges below, each expected to give a task
of at least 15 turns that validates, with at least 60% of its candidate steps kept.
About a quarter of an hour on a 2-core machine; sdists are cached in
``~/.cache/stamina-gym/sdists``. Exits 1 when a package misses its goal.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from stamina_gym.mining.command import DEFAULT_CACHE, expand_versions
from stamina_gym.mining.mine import mine
from stamina_gym.mining.sources import index_versions, pypi_snapshots
from stamina_gym.task import SourceFix, load_task_dir
from stamina_gym.validate import validate_task

MUTABLE_MAPPING = SourceFix(path="**/*.py", old="collections.MutableMapping", new="collections.abc.MutableMapping")
#: Package, release range, source fixes: a module and its test file (parse), unittest
#: classes with mixins in the tests package and code older than today's Python
#: (cachetools), subtests, unittest.mock and a 600-test module (more-itertools).
PACKAGES = [("parse", "1.8.0:1.22.4", []), ("cachetools", "2.0.0:6.0.0", [MUTABLE_MAPPING]),
            ("more-itertools", "8.6.0:10.8.0", [])]  # fmt: skip
MIN_TURNS, MIN_RATE = 15, 0.6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="where the tasks go (default: a temporary folder)")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="mine only these packages")
    args = parser.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="stamina-mine-index-"))
    rows, failed = [], False
    for name, versions, fixes in PACKAGES:
        if args.only and name not in args.only:
            continue
        print(f"mining {name} {versions} ...", file=sys.stderr, flush=True)
        start = time.monotonic()
        releases = expand_versions(name, [versions], index_versions)
        snapshots = pypi_snapshots(name, releases, DEFAULT_CACHE)
        result = mine(snapshots, out / name.replace("-", "_"), fixes=fixes, runs=3,
                      progress=lambda line: print(f"  {line}", file=sys.stderr, flush=True))
        problems = validate_task(load_task_dir(result.task))
        elapsed = time.monotonic() - start
        ok = len(result.kept) >= MIN_TURNS and result.rate >= MIN_RATE and not problems
        failed |= not ok
        rows.append((name, versions, len(releases), result.candidates, len(result.kept), result.rate, len(problems), elapsed, ok))
    print(f"| package | range | releases | candidates | kept turns | kept share | validate problems | time (s) | goal (>= {MIN_TURNS} turns, >= {MIN_RATE:.0%}, valid) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    for name, versions, releases, steps, kept, rate, problems, elapsed, ok in rows:
        print(f"| {name} | {versions} | {releases} | {steps} | {kept} | {rate:.0%} | {problems} | {elapsed:.0f} | {'met' if ok else 'MISSED'} |")
    print(f"tasks in {out}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

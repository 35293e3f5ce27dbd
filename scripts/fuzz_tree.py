"""Build random hostile work trees through the env's tools, many more than the test suite
does, and check that every tool still answers and close() leaves nothing behind.

    .venv/bin/python scripts/fuzz_tree.py [--examples N] [--seed S]

The trees and the checks are those of ``tests/test_hostile_tree.py``
(``TREES``, ``check_hostile_tree``); the suite runs a fixed, derandomized handful, this
script runs N random ones (a seed makes a run repeatable) and prints each example's time.
A failing example is shrunk and printed by hypothesis, and the script exits 1.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, given, seed, settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.test_hostile_tree import TREES, check_hostile_tree  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description="Fuzz the env's tools with random hostile work trees.")
    parser.add_argument("--examples", type=int, default=200, help="how many random trees to try (default 200)")
    parser.add_argument("--seed", type=int, default=None, help="seed of the draw, for a repeatable run")
    args = parser.parse_args()
    times: list[float] = []

    @settings(max_examples=args.examples, deadline=None, database=None, print_blob=True,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(tree=TREES)
    def fuzz(tree) -> None:
        start = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="fuzz-tree-") as scratch:
            check_hostile_tree(tree, Path(scratch) / "ran")
        times.append(time.monotonic() - start)
        print(f"example {len(times)}: {times[-1]:.1f} s, {len(tree[0])} operations, repo={tree[1]}", flush=True)

    if args.seed is not None:
        fuzz = seed(args.seed)(fuzz)
    try:
        fuzz()  # hypothesis draws the tree
    except Exception as exc:  # hypothesis has printed the falsifying example
        print(f"FAILED: {type(exc).__name__}: {str(exc)[:2000]}", file=sys.stderr)
        return 1
    print(f"{len(times)} examples passed in {sum(times):.0f} s (slowest {max(times, default=0):.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

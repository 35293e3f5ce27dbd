"""What measuring the reference's quality adds to a submit, against the quality review
without it, measured in the same run.

    .venv/bin/python scripts/bench_reference_quality.py [--turns N] [--repeat R]

The agent's tree at turn k is the todo reference after k turns under one params variant;
the reference the quality term compares it with is the same code under another variant,
so no file is shared between the two (the first measurement, alone, uses a third), as for any agent that does not write the reference
byte for byte (the oracle shares every file and pays nothing). Turn by turn, on cold
caches, pylint every 5th turn as in StaminaTodo-v2: the agent's measurement alone (the
review before the reference existed), then the agent's and the reference's measurement
one after the other (what a submit waits for when the agent submits at once; an agent
that thinks hides the second part, which starts when the turn begins).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from stamina_gym.config import QualityConfig
from stamina_gym.quality.measure import AnalysisCache, QualityMeter
from stamina_gym.quality.reference import ReferenceTrack, forget_snapshots
from stamina_gym.task import load_task


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    task = load_task("todo")
    config = QualityConfig()
    variants = [task.choose_params(lambda n, k=k: k % n) for k in range(3)]  # three different variants
    alone, both = [], []
    for repeat in range(args.repeat):
        root = Path(tempfile.mkdtemp(prefix="bench-reference-"))
        forget_snapshots()
        try:
            def meter(name: str) -> QualityMeter:
                return QualityMeter(root / name, AnalysisCache(), exclude=config.exclude)

            # the agent's trees come from a track too: the same replay, another variant
            trees = [ReferenceTrack(task, variants[k], meter(f"agent-{k}"), root / f"agent-{k}") for k in (0, 1)]
            reference = ReferenceTrack(task, variants[2], meter("reference"), root / "reference")
            for turn in range(1, args.turns + 1):
                pylint = turn % 5 == 0
                start = time.perf_counter()
                trees[0].snapshot(turn, pylint=pylint)
                alone.append(time.perf_counter() - start)
                start = time.perf_counter()
                trees[1].snapshot(turn, pylint=pylint)
                reference.snapshot(turn, pylint=pylint)
                both.append(time.perf_counter() - start)
            print(f"repeat {repeat + 1}/{args.repeat}: {args.turns} turns", flush=True)
        finally:
            shutil.rmtree(root, ignore_errors=True)
    a, b = statistics.median(alone) * 1000, statistics.median(both) * 1000
    ta, tb = sum(alone) / args.repeat, sum(both) / args.repeat
    print(f"\n| per submit, turns 1-{args.turns}, cold caches | agent's quality alone | with the reference's | ratio |")
    print("|---|---:|---:|---:|")
    print(f"| median ms | {a:.0f} | {b:.0f} | {b / a:.2f} |")
    print(f"| total s over the turns | {ta:.1f} | {tb:.1f} | {tb / ta:.2f} |")


if __name__ == "__main__":
    main()

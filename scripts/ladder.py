"""Does the reward rank agents of graded skill the way an expert would? Plays the ladder
of scripted policies (``stamina_gym.agents.ladder``) on an env and prints the mean total
reward per rung with a 95% interval over the seeds, each rung's reward terms, and whether
the ladder's order holds.

    .venv/bin/python scripts/ladder.py [--env StaminaTodo-v2] [--seeds 0 1 2] [--turns N] [--rungs NAME ...] [--sandbox docker]

The ``attack-*`` rungs forge in-sandbox judging three ways (``ATTACKS``); each must earn
no more than the null agent + 0.05 a turn. With ``--rungs`` only the rungs named play (``guess``, ``oracle-skip-25``, ...), and the
order is checked among them.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import stamina_gym  # noqa: F401 - registers the env ids
from stamina_gym.agents.ladder import RUNGS, order_problems, rung_name
from stamina_gym.harness import play_rung

#: Two-sided 95% quantiles of Student's t by degrees of freedom (more than 10: normal).
_T95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26, 10: 2.23}


def interval(values: list[float]) -> float:
    """Half-width of the 95% t interval of the mean (0 for a single value)."""
    if len(values) < 2:
        return 0.0
    return _T95.get(len(values) - 1, 1.96) * statistics.stdev(values) / len(values) ** 0.5


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="StaminaTodo-v2")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--turns", type=int, help="play only the first N turns (default: all)")
    parser.add_argument("--rungs", nargs="+", metavar="NAME", help="play only these rungs (default: all)")
    parser.add_argument("--sandbox", choices=["local", "docker"], help="the sandbox's kind (default: the env's)")
    args = parser.parse_args()
    names = [rung_name(agent, kwargs) for agent, kwargs in RUNGS]
    unknown = sorted(set(args.rungs or ()) - set(names))
    if unknown:
        parser.error(f"no rung named {', '.join(unknown)}; the rungs: {', '.join(names)}")
    rows, started, turns = [], time.monotonic(), 1
    with tempfile.TemporaryDirectory(prefix="ladder-") as tmp:
        for agent, kwargs in RUNGS:
            name = rung_name(agent, kwargs)
            if args.rungs and name not in args.rungs:
                continue
            runs = [play_rung(args.env, agent, kwargs, seed, args.turns, Path(tmp, name, str(seed)), args.sandbox) for seed in args.seeds]
            totals = [run["total"] for run in runs]
            turns = max(turns, *(run["turns"] for run in runs))
            terms = {t: statistics.mean(run["terms"].get(t, 0.0) for run in runs) for t in sorted({t for r in runs for t in r["terms"]})}
            rows.append((name, statistics.mean(totals), interval(totals), terms))
            print(f"{name}: {statistics.mean(totals):.3f} ±{interval(totals):.3f} (seeds: {', '.join(f'{t:.3f}' for t in totals)}; "
                  f"{time.monotonic() - started:.0f}s)", file=sys.stderr, flush=True)  # fmt: skip
    shown = ("tests", "bonus", "regression", "quality", "rules", "tamper")
    print(f"\n{args.env}, {args.turns or 'all'} turns, seeds {' '.join(map(str, args.seeds))}, sandbox {args.sandbox or 'as the env says'}\n")
    print("| rung | mean total reward | 95% interval | " + " | ".join(shown) + " |")
    print("|---|---:|---:|" + "---:|" * len(shown))
    for name, mean, half, terms in rows:
        print(f"| {name} | {mean:.3f} | ±{half:.3f} | " + " | ".join(f"{terms.get(t, 0.0):.3f}" for t in shown) + " |")
    problems = order_problems({name: mean for name, mean, _, _ in rows}, turns)
    print("\nthe ladder's order holds" if not problems else "\nORDER BROKEN:\n  " + "\n  ".join(problems))
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())

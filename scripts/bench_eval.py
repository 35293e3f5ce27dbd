"""Cost of fair evaluation over a bare episode, measured against baselines in the same run.

    .venv/bin/python scripts/bench_eval.py [--repeat N] [--turns N] [--env StaminaTodo-v2]

Rows: an oracle episode through ``stamina-gym eval`` (fresh env, fsynced step and turn
records, final patches, config hash) next to the same episode through the bare
``harness.run_episode``; restoring a recorded run to its last turn (reset + replayed
patches, what ``--resume`` does) next to replaying it with the oracle; summary and HTML
report of the records. Measurements are interleaved so that noise hits both sides alike.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import gymnasium as gym

import stamina_gym  # noqa: F401 - registers the env ids
from stamina_gym.agents import make_agent
from stamina_gym.evaluation.config import AgentSpec, EvalConfig
from stamina_gym.records import read_lines
from stamina_gym.evaluation.report import build_report
from stamina_gym.evaluation.runner import Evaluation
from stamina_gym.evaluation.summary import summarize
from stamina_gym.harness import run_episode


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def bare_episode(env_id: str, turns: int) -> None:
    env = gym.make(env_id, max_turns=turns)
    agent = make_agent("oracle")
    try:
        run_episode(env, agent, seed=0)
    finally:
        agent.close()
        env.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="StaminaTodo-v2")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--turns", type=int, default=10)
    args = parser.parse_args()
    print(f"measuring {args.env}, {args.turns} turns, {args.repeat} repeats each ...", file=sys.stderr)
    evals, bares, restores, reports = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            out = Path(tmp) / f"ev{i}"
            config = EvalConfig(env=args.env, agents=(AgentSpec(name="oracle"),), runs=1, turns=args.turns)
            pair = [lambda: evals.append(timed(lambda: Evaluation(config, out, progress=False).run())),
                    lambda: bares.append(timed(lambda: bare_episode(args.env, args.turns)))]
            for measure in pair if i % 2 == 0 else pair[::-1]:  # alternate which side goes first
                measure()
            turns = read_lines(out / "runs/oracle/run-0/attempt-1/turns.jsonl")[:-1]
            env = gym.make(args.env, max_turns=args.turns)

            def restore() -> None:
                env.reset(seed=0)
                env.unwrapped.restore(len(turns), [t["patch"] for t in turns], frozenset(turns[-1]["passing"]))

            restores.append(timed(restore))
            env.close()
            reports.append(timed(lambda: build_report(summarize(out))))
    ms = lambda samples: statistics.median(samples) * 1000  # noqa: E731
    rows = [
        ("oracle episode via stamina-gym eval", ms(evals), "bare harness.run_episode", ms(bares)),
        (f"restore to turn {args.turns} (resume)", ms(restores), "replaying the oracle episode", ms(bares)),
        ("summary + HTML report", ms(reports), "", None),
    ]
    print(f"{'measure':<40} {'median ms':>10}   {'baseline':<30} {'median ms':>10} {'ratio':>6}")
    for name, ours, base_name, base in rows:
        ratio = f"{ours / base:6.2f}" if base else ""
        print(f"{name:<40} {ours:10.1f}   {base_name:<30} {f'{base:10.1f}' if base else '':>10} {ratio:>6}")


if __name__ == "__main__":
    main()

"""Rollout throughput: episodes per hour with 1 and 2 workers, locally and through Ray,
and the grading cache's speed-up on a batch of repeated seeds.

    .venv/bin/python scripts/bench_rollout.py [--episodes 4] [--turns 5]

Every configuration plays the same episodes (the oracle, seeds from base 0) from a cold
start. "episodes/hour" divides by the whole wall time, start-up included, as a user pays
it; "after start-up" leaves out the time until every worker held its env (for Ray:
ray.init, the actors built and answering), which is what a long collection converges to.
Local workers are this process (1) or a spawned process pool (2); Ray workers are actors
of a local Ray started with as many CPUs. The grading cache is off for the throughput rows.

Cache rows: the same batch of seeds played by one worker without a cache, then with a
fresh cache (cold: the first episode fills it, the repeats hit it), then again (warm).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile

from stamina_gym.rollout import RolloutSpec, collect


def run(spec: RolloutSpec, episodes: int, workers: int, backend: str) -> tuple[float, float, dict]:
    result = collect(spec, episodes=episodes, workers=workers, backend=backend)
    failed = [r["episode"] for r in result.failed]
    if failed:
        raise SystemExit(f"bench: episodes {failed} failed under {backend}; the figures would mean nothing")
    hits = sum(r["cache_hits"] for r in result.records)
    misses = sum(r["cache_misses"] for r in result.records)
    return result.wall_s, result.startup_s, {"hits": hits, "misses": misses}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="StaminaTodo-v2")
    parser.add_argument("--episodes", type=int, default=4)
    parser.add_argument("--turns", type=int, default=5, help="turns per episode (default 5, to keep it short)")
    args = parser.parse_args()
    n = args.episodes
    spec = RolloutSpec(args.env, env_kwargs={"max_turns": args.turns})

    def per_hour(seconds: float) -> float:
        return 3600 * n / seconds

    throughput = {}
    for label, workers, backend in [("local", 1, "inline"), ("local", 2, "processes"), ("ray", 1, "ray"), ("ray", 2, "ray")]:
        print(f"bench: {n} episodes, {args.turns} turns, {workers} worker(s), {label} ({backend}) ...", file=sys.stderr, flush=True)
        throughput[(label, workers)] = run(spec, n, workers, backend)[:2]

    cache_root = tempfile.mkdtemp(prefix="stamina-bench-cache-")
    cached = RolloutSpec(args.env, env_kwargs={"max_turns": args.turns}, grading_cache=cache_root)
    print(f"bench: cache, {n} episodes x 3 ...", file=sys.stderr, flush=True)
    plain_s, _, _ = run(spec, n, 1, "inline")
    cold_s, _, cold = run(cached, n, 1, "inline")
    warm_s, _, warm = run(cached, n, 1, "inline")
    shutil.rmtree(cache_root, ignore_errors=True)

    print(f"\n{args.env}, oracle, {n} episodes of {args.turns} turns each\n")
    print("| workers | backend | wall s | start-up s | episodes/hour | after start-up | Ray / local | after start-up |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for workers in (1, 2):
        for label in ("local", "ray"):
            wall, startup = throughput[(label, workers)]
            row = f"| {workers} | {label} | {wall:.1f} | {startup:.1f} | {per_hour(wall):.0f} | {per_hour(wall - startup):.0f} |"
            if label == "ray":
                local_wall, local_startup = throughput[("local", workers)]
                row += f" {local_wall / wall:.2f} | {(local_wall - local_startup) / (wall - startup):.2f} |"
            else:
                row += " | |"
            print(row)
    print()
    print("| 2 workers vs 1 | local | Ray | local after start-up | Ray after start-up |")
    print("|---|---:|---:|---:|---:|")
    speed = {label: throughput[(label, 1)][0] / throughput[(label, 2)][0] for label in ("local", "ray")}
    steady = {label: (throughput[(label, 1)][0] - throughput[(label, 1)][1]) / (throughput[(label, 2)][0] - throughput[(label, 2)][1])
              for label in ("local", "ray")}  # fmt: skip
    print(f"| speed-up | {speed['local']:.2f} | {speed['ray']:.2f} | {steady['local']:.2f} | {steady['ray']:.2f} |")
    print()
    print("| grading cache, 1 worker | wall s | episodes/hour | hits/misses | speed-up vs no cache |")
    print("|---|---:|---:|---:|---:|")
    print(f"| no cache (baseline) | {plain_s:.1f} | {per_hour(plain_s):.0f} | - | 1.00 |")
    print(f"| cold cache | {cold_s:.1f} | {per_hour(cold_s):.0f} | {cold['hits']}/{cold['misses']} | {plain_s / cold_s:.2f} |")
    print(f"| warm cache | {warm_s:.1f} | {per_hour(warm_s):.0f} | {warm['hits']}/{warm['misses']} | {plain_s / warm_s:.2f} |")


if __name__ == "__main__":
    main()

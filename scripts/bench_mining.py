"""How long mining a git history takes with this checkout's miner and with an earlier
revision's, on the same commits in the same run, and whether both keep the same turns.

    .venv/bin/python scripts/bench_mining.py REPO --seed REF --until REF --baseline REV [--runs 3]

REPO is a local git repository (a clone of the project to mine); the range is mined first
with the baseline's code (a ``git worktree`` of this repository at REV, imported in place of
this checkout's package), then with this checkout's. Each mines into a new temporary folder
with ``--runs`` runs of each candidate's tests, and is not validated (validation is the same
code for both). Prints a table: time per candidate and the ratio against the baseline. The
kept steps and their tests are compared: a faster miner that keeps other turns is no faster
miner. Exits 1 when they differ.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent

#: What each side runs: this checkout's ``mine`` or the baseline's, on the same commits.
_MINE = """
import sys, yaml
from pathlib import Path
import stamina_gym
from stamina_gym.mining.mine import mine
from stamina_gym.mining.sources import git_snapshots
repo, seed, until, out, runs = sys.argv[1:6]
result = mine(git_snapshots(Path(repo), seed=seed, until=until), Path(out), runs=int(runs),
              progress=lambda line: print("  " + line, file=sys.stderr, flush=True))
print(yaml.safe_dump({"code": stamina_gym.__file__, "candidates": result.candidates,
                      "kept": {step.ref: sorted(step.tests) for step in result.kept}}))
"""


def _mine(code_root: Path, repo: Path, seed: str, until: str, runs: int) -> tuple[dict, float]:
    out = Path(tempfile.mkdtemp(prefix="stamina-bench-mining-")) / "task"
    # ``-c`` puts the working folder first on the path: it is the code's root, or this
    # checkout's package would be imported whatever PYTHONPATH says.
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", _MINE, str(repo.resolve()), seed, until, str(out), str(runs)],
                          cwd=code_root, env={**os.environ, "PYTHONPATH": str(code_root)},
                          stdout=subprocess.PIPE, text=True, check=False)  # fmt: skip
    elapsed = time.monotonic() - start
    if done.returncode != 0:
        raise SystemExit(f"bench_mining: mining with the code at {code_root} failed (exit {done.returncode}); its log is above")
    result = yaml.safe_load(done.stdout)
    if not Path(result.pop("code")).is_relative_to(code_root):
        raise SystemExit(f"bench_mining: the miner meant to come from {code_root} was imported from elsewhere")
    return result, elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repo", type=Path, help="a local git repository to mine")
    parser.add_argument("--seed", required=True, help="the commit the task starts from")
    parser.add_argument("--until", required=True, help="the last commit of the range (first-parent history)")
    parser.add_argument("--baseline", required=True, help="the revision of this repository whose miner is the baseline")
    parser.add_argument("--runs", type=int, default=3, help="runs of each candidate's tests before and after (default 3)")
    args = parser.parse_args(argv)
    worktree = Path(tempfile.mkdtemp(prefix="stamina-bench-baseline-")) / "code"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(worktree), args.baseline], check=True)
    try:
        print(f"mining with the baseline ({args.baseline}) ...", file=sys.stderr, flush=True)
        baseline, baseline_s = _mine(worktree, args.repo, args.seed, args.until, args.runs)
        print("mining with this checkout ...", file=sys.stderr, flush=True)
        current, current_s = _mine(ROOT, args.repo, args.seed, args.until, args.runs)
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(worktree)], check=False)
    candidates = current["candidates"]
    same = baseline == current
    print(f"{args.repo.name} {args.seed[:12]}..{args.until[:12]}: {candidates} candidate commits, --runs {args.runs}\n")
    print("| miner | kept turns | time (s) | per candidate (s) | ratio |")
    print("|---|---:|---:|---:|---:|")
    for name, result, seconds in ((f"baseline ({args.baseline})", baseline, baseline_s), ("this checkout", current, current_s)):
        print(f"| {name} | {len(result['kept'])} | {seconds:.0f} | {seconds / max(candidates, 1):.1f} | {seconds / baseline_s:.2f} |")
    print(f"\nsame kept steps and tests: {'yes' if same else 'NO'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())

"""What serving costs: `stamina-gym serve` driven by OpenEnv's client, against the same
work done in this process, measured in the same run.

    .venv/bin/python scripts/bench_serve.py [--env StaminaTodo-v2] [--sessions 1 4 16]
                                            [--seconds 10] [--turns 5] [--episode-turns 10]

First the oracle plays the first ``--episode-turns`` turns of the env in this process and
its actions are kept. Then:

* one table per count of concurrent sessions (each its own client thread, its own env and
  sandbox on the server): cheap-tool steps per second (``read_file``, all sessions
  together), their median latency, and submits per minute (each session replays the
  oracle's actions of its first ``--turns`` turns: apply the reference, submit); beside
  them the same single-session work in this process;
* first (after one unmeasured replay on each side, which warms the processes' imports and
  caches), the oracle's episode replayed action for action over the server and in this
  process (one fresh env each, same seed), ``--repeat`` interleaved pairs: the ratio of
  the wall times is what serving adds to an episode (goal: at most 1.2).

The server is a separate process on this machine; clients and server share its cores.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import gymnasium as gym

import stamina_gym  # noqa: F401 - registers the env ids
from stamina_gym.agents import make_agent
from stamina_gym.integrations.openenv import StaminaAction, StaminaClient
from stamina_gym.play import Observer, play

ROOT = Path(__file__).resolve().parents[1]
CHEAP = json.dumps({"tool": "read_file", "path": "README.md"})
#: Room for seconds of cheap steps in one turn, on both sides.
BUDGETS = {"max_steps_per_turn": 1_000_000, "wall_clock_s": 86_400}


class _Actions(Observer):
    def __init__(self) -> None:
        self.actions: list[str] = []

    def step(self, step) -> bool:
        action = step.action
        self.actions.append(action if isinstance(action, str) else json.dumps(action))
        return False


def oracle_actions(env_id: str, turns: int, seed: int) -> list[str]:
    env = gym.make(env_id, max_turns=turns)
    recorder = _Actions()
    try:
        play(env, make_agent("oracle"), [recorder], seed=seed)
    finally:
        env.close()
    return recorder.actions


def first_turns(actions: list[str], turns: int) -> list[str]:
    """The actions up to and including the ``turns``-th submit."""
    kept, submits = [], 0
    for action in actions:
        kept.append(action)
        submits += json.loads(action).get("tool") == "submit"
        if submits == turns:
            break
    return kept


class Server:
    def __init__(self, env_id: str, max_sessions: int, turns: int) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        command = [sys.executable, "-m", "stamina_gym.cli", "serve", "--env", env_id, "--port", str(port),
                   "--max-sessions", str(max_sessions), "--idle-timeout", "0", "--action-format", "json",
                   "--turns", str(turns), "--make-kwargs", json.dumps({"budgets": BUDGETS})]  # fmt: skip
        self.process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=2):
                    return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("bench_serve: the server did not start") from None
                time.sleep(0.2)

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.process.kill()


class Local:
    """The same calls on an env in this process."""

    def __init__(self, env_id: str, turns: int) -> None:
        self.env = gym.make(env_id, max_turns=turns, budgets=BUDGETS)

    def reset(self, seed: int) -> None:
        self.env.reset(seed=seed)

    def step(self, action: str) -> None:
        self.env.step(action)

    def close(self) -> None:
        self.env.close()


class Remote:
    def __init__(self, url: str) -> None:
        self.client = StaminaClient(base_url=url, message_timeout_s=600).sync()
        self.client.connect()

    def reset(self, seed: int) -> None:
        self.client.reset(seed=seed)

    def step(self, action: str) -> None:
        self.client.step(StaminaAction(text=action))

    def close(self) -> None:
        self.client.close()


def cheap_steps(session, seconds: float, latencies: list[float]) -> int:
    done, until = 0, time.monotonic() + seconds
    while time.monotonic() < until:
        started = time.perf_counter()
        session.step(CHEAP)
        latencies.append(time.perf_counter() - started)
        done += 1
    return done


def replay(session, actions: list[str]) -> int:
    for action in actions:
        session.step(action)
    return sum(json.loads(a).get("tool") == "submit" for a in actions)


def concurrently(sessions: list, work) -> tuple[list, float]:
    """Run ``work(session)`` on every session at once; their results and the wall time."""
    results: list = [None] * len(sessions)
    errors: list[BaseException] = []

    def one(index: int) -> None:
        try:
            results[index] = work(sessions[index])
        except BaseException as exc:  # reported after the join
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(sessions))]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results, time.perf_counter() - started


def warm_up(server: Server, local: Local, actions: list[str], seed: int) -> None:
    """The first submits of a process pay for its imports and caches: one replay on each
    side, not measured."""
    warm = Remote(server.url)
    try:
        for session in (warm, local):
            session.reset(seed)
            replay(session, actions)
    finally:
        warm.close()


def load_rows(server: Server, local: Local, counts: list[int], seconds: float, actions: list[str], seed: int):
    rows = []
    for count in counts:
        remotes = [Remote(server.url) for _ in range(count)]
        try:
            for remote in remotes:
                remote.reset(seed)
            latencies: list[float] = []
            steps, wall = concurrently(remotes, lambda s: cheap_steps(s, seconds, latencies))
            served_rate, served_ms = sum(steps) / wall, statistics.median(latencies) * 1000
            for remote in remotes:
                remote.reset(seed)
            submits, wall = concurrently(remotes, lambda s: replay(s, actions))
            served_submits = sum(submits) / wall * 60
        finally:
            for remote in remotes:
                remote.close()
        local.reset(seed)
        latencies = []
        rate = cheap_steps(local, seconds, latencies) / seconds
        local_ms = statistics.median(latencies) * 1000
        local.reset(seed)
        submits, wall = concurrently([local], lambda s: replay(s, actions))
        rows.append((count, served_rate, served_ms, served_submits, rate, local_ms, submits[0] / wall * 60))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="StaminaTodo-v2")
    parser.add_argument("--sessions", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--seconds", type=float, default=10.0, help="how long each count of sessions steps cheaply")
    parser.add_argument("--turns", type=int, default=5, help="oracle turns each session replays for submits/minute")
    parser.add_argument("--episode-turns", type=int, default=10, help="turns of the replayed episode")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3, help="interleaved pairs of the replayed episode")
    args = parser.parse_args()
    if min(args.sessions) < 1 or args.turns > args.episode_turns:
        parser.error("--sessions must be at least 1 and --turns at most --episode-turns")
    print(f"recording the oracle's first {args.episode_turns} turns of {args.env} (seed {args.seed}) ...", flush=True)
    actions = oracle_actions(args.env, args.episode_turns, args.seed)
    print(f"  {len(actions)} actions; starting the server (cpus: {os.cpu_count()})", flush=True)
    server = Server(args.env, max(args.sessions), args.episode_turns)
    local = Local(args.env, args.episode_turns)
    try:
        warm_up(server, local, first_turns(actions, args.turns), args.seed)
        episodes = {"served": [], "in process": []}
        for _ in range(args.repeat):
            for name in episodes:
                session = Remote(server.url) if name == "served" else Local(args.env, args.episode_turns)
                try:
                    session.reset(args.seed)
                    episodes[name].append(concurrently([session], lambda s: replay(s, actions))[1])
                finally:
                    session.close()
        rows = load_rows(server, local, args.sessions, args.seconds, first_turns(actions, args.turns), args.seed)
    finally:
        local.close()
        server.stop()
    print(f"\n{'sessions':>8} {'read_file steps/s':>18} {'median ms':>10} {'submits/min':>12}   "
          f"{'in process: steps/s':>20} {'median ms':>10} {'submits/min':>12}")  # fmt: skip
    for count, rate, ms, submits, local_rate, local_ms, local_submits in rows:
        print(f"{count:>8} {rate:18.1f} {ms:10.1f} {submits:12.1f}   {local_rate:20.1f} {local_ms:10.1f} {local_submits:12.1f}")
    served, local_s = statistics.median(episodes["served"]), statistics.median(episodes["in process"])
    print(f"\n{'episode (' + str(args.episode_turns) + ' oracle turns, ' + str(len(actions)) + ' steps)':<40} "
          f"{'served s':>9} {'in process s':>13} {'ratio':>6}")  # fmt: skip
    print(f"{f'median of {args.repeat}, interleaved':<40} {served:9.2f} {local_s:13.2f} {served / local_s:6.2f}")


if __name__ == "__main__":
    main()

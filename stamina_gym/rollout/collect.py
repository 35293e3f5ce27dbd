"""Collect many episodes: in this process, in a local process pool, or on Ray actors.

``collect(spec, episodes=N, workers=K, backend=...)`` plays episodes ``0..N-1`` with the
seeds ``episode_seeds(base_seed, N)`` and returns their records sorted by episode, so the
backend and the number of workers change how fast the data comes, never what it is.

Backends:

- ``inline``: one worker in this process (``--workers 1`` without Ray).
- ``processes``: K spawned processes, one worker each (``concurrent.futures``); the local
  baseline the benchmark compares Ray with.
- ``ray``: K Ray actors in an ``ActorPool``, each holding one env. With an address the
  actors go to that cluster (``ray.init(address=...)``); without one a local Ray is
  started with K CPUs and stopped at the end. A Ray already initialised in this process
  is used as it is.

Nothing is lost. An episode that fails as ``infrastructure`` (its worker died, a Ray
node went away, the env broke) is played again, up to ``retries`` more times, by whichever
worker is free; its record says how many ``attempts`` it took. A dead Ray actor takes no
more work: its episode goes back in the queue for the others, and only when no worker is
left are the episodes still queued recorded as lost. A dead process worker breaks its
pool: the pool is made again for what is left. ``done`` (the records of an earlier run of
the same collection, ``collect --resume``) are kept, and their episodes are played again
only where they failed as ``infrastructure``.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections import deque
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from stamina_gym.errors import ConfigError
from stamina_gym.rollout.workers import RolloutSpec, RolloutWorker, episode_seeds, lost_episode

BACKENDS = ("inline", "processes", "ray")
#: How many more times an episode that failed as ``infrastructure`` is played by default.
RETRIES = 2
Progress = Callable[[dict[str, Any]], None]


@dataclass
class Collection:
    """The records of one collection and how it ran."""

    records: list[dict[str, Any]]
    backend: str
    workers: int
    wall_s: float
    startup_s: float
    """Of ``wall_s``, the time until every worker held its env (and Ray was up)."""
    ray_address: str | None = None
    resumed: int = 0
    """How many records came from the earlier run (``done``)."""

    @property
    def failed(self) -> list[dict[str, Any]]:
        return [r for r in self.records if r["failure_class"]]

    @property
    def lost(self) -> list[dict[str, Any]]:
        """Episodes that failed as ``infrastructure`` after every retry."""
        return [r for r in self.records if r["failure_class"] == "infrastructure"]


def collect(
    spec: RolloutSpec,
    *,
    episodes: int,
    workers: int = 1,
    base_seed: int = 0,
    backend: str = "inline",
    ray_address: str | None = None,
    progress: Progress | None = None,
    retries: int = RETRIES,
    done: Iterable[dict[str, Any]] = (),
    note: Callable[[str], None] | None = None,
) -> Collection:
    """Play episodes ``0..episodes-1`` (see the module docstring). ``progress`` gets each
    episode's final record as it comes, ``note`` a line for each retry."""
    if backend not in BACKENDS:
        raise ConfigError(f"unknown backend {backend!r}; valid: {', '.join(BACKENDS)}")
    if episodes < 1 or workers < 1:
        raise ConfigError(f"episodes and workers must be >= 1, got {episodes} and {workers}")
    if retries < 0:
        raise ConfigError(f"retries must be >= 0, got {retries}")
    if backend == "inline" and workers != 1:
        raise ConfigError("the inline backend has exactly one worker; use processes or ray for more")
    seeds = episode_seeds(base_seed, episodes)
    kept = {}
    for record in done:
        if record.get("episode") not in range(episodes) or record.get("seed") != seeds[record["episode"]]:
            raise ConfigError(f"a record to resume from is not of this collection: episode {record.get('episode')!r}, "
                              f"seed {record.get('seed')!r} (base seed {base_seed}, {episodes} episodes)")  # fmt: skip
        if record.get("failure_class") != "infrastructure":
            kept[record["episode"]] = record
    jobs = [(episode, seed) for episode, seed in enumerate(seeds) if episode not in kept]
    queue = _Queue(spec, jobs, retries, progress or (lambda record: None), note or (lambda line: None))
    workers = max(min(workers, len(jobs)), 1)
    started = time.monotonic()
    run = {"inline": _inline, "processes": _processes, "ray": _ray}[backend]
    ready: list[float] = []
    if jobs:
        run(spec, queue, workers, ray_address, lambda: ready.append(time.monotonic()))
    wall = time.monotonic() - started
    startup = (ready[0] - started) if ready else 0.0
    records = {**kept, **queue.records}
    return Collection(sorted(records.values(), key=lambda r: r["episode"]), backend, workers, wall, startup, ray_address,
                      resumed=len(kept))  # fmt: skip


class _Queue:
    """The episodes still to play, each with its attempt number, and the final records."""

    def __init__(self, spec: RolloutSpec, jobs: list[tuple[int, int]], retries: int, progress: Progress,
                 note: Callable[[str], None]) -> None:  # fmt: skip
        self.spec, self.retries, self.progress, self.note = spec, retries, progress, note
        self.pending: deque[tuple[int, int, int]] = deque((episode, seed, 1) for episode, seed in jobs)
        self.records: dict[int, dict[str, Any]] = {}

    def take(self) -> tuple[int, int, int] | None:
        return self.pending.popleft() if self.pending else None

    def finish(self, job: tuple[int, int, int], record: dict[str, Any], *, final: bool = False) -> None:
        """An attempt's record: final, or (an infrastructure failure with retries left, and
        not ``final``) the episode goes back in the queue."""
        episode, seed, attempt = job
        record["attempts"] = attempt
        if record["failure_class"] == "infrastructure" and attempt <= self.retries and not final:
            why = (record.get("failure") or "").splitlines()[0][:300]
            self.note(f"episode {episode} seed {seed}: infrastructure failure on attempt {attempt} of "
                      f"{self.retries + 1}, queued again: {why}")  # fmt: skip
            self.pending.append((episode, seed, attempt + 1))
            return
        self.records[episode] = record
        self.progress(record)

    def lost(self, job: tuple[int, int, int], why: str) -> None:
        self.finish(job, lost_episode(self.spec, job[0], job[1], why))


def _inline(spec, queue: _Queue, workers, address, ready) -> None:
    worker = RolloutWorker(spec)
    ready()
    try:
        while (job := queue.take()) is not None:
            queue.finish(job, worker.run(job[:2]))
    finally:
        worker.close()


_PROCESS_WORKER: RolloutWorker | None = None


def _process_init(spec: RolloutSpec) -> None:
    global _PROCESS_WORKER
    _PROCESS_WORKER = RolloutWorker(spec)


def _process_ping() -> str:
    assert _PROCESS_WORKER is not None
    return _PROCESS_WORKER.ping()


def _process_run(job: tuple[int, int]) -> dict[str, Any]:
    assert _PROCESS_WORKER is not None
    return _PROCESS_WORKER.run(job)


def _processes(spec, queue: _Queue, workers, address, ready) -> None:
    """Rounds of a process pool: a worker that dies breaks the pool (every episode it
    held fails), and the next round makes a new one for the episodes queued again."""
    context = multiprocessing.get_context("spawn")
    while queue.pending:
        with ProcessPoolExecutor(workers, mp_context=context, initializer=_process_init, initargs=(spec,)) as pool:
            pings = [pool.submit(_process_ping) for _ in range(workers)]
            for ping in pings:
                ping.exception()  # waits; a worker that cannot start shows up in the episodes below
            ready()
            futures = {}
            while (job := queue.take()) is not None:
                futures[pool.submit(_process_run, job[:2])] = job
            for future in as_completed(futures):
                try:
                    record = future.result()
                except Exception as exc:  # noqa: BLE001 - a dead worker costs an attempt, recorded
                    queue.lost(futures[future], f"{type(exc).__name__}: {exc}")
                    continue
                queue.finish(futures[future], record)


#: Seconds the Ray workers have to start (an actor waits for a node with a free CPU).
RAY_START_S = 300.0


def _ray(spec, queue: _Queue, workers, address, ready) -> None:
    """One episode at a time per actor, handed out as actors come free; a dead actor's
    episode goes back in the queue and the actor takes no more."""
    try:
        import ray
    except ImportError:
        raise ConfigError("the ray backend needs Ray: pip install 'stamina-gym[ray]'") from None
    started_here = not ray.is_initialized()
    if started_here:
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        if address:
            _connect(ray, address)
        else:
            # A light local Ray: K CPUs, no dashboard, a small object store (records are small).
            ray.init(num_cpus=workers, include_dashboard=False, object_store_memory=128 * 1024**2, logging_level="warning")
    actor_class = ray.remote(num_cpus=1)(RolloutWorker)
    actors = [actor_class.remote(spec) for _ in range(workers)]
    live = set(range(len(actors)))
    try:
        pings = {actor.ping.remote(): index for index, actor in enumerate(actors)}
        ray.wait(list(pings), num_returns=len(pings), timeout=RAY_START_S)
        for ref, index in pings.items():
            try:
                ray.get(ref, timeout=0)
            except Exception:  # noqa: BLE001 - an actor that did not start takes no work
                live.discard(index)
        ready()
        running: dict[Any, tuple[int, tuple[int, int, int]]] = {}
        idle = sorted(live)
        while True:
            while idle and queue.pending:
                index, job = idle.pop(), queue.take()
                running[actors[index].run.remote(job[:2])] = (index, job)
            if not running:
                break
            (finished,), _ = ray.wait(list(running), num_returns=1)
            index, job = running.pop(finished)
            try:
                record = ray.get(finished)
            except ray.exceptions.RayError as exc:  # its actor died: the episode is queued again
                live.discard(index)
                queue.lost(job, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
                continue
            idle.append(index)
            queue.finish(job, record)
        while (job := queue.take()) is not None:  # queued with no worker left to play them
            queue.finish(job, lost_episode(spec, job[0], job[1], "no worker is left alive"), final=True)
    finally:
        # Close first (the envs remove their folders), then end the actors.
        closing = [actors[index].close.remote() for index in live]
        try:
            ray.wait(closing, num_returns=len(closing), timeout=60)
        finally:
            for actor in actors:
                ray.kill(actor)
        if started_here:
            ray.shutdown()


def _connect(ray: Any, address: str) -> None:
    """``ray.init`` on a cluster. A cluster with token authentication refuses a process
    without its token, and Ray then says only that it could not connect (after some 20 s
    of retries): where this process has no token set, the error names the setting."""
    try:
        ray.init(address=address, logging_level="warning")
    except (ConnectionError, RuntimeError) as exc:
        if os.environ.get("RAY_AUTH_MODE") == "token":
            raise
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigError(f"could not connect to the Ray cluster at {address} ({first}). A cluster that asks for an "
                          "auth token needs RAY_AUTH_MODE=token here too, with its token in ~/.ray/auth_token, "
                          "RAY_AUTH_TOKEN_PATH or RAY_AUTH_TOKEN") from None

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

A worker that dies (an actor or a process killed) costs its episode, which is recorded
with ``failure_class="infrastructure"``; the other episodes go on.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any, Callable

from stamina_gym.errors import ConfigError
from stamina_gym.rollout.workers import RolloutSpec, RolloutWorker, episode_seeds, lost_episode

BACKENDS = ("inline", "processes", "ray")
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

    @property
    def failed(self) -> list[dict[str, Any]]:
        return [r for r in self.records if r["failure_class"]]


def collect(
    spec: RolloutSpec,
    *,
    episodes: int,
    workers: int = 1,
    base_seed: int = 0,
    backend: str = "inline",
    ray_address: str | None = None,
    progress: Progress | None = None,
) -> Collection:
    if backend not in BACKENDS:
        raise ConfigError(f"unknown backend {backend!r}; valid: {', '.join(BACKENDS)}")
    if episodes < 1 or workers < 1:
        raise ConfigError(f"episodes and workers must be >= 1, got {episodes} and {workers}")
    if backend == "inline" and workers != 1:
        raise ConfigError("the inline backend has exactly one worker; use processes or ray for more")
    jobs = list(enumerate(episode_seeds(base_seed, episodes)))
    workers = min(workers, episodes)
    started = time.monotonic()
    run = {"inline": _inline, "processes": _processes, "ray": _ray}[backend]
    ready: list[float] = []
    records = run(spec, jobs, workers, progress or (lambda record: None), ray_address, lambda: ready.append(time.monotonic()))
    wall = time.monotonic() - started
    startup = (ready[0] - started) if ready else 0.0
    return Collection(sorted(records, key=lambda r: r["episode"]), backend, workers, wall, startup, ray_address)


def _inline(spec, jobs, workers, progress, address, ready) -> list[dict[str, Any]]:
    worker = RolloutWorker(spec)
    ready()
    records = []
    try:
        for job in jobs:
            records.append(worker.run(job))
            progress(records[-1])
    finally:
        worker.close()
    return records


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


def _processes(spec, jobs, workers, progress, address, ready) -> list[dict[str, Any]]:
    context = multiprocessing.get_context("spawn")
    records = []
    with ProcessPoolExecutor(workers, mp_context=context, initializer=_process_init, initargs=(spec,)) as pool:
        pings = [pool.submit(_process_ping) for _ in range(workers)]
        for ping in pings:
            ping.exception()  # waits; a worker that cannot start shows up in the episodes below
        ready()
        futures = {pool.submit(_process_run, job): job for job in jobs}
        for future in as_completed(futures):
            try:
                record = future.result()
            except Exception as exc:  # noqa: BLE001 - a dead worker costs its episode, recorded
                record = lost_episode(spec, *futures[future], f"{type(exc).__name__}: {exc}")
            records.append(record)
            progress(record)
    return records


def _ray(spec, jobs, workers, progress, address, ready) -> list[dict[str, Any]]:
    try:
        import ray
        from ray.util import ActorPool
    except ImportError:
        raise ConfigError("the ray backend needs Ray: pip install 'stamina-gym[ray]'") from None
    started_here = not ray.is_initialized()
    if started_here:
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        if address:
            ray.init(address=address, logging_level="warning")
        else:
            # A light local Ray: K CPUs, no dashboard, a small object store (records are small).
            ray.init(num_cpus=workers, include_dashboard=False, object_store_memory=128 * 1024**2, logging_level="warning")
    actor_class = ray.remote(num_cpus=1)(RolloutWorker)
    actors = [actor_class.remote(spec) for _ in range(workers)]
    records: dict[int, dict[str, Any]] = {}
    errors: list[str] = []
    try:
        ray.wait([actor.ping.remote() for actor in actors], num_returns=len(actors), timeout=300)
        ready()
        pool = ActorPool(actors)
        for job in jobs:
            pool.submit(lambda actor, job: actor.run.remote(job), job)
        while pool.has_next():
            try:
                record = pool.get_next_unordered()
            except ray.exceptions.RayError as exc:
                errors.append(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
                continue
            records[record["episode"]] = record
            progress(record)
        for episode, seed in jobs:
            if episode not in records:
                records[episode] = lost_episode(spec, episode, seed, "; ".join(errors) or "no result")
                progress(records[episode])
    finally:
        # Close first (the envs remove their folders), then end the actors.
        closing = [actor.close.remote() for actor in actors]
        try:
            ray.wait(closing, num_returns=len(closing), timeout=60)
        finally:
            for actor in actors:
                ray.kill(actor)
        if started_here:
            ray.shutdown()
    return list(records.values())

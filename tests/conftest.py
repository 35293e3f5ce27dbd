"""Shared fixtures: a small two-turn task for fast engine tests."""

from __future__ import annotations

import contextlib
import functools
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from stamina_gym.config import EnvConfig
from stamina_gym.env import StaminaEnv
from stamina_gym.sandbox.docker import engine_problem
from stamina_gym.sandbox.local import bwrap_works

DATA = Path(__file__).parent / "data"

#: The xdist group of every docker test (``-n``: they run one after another on one worker):
#: a test kills a worker and checks that ``docker-clean`` removes what it left, which any
#: docker sandbox starting meanwhile would sweep first.
DOCKER_GROUP = "docker"
#: Tests that share a session fixture, so that in parallel runs (``-n``) it is made once.
#: The todo oracle episode is also the local side of a docker test: it joins that group.
SHARED = {"todo_oracle_episode": DOCKER_GROUP, "clarify_oracle_episode": "clarify-oracle-episode"}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """For ``pytest -n N --dist loadgroup`` (scripts/test.sh): every test module is one unit
    of work (its module fixtures are made once), the tests of a shared session fixture
    share one worker, and so do all docker tests; the slow tests go out first, so that none
    of them is left to run alone at the end. Without xdist the markers change nothing."""
    grouping = getattr(config.option, "loadgroup", False) or getattr(config.option, "dist", None) == "loadgroup"
    for item in items:
        shared = [SHARED[name] for name in getattr(item, "fixturenames", ()) if name in SHARED]
        if item.get_closest_marker("docker") is not None:
            shared.insert(0, DOCKER_GROUP)
        group = shared[0] if shared else item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(group))
        if grouping and hasattr(item, "_id") and "@" not in item.nodeid:
            # pytest-xdist names the group in the node id (``id@group``, which its scheduler
            # splits on) through ``item._nodeid``; from pytest 9.2 a node's id is ``_id``, so
            # that did nothing and every test went to any worker (a shared episode was played
            # once per worker). The same suffix, where pytest reads it.
            from _pytest.nodeid import NodeId

            item._id = NodeId.parse(f"{item.nodeid}@{group}")
    if config.pluginmanager.hasplugin("xdist") and getattr(config.option, "numprocesses", None):
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def sandbox_processes() -> dict[int, str]:
    """pid -> command line of every bubblewrap process below this test process: the
    sandboxes (warm runners, services, commands) of the envs it made."""
    parents, names = {}, {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as handle:
                    stat = handle.read()
            except OSError:
                continue
            name, rest = stat[stat.index(b"(") + 1 : stat.rindex(b")")], stat[stat.rindex(b")") + 2 :].split()
            parents[int(entry.name)], names[int(entry.name)] = int(rest[1]), name.decode(errors="replace")
    below, frontier = set(), {os.getpid()}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - below
        below |= frontier
    found = {}
    for pid in sorted(pid for pid in below if names[pid] == "bwrap"):
        try:
            found[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[-160:]
        except OSError:
            continue
    return found


#: pid of a sandbox process -> the test during which it started (``_sandboxes_of_each_test``).
_STARTED_BY: dict[int, str] = {}


@pytest.fixture(autouse=True, scope="session")
def _no_sandbox_outlives_the_session():
    """Every env a test makes is closed by the test or its fixture: at the end of the
    session no sandbox process of this test process is alive and no container of its is
    left (an env left open keeps its warm runners for as long as the process lives).
    Declared first among the autouse session fixtures, so it is torn down last."""
    yield
    left = {pid: line for pid, line in sandbox_processes().items()}
    problems = [f"pid {pid} (started in {_STARTED_BY.get(pid, 'a session fixture')}): {line}" for pid, line in left.items()]
    if docker_problem() is None:
        from stamina_gym.sandbox.docker import connect, managed_containers, owner_id

        client = connect()
        try:
            mine = owner_id()
            problems += [f"docker container {c.name}" for c in managed_containers(client) if c.owner == mine]
        finally:
            client.close()
    assert not problems, "sandboxes of envs that were never closed are alive at the end of the session:\n" + "\n".join(problems)


@pytest.fixture(autouse=True)
def _sandboxes_of_each_test(request):
    """Remembers which test started each sandbox process that is still alive after it,
    so that the end-of-session check names the test that left it."""
    before = set(sandbox_processes())
    yield
    for pid in set(sandbox_processes()) - before:
        _STARTED_BY.setdefault(pid, request.node.nodeid)


@pytest.fixture(autouse=True, scope="session")
def _own_reference_quality_folder(tmp_path_factory):
    """The reference's quality is kept in a folder of this run, not in the user's cache."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("STAMINA_GYM_QUALITY_CACHE", str(tmp_path_factory.mktemp("reference-quality")))
        yield


# tests/data holds task fixtures whose hidden tests must not run as our own.
collect_ignore = ["data"]
MINI = DATA / "mini"


def write_sdist(path: Path, top: str, files: dict[str, str]) -> Path:
    """A source distribution at ``path``: ``files`` (path -> text) under the folder ``top``."""
    import io
    import tarfile

    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as bundle:
        for rel, text in files.items():
            info = tarfile.TarInfo(f"{top}/{rel}")
            info.size = len(text.encode())
            bundle.addfile(info, io.BytesIO(text.encode()))
    return path


def mini_task(tmp_path: Path, tests: dict[str, str], **spec: Any):
    """A copy of the mini task whose first turn holds ``tests`` (file name in its tests
    folder -> text) and ``spec`` over its turn.yaml: a task to plant a defect in."""
    import shutil

    import yaml

    from stamina_gym.task import load_task_dir

    root = tmp_path / "mini"
    shutil.copytree(MINI, root)
    for name, text in tests.items():
        (root / "turns/01-add/tests" / name).write_text(text, encoding="utf-8")
    spec_path = root / "turns/01-add/turn.yaml"
    spec_path.write_text(yaml.safe_dump(yaml.safe_load(spec_path.read_text(encoding="utf-8")) | spec), encoding="utf-8")
    return load_task_dir(root)


def mini_env(**overrides) -> StaminaEnv:
    config = EnvConfig(id="Mini-v0", task=str(MINI))
    return StaminaEnv(config, **overrides)


@pytest.fixture
def env():
    environment = mini_env()
    environment.reset(seed=0)
    yield environment
    environment.close()


def act(env: StaminaEnv, **action):
    """One step with a dict action; returns (output, reward, info)."""
    observation, reward, terminated, truncated, info = env.step(action)
    return observation["output"], reward, info


@functools.cache
def docker_problem() -> str | None:
    """None when a Docker engine answers, else why not (asked once per test session)."""
    return engine_problem()


@pytest.fixture(params=["local", pytest.param("docker", marks=pytest.mark.docker)])
def backend(request) -> str:
    """The sandbox backend a security test attacks: every such test runs against both.
    A backend is skipped only where it truly cannot run on this machine."""
    if request.param == "local" and bwrap_works() is not None:
        pytest.skip(f"bubblewrap unusable: {bwrap_works()}")
    if request.param == "docker" and docker_problem() is not None:
        pytest.skip(f"no Docker engine reachable: {docker_problem()}")
    return request.param


@pytest.fixture
def sandboxed_env(backend):
    """The mini env on ``backend``, reset."""
    environment = mini_env(sandbox={"kind": backend})
    environment.reset(seed=0)
    yield environment
    environment.close()


@dataclass
class RecordedEpisode:
    """One episode played once, with its records (``Recorder``'s JSONL files)."""

    env: Any
    """The closed env: its config, task and turns stay readable."""
    result: Any
    """The ``EpisodeResult`` of ``run_episode``."""
    records: Path

    def lines(self, name: str) -> list[dict]:
        return [json.loads(line) for line in (self.records / name).read_text().splitlines()]


@pytest.fixture(scope="session")
def todo_oracle_episode(tmp_path_factory) -> RecordedEpisode:
    """The oracle's whole StaminaTodo-v2 episode on the local sandbox (seed 0), recorded.
    A few minutes of grading: played once per session and asserted on by every test that
    needs it (the oracle's maximum on every turn, the docker backend's equal rewards)."""
    import gymnasium as gym

    records = tmp_path_factory.mktemp("todo-oracle")
    with cold_quality_caches(tmp_path_factory):
        env = gym.make("StaminaTodo-v2")
        return RecordedEpisode(env, play_oracle(env, records), records)


@pytest.fixture(scope="session")
def clarify_oracle_episode(tmp_path_factory) -> RecordedEpisode:
    """The oracle's whole StaminaClarify-v3 episode (seed 0), recorded; played once per session."""
    import gymnasium as gym

    records = tmp_path_factory.mktemp("clarify-oracle")
    with cold_quality_caches(tmp_path_factory):
        env = gym.make("StaminaClarify-v3")
        return RecordedEpisode(env, play_oracle(env, records), records)


@contextlib.contextmanager
def cold_quality_caches(tmp_path_factory):
    """The quality meter as a new process on a new machine has it: nothing analysed in
    memory, no reference snapshot, an empty reference store, a new analysis worker. A
    file's pylint result is kept by its content alone, though pylint reads the modules
    beside it, so an episode's quality figures depend on what this process measured
    before (after a start at turn 45, the oracle's quality at turns 13-19 read 0.931-0.940
    instead of 0.959-0.962): the recorded episodes start cold."""
    from stamina_gym.quality.analyzers import WORKER
    from stamina_gym.quality.measure import SHARED_CACHE
    from stamina_gym.quality.reference import forget_snapshots

    SHARED_CACHE.forget()
    forget_snapshots()
    WORKER.close()  # the next file starts a new one
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("STAMINA_GYM_QUALITY_CACHE", str(tmp_path_factory.mktemp("cold-reference-quality")))
        yield


def play_oracle(env, records: Path, seed: int = 0):
    """The oracle's episode on ``env`` (closed after), recorded in ``records``."""
    from stamina_gym.agents import make_agent
    from stamina_gym.harness import Recorder, run_episode

    agent = make_agent("oracle")
    try:
        return run_episode(env, agent, seed=seed, recorder=Recorder(records, {"agent": "oracle"}))
    finally:
        agent.close()
        env.close()

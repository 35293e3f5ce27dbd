"""Shared fixtures: a small two-turn task for fast engine tests."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from stamina_gym.config import EnvConfig
from stamina_gym.env import StaminaEnv
from stamina_gym.sandbox.docker import engine_problem
from stamina_gym.sandbox.local import bwrap_works

DATA = Path(__file__).parent / "data"
# tests/data holds task fixtures whose hidden tests must not run as our own.
collect_ignore = ["data"]
MINI = DATA / "mini"


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

"""Shared fixtures: a small two-turn task for fast engine tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from stamina_gym.config import EnvConfig
from stamina_gym.env import StaminaEnv

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

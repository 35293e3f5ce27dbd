"""Vector envs: Sync and Async work, and parallel envs never share files."""

from __future__ import annotations

import gymnasium as gym
import pytest

from stamina_gym.errors import ConfigError
from stamina_gym.rollout.vector import make_vector_env
from tests.conftest import DATA, MINI


@pytest.fixture(autouse=True)
def mini_registered(monkeypatch):
    import stamina_gym

    monkeypatch.setenv("STAMINA_GYM_TASKS", str(DATA))  # the async workers inherit it
    stamina_gym.register_envs()


def _patch(turn: int) -> str:
    return sorted((MINI / "turns").iterdir())[turn].joinpath("reference.patch").read_text()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_vector_env_plays_a_turn_in_every_env(mode):
    envs = make_vector_env("Stamina-mini-v0", 2, mode=mode)
    try:
        assert isinstance(envs, gym.vector.SyncVectorEnv if mode == "sync" else gym.vector.AsyncVectorEnv)
        observations, infos = envs.reset(seed=[3, 4])
        assert list(observations["turn"]) == [0, 0] and all("add" in p for p in observations["prompt"])
        patch = {"tool": "apply_patch", "patch": _patch(0)}
        observations, rewards, terminated, truncated, infos = envs.step((patch, '{"tool": "list_files"}'))
        assert observations["output"][0] == "applied patch to calc/__init__.py"
        assert "calc/__init__.py (1 lines)" in observations["output"][1]  # env 1 still has the seed file
        observations, rewards, terminated, truncated, infos = envs.step(({"tool": "submit"}, {"tool": "submit"}))
        assert list(observations["turn"]) == [1, 1]
        quality = infos["reward_terms"]["quality"][0]  # the change of the code-quality score, weight 1
        assert rewards[0] == pytest.approx(1.499 + quality) and rewards[1] < 0  # the unpatched env fails the turn
        assert list(infos["grade"]["failure_class"]) == [None, "functional"]
    finally:
        envs.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_parallel_envs_never_share_workspaces_or_tmp(mode):
    envs = make_vector_env("Stamina-mini-v0", 2, mode=mode)
    try:
        envs.reset(seed=0)
        roots = envs.get_attr("workspace") if mode == "async" else [e.unwrapped.workspace for e in envs.envs]
        assert roots[0].root != roots[1].root and roots[0].root.parent != roots[1].root.parent
        write = {"tool": "run", "command": "echo zero > /tmp/shared.txt && echo zero > mine.txt && echo ok"}
        observations, *_ = envs.step((write, {"tool": "run", "command": "sleep 0.2; cat /tmp/shared.txt mine.txt; true"}))
        assert observations["output"][0].endswith("ok\n")
        assert "zero" not in observations["output"][1] and "No such file" in observations["output"][1]
        observations, *_ = envs.step(({"tool": "list_files"}, {"tool": "list_files"}))
        assert "mine.txt" in observations["output"][0] and "mine.txt" not in observations["output"][1]
    finally:
        envs.close()


def test_shared_memory_is_refused_with_the_reason():
    with pytest.raises(ConfigError, match="shared_memory=True does not work with StaminaEnv's Text observations"):
        make_vector_env("Stamina-mini-v0", 2, mode="async", shared_memory=True)
    with pytest.raises(ConfigError, match="applies to mode='async' only"):
        make_vector_env("Stamina-mini-v0", 2, mode="sync", shared_memory=True)


def test_why_shared_memory_is_refused():
    """Gymnasium's Text shared memory returns its empty buffer; when a Gymnasium release
    fixes that, this test fails and the refusal in make_vector_env can go."""
    raw = gym.make_vec("Stamina-mini-v0", 2, vectorization_mode="async", vector_kwargs={"shared_memory": True})
    piped = make_vector_env("Stamina-mini-v0", 2, mode="async")
    try:
        shared_obs, _ = raw.reset(seed=0)
        piped_obs, _ = piped.reset(seed=0)
        assert "add" in piped_obs["prompt"][0]
        assert shared_obs["prompt"][0] != piped_obs["prompt"][0]
        assert set(shared_obs["prompt"][0]) == {"0"}  # the buffer as it was built, never the env's text
    finally:
        raw.close()
        piped.close()

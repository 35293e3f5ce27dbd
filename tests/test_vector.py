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
    envs = make_vector_env("Stamina-mini-v1", 2, mode=mode)
    try:
        assert isinstance(envs, gym.vector.SyncVectorEnv if mode == "sync" else gym.vector.AsyncVectorEnv)
        observations, infos = envs.reset(seed=[3, 4])
        assert list(observations["turn"]) == [1, 1] and all("add" in p for p in observations["prompt"])
        patch = {"tool": "apply_patch", "patch": _patch(0)}
        observations, rewards, terminated, truncated, infos = envs.step((patch, '{"tool": "list_files"}'))
        assert observations["output"][0] == "applied patch to calc/__init__.py"
        assert "calc/__init__.py (1 lines)" in observations["output"][1]  # env 1 still has the seed file
        observations, rewards, terminated, truncated, infos = envs.step(({"tool": "submit"}, {"tool": "submit"}))
        assert list(observations["turn"]) == [2, 2]
        quality = infos["reward_terms"]["quality"][0]  # the change of the code-quality score, weight 1
        assert rewards[0] == pytest.approx(1.499 + quality) and rewards[1] < 0  # the unpatched env fails the turn
        assert list(infos["grade"]["failure_class"]) == [None, "functional"]
    finally:
        envs.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_parallel_envs_never_share_workspaces_or_tmp(mode):
    envs = make_vector_env("Stamina-mini-v1", 2, mode=mode)
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


def test_shared_memory_only_applies_to_async():
    with pytest.raises(ConfigError, match="applies to mode='async' only"):
        make_vector_env("Stamina-mini-v1", 2, mode="sync", shared_memory=True)


CAFE = "caf\u00e9 \u2192 \U0001f680 \u4e2d\u6587"


@pytest.mark.parametrize("how", [
    {"vectorization_mode": "async"},  # shared memory, Gymnasium's default
    {"vectorization_mode": "async", "vector_kwargs": {"shared_memory": False}},
    {"vectorization_mode": "async", "vector_kwargs": {"copy": False}},
    {"vectorization_mode": "sync"},
])  # fmt: skip
def test_gym_make_vec_returns_the_text_as_it_is(how):
    """``gym.make_vec`` as Gymnasium users call it: every text field reads back as the env
    wrote it, non-ASCII included, step after step."""
    envs = gym.make_vec("Stamina-mini-v1", 2, **how)
    try:
        observations, _ = envs.reset(seed=[0, 1])
        assert all("add" in prompt for prompt in observations["prompt"])
        write = {"tool": "write_file", "path": "notes.txt", "content": CAFE + "\n"}
        observations, *_ = envs.step((write, {"tool": "list_files"}))
        assert "notes.txt" not in observations["output"][1]
        observations, *_ = envs.step(({"tool": "read_file", "path": "notes.txt"}, {"tool": "run", "command": f"echo '{CAFE}'"}))
        first, second = observations["output"][0], observations["output"][1]
        assert CAFE in first and CAFE in second and "\\u" not in first + second
        observations, *_ = envs.step(({"tool": "list_files"}, {"tool": "list_files"}))
        assert observations["output"][0] != first and "notes.txt" in observations["output"][0]
        assert all(envs.single_observation_space["output"].contains(text) for text in observations["output"])
    finally:
        envs.close()

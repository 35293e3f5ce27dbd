"""Trainer adapters, driven through the libraries' own env interfaces (installed from the
package index as extras of this package)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import DATA

skyrl_gym = pytest.importorskip("skyrl_gym")  # the skyrl extra; the test extra installs it


@pytest.fixture(autouse=True)
def mini_registered(monkeypatch):
    import stamina_gym

    monkeypatch.setenv("STAMINA_GYM_TASKS", str(DATA))
    stamina_gym.register_envs()


def _patch(env, turn: int) -> str:
    return env.env.unwrapped.turns[turn].reference_patch


def test_skyrl_gym_makes_and_plays_the_env_from_its_registry():
    import stamina_gym.integrations.skyrl  # noqa: F401 - registers "stamina"

    env = skyrl_gym.make("stamina", env_config={"env_id": "Stamina-mini-v1"}, extras={"seed": 0})
    try:
        prompt, meta = env.init([{"role": "user", "content": "ignored: the env brings its own request"}])
        assert [m["role"] for m in prompt] == ["system", "user"] and "Turn 1" in prompt[1]["content"]
        assert meta["turn"] == 1
        # A model's text: prose and a fenced call, then Hermes tags, then a bare call.
        read = 'Let me look first.\n```json\n{"tool": "read_file", "path": "calc/__init__.py"}\n```'
        out = env.step(read)
        assert "lines 1-1 of 1" in out["observations"][0]["content"] and not out["done"] and out["metadata"]["ok"]
        patch = json.dumps({"name": "apply_patch", "arguments": {"patch": _patch(env, 0)}})
        out = env.step(f"<think>add goes at the end</think>\n<tool_call>\n{patch}\n</tool_call>")
        assert out["metadata"]["ok"], out["observations"]
        out = env.step('{"tool": "submit"}')
        assert out["metadata"]["grade"]["failure_class"] is None and out["reward"] > 1
        assert [m["role"] for m in out["observations"]] == ["user", "user"] and "Turn 2" in out["observations"][1]["content"]
        env.step(json.dumps({"tool": "apply_patch", "patch": _patch(env, 1)}))
        out = env.step("All done, submitting: {\"tool\": \"submit\"}")
        assert out["done"] and out["reward"] > 1 and env.total_reward > 2
    finally:
        env.close()


def test_skyrl_extras_start_an_episode_later():
    import stamina_gym.integrations.skyrl  # noqa: F401

    env = skyrl_gym.make("stamina", env_config={"env_id": "Stamina-mini-v1"},
                         extras={"seed": 1, "start_turn": 2, "num_turns": 1})  # fmt: skip
    try:
        prompt, meta = env.init([])
        assert meta["turn"] == 2 and "starts at request 2" in prompt[1]["content"]
        assert env.env.unwrapped.window == (2, 2)
        out = env.step("I am not sure what to do.")
        assert not out["metadata"]["ok"] and "no tool call found" in out["observations"][0]["content"]
    finally:
        env.close()

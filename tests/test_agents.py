"""The oracle earns the maximum on every turn, the null agent fails every turn, and any
program that speaks JSON lines can play."""

from __future__ import annotations

import sys
import textwrap

import gymnasium as gym
import pytest

from stamina_gym.agents import AgentError, make_agent
from stamina_gym.errors import ConfigError
from stamina_gym.harness import Recorder, run_episode
from tests.conftest import mini_env


def play(env, agent_name, **kwargs):
    agent = make_agent(agent_name, **kwargs)
    try:
        return run_episode(env, agent, seed=0)
    finally:
        agent.close()
        env.close()


def test_oracle_and_null_on_the_mini_task():
    oracle = play(mini_env(), "oracle")
    assert [t.failure_class for t in oracle.turns] == [None, None]
    null = play(mini_env(), "null")
    assert [t.failure_class for t in null.turns] == ["functional", "functional"]
    assert all(t.passed == 0 for t in null.turns)


@pytest.mark.slow
def test_oracle_gets_the_maximum_on_every_todo_turn():
    env = gym.make("StaminaTodo-v0")
    maximum = env.unwrapped.config.reward.test_pass + env.unwrapped.config.reward.turn_bonus
    result = play(env, "oracle")
    assert len(result.turns) == len(env.unwrapped.turns) and result.terminated
    for turn in result.turns:
        assert turn.failure_class is None and turn.passed == turn.total, turn
        assert turn.reward == pytest.approx(maximum - 2 * 0.001)


@pytest.mark.slow
def test_null_agent_fails_every_todo_turn():
    result = play(gym.make("StaminaTodo-v0"), "null")
    for turn in result.turns:
        assert turn.passed == 0 and turn.failure_class in ("functional", "build"), turn


AGENT_PROGRAM = textwrap.dedent(
    """
    import json, sys
    seen = 0
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("done"):
            break
        seen += 1
        if seen == 1:
            action = {"tool": "write_file", "path": "calc/__init__.py",
                      "content": "def add(a, b):\\n    return a + b\\n"}
        else:
            action = {"tool": "submit"}
        print(json.dumps(action), flush=True)
    """
)


def test_command_agent_plays_through_json_lines(tmp_path):
    program = tmp_path / "agent.py"
    program.write_text(AGENT_PROGRAM)
    env = mini_env(max_turns=1)
    agent = make_agent("command", command=f"{sys.executable} {program}")
    recorder = Recorder(tmp_path / "records", {"agent": "command"})
    try:
        result = run_episode(env, agent, seed=0, recorder=recorder)
    finally:
        agent.close()
        env.close()
    assert result.turns[0].failure_class is None and result.turns[0].passed == 2
    lines = (tmp_path / "records" / "steps.jsonl").read_text().splitlines()
    assert len(lines) == 2 and '"tool": "submit"' in lines[1]


def test_command_agent_that_dies_is_a_framework_failure(tmp_path):
    env = mini_env()
    agent = make_agent("command", command=f"{sys.executable} -c 'import sys; sys.exit(3)'")
    try:
        result = run_episode(env, agent, seed=0)
    finally:
        agent.close()
        env.close()
    assert result.failure.startswith("framework:") and result.turns == []


def test_command_agent_that_hangs_is_stopped(tmp_path):
    agent = make_agent("command", command=f"{sys.executable} -c 'import time; time.sleep(60)'", timeout=0.5)
    env = mini_env()
    env.reset(seed=0)
    agent.reset(env)
    with pytest.raises(AgentError, match="no action within"):
        agent.act(env.reset(seed=0)[0])
    agent.close()
    env.close()


def test_unknown_agent_gets_did_you_mean():
    with pytest.raises(ConfigError, match="did you mean 'oracle'"):
        make_agent("oracel")

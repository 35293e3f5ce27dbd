"""The oracle earns the maximum on every turn, the null agent fails every turn, and any
program that speaks JSON lines can play."""

from __future__ import annotations

import sys
import textwrap

import gymnasium as gym
import pytest

from stamina_gym.agents import AgentError, make_agent
from stamina_gym.agents.view import view_for
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
def test_oracle_gets_the_maximum_on_every_todo_turn(todo_oracle_episode):
    """Over 120 s, in its setup: the fixture plays the oracle's whole 100-turn todo episode
    from cold quality caches (about 210 s), once a session for the four tests that check
    it (this one, the start at turn 50, the docker backend's rewards, the unchanged records)."""
    env, result = todo_oracle_episode.env, todo_oracle_episode.result  # played once a session (conftest)
    weights = env.unwrapped.config.reward
    assert len(result.turns) == len(env.unwrapped.turns) and result.terminated
    records = todo_oracle_episode.lines("turns.jsonl")
    probed = 0
    for turn, record in zip(result.turns, records):
        assert turn.failure_class is None and turn.passed == turn.total, turn
        terms, grade = record["reward_terms"], record["grade"]
        assert terms["tests"] == weights.test_pass and terms["bonus"] == weights.turn_bonus
        assert terms["regression"] == 0 and terms["rules"] == 0 and terms["scope"] == 0
        assert turn.reward == pytest.approx(sum(terms.values()) - turn.steps * weights.step_cost)
        # every grade carries quality, the rules in force (none broken by the reference) and memory
        assert grade["quality"]["score"] == turn.quality and 0 < turn.quality <= 1
        # the reference's own code: its quality relative to the reference is 0, and so is the term
        assert terms["quality"] == 0 and grade["quality"]["relative"] == 0 == grade["quality"]["relative_delta"]
        assert grade["rules"]["broken"] == [] and isinstance(grade["rules"]["in_force"], list)
        assert grade["memory"]["accuracy"] in (None, 1.0)
        probed += grade["memory"]["accuracy"] == 1.0
    final = records[-1]["grade"]  # the last turn reruns every earlier test still in force
    assert final["regression_total"] == final["regression_in_force"] == len(env.unwrapped.task.regression_ids(len(records)))
    last = len(result.turns)
    in_force = [r.id for r in env.unwrapped.task.meta.rules if r.from_turn <= last and (r.until_turn or last) >= last]
    assert probed >= 2 and sorted(records[-1]["grade"]["rules"]["in_force"]) == sorted(in_force)
    # measured for quality, not size: the normalised score of the growing reference holds up
    scores = [record["grade"]["quality"]["score"] for record in records]
    assert scores[0] - min(scores) <= 0.1, scores


@pytest.mark.slow
def test_null_agent_fails_every_todo_turn(tmp_path):
    """Doing nothing never earns. The null agent's tree is the seed at every turn, so its
    first ten turns are played through the env (the tenth reruns every earlier test) and
    every turn's tests are run once more on the seed: the same verdicts as a hundred
    submits (81 s) in a tenth of the time."""
    from stamina_gym.config import SandboxConfig
    from stamina_gym.grading.grade import by_base_id
    from stamina_gym.hidden_runner import run_hidden_tests
    from stamina_gym.sandbox.local import LocalSandbox
    from stamina_gym.task import load_task

    result = play(gym.make("StaminaTodo-v2", max_turns=10), "null")
    assert len(result.turns) == 10
    for turn in result.turns:
        assert turn.passed == 0 and turn.reward <= 0 and turn.failure_class in ("functional", "build"), turn
    task = load_task("todo")
    sandbox = LocalSandbox(SandboxConfig(), hidden=[task.root])
    try:
        hidden = run_hidden_tests(source=task.seed_dir, task=task, turns=task.turns, sandbox=sandbox, scratch=tmp_path,
                                  timeout=600, params=task.choose_params(lambda n: 0))  # fmt: skip
    finally:
        sandbox.close()
    assert hidden.outcomes is not None, hidden.problem
    for turn in task.turns:
        outcomes = by_base_id(hidden.outcomes, turn.test_ids)
        assert len(outcomes) == len(turn.test_ids) and all(o.status != "passed" for o in outcomes.values()), turn.id


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
    agent.reset(view_for(agent, env))
    with pytest.raises(AgentError, match="no action within"):
        agent.act(env.reset(seed=0)[0])
    agent.close()
    env.close()


def test_unknown_agent_gets_did_you_mean():
    with pytest.raises(ConfigError, match="did you mean 'oracle'"):
        make_agent("oracel")


@pytest.mark.slow
def test_a_start_at_turn_50_is_the_oracles_state_after_49_turns(todo_oracle_episode):
    """``reset(options={"start_turn": 50})`` lays the reference of turns 1-49 as the
    oracle's submits left them (the same commit), and turn 50 is graded as in the episode."""
    records = todo_oracle_episode.lines("turns.jsonl")
    env = gym.make("StaminaTodo-v2")
    try:
        observation, info = env.reset(seed=0, options={"start_turn": 50})
        inner = env.unwrapped
        assert info["turn"] == info["start_turn"] == 50 and int(observation["turn"]) == 50
        assert inner.workspace.head() == records[48]["commit"]
        agent = make_agent("oracle")
        agent.reset(view_for(agent, env))
        while True:
            observation, reward, terminated, truncated, info = env.step(agent.act(observation))
            if "grade" in info:
                break
        grade, recorded = info["grade"], records[49]
        assert info["commit"] == recorded["commit"] and grade["passed"] == grade["total"] == recorded["grade"]["total"]
        assert grade["regression_in_force"] == recorded["grade"]["regression_in_force"] > 0
        assert info["reward_terms"] == recorded["reward_terms"]
    finally:
        env.close()

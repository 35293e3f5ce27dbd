"""Deferred grading (``EnvConfig.deferred_grading``): a submit returns the next turn at
once and its grade and reward arrive at the next submit's step, or at the episode's last.
The rewards are the synchronous env's, in the same order, for the oracle and for an agent
that fails turns and breaks earlier tests; the runner's and collect's records put each
grade on its own turn; the agent's commands run beside the grading."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

from stamina_gym.agents import make_agent
from stamina_gym.harness import run_episode
from stamina_gym.rollout import RolloutSpec, collect
from stamina_gym.submits import graded_submits, turn_ended
from tests.conftest import mini_env

TURNS = 10


class _Steps:
    """An observer that keeps each step's reward and info."""

    def __init__(self) -> None:
        self.rows: list[tuple[float, dict]] = []

    def start(self, *args):
        return None

    def before_act(self, observation) -> None:
        pass

    def after_act(self, *args) -> bool:
        return False

    def agent_failed(self, *args) -> None:
        pass

    def step(self, step) -> bool:
        self.rows.append((step.reward, step.info))
        return False


def _episode(deferred: bool) -> tuple[list, float, list, list]:
    """The oracle's first ``TURNS`` todo turns: (each graded submit's turn and terms, in
    the order they arrived; the episode's reward; the runner's turn records; the steps)."""
    from stamina_gym.play import play

    env = gym.make("StaminaTodo-v2", max_turns=TURNS, sandbox={"kind": "local"}, deferred_grading=deferred)
    agent, steps = make_agent("oracle"), _Steps()
    try:
        play(env, agent, [steps], seed=0)
    finally:
        agent.close()
        env.close()
    graded = [(g["turn"], g["reward_terms"]) for _, info in steps.rows for g in graded_submits(info)]
    return graded, sum(reward for reward, _ in steps.rows), steps.rows


@pytest.mark.slow
def test_deferred_grades_arrive_at_the_next_submit_with_the_synchronous_rewards():
    """The oracle's rewards, graded both ways: the same terms per turn, in turn order;
    each grade on the next submit's step (two on the last), none on its own."""
    synchronous, total, _ = _episode(False)
    deferred, deferred_total, rows = _episode(True)
    assert deferred == synchronous and [turn for turn, _ in deferred] == list(range(1, TURNS + 1))
    assert deferred_total == pytest.approx(total, abs=1e-9)
    submits = [info for _, info in rows if turn_ended(info)]
    assert [info["submitted"] for info in submits] == list(range(1, TURNS + 1))
    assert "grades" not in submits[0] and "grade" not in submits[0]  # its own grade comes later
    for before, info in zip(submits, submits[1:-1]):
        assert [g["turn"] for g in info["grades"]] == [before["submitted"]]
    assert [g["turn"] for g in submits[-1]["grades"]] == [TURNS - 1, TURNS]


@pytest.mark.slow
def test_an_agent_that_breaks_earlier_work_is_paid_the_same_deferred(tmp_path):
    """The ladder's break rung (it fails turns and breaks earlier tests), collected both
    ways: the same grades and per-submit rewards, in order, and the runner's turn records
    the same rewards per turn."""
    records = {}
    for deferred in (False, True):
        spec = RolloutSpec("StaminaTodo-v2", agent="flawed", agent_kwargs={"flaw": "break", "share": 0.5},
                           env_kwargs={"max_turns": TURNS, "deferred_grading": deferred, "sandbox": {"kind": "local"}})  # fmt: skip
        (record,) = collect(spec, episodes=1, workers=1, backend="inline").records
        records[deferred] = record
    for key in ("submit_rewards", "turn_rewards", "turn_failure_classes", "scores"):
        assert records[True][key] == pytest.approx(records[False][key]), key
    assert any(terms < 1.5 for terms in records[False]["submit_rewards"])  # the rung does break things
    turns = {}
    for deferred in (False, True):
        env = gym.make("StaminaTodo-v2", max_turns=4, sandbox={"kind": "local"}, deferred_grading=deferred)
        agent = make_agent("flawed", flaw="break", share=0.5)
        try:
            result = run_episode(env, agent, seed=0)
        finally:
            agent.close()
            env.close()
        turns[deferred] = [(t.turn, t.reward, t.failure_class) for t in result.turns]
    assert turns[True] == turns[False] and len(turns[True]) == 4


def test_the_agents_commands_run_beside_the_grading_of_its_last_submit():
    """Right after a deferred submit the agent runs its tests and a command: they pass and
    finish; the grade arrives at the next submit; a reset with a grade under way waits for
    it and starts clean."""
    env = mini_env(sandbox={"kind": "local"}, deferred_grading=True)
    try:
        env.reset(seed=0)
        env.step({"tool": "write_file", "path": "calc/__init__.py", "content": "def add(a, b):\n    return a + b\n"})
        observation, reward, terminated, _, info = env.step({"tool": "submit"})
        assert not terminated and info["submitted"] == 1 and "grade" not in info
        assert reward == pytest.approx(-env.config.reward.step_cost)
        for action in ({"tool": "run_tests"}, {"tool": "run", "command": "python -c \"print(sum(range(10**6)))\""}):
            output, _, _, _, step = env.step(action)
            assert step["ok"] and "timed out" not in output["output"] and "killed" not in output["output"], output["output"]
        env.step({"tool": "write_file", "path": "calc/__init__.py",
                  "content": "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"})  # fmt: skip
        _, reward, terminated, _, info = env.step({"tool": "submit"})
        assert terminated and [g["turn"] for g in info["grades"]] == [1, 2]
        assert all(g["grade"]["failure_class"] is None for g in info["grades"])
        assert reward == pytest.approx(sum(g["reward"] for g in info["grades"]) - env.config.reward.step_cost)
        env.reset(seed=1)
        env.step({"tool": "submit"})  # nothing written: graded later, then dropped by the reset
        observation, _ = env.reset(seed=2)
        assert observation["turn"] == 1 and not env._graded
        json.dumps(info["grades"])  # records take them as they are
    finally:
        env.close()


def test_an_evaluation_refuses_deferred_grading(tmp_path):
    """An evaluation reads each turn's grade as the turn ends: an env made with deferred
    grading (an env spec, a ``make_env``) is refused by name."""
    from stamina_gym.errors import ConfigError
    from stamina_gym.evaluation.config import AgentSpec, EvalConfig
    from stamina_gym.evaluation.runner import Evaluation

    config = EvalConfig(env="StaminaTodo-v2", agents=(AgentSpec(name="null"),), runs=1, turns=1)
    deferred = lambda env_id, **overrides: gym.make(env_id, deferred_grading=True, **overrides)  # noqa: E731
    with pytest.raises(ConfigError, match="deferred_grading"):
        Evaluation(config, tmp_path / "eval", progress=False, make_env=deferred).run()


def test_the_chat_env_opens_the_next_request_at_a_deferred_submit():
    """The chat door (and the adapters built on it): a submit's message still brings the
    next request at once; its reward and grade come with the next submit's message."""
    from stamina_gym.chat import ChatEnv
    from tests.test_chat import assistant, call

    chat = ChatEnv(mini_env(sandbox={"kind": "local"}, deferred_grading=True))
    try:
        chat.reset(seed=0)
        patches = [turn.reference_patch for turn in chat.env.unwrapped.turns]
        new, reward, done, info = chat.step(assistant(call("a1", "apply_patch", patch=patches[0]), call("a2", "submit")))
        assert [m["role"] for m in new] == ["tool", "tool", "user"] and new[2]["content"].startswith("Turn 2")
        assert not done and "grade" not in info and reward == pytest.approx(-2 * 0.001)
        new, reward, done, info = chat.step(assistant(call("b1", "apply_patch", patch=patches[1]), call("b2", "submit")))
        assert done and [g["turn"] for g in info["grades"]] == [1, 2]
        assert reward == pytest.approx(sum(g["reward"] for g in info["grades"]) - 2 * 0.001)
    finally:
        chat.close()


#: A command the agent runs while its last submit is graded: it looks for the grading
#: folder and for any harness process but its own command runner (``--serve-visible``).
PEEK = (r"sleep 1; d=/gr''ade; test -e $d && echo SEEN-GRADING-FOLDER; "
        r"for p in /proc/[0-9]*; do c=$(tr '\0' ' ' < $p/cmdline 2>/dev/null); case \"$c\" in *harness.py*) "
        r"case \"$c\" in *serve-visible*) ;; *) echo SEEN-GRADING-PROCESS;; esac;; esac; done; echo looked")  # fmt: skip


def test_the_grading_under_way_is_out_of_the_agents_sight(backend):
    """Deferred grading lets the agent's commands run while its submit is graded: they
    see neither the grading folder (the hidden tests) nor the grading processes, on
    either backend (the grading has a sandbox of its own)."""
    env = mini_env(sandbox={"kind": backend}, deferred_grading=True)
    try:
        env.reset(seed=0)
        slow = "import time\n\n\ndef add(a, b):\n    time.sleep(3)\n    return a + b\n"
        env.step({"tool": "write_file", "path": "calc/__init__.py", "content": slow})
        env.step({"tool": "submit"})
        output = env.step({"tool": "run", "command": PEEK.replace('\\"', '"')})[0]["output"]
        assert "looked" in output and "SEEN" not in output, output
        assert env._graded and not env._graded[0].done()  # the grading was under way as it looked
    finally:
        env.close()


def test_an_episode_the_caller_cuts_short_settles_the_grades_still_due():
    """A trainer that ends an episode itself (its own step cap) calls ``settle``: the
    grade of the last submit arrives there, with its reward; nothing is due after."""
    env = mini_env(sandbox={"kind": "local"}, deferred_grading=True)
    try:
        env.reset(seed=0)
        env.step({"tool": "write_file", "path": "calc/__init__.py", "content": "def add(a, b):\n    return a + b\n"})
        env.step({"tool": "submit"})
        reward, grades = env.settle()
        assert [g["turn"] for g in grades] == [1] and grades[0]["grade"]["failure_class"] is None
        assert reward == pytest.approx(grades[0]["reward"]) and reward > 1
        assert env.settle() == (0.0, [])
    finally:
        env.close()


#: Forks up to the sandbox user's process limit and holds them for 9 s: the processes the
#: grading needs share that limit (one uid per sandbox).
FORK_BOMB = ("import os, time\nkids = 0\nfor i in range(400):\n    try:\n        if os.fork() == 0:\n"
             "            time.sleep(9)\n            os._exit(0)\n        kids += 1\n    except OSError:\n        break\n"
             "print('forked', kids)\ntime.sleep(9)\n")  # fmt: skip


def test_starving_a_deferred_grading_of_processes_never_voids_it():
    """The agent's command runs while its failing submit is graded: a large tree slows
    the grading's start, and a fork bomb takes every process its uid may have before the
    harness forks. The grade is then a failure of the agent's code, never a voided sample
    (which would pay 0, above the failure)."""
    env = mini_env(sandbox={"kind": "local"}, deferred_grading=True)
    try:
        env.reset(seed=0)
        env.step({"tool": "write_file", "path": "bomb.py", "content": FORK_BOMB})
        env.step({"tool": "write_file", "path": "calc/__init__.py", "content": "def add(a, b):\n    return 0\n"})
        slow = "import os\nos.makedirs('data', exist_ok=True)\nfor i in range(3000):\n    open(f'data/f{i}.txt', 'w').write('x' * 20000)\n"
        env.step({"tool": "write_file", "path": "fill.py", "content": slow})
        env.step({"tool": "run", "command": "python fill.py"})
        env.step({"tool": "submit"})
        output = env.step({"tool": "run", "command": "python bomb.py"})[0]["output"]
        assert "forked 12" in output, output  # it did take (nearly) all 128
        reward, (graded,) = env.settle()
        assert graded["grade"]["failure_class"] not in ("infrastructure", "violation") and graded["grade"]["passed"] == 0
        assert reward < 0, graded["grade"]
    finally:
        env.close()


def test_a_deferred_submit_is_graded_on_the_tree_it_submitted():
    """The submit copies the tree before the agent goes on: breaking the code right after
    a deferred submit changes nothing of its grade."""
    env = mini_env(sandbox={"kind": "local"}, deferred_grading=True)
    try:
        env.reset(seed=0)
        env.step({"tool": "write_file", "path": "calc/__init__.py", "content": "def add(a, b):\n    return a + b\n"})
        env.step({"tool": "submit"})
        env.step({"tool": "write_file", "path": "calc/__init__.py", "content": "def add(a, b):\n    return 0\n"})
        _, (graded,) = env.settle()
        assert graded["turn"] == 1 and graded["grade"]["failure_class"] is None and graded["grade"]["passed"] == 2
    finally:
        env.close()

"""The verifiers adapter, driven by the library's own eval entry point (``run_eval``, what
``vf-eval`` runs) and ``Env.run_episode``. The model is a local chat-completions server
(tests/evaluation/chat_server.py) answering with scripted tool calls over real HTTP; the
adapter's harness calls it with the ``openai`` client through verifiers' interception
server and its own upstream client."""

from __future__ import annotations

import asyncio
import importlib
import json
import sys

import gymnasium as gym
import pytest

from tests.conftest import DATA
from tests.evaluation.chat_server import ChatServer

pytest.importorskip("verifiers")  # the verifiers extra, on the Python versions it supports

import verifiers.v1 as vf  # noqa: E402
from verifiers.v1.cli.eval.runner import run_eval  # noqa: E402
from verifiers.v1.configs.cli.eval import EvalConfig  # noqa: E402
from verifiers.v1.dialects.chat import message_to_wire  # noqa: E402

KEY_VAR = "STAMINA_TEST_MODEL_KEY"


@pytest.fixture(autouse=True)
def mini_registered(monkeypatch):
    import stamina_gym

    monkeypatch.setenv("STAMINA_GYM_TASKS", str(DATA))
    monkeypatch.setenv(KEY_VAR, "sk-test-0123456789abcdef")
    stamina_gym.register_envs()


@pytest.fixture
def patches(mini_registered) -> list[str]:
    """The mini task's reference patch of each turn."""
    env = gym.make("Stamina-mini-v1")
    try:
        return [turn.reference_patch for turn in env.unwrapped.turns]
    finally:
        env.close()


def solver(patches: list[str]):
    """A scripted model: on each request, for the latest ``Turn N`` request, read the
    file, then apply turn N's reference patch, then submit."""

    def reply(body: dict) -> list[tuple[str, dict]]:
        messages = body["messages"]
        at = max(i for i, m in enumerate(messages) if m["role"] == "user" and "Turn " in m["content"])
        turn = int(messages[at]["content"].split("Turn ", 1)[1].split(" ", 1)[0])
        done = sum(m["role"] == "tool" for m in messages[at:])
        script = [("read_file", {"path": "calc/__init__.py"}), ("apply_patch", {"patch": patches[turn - 1]}), ("submit", {})]
        return [script[min(done, 2)]]

    return reply


def eval_config(server: ChatServer, tmp_path, **taskset) -> EvalConfig:
    from stamina_gym.integrations.verifiers import TASKSET_ID

    return EvalConfig(env={"taskset": {"id": TASKSET_ID, "env_id": "Stamina-mini-v1", **taskset}}, model="test-model",
                      client={"base_url": server.base_url, "api_key_var": KEY_VAR}, push=False, rich=None,
                      output_dir=tmp_path)  # fmt: skip


def branch(trace: vf.Trace) -> list[dict]:
    """The rollout's recorded conversation, as chat-completions messages."""
    return [message_to_wire(m) for m in trace.branches[-1].messages]


def test_vf_eval_plays_a_turn_through_the_env(tmp_path, patches):
    with ChatServer(solver(patches)) as server:
        (episode,) = asyncio.run(run_eval(eval_config(server, tmp_path, make_kwargs={"max_turns": 1})))
    assert episode.ok, episode.errors
    (trace,) = episode.traces
    messages = branch(trace)
    assert [m["role"] for m in messages[:2]] == ["system", "user"] and "Turn 1" in messages[1]["content"]
    assert [m["role"] for m in messages[2:]] == ["assistant", "tool", "assistant", "tool", "assistant"]
    assert "lines 1-1 of 1" in messages[3]["content"] and messages[5]["content"].startswith("applied patch")
    assert [m["tool_calls"][0]["function"]["name"] for m in messages[2::2]] == ["read_file", "apply_patch", "submit"]
    # The library's reward is the env's: one entry per model reply, the last the submit's.
    rewards = trace.info["rewards"]
    assert len(rewards) == 3 and rewards[-1] > 1 and trace.info["grades"] == [{"turn": 1, "failure_class": None}]
    assert trace.rewards["stamina"].score == pytest.approx(sum(rewards)) == pytest.approx(trace.reward)
    assert trace.metrics["submits"] == 1
    # What went over the wire: the env's tools, the run's model, the key of the client config.
    from stamina_gym.tools import TOOLS

    first = server.requests[0]
    assert len(server.requests) == 3 and [t["function"]["name"] for t in first["body"]["tools"]] == list(TOOLS)
    assert first["body"]["model"] == "test-model" and first["headers"]["authorization"].endswith("0123456789abcdef")
    # The same replies, played on a fresh env, earn the same rewards.
    from stamina_gym.chat import ChatEnv

    chat = ChatEnv("Stamina-mini-v1", max_turns=1)
    try:
        chat.reset(seed=0)
        replayed = [chat.step(m)[1] for m in messages if m["role"] == "assistant"]
    finally:
        chat.close()
    assert replayed == pytest.approx(rewards)
    saved = [json.loads(line) for line in next(tmp_path.glob("*/traces.jsonl")).read_text().splitlines()]
    assert saved[0]["traces"][0]["task"]["data"]["info"] == {"env_id": "Stamina-mini-v1", "seed": 0, "start_turn": 1}
    assert saved[0]["traces"][0]["rewards"]["stamina"]["score"] == pytest.approx(sum(rewards))


def track_chat_envs(monkeypatch, fail_step: bool = False) -> list:
    """Every ChatEnv the adapter makes from now on (each with ``closed``); with
    ``fail_step`` their ``step`` raises."""
    import stamina_gym.integrations.verifiers as adapter

    made = []

    class TrackedChatEnv(adapter.ChatEnv):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            self.closed = False
            made.append(self)

        def step(self, message):
            if fail_step:
                raise RuntimeError("the env broke")
            return super().step(message)

        def close(self) -> None:
            self.closed = True
            super().close()

    monkeypatch.setattr(adapter, "ChatEnv", TrackedChatEnv)
    return made


def test_concurrent_rollouts_each_own_an_env_and_close_it(tmp_path, patches, monkeypatch):
    made = track_chat_envs(monkeypatch)
    with ChatServer(solver(patches)) as server:
        episodes = asyncio.run(run_eval(eval_config(server, tmp_path, num_examples=2, start_turns=[1, 2], seed=7)))
    assert all(e.ok for e in episodes), [e.errors for e in episodes]
    traces = {e.traces[0].task.data.info["start_turn"]: e.traces[0] for e in episodes}
    assert traces[1].task.data.info["seed"] == 7 and traces[2].task.data.info["seed"] == 8
    assert "starts at request 2" in branch(traces[2])[1]["content"]
    # After a submit, the next request comes as a user message with the tool result.
    assert any(m["role"] == "user" and m["content"].startswith("Turn 2") for m in branch(traces[1])[2:])
    assert [traces[1].metrics["submits"], traces[2].metrics["submits"]] == [2, 1]
    assert all(t.reward == pytest.approx(sum(t.info["rewards"])) and max(t.info["rewards"]) > 1 for t in traces.values())
    # Two envs, both closed; the episodes ran at the same time.
    assert len(made) == 2 and made[0].env is not made[1].env and all(chat.closed for chat in made)
    one, two = (t.timing.agent for t in traces.values())
    assert one.start < two.end and two.start < one.end


def test_an_env_that_fails_is_closed_and_the_episode_records_the_error(patches, monkeypatch):
    import stamina_gym.integrations.verifiers as adapter

    made = track_chat_envs(monkeypatch, fail_step=True)
    env = adapter.load_environment("Stamina-mini-v1")
    (task,) = env.taskset

    async def play():
        ctx = vf.ModelContext(model="m", client=vf.EvalClientConfig(base_url=server.base_url, api_key_var=KEY_VAR))
        async with env.serving():
            return await env.run_episode(task, ctx)

    with ChatServer(solver(patches)) as server:
        episode = asyncio.run(play())
    assert not episode.ok and "the env broke" in episode.errors[0].message
    assert len(made) == 1 and made[0].closed


def test_rows_carry_seed_and_start_turn_and_the_library_loads_the_env_by_id():
    from stamina_gym.integrations import verifiers as adapter

    env = adapter.load_environment("Stamina-mini-v1", num_examples=3, start_turns=[1, 2], seed=5, max_turns=2)
    assert isinstance(env, adapter.StaminaVerifiersEnv)
    rows = [task.data for task in env.taskset]
    assert [r.info for r in rows] == [{"env_id": "Stamina-mini-v1", "seed": s, "start_turn": t}
                                      for s, t in [(5, 1), (6, 2), (7, 1)]]  # fmt: skip
    assert all(r.prompt is None for r in rows) and env.taskset.config.make_kwargs == {"max_turns": 2}
    # By id alone, as vf-eval resolves it: the taskset's env, its harness as the seat's default.
    config = vf.resolve_env_config({"taskset": {"id": adapter.TASKSET_ID}})
    assert isinstance(config, adapter.StaminaEnvConfig) and vf.environment_class(adapter.TASKSET_ID) is type(env)
    assert vf.default_harness_id(adapter.TASKSET_ID) == adapter.TASKSET_ID


def test_missing_verifiers_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "verifiers", None)
    monkeypatch.setitem(sys.modules, "verifiers.v1", None)
    monkeypatch.delitem(sys.modules, "stamina_gym.integrations.verifiers", raising=False)
    with pytest.raises(ImportError, match=r"pip install 'stamina-gym\[verifiers\]'"):
        importlib.import_module("stamina_gym.integrations.verifiers")


def test_the_plugin_id_resolves_in_a_fresh_process_without_importing_the_adapter_first():
    import subprocess

    code = ("import verifiers.v1 as vf; config = vf.resolve_env_config({'taskset': {'id': 'stamina_gym_verifiers'}});"
            "print(type(config).__module__)")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "stamina_gym.integrations.verifiers"

"""The openai agent, with the real ``openai`` client over real HTTP against a local
server that speaks the chat-completions wire format."""

from __future__ import annotations

import json
import re

import pytest

from stamina_gym.agents import make_agent
from stamina_gym.agents.openai_chat import estimate_tokens, tool_schema
from stamina_gym.cli import _parse_agent_args
from stamina_gym.errors import ConfigError
from stamina_gym.harness import run_episode
from stamina_gym.tools import TOOLS
from tests.conftest import mini_env
from tests.evaluation.chat_server import ChatServer

ADD = {"path": "calc/__init__.py", "content": '"""Tiny calculator."""\n\n\ndef add(a, b):\n    return a + b\n'}
KEY = "sk-test-0123456789abcdef"


def test_tool_schema_is_generated_from_the_env_tool_table():
    schema = {t["function"]["name"]: t["function"] for t in tool_schema()}
    assert list(schema) == list(TOOLS)
    read = schema["read_file"]["parameters"]
    assert read["required"] == ["path"] and read["properties"]["start"] == {"type": "integer"}
    assert schema["run"]["parameters"]["properties"]["timeout"]["type"] == "number"
    assert schema["run_tests"]["parameters"]["properties"]["args"]["type"] == "array"
    assert schema["submit"]["parameters"]["properties"] == {}


def test_agent_plays_a_turn_over_real_http(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    script = [[("read_file", {"path": "calc/__init__.py"})], [("write_file", ADD), ("submit", {})]]
    with ChatServer(script) as server:
        agent = make_agent("openai", model="test-model", base_url=server.base_url, api_key=KEY)
        env = mini_env(max_turns=1)
        try:
            result = run_episode(env, agent, seed=0)
        finally:
            agent.close()
            env.close()
    assert result.turns[0].failure_class is None and result.turns[0].passed == 2
    assert len(server.requests) == 2
    first, second = (r["body"] for r in server.requests)
    assert server.requests[0]["headers"]["authorization"] == f"Bearer {KEY}"
    assert first["model"] == "test-model" and [t["function"]["name"] for t in first["tools"]] == list(TOOLS)
    assert first["messages"][0]["role"] == "system"
    assert "add a function add" in first["messages"][1]["content"] or "calc.add" in first["messages"][1]["content"]
    # The second request carries the first call and its result, tied by the call id.
    call = second["messages"][-2]["tool_calls"][0]
    result_message = second["messages"][-1]
    assert result_message == {"role": "tool", "tool_call_id": call["id"], "content": result_message["content"]}
    assert "lines 1-1 of 1" in result_message["content"]


def test_text_replies_are_nudged_then_the_turn_is_submitted():
    with ChatServer(["I think I would", "Still thinking", "Done, I believe"]) as server:
        agent = make_agent("openai", model="m", base_url=server.base_url, api_key=KEY)
        env = mini_env(max_turns=1)
        try:
            result = run_episode(env, agent, seed=0)
        finally:
            agent.close()
            env.close()
    assert len(server.requests) == 3 and result.turns[0].failure_class == "functional"
    assert server.requests[1]["body"]["messages"][-1]["content"].startswith("Reply with tool calls only")


def test_context_keeps_system_and_request_within_the_token_budget():
    big = "x" * 3000  # each result ~750 tokens; the budget holds about two
    script = [[("run", {"command": f"echo {big}"})] for _ in range(6)] + [[("submit", {})]]
    with ChatServer(script) as server:
        agent = make_agent("openai", model="m", base_url=server.base_url, api_key=KEY,
                           context_tokens=3000, max_reply_tokens=500)  # fmt: skip
        env = mini_env(max_turns=1)
        try:
            run_episode(env, agent, seed=0)
        finally:
            agent.close()
            env.close()
    assert len(server.requests) == 7
    for request in server.requests:
        messages = request["body"]["messages"]
        assert sum(map(estimate_tokens, messages)) <= 3000 - 500
        assert messages[0]["role"] == "system"
        assert any(m["role"] == "user" and "Request 1" in (m["content"] or "") for m in messages)
        # Every tool result follows the assistant message that called it.
        called = {c["id"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or []}
        assert all(m["tool_call_id"] in called for m in messages if m["role"] == "tool")
    last = server.requests[-1]["body"]["messages"]
    assert "omitted to fit the context" in last[1]["content"]
    assert sum(m["role"] == "tool" for m in last) < 6


def test_missing_model_or_key_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    with pytest.raises(ConfigError, match="model .*OPENAI_MODEL.* and api_key .*OPENAI_API_KEY") as error:
        make_agent("openai")
    # The hint's syntax is what run and collect take: given as written, the agent is made.
    hinted = re.findall(r"--agent-arg (\S+?)(?:,|\s|$)", str(error.value))
    assert hinted == ["model=OPENAI_MODEL", "api_key=OPENAI_API_KEY"], str(error.value)
    assert make_agent("openai", **_parse_agent_args(hinted)).config.model == "OPENAI_MODEL"


def test_settings_come_from_the_environment(monkeypatch):
    with ChatServer([[("submit", {})]]) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_MODEL", "env-model")
        agent = make_agent("openai")
        env = mini_env(max_turns=1)
        try:
            run_episode(env, agent, seed=0)
        finally:
            agent.close()
            env.close()
    assert server.requests[0]["body"]["model"] == "env-model"
    assert json.dumps(agent.describe()).find(KEY) == -1


MUL = {"path": "calc/__init__.py",
       "content": ADD["content"] + "\n\ndef mul(a, b):\n    return a * b\n"}  # fmt: skip


def test_every_model_call_is_recorded_as_the_server_saw_it(tmp_path, monkeypatch):
    """Two turns against the fake server, with a text reply (and its nudge) and parallel
    tool calls: every request the server received and every reply it sent are in the
    records as they were, in the JSONL of a run and in the Parquet tables of a rollout; the
    episode's conversation is the model's own, ids kept; the reward columns add up."""
    import pyarrow.parquet as pq

    from stamina_gym.harness import Recorder
    from stamina_gym.rollout.datasets import write_parquet
    from stamina_gym.rollout.workers import play_episode

    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    script = [
        "Let me look first.",
        [("read_file", {"path": "calc/__init__.py"}), ("list_files", {})],
        [("write_file", ADD), ("submit", {})],
        [("write_file", MUL), ("run", {"command": "echo caf\u00e9"}), ("submit", {})],
    ]
    played = {}
    for how in ("run", "rollout"):
        with ChatServer(list(script)) as server:
            agent = make_agent("openai", model="test-model", base_url=server.base_url, api_key=KEY, seed=7)
            env = mini_env()
            try:
                if how == "run":
                    run_episode(env, agent, seed=0, recorder=Recorder(tmp_path / "run", {"agent": "openai"}))
                    record = None
                else:
                    record = play_episode(env, agent, episode=0, seed=0)
            finally:
                agent.close()
                env.close()
        played[how] = (record, [r["body"] for r in server.requests], [json.loads(b) for b in server.responses])

    lines = [json.loads(line) for line in (tmp_path / "run" / "model_calls.jsonl").read_text().splitlines()]
    record, bodies, responses = played["rollout"]
    for calls, (_, sent, got) in ((lines, played["run"]), (record["model_calls"], played["rollout"])):
        assert len(calls) == len(sent) == len(script)
        for call, body, response in zip(calls, sent, got):
            assert json.dumps(call["request"], sort_keys=True) == json.dumps(body, sort_keys=True)
            message = response["choices"][0]["message"]
            assert call["reply"]["content"] == message["content"]
            assert call["reply"].get("tool_calls", []) == message.get("tool_calls", [])
            assert call["finish_reason"] == response["choices"][0]["finish_reason"]
            assert call["usage"]["prompt_tokens"] == response["usage"]["prompt_tokens"] and call["trimmed"] is False
    assert bodies[0]["seed"] == 7 and bodies[0]["temperature"] == 0.0 and bodies[0]["max_tokens"] == 2048

    # The conversation is the model's: the last request is its prefix, then the last reply.
    messages, last = record["messages"], bodies[-1]["messages"]
    assert record["messages_source"] == "model" and messages[: len(last)] == last
    assert messages[len(last)] == record["model_calls"][-1]["reply"]
    assert messages[0] == bodies[0]["messages"][0] and messages[0]["role"] == "system"
    assert {"role": "user", "content": "Reply with tool calls only. Call submit when this request is done."} in messages
    ids = [c["id"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls", [])]
    assert ids == [c["id"] for r in responses for c in r["choices"][0]["message"].get("tool_calls", [])]
    assert any(m["role"] == "tool" and "caf\u00e9" in m["content"] for m in messages)

    write_parquet([record], tmp_path / "parquet")
    calls = pq.read_table(tmp_path / "parquet" / "calls.parquet").to_pylist()
    assert [json.loads(c["request"]) for c in calls] == bodies
    assert [json.loads(c["reply"]) for c in calls] == [call["reply"] for call in record["model_calls"]]
    episode = pq.read_table(tmp_path / "parquet" / "episodes.parquet").to_pylist()[0]
    assert json.loads(episode["tools"]) == bodies[0]["tools"]
    assert [m["content"] for m in episode["messages"]] == [m.get("content") for m in messages]
    steps = pq.read_table(tmp_path / "parquet" / "steps.parquet").to_pylist()
    made = [s["model_call"] for s in steps[1:]]
    assert made == [1, 1, 2, 2, 3, 3, 3]  # each action names the call whose reply held it
    for turn, (total, submit) in enumerate(zip(episode["turn_rewards"], episode["submit_rewards"]), start=1):
        others = sum(s["reward"] for s in steps[1:] if s["turn"] == turn and "grade" not in json.loads(s["info"]))
        assert total == pytest.approx(submit + others) and submit != total
    # Each reward sits on the assistant message whose reply made its steps (call i is the
    # i-th assistant message; call 0 was text, nudged, and made none), with its turn.
    replies = [m for m in episode["messages"] if m["role"] == "assistant"]
    assert len(replies) == len(calls)
    for call, reply in enumerate(replies):
        made_steps = [s for s in steps[1:] if s["model_call"] == call]
        assert reply["reward"] == pytest.approx(sum(s["reward"] for s in made_steps))
        assert reply["step"] == (made_steps[0]["step"] if made_steps else None)
        assert reply["turn"] == (made_steps[0]["turn"] if made_steps else 1)
    assert sum(m["reward"] for m in replies) == pytest.approx(sum(s["reward"] for s in steps))
    assert all(m["reward"] is None for m in episode["messages"] if m["role"] != "assistant")
    results = [(m["step"], m["turn"]) for m in episode["messages"] if m["role"] == "tool"]
    # Each tool result names its step; the last (the final submit's) never reached the model.
    assert results == [(s["step"], s["turn"]) for s in steps[1:-1]]

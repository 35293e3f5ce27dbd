"""The chat adapter: OpenAI-format tool calls drive whole episodes."""

from __future__ import annotations

import json

import pytest

from stamina_gym.chat import ChatEnv, episode_messages, openai_tools
from stamina_gym.rollout import RolloutSpec, collect
from stamina_gym.tools import TOOLS
from tests.conftest import DATA, mini_env


def call(call_id: str, name: str, **arguments) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def assistant(*calls: dict, content: str | None = None) -> dict:
    return {"role": "assistant", "content": content, **({"tool_calls": list(calls)} if calls else {})}


@pytest.fixture
def chat():
    adapter = ChatEnv(mini_env())
    yield adapter
    adapter.close()


def test_tools_are_openai_function_schemas():
    tools = openai_tools()
    assert [t["function"]["name"] for t in tools] == list(TOOLS)
    read = next(t["function"] for t in tools if t["function"]["name"] == "read_file")
    assert read["parameters"]["required"] == ["path"]
    assert read["parameters"]["properties"]["start"] == {"type": "integer"}
    run = next(t["function"] for t in tools if t["function"]["name"] == "run")
    assert run["parameters"]["properties"]["timeout"]["type"] == "number"
    assert all(t["type"] == "function" and t["function"]["parameters"]["additionalProperties"] is False for t in tools)


def test_a_full_episode_driven_by_tool_calls(chat):
    messages = chat.reset(seed=0)
    assert [m["role"] for m in messages] == ["system", "user"]
    assert "submit" in messages[0]["content"] and messages[1]["content"].startswith("Turn 1 (setup): ")
    assert "Repository:\nREADME.md (1 lines)" in messages[1]["content"]
    patches = [turn.reference_patch for turn in chat.env.unwrapped.turns]
    total = 0.0

    # Turn 1: look, patch and submit in one message.
    new, reward, done, info = chat.step(assistant(call("a1", "read_file", path="calc/__init__.py"),
                                                  call("a2", "apply_patch", patch=patches[0]), call("a3", "submit")))  # fmt: skip
    total += reward
    assert [m["role"] for m in new] == ["tool", "tool", "tool", "user"]
    assert [m["tool_call_id"] for m in new[:3]] == ["a1", "a2", "a3"]
    assert "Tiny calculator" in new[0]["content"] and new[1]["content"] == "applied patch to calc/__init__.py"
    assert "2/2 new checks passed" in new[2]["content"] and new[3]["content"].startswith("Turn 2")
    assert not done and info["grade"]["failure_class"] is None and len(info["steps"]) == 3
    quality = info["grade"]["quality"]["relative_delta"]  # reward.quality is 1.0; 0 for the reference's code
    assert reward == pytest.approx(1.5 + quality - 3 * 0.001)

    # Turn 2: the patch, then the submit alone.
    new, reward, done, info = chat.step(assistant(call("b1", "apply_patch", patch=patches[1])))
    total += reward
    assert [m["role"] for m in new] == ["tool"] and not done
    new, reward, done, info = chat.step(assistant(call("b2", "submit")))
    total += reward
    assert done and info["terminated"] and info["grade"]["passed"] == info["grade"]["total"] == 1
    assert [m["role"] for m in new] == ["tool"] and "last request" in new[0]["content"]
    quality += info["grade"]["quality"]["relative_delta"]
    assert total == pytest.approx(2 * 1.5 + quality - 5 * 0.001)
    assert len(chat.messages) == 2 + 1 + 4 + 1 + 1 + 1 + 1
    with pytest.raises(RuntimeError, match="call reset"):
        chat.step(assistant(call("c1", "submit")))


def test_calls_after_a_submit_wait_for_the_next_request(chat):
    chat.reset(seed=0)
    new, reward, done, info = chat.step(assistant(call("x1", "submit"), call("x2", "list_files")))
    assert [m["role"] for m in new] == ["tool", "tool", "user"]
    assert new[1] == {"role": "tool", "tool_call_id": "x2", "content": "not run: the turn was submitted; read the next request first"}
    assert len(info["steps"]) == 1 and reward < 0


def test_text_messages_and_bad_calls_are_answered_not_raised(chat):
    chat.reset(seed=0)
    new, reward, done, _ = chat.step(assistant(content='{"tool": "list_files"}'))  # a JSON action as text works
    assert new == [{"role": "user", "content": "README.md (1 lines)\ncalc/__init__.py (1 lines)"}]
    assert reward == pytest.approx(-0.001)
    new, reward, done, _ = chat.step(assistant(content="I think we should add a function."))
    assert new[0]["content"].startswith("error: the action is not valid JSON") and reward == pytest.approx(-0.011)
    assert "had no tool call, so nothing ran" in new[0]["content"]  # said in terms of tool calls
    bad_args = {"id": "z1", "type": "function", "function": {"name": "read_file", "arguments": "{path: README"}}
    new, reward, _, _ = chat.step(assistant(bad_args, call("z2", "read_fil", path="README.md")))
    assert new[0]["content"] == ("error: the arguments of read_file are not a JSON object: pass them as one; "
                                 "it takes path (required), start (optional), end (optional)")
    assert '{"tool"' not in new[0]["content"]
    assert "did you mean 'read_file'" in new[1]["content"] and reward == pytest.approx(-0.022)
    with pytest.raises(ValueError, match="one assistant message"):
        chat.step({"role": "user", "content": "hi"})


def test_recorded_episodes_give_the_conversation_the_adapter_would():
    """The episode table's messages are what ChatEnv shows for the same calls."""
    record = collect(RolloutSpec("Stamina-mini-v1", tasks=(str(DATA),)), episodes=1).records[0]
    adapter = ChatEnv(mini_env())
    try:
        adapter.reset(seed=record["seed"])
        for step in record["steps"][1:]:
            action = json.loads(step["action"])
            name = action.pop("tool")
            adapter.step(assistant(call(f"call_{step['step']}", name, **action)))
        assert adapter.messages == episode_messages(record["steps"]) == record["messages"]
    finally:
        adapter.close()


def test_non_ascii_text_reaches_the_model_as_it_is(chat):
    """A file holding accented, CJK and astral characters reads back as itself in the tool
    message, and so does a command's output; nothing is escaped."""
    text = "caf\u00e9 \u2192 \U0001f680 \u4e2d\u6587 \u00fcber\n"
    chat.reset(seed=0)
    new, *_ = chat.step(assistant(call("w", "write_file", path="notes.txt", content=text)))
    new, *_ = chat.step(assistant(call("r", "read_file", path="notes.txt"), call("c", "run", command="cat notes.txt")))
    read, ran = (m["content"] for m in new if m["role"] == "tool")
    assert text.strip() in read and text in ran and "\\u" not in read + ran
    assert text in json.loads(json.dumps(chat.messages, ensure_ascii=False))[-1]["content"]


def _strict_mode_problems(schema: dict, where: str) -> list[str]:
    """What OpenAI's strict mode (structured outputs) refuses in a schema: an object that
    does not list every property as required or leaves additionalProperties open."""
    problems = []
    if schema.get("type") == "object" or "properties" in schema:
        if schema.get("additionalProperties") is not False:
            problems.append(f"{where}: additionalProperties is not false")
        if sorted(schema.get("required", [])) != sorted(schema.get("properties", {})):
            problems.append(f"{where}: not every property is required")
    for name, sub in schema.get("properties", {}).items():
        problems += _strict_mode_problems(sub, f"{where}.{name}")
    if isinstance(schema.get("items"), dict):
        problems += _strict_mode_problems(schema["items"], f"{where}[]")
    for i, option in enumerate(schema.get("anyOf", [])):
        problems += _strict_mode_problems(option, f"{where}|{i}")
    return problems


def test_strict_schemas_pass_strict_mode_and_their_calls_read_as_plain_ones():
    plain = openai_tools()
    assert any(_strict_mode_problems(t["function"]["parameters"], t["function"]["name"]) for t in plain)  # the checker bites
    strict = openai_tools(strict=True)
    for tool in strict:
        assert tool["function"]["strict"] is True
        assert _strict_mode_problems(tool["function"]["parameters"], tool["function"]["name"]) == []
    # what a strict-mode model sends (nulls for absent, key/value pairs for a map) means the plain call
    from stamina_gym.tools import parse_action

    pairs = {"tool": "summarize", "requirements": [{"key": "sort", "value": "by due date"}]}
    assert parse_action(pairs)[1] == {"requirements": {"sort": "by due date"}}
    assert parse_action({"tool": "read_file", "path": "a.py", "start": None, "end": None})[1] == {"path": "a.py"}
    step = {"description": "add the field", "details": None, "depends_on": None}
    assert parse_action({"tool": "plan", "steps": [step]})[1] == {"steps": [{"description": "add the field"}]}


def test_chat_mode_speaks_of_tool_calls(chat):
    messages = chat.reset(seed=0)
    assert '{"tool"' not in messages[0]["content"] and "Call submit" in messages[0]["content"]
    adapter = ChatEnv(mini_env(), strict=True)
    try:
        assert all(t["function"]["strict"] for t in adapter.tools)
        adapter.reset(seed=0)
        new, *_ = adapter.step(assistant(call("s1", "read_file", path="calc/__init__.py", start=None, end=None)))
        assert "lines 1-1 of 1" in new[0]["content"]
    finally:
        adapter.close()


def test_chat_context_keeps_the_system_prompt_and_the_request_within_a_budget():
    """ChatEnv trims with the openai agent's policy: the system prompt and the current
    request always, the newest whole groups, a marker for what was dropped."""
    from stamina_gym.chat import estimate_tokens

    adapter = ChatEnv(mini_env(), context_tokens=900)
    try:
        adapter.reset(seed=0)
        for n in range(6):
            adapter.step(assistant(call(f"r{n}", "run", command="printf 'x%.0s' $(seq 1 300)")))
        adapter.step(assistant(call("p", "apply_patch", patch=adapter.env.unwrapped.turns[0].reference_patch),
                               call("s", "submit")))  # fmt: skip
        adapter.step(assistant(call("l", "list_files")))
        context = adapter.context()
        request = next(m for m in reversed(adapter.messages) if m["role"] == "user" and m["content"].startswith("Turn 2"))
        assert context[0] == adapter.messages[0] and request in context
        assert sum(map(estimate_tokens, context)) <= 900 and len(context) < len(adapter.messages)
        assert any("omitted to fit the context" in str(m["content"]) for m in context)
        assert context[-2]["tool_calls"][0]["id"] == "l" and context[-1]["tool_call_id"] == "l"  # the newest group, whole
        adapter.context_tokens = None
        assert adapter.context() == adapter.messages
    finally:
        adapter.close()

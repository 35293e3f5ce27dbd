"""The tolerant action format reads a tool call as chat models write it; the strict one
takes JSON alone and says where the tolerant one would help."""

from __future__ import annotations

import json

import pytest

from stamina_gym.action_text import NoAction, extract_action
from stamina_gym.errors import ToolError
from stamina_gym.tools import parse_action
from tests.conftest import act, mini_env

READ = {"tool": "read_file", "path": "calc/__init__.py"}
CODE = 'def f(x):\n    return {"k": x}  # braces {inside}\n'
WRITE = {"tool": "write_file", "path": "calc/f.py", "content": CODE}

# What models print, and the action each one means.
CORPUS = [
    (json.dumps(READ), READ),
    (f"I'll start by reading the module.\n{json.dumps(READ)}\nThat shows the code.", READ),
    (f"Let me look.\n\n```json\n{json.dumps(READ, indent=2)}\n```\n", READ),
    (f"```\n{json.dumps(WRITE)}\n```", WRITE),
    (f"<think>The user wants add. Maybe {json.dumps(WRITE)} first? No, read.</think>\n{json.dumps(READ)}", READ),
    (f"first I should check the file.\n</think>\n\n{json.dumps(READ)}", READ),  # the template opened <think>
    ('<tool_call>\n{"name": "read_file", "arguments": {"path": "calc/__init__.py"}}\n</tool_call>', READ),
    ('Reading it.\n<tool_call>\n{"name": "read_file", "arguments": "{\\"path\\": \\"calc/__init__.py\\"}"}\n</tool_call>', READ),
    ('<tool_call>\n{"name": "read_file", "arguments": {"path": "calc/__init__.py"}}', READ),  # cut at the stop token
    ('<tool_call>{"name": "read_file", "arguments": {"path": "calc/__init__.py"}}</tool_call>\n'
     '<tool_call>{"name": "submit", "arguments": {}}</tool_call>', READ),  # the first call is played
    (f'{{"name": "write_file", "arguments": {json.dumps(json.dumps({k: v for k, v in WRITE.items() if k != "tool"}))}}}',
     WRITE),
    (f'Option A: {json.dumps({"tool": "list_files"})}. Better, option B:\n{json.dumps(READ)}', READ),  # the last one
    (f"Here is the new file:\n```python\n{CODE}```\nand the call:\n```json\n{json.dumps(WRITE)}\n```", WRITE),
]  # fmt: skip


@pytest.mark.parametrize("text, meant", CORPUS)
def test_the_tolerant_format_reads_what_models_write(text, meant):
    tool, args = parse_action(text, "tolerant")
    assert {**args, "tool": tool.name} == meant


@pytest.mark.parametrize("text, why", [
    ("I think the answer is to add a function.", "no JSON object found"),
    ('{"path": "calc/__init__.py"}', 'has no "tool"'),
    ("<tool_call>read_file(path='x')</tool_call>", "the <tool_call> block holds no JSON object"),
    ('{"name": "read_file", "arguments": "{not json"}', "arguments are not valid JSON"),
])  # fmt: skip
def test_text_without_a_tool_call_says_what_is_accepted(text, why):
    with pytest.raises(ToolError) as caught:
        parse_action(text, "tolerant")
    message = str(caught.value)
    assert why in message and "<tool_call>" in message and "```json" in message


def test_the_strict_format_takes_json_alone_and_names_the_tolerant_one():
    assert parse_action(json.dumps(READ))[1] == {"path": "calc/__init__.py"}
    for text, _ in CORPUS[1:4]:
        with pytest.raises(ToolError, match="not valid JSON.*action_format='tolerant'"):
            parse_action(text)


@pytest.mark.parametrize("text", [
    '{"a": [1, ' * 2_000 + "x" * 300_000,  # every '{' opens an object that fails only far on: quadratic unbounded
    '{"a": ' * 40_000,  # deeper than the decoder's recursion
    "{" * 450_000,  # each failed start costs the decoder a pass over the text before it: quadratic, 66 s
])  # fmt: skip
def test_tangled_or_deep_text_is_refused_quickly(text):
    with pytest.raises(NoAction, match="too tangled|too deeply"):
        extract_action(text)


@pytest.mark.parametrize("action_format", ["json", "tolerant"])
def test_deeply_nested_actions_are_refused_not_a_crash(env, action_format):
    for action in ("[" * 100_000, '{"tool": "read_file", "path": ' + "[" * 100_000):
        with pytest.raises(ToolError, match="too deeply"):
            parse_action(action, action_format)
    observation, reward, _, _, info = env.step("[" * 100_000)  # the strict env's own step
    assert not info["ok"] and "too deeply" in observation["output"]
    nested: list = []
    for _ in range(100_000):
        nested = [nested]
    output, _, info = act(env, tool="write_file", path="x.txt", content=nested)  # a dict action from a trainer's code
    assert not info["ok"]


def test_an_env_in_tolerant_mode_plays_what_a_model_wrote():
    env = mini_env(action_format="tolerant")
    strict = mini_env()
    try:
        for e in (env, strict):
            e.reset(seed=0)
        said = f"Sure! I'll read it first.\n```json\n{json.dumps(READ)}\n```"
        observation, reward, _, _, info = env.step(said)
        assert info["ok"] and "lines 1-1 of 1" in observation["output"]
        observation, _, _, _, info = strict.step(said)
        assert not info["ok"] and "action_format='tolerant'" in observation["output"]
        output, _, info = act(env, tool="list_files")  # dict actions as they are
        assert info["ok"]
    finally:
        env.close()
        strict.close()


@pytest.mark.parametrize("text", [
    "</think>" + "<think>" * 70_000,  # a regex <think>.*?</think> retries from every opening tag
    "<tool_call>" + " " * 400_000 + "x",  # and \\s*(.*?)\\s* backtracks over the spaces
    "```\n" * 120_000,
    "```" * 160_000,
])  # fmt: skip
@pytest.mark.timeout(60)
def test_tags_are_found_in_linear_time(text):
    """Text a policy can write to hang the env: with regex scanners the first ran past a
    60 s limit; each is one pass now (the timeout is the hang guard, not a speed check)."""
    with pytest.raises(NoAction):
        extract_action(text)

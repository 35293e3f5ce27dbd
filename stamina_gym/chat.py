"""The env as a chat, for LLM RL trainers: OpenAI-format messages in, messages out.

``ChatEnv`` wraps a StaminaEnv. ``reset()`` returns the opening messages (the chat system prompt,
which the openai agent sends too, and a user message with the first request and the
repository);
``step(assistant_message)`` takes one assistant message whose ``tool_calls`` (OpenAI
format: ``{"id", "type": "function", "function": {"name", "arguments": JSON text}}``)
name env tools, runs each call as one env step, and returns the messages to append (one
``tool`` message per call, then a ``user`` message with the next request when a
``submit`` finished the turn), the summed reward, ``done`` and an info dict.

An assistant message without tool calls is one env step whose action is its text, so a
model that writes the JSON action as plain text works too; any other text is refused by
the env (the refusal comes back as a user message and costs the invalid-action charge).
Calls after a ``submit`` in the same message are not run: the agent reads the next
request first. ``tools`` is the tool list in the OpenAI format, for the model's request
(``ChatEnv(..., strict=True)``: schemas for OpenAI's strict mode). A refusal is worded
for a chat model: arguments that are not a JSON object are named with what the tool
takes, and a message without a tool call is told that nothing ran.

``episode_messages`` turns recorded steps (from any agent) into the same conversation:
the ``messages`` column of the episode table.
"""

from __future__ import annotations

import json
import string
from importlib import resources
from typing import Any, Iterable

import gymnasium as gym

from stamina_gym.submits import turn_ended
from stamina_gym.tools import TOOLS, openai_tools

def estimate_tokens(message: dict[str, Any]) -> int:
    """Tokens of a message, estimated as characters / 4 (no tokenizer to download)."""
    return len(json.dumps(message)) // 4 + 4


def cut_middle(text: str, limit: int) -> str:
    """``text`` cut in the middle to ``limit`` characters, with a marker saying how much."""
    if len(text) <= limit:
        return text
    marker = f"\n[... {len(text) - limit} characters cut ...]\n"
    half = (limit - len(marker)) // 2
    return text[:half] + marker + text[-half:]


Group = list[dict[str, Any]]


def fit_context(system: dict[str, Any], history: list[Group], request: dict[str, Any], current: list[Group],
                budget: int) -> tuple[list[dict[str, Any]], bool]:  # fmt: skip
    """The context policy of chat mode (ChatEnv and the openai agent): the system prompt
    and the current request always (the request's middle cut when it alone is past
    ``budget`` tokens), then the newest whole groups (an assistant message with its tool
    results) of this turn, then of earlier turns only when all of this turn's fit, so
    nothing is missing in the middle; the dropped span is one marker message. Returns the
    messages and whether anything was dropped or cut."""
    fixed = estimate_tokens(system) + estimate_tokens(request) + 40
    shown = request
    if fixed > budget:  # the request alone is too long: cut its middle (the repository listing)
        room = max(200, (budget - estimate_tokens(system) - 40) * 4 - 200)
        shown = {**request, "content": cut_middle(request["content"], room)}
        fixed = estimate_tokens(system) + estimate_tokens(shown) + 40
    left = budget - fixed

    def newest_that_fit(groups: list[Group]) -> int:
        nonlocal left
        taken = 0
        for group in reversed(groups):
            cost = sum(map(estimate_tokens, group))
            if cost > left:
                break
            left, taken = left - cost, taken + 1
        return taken

    new = newest_that_fit(current)
    old = newest_that_fit(history) if new == len(current) else 0
    dropped = len(history) - old + len(current) - new
    messages = [system]
    if dropped:
        messages.append({"role": "user", "content": f"[{dropped} earlier message group(s) omitted to fit the context]"})
    for group in history[len(history) - old :]:
        messages += group
    messages.append(shown)
    for group in current[len(current) - new :]:
        messages += group
    return messages, bool(dropped) or shown is not request


def user_message(observation: dict[str, Any]) -> dict[str, Any]:
    """The request of a turn, with the phase and the repository as the env shows it."""
    turn = int(observation["turn"])
    text = f"Turn {turn} ({observation['phase']}): {observation['prompt']}\n\nRepository:\n{observation['repo']}"
    return {"role": "user", "content": text}


def chat_system_prompt(phase: str) -> str:
    """The system prompt of chat mode: the tools come as function calls (the openai agent
    sends the same one)."""
    template = resources.files("stamina_gym").joinpath("prompts/openai_system.txt").read_text(encoding="utf-8")
    return string.Template(template).substitute(phase=phase)


def opening_messages(observation: dict[str, Any]) -> list[dict[str, Any]]:
    """The chat system prompt and the first request (with the reset's note on where the
    episode starts, when it starts later in the project)."""
    first = user_message(observation)
    note = observation["output"].partition("\n\nThis episode starts at request ")
    if note[1]:
        first["content"] = f"This episode starts at request {note[2]}\n\n{first['content']}"
    return [{"role": "system", "content": chat_system_prompt(observation["phase"])}, first]


def _chat_error(output: str, call: dict[str, Any] | None, action: Any = None) -> str:
    """An env refusal as a chat model can act on it: in terms of tool calls. ``call`` is
    the tool call stepped (None: a message without one) and ``action`` what it became
    (text when its arguments were not a JSON object)."""
    if not output.startswith("error:"):
        return output
    if call is None:
        return (f"{output}\n(This message had no tool call, so nothing ran: call one of the tools you are given, "
                "and submit when the request is done.)")  # fmt: skip
    tool = TOOLS.get((call.get("function") or {}).get("name"))
    if tool is not None and isinstance(action, str):
        takes = ", ".join(f"{k} ({'required' if p.required else 'optional'})" for k, p in tool.params.items())
        return (f"error: the arguments of {tool.name} are not a JSON object: pass them as one; "
                + (f"it takes {takes}" if takes else "it takes none: {}"))  # fmt: skip
    return output


def action_message(action: Any, call_id: str) -> dict[str, Any]:
    """The assistant message of one env action: a tool call when the action names a tool
    in a JSON object, else plain text."""
    parsed = action
    if isinstance(action, str):
        try:
            parsed = json.loads(action)
        except (json.JSONDecodeError, RecursionError):
            parsed = None
    if isinstance(parsed, dict) and isinstance(parsed.get("tool"), str):
        arguments = {k: v for k, v in parsed.items() if k != "tool"}
        call = {"id": call_id, "type": "function", "function": {"name": parsed["tool"], "arguments": json.dumps(arguments)}}
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    return {"role": "assistant", "content": action if isinstance(action, str) else json.dumps(action)}


def call_action(call: dict[str, Any]) -> dict[str, Any] | str:
    """The env action of one OpenAI tool call. Arguments that are not a JSON object are
    passed on as text, so the env refuses them with its own message."""
    function = call.get("function") or {}
    name, arguments = function.get("name"), function.get("arguments") or "{}"
    try:
        args = json.loads(arguments) if isinstance(arguments, str) else arguments
    except (json.JSONDecodeError, RecursionError):  # the env says what is wrong with it
        return arguments
    if not isinstance(args, dict):
        return arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {**args, "tool": name}


def _groups(messages: list[dict[str, Any]], requests: set[int]) -> list[Group]:
    """``messages`` as the context policy's groups: each assistant message with the tool
    results and notes after it, and each request (index in ``requests``) on its own."""
    groups: list[Group] = []
    for index, message in enumerate(messages):
        if index in requests or message.get("role") == "assistant" or not groups:
            groups.append([message])
        else:
            groups[-1].append(message)
    return groups


def after_step(observation: dict[str, Any], info: dict[str, Any], done: bool) -> list[dict[str, Any]]:
    """A new request follows a submit that did not end the episode."""
    return [user_message(observation)] if turn_ended(info) and not done else []


def episode_messages(steps: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversation of a recorded episode. ``steps[0]`` is the reset (``action`` None);
    each later step has ``action``, ``observation`` (after the step), ``info``,
    ``terminated`` and ``truncated``."""
    messages: list[dict[str, Any]] = []
    for step in steps:
        observation = step["observation"]
        if step["action"] is None:
            messages += opening_messages(observation)
            continue
        message = action_message(step["action"], f"call_{step['step']}")
        messages.append(message)
        if "tool_calls" in message:
            messages.append({"role": "tool", "tool_call_id": message["tool_calls"][0]["id"], "content": observation["output"]})
        else:
            messages.append({"role": "user", "content": observation["output"]})
        messages += after_step(observation, step["info"], step["terminated"] or step["truncated"])
    return messages


class ChatEnv:
    """A StaminaEnv (an instance, or an env id with ``gym.make`` keyword arguments)
    driven by OpenAI-format chat messages. ``messages`` holds the whole conversation."""

    def __init__(self, env: gym.Env | str, *, strict: bool = False, context_tokens: int | None = None,
                 **make_kwargs: Any) -> None:  # fmt: skip
        self.env = gym.make(env, **make_kwargs) if isinstance(env, str) else env
        self.tools = openai_tools(strict=strict)
        """The tools for the model's request (``strict``: schemas for OpenAI's strict mode)."""
        self.context_tokens = context_tokens
        """Token budget of ``context()`` (None: the whole conversation)."""
        self._requests: list[int] = []
        """Where in ``messages`` each turn's request is."""
        self.messages: list[dict[str, Any]] = []
        self.done = True

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> list[dict[str, Any]]:
        observation, _ = self.env.reset(seed=seed, options=options)
        self.messages = opening_messages(observation)
        self._requests = [1]
        self.done = False
        return list(self.messages)

    def context(self) -> list[dict[str, Any]]:
        """The messages to send the model: the whole conversation, or with
        ``context_tokens`` what ``fit_context`` keeps of it (the openai agent's policy)."""
        if self.context_tokens is None or not self._requests:
            return list(self.messages)
        at = self._requests[-1]
        history = _groups(self.messages[1:at], set(i - 1 for i in self._requests))
        current = _groups(self.messages[at + 1 :], set())
        return fit_context(self.messages[0], history, self.messages[at], current, self.context_tokens)[0]

    def step(self, assistant_message: dict[str, Any]) -> tuple[list[dict[str, Any]], float, bool, dict[str, Any]]:
        if self.done:
            raise RuntimeError("the episode is over (or never began): call reset()")
        if not isinstance(assistant_message, dict) or assistant_message.get("role", "assistant") != "assistant":
            raise ValueError("step() takes one assistant message: a dict with role 'assistant'")
        calls = assistant_message.get("tool_calls") or []
        self.messages.append({"role": "assistant", "content": assistant_message.get("content"), **({"tool_calls": calls} if calls else {})})
        new: list[dict[str, Any]] = []
        reward, infos = 0.0, []
        terminated = truncated = False
        if not calls:
            observation, r, terminated, truncated, info = self.env.step(assistant_message.get("content") or "")
            reward, done = r, terminated or truncated
            infos.append(info)
            new += [{"role": "user", "content": _chat_error(observation["output"], None)}, *after_step(observation, info, done)]
        submitted, pending = False, []
        for index, call in enumerate(calls):
            call_id = call.get("id") or f"call_{index}"
            if submitted or terminated or truncated:
                why = "the episode is over" if terminated or truncated else "the turn was submitted; read the next request first"
                new.append({"role": "tool", "tool_call_id": call_id, "content": f"not run: {why}"})
                continue
            action = call_action(call)
            observation, r, terminated, truncated, info = self.env.step(action)
            reward += r
            infos.append(info)
            submitted = turn_ended(info)
            new.append({"role": "tool", "tool_call_id": call_id, "content": _chat_error(observation["output"], call, action)})
            pending = after_step(observation, info, terminated or truncated)
        new += pending
        self.done = terminated or truncated
        if (pending or (not calls and new[1:])) and not self.done:
            self._requests.append(len(self.messages) + len(new) - 1)  # the next request ends the new messages
        self.messages += new
        info = {**(infos[-1] if infos else {}), "steps": infos, "terminated": terminated, "truncated": truncated}
        return new, float(reward), self.done, info

    def settle(self) -> tuple[float, list[dict[str, Any]]]:
        """The grades still due under deferred grading when the caller ends the episode
        itself (``StaminaEnv.settle``): their summed reward and records."""
        return self.env.unwrapped.settle()

    def close(self) -> None:
        self.env.close()

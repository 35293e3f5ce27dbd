"""A model-driven agent over any OpenAI-compatible chat-completions endpoint.

The tool schema is generated from the env's own tool table (``stamina_gym.tools.TOOLS``),
so a new tool reaches the model without code here. Each model reply may call tools; the
calls are played one per step and their outputs go back as ``tool`` messages. The context
keeps the system prompt and the current request always, and as many of the most recent
messages as fit ``context_tokens`` (minus the reply's ``max_reply_tokens``); older
messages are dropped whole (an assistant message with its tool results together) and a
note says how many. Tokens are estimated as characters / 4 (no tokenizer download needed).

Every call is recorded as it was made (``calls``): the exact request (model, messages,
tools, sampling parameters), the reply (text and tool calls, ids kept), the finish reason,
the usage, and whether the context was trimmed for it; ``on_call``, when set, gets each
record at once (the harness writes ``model_calls.jsonl``, flushed per line).
``conversation()`` is the whole conversation, untrimmed: the system prompt, each request,
every reply, tool result and nudge, in order.

Configuration (constructor arguments, or the environment): ``model`` (OPENAI_MODEL),
``base_url`` (OPENAI_BASE_URL), ``api_key`` (OPENAI_API_KEY). The harness may attach a
``ModelMeter``: every call goes through it, so call and token budgets hold.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from stamina_gym.agents import AgentError
from stamina_gym.chat import cut_middle, estimate_tokens, fit_context
from stamina_gym.errors import ConfigError

_NUDGE = "Reply with tool calls only. Call submit when this request is done."
MAX_TEXT_REPLIES = 3
"""Replies in a row without a tool call after which the turn is submitted."""


class OpenAIChatConfig(BaseModel):
    """Settings of the ``openai`` agent; every field can be given with ``--agent-arg``."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    model: str = Field(min_length=1)
    """Model name sent with every request (OPENAI_MODEL)."""
    base_url: str | None = None
    """Endpoint root, e.g. http://127.0.0.1:8000/v1 (OPENAI_BASE_URL; the client's default when unset)."""
    api_key: SecretStr
    """Key sent as a bearer token (OPENAI_API_KEY); never written to records."""
    temperature: float = Field(0.0, ge=0)
    max_reply_tokens: int = Field(2048, ge=16)
    """Longest reply asked for (``max_tokens``); reserved out of the context budget."""
    context_tokens: int = Field(32_000, ge=256)
    """Token budget of one request: system prompt + current request + recent messages + reply."""
    max_tool_output_chars: int = Field(8_000, ge=200)
    """A tool's output is cut in the middle past this length before it joins the context."""
    timeout_s: float = Field(300.0, gt=0)
    """Per-request timeout of the HTTP client."""
    max_retries: int = Field(2, ge=0)
    """Retries of the client on connection errors and 429/5xx answers."""
    seed: int | None = None
    """Sent as the request's ``seed`` where the endpoint honours it."""


def tool_schema() -> list[dict[str, Any]]:
    """Chat-completions ``tools`` generated from ``stamina_gym.tools.TOOLS``."""
    from stamina_gym.tools import openai_tools

    return openai_tools()




class OpenAIChatAgent:
    name = "openai"
    level = "model"
    version = "1"

    def __init__(self, **settings: Any) -> None:
        defaults = {"model": os.environ.get("OPENAI_MODEL"), "base_url": os.environ.get("OPENAI_BASE_URL"),
                    "api_key": os.environ.get("OPENAI_API_KEY")}  # fmt: skip
        merged = {**{k: v for k, v in defaults.items() if v}, **settings}
        missing = [(key, variable) for key, variable in (("model", "OPENAI_MODEL"), ("api_key", "OPENAI_API_KEY"))
                   if not merged.get(key)]  # fmt: skip
        if missing:
            # KEY=VALUE is what run, collect and (with one agent) eval all take.
            given = " ".join(f"--agent-arg {key}={variable}" for key, variable in missing)
            named = " and ".join(f"{key} (or {variable})" for key, variable in missing)
            raise ConfigError(f"the openai agent needs {named}: {given}, or set the variables")
        try:
            self.config = OpenAIChatConfig.model_validate(merged)
        except ValidationError as exc:
            from stamina_gym.config import format_validation_error

            raise ConfigError(f"openai agent: {format_validation_error(exc)}") from None
        from openai import OpenAI

        self.client = OpenAI(api_key=self.config.api_key.get_secret_value(), base_url=self.config.base_url,
                             timeout=self.config.timeout_s, max_retries=self.config.max_retries)  # fmt: skip
        self.tools = tool_schema()
        self.meter: Any = None
        self.on_call: Callable[[dict[str, Any]], None] | None = None
        """Called with each call's record as soon as the reply is in."""
        self._reset_state()

    def describe(self) -> dict[str, Any]:
        """The settings that shape behaviour (the key excluded), for the run's config digest."""
        return self.config.model_dump(exclude={"api_key"})

    def attach_meter(self, meter: Any) -> None:
        self.meter = meter

    def _reset_state(self) -> None:
        self._system: dict[str, Any] | None = None
        self._history: list[list[dict[str, Any]]] = []
        """Groups of messages of earlier turns, oldest first."""
        self._request: dict[str, Any] | None = None
        self._current: list[list[dict[str, Any]]] = []
        """Groups of messages of this turn after its request."""
        self._queue: list[tuple[str, Any]] = []
        self._pending: str | None = None
        self._turn: int | None = None
        self._text_replies = 0
        self.last_request: list[dict[str, Any]] = []
        self.calls: list[dict[str, Any]] = []
        """This episode's model calls, in order (see the module docstring)."""
        self._trimmed = False

    def reset(self, view: Any) -> None:
        self._reset_state()
        from stamina_gym.chat import chat_system_prompt

        phase = view.phase(1) if hasattr(view, "phase") else "main"
        self._system = {"role": "system", "content": chat_system_prompt(phase)}

    # -- the loop -----------------------------------------------------------------------

    def act(self, observation: dict[str, Any]) -> str | dict[str, Any]:
        turn = int(observation["turn"])
        output = cut_middle(str(observation.get("output", "")), self.config.max_tool_output_chars)
        if self._pending is not None:
            self._current[-1].append({"role": "tool", "tool_call_id": self._pending, "content": output})
            self._pending = None
        if turn != self._turn:
            self._start_turn(turn, observation, output)
        while not self._queue:
            self._ask_model()
        call_id, action = self._queue.pop(0)
        self._pending = call_id or None
        if isinstance(action, dict) and action.get("tool") == "submit":
            for skipped, _ in self._queue:  # calls after a submit are never played
                self._current[-1].append({"role": "tool", "tool_call_id": skipped, "content": "not run: the turn was submitted"})
            self._queue = []
        return action

    def _start_turn(self, turn: int, observation: dict[str, Any], output: str) -> None:
        if self._request is not None:
            self._history.append([self._request])
            self._history.extend(self._current)
        self._turn, self._current, self._text_replies, self._queue = turn, [], 0, []
        before = "Instructions" if self._request is None else "Result of your last submit"
        self._request = {
            "role": "user",
            "content": (f"{before}:\n{output}\n\nRequest {turn} (phase {observation.get('phase', '')}):\n"
                        f"{observation['prompt']}\n\nRepository:\n{observation.get('repo', '')}"),
        }  # fmt: skip

    def conversation(self) -> list[dict[str, Any]]:
        """The episode's whole conversation so far, nothing trimmed: the system prompt, and
        for each turn its request, then every reply with its tool results and nudges."""
        messages = [self._system] if self._system is not None else []
        for group in self._history:
            messages += group
        if self._request is not None:
            messages.append(self._request)
        for group in self._current:
            messages += group
        return messages

    def _ask_model(self) -> None:
        messages = self.context()
        self.last_request = messages
        if self.meter is not None:
            self.meter.before_call()
        kwargs: dict[str, Any] = {"model": self.config.model, "messages": messages, "tools": self.tools,
                                  "temperature": self.config.temperature, "max_tokens": self.config.max_reply_tokens}  # fmt: skip
        if self.config.seed is not None:
            kwargs["seed"] = self.config.seed
        import openai

        try:
            response = self.client.chat.completions.create(**kwargs)
        except openai.OpenAIError as exc:
            raise AgentError(f"model call failed: {type(exc).__name__}: {exc}") from exc
        if not response.choices:
            raise AgentError("the model answered with no choices")
        message = response.choices[0].message
        usage = response.usage
        calls = message.tool_calls or []
        reply: dict[str, Any] = {"role": "assistant", "content": message.content}
        if calls:
            reply["tool_calls"] = [{"id": c.id, "type": "function",
                                    "function": {"name": c.function.name, "arguments": c.function.arguments}} for c in calls]  # fmt: skip
        record = {
            "call": len(self.calls), "turn": self._turn, "request": kwargs, "reply": reply,
            "finish_reason": response.choices[0].finish_reason, "response_id": response.id,
            "usage": usage.model_dump() if usage else None, "trimmed": self._trimmed,
        }  # fmt: skip
        self.calls.append(record)
        if self.on_call is not None:
            self.on_call(record)
        if self.meter is not None:
            self.meter.record(
                prompt_tokens=usage.prompt_tokens if usage else sum(map(estimate_tokens, messages)),
                completion_tokens=usage.completion_tokens if usage else estimate_tokens(reply),
                request_chars=len(json.dumps(messages)),
                response_chars=len(json.dumps(reply)),
            )
        group = [reply]
        self._current.append(group)
        if calls:
            self._text_replies = 0
            self._queue = [(c.id, self._to_action(c.function.name, c.function.arguments)) for c in calls]
            return
        self._text_replies += 1
        if self._text_replies >= MAX_TEXT_REPLIES:
            self._queue = [("", {"tool": "submit"})]
            return
        group.append({"role": "user", "content": _NUDGE})

    @staticmethod
    def _to_action(name: str, arguments: str) -> str | dict[str, Any]:
        try:
            args = json.loads(arguments or "{}")
        except (json.JSONDecodeError, RecursionError):
            return arguments  # the env answers with what is wrong with the JSON
        if not isinstance(args, dict):
            return json.dumps(args)
        return {**args, "tool": name}

    # -- context ------------------------------------------------------------------------

    def context(self) -> list[dict[str, Any]]:
        """System prompt + the current request always; then the newest whole groups that
        fit (``stamina_gym.chat.fit_context``, the policy ChatEnv uses too)."""
        assert self._system is not None and self._request is not None, "reset() and a first observation come first"
        messages, self._trimmed = fit_context(self._system, self._history, self._request, self._current,
                                              self.config.context_tokens - self.config.max_reply_tokens)  # fmt: skip
        return messages

    def close(self) -> None:
        self.client.close()

"""Agents: something that turns an observation into an action.

An agent has ``reset(env)`` (called after ``env.reset``), ``act(observation) -> action``
and ``close()``. Agents are looked up by name in ``AGENTS`` and imported lazily.
"""

from __future__ import annotations

from typing import Any, Protocol

from stamina_gym.registry import Registry


class Agent(Protocol):
    name: str

    def reset(self, env: Any) -> None: ...

    def act(self, observation: dict[str, Any]) -> str | dict[str, Any]: ...

    def close(self) -> None: ...


class AgentError(Exception):
    """The agent broke the protocol (died, hung, answered nothing): a framework failure."""


AGENTS = Registry(
    "agent",
    {
        "oracle": "stamina_gym.agents.oracle:OracleAgent",
        "null": "stamina_gym.agents.oracle:NullAgent",
        "command": "stamina_gym.agents.command:CommandAgent",
        "openai": "stamina_gym.agents.openai_chat:OpenAIChatAgent",
        "cpg": "stamina_gym.agents.cpg:ClarifyPlanGenerateAgent",
        "flawed": "stamina_gym.agents.ladder:FlawedOracle",
        "wreck": "stamina_gym.agents.ladder:WreckAgent",
        "tamper": "stamina_gym.agents.ladder:TamperAgent",
    },
)


def make_agent(name: str, **kwargs: Any) -> Agent:
    return AGENTS.load(name)(**kwargs)

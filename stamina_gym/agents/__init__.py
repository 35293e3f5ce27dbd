"""Agents: something that turns an observation into an action.

An agent has ``reset(view)`` (called after ``env.reset``), ``act(observation) -> action``
and ``close()``. ``view`` is what an agent may know beyond its observations
(``stamina_gym.agents.view``): an ``AgentView`` (the task's id and phases, the number of
turns, the work tree its tools edit) for every agent, a ``ReferenceView`` (the reference
patch and plan of any turn, the key points of the current turn not asked about yet) for
a reference agent that declares ``privileged = True``; never the env itself.

``OptionalHooks`` declares the hooks an agent may have besides; the loop
(``stamina_gym.play``) and the records read them through ``hook`` only. Agents are looked
up by name in ``AGENTS`` and imported lazily.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

from stamina_gym.registry import Registry


class Agent(Protocol):
    name: str

    def reset(self, view: Any) -> None:
        """A new episode: ``view`` is an ``AgentView`` (a ``ReferenceView`` when the agent
        is ``privileged``)."""

    def act(self, observation: dict[str, Any]) -> str | dict[str, Any]: ...

    def close(self) -> None: ...


class OptionalHooks(Protocol):
    """What an agent may define besides ``Agent``; each is used when present."""

    privileged: bool
    """A reference agent (oracle, ladder rungs): ``reset`` gets a ``ReferenceView``."""
    level: str
    """``model``, ``system`` or ``reference``: what kind of contestant (evaluation records)."""
    version: str
    """The agent's own version (evaluation records)."""
    calls: list[dict[str, Any]]
    """Every model call of the episode so far (its exact request and reply)."""
    tools: list[dict[str, Any]]
    """The tool schema the agent offered its model."""
    on_call: Callable[[dict[str, Any]], None] | None
    """Set by the recorder: called with each model call's record as it is made."""

    def observe(self, reward: float, info: dict[str, Any]) -> None:
        """After every step: its reward and info."""

    def conversation(self) -> list[dict[str, Any]]:
        """The messages the agent really exchanged with its model, nothing trimmed."""

    def describe(self) -> dict[str, Any]:
        """The agent's own configuration, for the records (secrets are redacted there)."""

    def attach_meter(self, meter: Any) -> None:
        """Before ``reset`` in an evaluation: the ``ModelMeter`` every model call must pass."""


#: The names ``OptionalHooks`` declares.
HOOKS = frozenset(OptionalHooks.__annotations__) | {
    name for name in vars(OptionalHooks) if not name.startswith("_") and callable(vars(OptionalHooks)[name])
}


def hook(agent: Any, name: str, default: Any = None) -> Any:
    """The agent's hook ``name`` (a method or attribute of ``OptionalHooks``), or
    ``default`` when the agent has none; a name not declared there is an error."""
    if name not in HOOKS:
        raise AttributeError(f"{name!r} is not an agent hook; the hooks are {', '.join(sorted(HOOKS))}")
    return getattr(agent, name, default)


_ABSENT = object()


def has_hook(agent: Any, name: str) -> bool:
    """Whether the agent defines the hook ``name`` (declared in ``OptionalHooks``)."""
    return hook(agent, name, _ABSENT) is not _ABSENT


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
        "guess": "stamina_gym.agents.ladder:GuessAgent",
        "attack": "stamina_gym.agents.ladder:AttackAgent",
    },
)


def make_agent(name: str, **kwargs: Any) -> Agent:
    return AGENTS.load(name)(**kwargs)

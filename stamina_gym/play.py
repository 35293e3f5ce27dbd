"""The one episode loop. ``play(env, agent, observers)`` resets the env, gives the agent its
view (``agents.view``), and alternates ``agent.act`` and ``env.step`` until the episode
ends, telling each observer what happens. ``stamina-gym run`` (``harness``), ``collect``
(``rollout.workers``) and ``eval`` (``evaluation.runner``) differ only in their observers:
what they record, which budgets they enforce, how they report progress and resume.

An observer may define any of ``Observer``'s methods; one that returns True from
``after_act`` or ``step`` ends the episode there (``Played.ended == "stopped"``). The loop
raises what the env raises; it catches only ``AgentError`` (the agent broke the protocol),
which it reports to ``agent_failed`` and ends the episode on.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Sequence

from stamina_gym.agents import AgentError, hook
from stamina_gym.agents.view import view_for


@dataclass(frozen=True)
class Step:
    """One ``env.step`` of the episode and what led to it."""

    number: int
    """1-based, counted from this call's reset."""
    acted_on: dict[str, Any]
    """The observation the agent acted on."""
    action: Any
    observation: dict[str, Any]
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]
    think_s: float
    """How long ``agent.act`` took."""
    duration_s: float
    """How long ``env.step`` took."""

    @property
    def turn(self) -> int:
        """The 0-based index of the turn the action was taken in (the observation's
        ``turn`` counts from 1)."""
        return int(self.acted_on["turn"]) - 1


class Observer:
    """The hooks of one episode, each a no-op here."""

    def start(self, env: Any, agent: Any, observation: dict[str, Any], info: dict[str, Any]) -> dict[str, Any] | None:
        """After ``env.reset``, before ``agent.reset``. May return the observation to start
        from instead (an episode restored to a later turn)."""
        return None

    def before_act(self, observation: dict[str, Any]) -> None:
        """Before each ``agent.act``."""

    def after_act(self, observation: dict[str, Any], action: Any, think_s: float) -> bool:
        """After ``agent.act`` returned ``action``, before the env steps; True ends the episode."""
        return False

    def agent_failed(self, observation: dict[str, Any], error: AgentError) -> None:
        """``agent.act`` raised ``AgentError``: the episode ends."""

    def step(self, step: Step) -> bool:
        """After each ``env.step`` (and the agent's ``observe`` hook); True ends the episode."""
        return False


@dataclass(frozen=True)
class Played:
    steps: int
    ended: str
    """``terminated``, ``truncated``, ``agent_error`` or ``stopped`` (by an observer)."""
    error: AgentError | None = None


def play(env: Any, agent: Any, observers: Sequence[Observer], *, seed: int | None, options: dict | None = None) -> Played:
    """Play one episode of ``agent`` on ``env`` (see the module docstring)."""
    observation, info = env.reset(seed=seed, options=options)
    for observer in observers:
        observation = observer.start(env, agent, observation, info) or observation
    agent.reset(view_for(agent, env))
    observe = hook(agent, "observe")
    steps = 0
    while True:
        for observer in observers:
            observer.before_act(observation)
        started = time.monotonic()
        try:
            action = agent.act(observation)
        except AgentError as exc:
            for observer in observers:
                observer.agent_failed(observation, exc)
            return Played(steps, "agent_error", exc)
        think = time.monotonic() - started
        if [observer for observer in observers if observer.after_act(observation, action, think)]:
            return Played(steps, "stopped")
        started = time.monotonic()
        after, reward, terminated, truncated, info = env.step(action)
        duration = time.monotonic() - started
        steps += 1
        if observe is not None:
            observe(reward, info)
        step = Step(steps, observation, action, after, reward, terminated, truncated, info, think, duration)
        stop = [observer for observer in observers if observer.step(step)]  # every observer sees every step
        observation = after
        if terminated or truncated:
            return Played(steps, "terminated" if terminated else "truncated")
        if stop:
            return Played(steps, "stopped")

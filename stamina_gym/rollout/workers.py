"""One worker holds one env and one agent and plays whole episodes into plain records.

A record is a dict of plain values (it crosses process boundaries: Ray, a process pool)
with a ``steps`` list whose first item is the reset. An episode that breaks is a record
too: the steps it reached, ``failure_class`` (``framework`` when the agent broke the
protocol, ``infrastructure`` when the env or the sandbox failed) and the error text.

Everything in a record is a function of (env, agent, seed), except the operational
fields named in ``OPERATIONAL_FIELDS`` (timings, where it ran, grading-cache hits), so two
backends that play the same seeds give identical data.
"""

from __future__ import annotations

import importlib
import json
import os
import platform
import socket
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stamina_gym.agents import has_hook, hook
from stamina_gym.play import Observer, Step, play
from stamina_gym.submits import carried_reward, graded_submits, turn_ended

#: Fields that tell how an episode ran rather than what happened in it.
OPERATIONAL_FIELDS = ("duration_s", "worker", "attempts", "cache_hits", "cache_misses", "grading_cache")


@dataclass(frozen=True)
class RolloutSpec:
    """What every worker builds: the env (``gym.make(env_id, **env_kwargs)``) and the agent."""

    env_id: str
    agent: str = "oracle"
    """An agent name (``stamina_gym.agents.AGENTS``) or ``package.module:Class``."""
    agent_kwargs: dict[str, Any] = field(default_factory=dict)
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    tasks: tuple[str, ...] = ()
    """Extra task folders (as ``--tasks``), registered in the worker's process."""
    grading_cache: str | None = None
    """Folder of the grading cache shared by the workers of this machine, or None."""
    start_turn: int | tuple[int, ...] | None = None
    """Where each episode begins (``reset`` option ``start_turn``): a turn, or turns each
    episode draws one of; None: turn 1."""


def episode_seeds(base_seed: int, count: int) -> list[int]:
    """``count`` episode seeds derived from ``base_seed`` (numpy ``SeedSequence.spawn``):
    the same base always gives the same list, and seeds of different bases do not overlap
    in any pattern."""
    if base_seed < 0 or count < 0:
        raise ValueError(f"base seed and episode count must be >= 0, got {base_seed} and {count}")
    return [int(child.generate_state(1, np.uint32)[0]) for child in np.random.SeedSequence(base_seed).spawn(count)]


def _make_agent(name: str, kwargs: dict[str, Any]) -> Any:
    if ":" in name:
        module, _, attr = name.partition(":")
        return getattr(importlib.import_module(module), attr)(**kwargs)
    from stamina_gym.agents import make_agent

    return make_agent(name, **kwargs)


def _make_env(spec: RolloutSpec) -> Any:
    import gymnasium as gym

    import stamina_gym

    kwargs = dict(spec.env_kwargs)
    if spec.grading_cache:
        kwargs["grading_cache"] = spec.grading_cache
    if not spec.tasks:
        return gym.make(spec.env_id, **kwargs)
    # The extra task folders count while the env is made (it loads its task then), and
    # the process's environment is left as it was.
    before = os.environ.get("STAMINA_GYM_TASKS")
    os.environ["STAMINA_GYM_TASKS"] = os.pathsep.join([*spec.tasks, *([before] if before else [])])
    try:
        stamina_gym.register_envs()
        return gym.make(spec.env_id, **kwargs)
    finally:
        if before is None:
            del os.environ["STAMINA_GYM_TASKS"]
        else:
            os.environ["STAMINA_GYM_TASKS"] = before


class RolloutWorker:
    """Holds one env and one agent; ``run((episode, seed))`` plays one episode."""

    def __init__(self, spec: RolloutSpec) -> None:
        self.spec = spec
        self.env = _make_env(spec)
        self.agent = _make_agent(spec.agent, spec.agent_kwargs)
        self.name = f"{socket.gethostname()}:{os.getpid()}"

    def run(self, job: tuple[int, int]) -> dict[str, Any]:
        episode, seed = job
        options = None if self.spec.start_turn is None else {"start_turn": self.spec.start_turn}
        record = play_episode(self.env, self.agent, episode=episode, seed=seed, options=options)
        record["worker"] = self.name
        if record["failure_class"] == "infrastructure":
            # The env may be half-broken: the next episode gets a fresh one.
            self.env.close()
            self.env = _make_env(self.spec)
        return record

    def ping(self) -> str:
        return self.name

    def close(self) -> None:
        self.agent.close()
        self.env.close()


def _json_safe(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def _observation(observation: dict[str, Any]) -> dict[str, Any]:
    return {key: (int(value) if key == "turn" else str(value)) for key, value in observation.items()}


class _Rows(Observer):
    """``collect``'s observer: the rows of the record's ``steps``, the reset's first."""

    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []
        self.variants: list[int] = []
        self.made_by: int | None = None

    def start(self, env: Any, agent: Any, observation: dict, info: dict) -> None:
        self.agent = agent
        self.variants = list(info.get("variants", []))
        self.steps.append(_step_row(0, observation, None, 0.0, False, False, info, int(observation["turn"]) - 1))

    def after_act(self, observation: dict, action: Any, think_s: float) -> bool:
        calls = hook(self.agent, "calls")
        self.made_by = len(calls) - 1 if calls else None  # the model call behind the action
        return False

    def step(self, step: Step) -> bool:
        row = _step_row(len(self.steps), step.observation, step.action, step.reward, step.terminated, step.truncated,
                        step.info, step.turn)  # fmt: skip
        row["model_call"] = self.made_by
        self.steps.append(row)
        return False


def message_places(messages: list[dict[str, Any]], steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Where each message of an episode's conversation sits, aligned with ``messages``:
    ``turn`` (from 1), ``step`` (the step row it made or came from; None for a message
    no step is behind, a nudge or a reply that called nothing) and ``reward`` (on an
    assistant message: the sum of the rewards of the steps its tool calls, or its text,
    made, 0.0 when none; None on every other message). A model agent's replies are
    matched to steps by ``model_call`` (the i-th assistant message is call i), a scripted
    agent's one step per message."""
    rows = steps[1:]
    if any(row.get("model_call") is not None for row in rows):
        count = max(row["model_call"] for row in rows if row.get("model_call") is not None) + 1
        groups = [[row for row in rows if row.get("model_call") == call] for call in range(count)]
    else:
        groups = [[row] for row in rows]
    turn = steps[0]["turn"] if steps else 1
    places: list[dict[str, Any]] = []
    replies, results, last, opened, text_result = iter(groups), [], None, False, False
    for message in messages:
        role = message.get("role")
        if role == "assistant":
            group = next(replies, [])
            opened, last = True, (group[-1] if group else None)
            results = list(group) if message.get("tool_calls") else []
            text_result = bool(group) and not message.get("tool_calls")  # its output comes as a user message
            turn = group[0]["turn"] if group else turn
            places.append({"turn": turn, "step": group[0]["step"] if group else None,
                           "reward": round(sum(row["reward"] for row in group), 6)})  # fmt: skip
            continue
        if role == "tool":
            row = results.pop(0) if results else None
            places.append({"turn": row["turn"] if row else turn, "step": row["step"] if row else None, "reward": None})
        elif not opened:  # the system prompt and the first request
            places.append({"turn": turn, "step": 0, "reward": None})
        elif text_result:
            places.append({"turn": turn, "step": last["step"], "reward": None})
        elif last is not None and turn_ended(last["info"]) and not (last["terminated"] or last["truncated"]):
            turn = int(last["observation"]["turn"])  # the next request, after a submit
            places.append({"turn": turn, "step": last["step"], "reward": None})
            last = None
        else:  # a nudge
            places.append({"turn": turn, "step": None, "reward": None})
        text_result = False
    return places


def play_episode(env: Any, agent: Any, *, episode: int, seed: int, options: dict | None = None) -> dict[str, Any]:
    """Play one episode (``stamina_gym.play``) into a record; never raises for a broken
    agent or env (see the module doc)."""
    import gymnasium

    import stamina_gym
    from stamina_gym.chat import episode_messages
    from stamina_gym.tools import openai_tools
    from stamina_gym.grading.cache import grader_identity

    inner = env.unwrapped
    started = time.monotonic()
    rows = _Rows()
    failure_class, failure = None, None
    try:
        played = play(env, agent, [rows], seed=seed, options=options)
        if played.error is not None:
            failure_class, failure = "framework", str(played.error)
    except Exception as exc:  # noqa: BLE001 - a broken episode is recorded, not raised
        failure_class = "infrastructure"
        failure = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=-3)}"
    steps, variants = rows.steps, rows.variants
    graded = [submit for s in steps for submit in graded_submits(s["info"])]
    grades = [submit["grade"] for submit in graded]
    # What each submit paid: its step's reward, or under deferred grading its step's own
    # part and its grade's reward, which a later step carried.
    own = {s["turn"]: s["reward"] - carried_reward(s["info"]) for s in steps if turn_ended(s["info"])}
    submit_rewards = [own.get(g["turn"], 0.0) + g.get("reward", 0.0) for g in graded]
    turn_rewards: dict[int, float] = {}
    for row in steps[1:]:
        turn_rewards[row["turn"]] = turn_rewards.get(row["turn"], 0.0) + row["reward"] - carried_reward(row["info"])
        for g in graded_submits(row["info"]):  # a grade a later step carried counts for its own turn
            turn_rewards[g["turn"]] = turn_rewards.get(g["turn"], 0.0) + g.get("reward", 0.0)
    last = steps[-1] if steps else None
    cache = [row["grading_cache"] for row in steps if row["grading_cache"]]
    messages = agent.conversation() if has_hook(agent, "conversation") else episode_messages(steps)
    return {
        "episode": episode,
        "seed": seed,
        "env_id": env.spec.id if env.spec else inner.config.id,
        "task": inner.task.id,
        "agent": getattr(agent, "name", type(agent).__name__),
        "variants": variants,
        "start_turn": int(steps[0]["info"].get("start_turn", 1)) if steps else 1,
        "steps": steps,
        # what a model agent really exchanged, else the conversation rebuilt from the steps
        "messages": messages,
        "messages_source": "model" if has_hook(agent, "conversation") else "rebuilt",
        "message_places": message_places(messages, steps),
        "tools": json.dumps(hook(agent, "tools") or openai_tools()),
        "model_calls": list(hook(agent, "calls") or []),
        "turn_rewards": [round(turn_rewards[t], 6) for t in sorted(turn_rewards)],
        "submit_rewards": [round(r, 6) for r in submit_rewards],
        "turn_failure_classes": [g["failure_class"] for g in grades],
        "scores": {
            "total_reward": round(sum(row["reward"] for row in steps), 6),
            "turns_graded": len(grades),
            "turns_solved": sum(g["failure_class"] is None for g in grades),
            "tests_passed": sum(g["passed"] for g in grades),
            "tests_total": sum(g["total"] for g in grades),
            "newly_broken": sum(len(g["newly_broken"]) for g in grades),
        },
        "num_steps": max(len(steps) - 1, 0),
        "terminated": bool(last and last["terminated"]),
        "truncated": bool(last and last["truncated"]),
        "failure_class": failure_class,
        "failure": failure,
        "versions": {
            "stamina_gym": stamina_gym.__version__,
            "task": inner.task.meta.version,
            "grader": grader_identity(inner.sandbox_isolation or "none", inner.config.sandbox.grading_timeout_s),
            "gymnasium": gymnasium.__version__,
            "python": platform.python_version(),
        },
        "duration_s": round(time.monotonic() - started, 3),
        "cache_hits": cache.count("hit"),
        "cache_misses": cache.count("miss"),
    }


def _step_row(
    index: int, observation: dict, action: Any, reward: float, terminated: bool, truncated: bool, info: dict, turn: int
) -> dict[str, Any]:
    info = dict(info)
    cache = info.pop("grading_cache", None)
    return {
        "step": index,
        "turn": turn + 1,
        "observation": _observation(observation),
        "action": None if action is None else (action if isinstance(action, str) else json.dumps(action)),
        "reward": float(reward),
        "terminated": bool(terminated),
        "truncated": bool(truncated),
        "info": _json_safe(info),
        "grading_cache": cache,
        "model_call": None,
    }


def lost_episode(spec: RolloutSpec, episode: int, seed: int, why: str) -> dict[str, Any]:
    """The record of an episode whose worker died before it could report anything."""
    return {
        "episode": episode, "seed": seed, "env_id": spec.env_id, "task": "", "agent": spec.agent, "variants": [], "start_turn": 1,
        "steps": [], "messages": [], "messages_source": "rebuilt", "tools": "[]", "model_calls": [], "turn_rewards": [],
        "submit_rewards": [], "turn_failure_classes": [],
        "scores": {"total_reward": 0.0, "turns_graded": 0, "turns_solved": 0, "tests_passed": 0, "tests_total": 0, "newly_broken": 0},
        "num_steps": 0, "terminated": False, "truncated": False, "failure_class": "infrastructure",
        "failure": f"the worker died: {why}", "versions": {}, "duration_s": 0.0, "cache_hits": 0, "cache_misses": 0,
        "worker": "",
    }  # fmt: skip

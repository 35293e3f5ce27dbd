"""StaminaEnv as a SkyRL-gym text env (``pip install 'stamina-gym[skyrl]'``).

SkyRL's generator makes an env per sample with ``skyrl_gym.make(name, env_config=...,
extras=...)``, calls ``init(prompt)`` with the sample's chat prompt, then ``step(text)``
with each model output until ``done``. Here:

* ``env_config``: ``env_id`` (default ``StaminaTodo-v2``) and ``make_kwargs`` for
  ``gym.make`` (``max_turns``, ``sandbox``, ...); the action format is always
  ``tolerant``, since the model writes its tool call as text.
* ``extras`` (per sample): ``seed``, ``start_turn`` (where the episode begins) and
  ``num_turns`` (how many turns it plays: a window).
* ``init`` ignores the sample's prompt text and returns the env's opening conversation
  (the chat system prompt and the first request), so a dataset row needs only extras.
* ``step(text)``: the tool call in the model's text (prose, a ``json`` block,
  ``<tool_call>`` tags, after ``<think>``) is one env step; the observation is a user
  message with the tool's output, followed by the next request after a submit. The reward
  is the env's; ``done`` at the episode's end; ``metadata`` carries the env's info.

``register()`` (run on import) registers the class in SkyRL-gym's registry as ``stamina``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

try:
    import skyrl_gym
    from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput
except ImportError as exc:  # pragma: no cover - the message is the point
    raise ImportError("the SkyRL adapter needs skyrl-gym: pip install 'stamina-gym[skyrl]'") from exc

import stamina_gym  # noqa: F401 - registers the env ids
from stamina_gym.chat import after_step, opening_messages

NAME = "stamina"


class StaminaSkyRLEnv(BaseTextEnv):
    """One StaminaEnv episode as a SkyRL-gym text env (see the module docstring)."""

    def __init__(self, env_config: Any = None, extras: dict[str, Any] | None = None) -> None:
        super().__init__()
        config = dict(env_config or {})
        extras = dict(extras or {})
        self.env = gym.make(config.get("env_id", "StaminaTodo-v2"),
                            **{**dict(config.get("make_kwargs") or {}), "action_format": "tolerant"})  # fmt: skip
        self.seed = extras.get("seed")
        window = {key: extras[key] for key in ("start_turn", "num_turns") if extras.get(key)}
        self.options = window or None
        self.max_turns = int(config.get("max_steps", 10_000))  # SkyRL's own cap on steps
        self.total_reward = 0.0

    def init(self, prompt: Any = None) -> tuple[list[dict[str, str]], dict[str, Any]]:
        observation, info = self.env.reset(seed=self.seed, options=self.options)
        return opening_messages(observation), {"turn": info["turn"], "params": info["params"]}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        self.turns += 1
        observation, reward, terminated, truncated, info = self.env.step(action)
        done = bool(terminated or truncated) or self.turns >= self.max_turns
        if done and not (terminated or truncated):  # cut here: the grades still due (deferred grading) end here too
            due, grades = self.env.unwrapped.settle()
            reward += due
            if grades:
                info = {**info, "grades": grades}
        self.total_reward += float(reward)
        messages = [{"role": "user", "content": observation["output"]}]
        messages += after_step(observation, info, done)
        metadata = {key: info[key] for key in ("ok", "grade", "grades", "submitted", "reward_terms", "turn") if key in info}
        return BaseTextEnvStepOutput(observations=messages, reward=float(reward), done=done, metadata=metadata,
                                     postprocessed_action=action)  # fmt: skip

    def close(self) -> None:
        self.env.close()


def register() -> None:
    """Register ``StaminaSkyRLEnv`` in SkyRL-gym's registry as ``stamina`` (once)."""
    if NAME not in skyrl_gym.registry:
        skyrl_gym.register(id=NAME, entry_point=f"{__name__}:StaminaSkyRLEnv")


register()

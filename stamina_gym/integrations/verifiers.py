"""StaminaEnv as a verifiers environment (``pip install 'stamina-gym[verifiers]'``).

verifiers 0.4 (Prime Intellect's library, ``import verifiers.v1 as vf``) has no
``MultiTurnEnv``, ``ToolEnv`` or ``Rubric`` any more. An environment there is three
plugins found by one id: a *taskset* (config in, tasks out), an ``Env`` whose
``run(task, agents)`` plays one episode through an agent's ``interaction()``, and a
*harness*, the agent's program, whose model calls go through the library's interception
server, which records each one on the rollout's trace. Rewards are ``@vf.reward``
methods of the task, run when the rollout closes. Here:

* ``StaminaTaskset`` (config: ``env_id``, ``make_kwargs`` for ``gym.make``,
  ``num_examples``, ``start_turns``, ``seed``): row ``i`` is a task without a prompt
  (the env opens the conversation) whose ``info`` holds ``env_id``, ``seed`` (``seed +
  i``) and ``start_turn`` (the ``start_turns`` in turn).
* ``StaminaVerifiersEnv.run``: each episode makes its own ``ChatEnv``, so its own
  StaminaEnv (concurrent episodes share none), and closes it at its end, also on error;
  the env's blocking calls run in a worker thread. The reset's opening messages (the
  chat system prompt and the first request) are the first turn of the agent's
  interaction; each model reply is one ``ChatEnv.step`` (each tool call an env step),
  and its tool results, with the next request after a submit, are the next turn, until
  the episode ends or an agent limit (``max_turns``, tokens, timeout) stops it. The
  results of the episode's last reply are not sent: nothing is asked after them.
* ``StaminaChatHarness``, the taskset's default harness: per turn one chat completion
  offering the env's tools (``stamina_gym.tools.openai_tools``), made in-process with
  the ``openai`` client at the interception endpoint, on the whole conversation so far.
  It runs no tools: the env does.
* Reward: the env's reward for each model reply (its calls' rewards summed) is appended
  to ``trace.info["rewards"]``; the task's reward ``stamina`` is their sum, so
  ``trace.reward`` is the episode's return as the env gave it. Metric ``submits``: the
  turns graded (``trace.info["grades"]``: turn and failure class of each).
* Errors: an episode the library ends on an error (the policy server cannot be reached,
  a harness exception) is recorded by the library on the trace (``trace.ok`` False,
  ``trace.errors``) with reward 0; this module also logs it at ERROR level, so that no
  batch reads as an honest zero.

The library imports plugins by a top-level module name: the package installs one,
``stamina_gym_verifiers`` (``TASKSET_ID``), which re-exports this module; it is the id
``vf.load_environment``, ``vf-eval`` and ``EvalConfig(env={"taskset": {"id": ...}})`` take.
``load_environment(env_id=..., num_examples=..., start_turns=..., **make_kwargs)``
builds the env through the library's loader.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

try:
    import openai
    import verifiers.v1 as vf
    from verifiers.v1.dialects.chat import message_to_wire
except ImportError as exc:  # pragma: no cover - the message is the point
    raise ImportError("the verifiers adapter needs verifiers (Python >= 3.11): "
                      "pip install 'stamina-gym[verifiers]'") from exc

from pydantic import Field

import stamina_gym  # noqa: F401 - registers the env ids
from stamina_gym.chat import ChatEnv
from stamina_gym.submits import graded_submits
from stamina_gym.tools import openai_tools

TASKSET_ID = "stamina_gym_verifiers"
_LOG = logging.getLogger(__name__)

__all__ = ["TASKSET_ID", "StaminaChatHarness", "StaminaChatHarnessConfig", "StaminaData", "StaminaEnvConfig",
           "StaminaTask", "StaminaTaskset", "StaminaTasksetConfig", "StaminaVerifiersEnv",
           "load_environment"]  # fmt: skip


class StaminaTasksetConfig(vf.TasksetConfig):
    env_id: str = "StaminaTodo-v2"
    """The gymnasium id every episode is made from."""
    make_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Keyword arguments of ``gym.make`` (``max_turns``, ``sandbox``, ``action_format``, ...)."""
    num_examples: int = Field(1, ge=1)
    """How many rows (tasks)."""
    start_turns: list[int] = Field(default_factory=lambda: [1], min_length=1)
    """Where the episodes begin (1 is the first request), used in turn by the rows."""
    seed: int = 0
    """The first row's seed; row ``i`` has ``seed + i``."""


class StaminaData(vf.TaskData):
    info: dict[str, Any]
    """``env_id``, ``seed`` and ``start_turn``: what the episode is reset with."""


class StaminaTask(vf.Task[StaminaData]):
    @vf.reward(weight=1.0)
    async def stamina(self, trace: vf.Trace) -> float:
        """The episode's return: the sum of the env's rewards, as the env gave them."""
        return float(sum(trace.info.get("rewards", [])))

    @vf.metric
    async def submits(self, trace: vf.Trace) -> float:
        """How many turns were submitted and graded."""
        return float(len(trace.info.get("grades", [])))


class StaminaTaskset(vf.Taskset[StaminaTask, StaminaTasksetConfig]):
    def load(self) -> list[StaminaTask]:
        config = self.config
        rows = []
        for i in range(config.num_examples):
            seed, start = config.seed + i, config.start_turns[i % len(config.start_turns)]
            info = {"env_id": config.env_id, "seed": seed, "start_turn": start}
            data = StaminaData(name=f"{config.env_id}#seed{seed}@turn{start}", info=info)
            rows.append(StaminaTask(data, config.task))
        return rows


class StaminaChatHarnessConfig(vf.HarnessConfig):
    strict: bool = False
    """Offer the tools with schemas for OpenAI's strict mode."""


class StaminaChatHarness(vf.Harness[StaminaChatHarnessConfig]):
    """One chat completion per turn, with the env's tools; the env runs the calls."""

    APPENDS_SYSTEM_PROMPT = True
    SUPPORTS_RESUME = True  # each turn is relaunched on the conversation so far
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def launch(self, ctx: vf.ModelContext, trace: vf.Trace, runtime: vf.Runtime, endpoint: str, secret: str,
                     mcp_urls: dict[str, str], data: vf.TaskData, **_: Any) -> vf.ProgramResult:  # fmt: skip
        system, prompt = self.resolve_prompt(data)
        if isinstance(prompt, str):
            prompt = [vf.UserMessage(content=prompt)]
        messages = [message_to_wire(message) for message in prompt or []]
        if system:
            messages.insert(0, {"role": "system", "content": system})
        async with openai.AsyncOpenAI(base_url=endpoint, api_key=secret) as client:
            await client.chat.completions.create(model=ctx.model, messages=messages,
                                                 tools=openai_tools(strict=self.config.strict))  # fmt: skip
        return vf.ProgramResult(exit_code=0, stdout="", stderr="")


class StaminaEnvConfig(vf.EnvConfig):
    agent: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())
    """The one seat. Its harness runs in-process; the runtime it is given stays unused."""


class StaminaVerifiersEnv(vf.Env[StaminaEnvConfig]):
    """One StaminaEnv episode per verifiers episode (see the module docstring)."""

    async def run(self, task: StaminaTask, agents: vf.Agents) -> None:
        info = task.data.info
        chat = await asyncio.to_thread(ChatEnv, info["env_id"], **self.taskset.config.make_kwargs)
        try:
            options = {"start_turn": info["start_turn"]} if info["start_turn"] > 1 else None
            messages = await asyncio.to_thread(chat.reset, seed=info["seed"], options=options)
            async with agents.agent.interaction(task) as interaction:
                record = interaction.trace.info
                record.update(rewards=[], grades=[])
                while not chat.done:
                    segment = await interaction.turn(messages)
                    if segment.terminated:
                        break
                    reply = next(m for m in reversed(segment.messages) if m.role == "assistant")
                    messages, reward, _, step = await asyncio.to_thread(chat.step, message_to_wire(reply))
                    record["rewards"].append(reward)
                    record["grades"] += [{"turn": g["turn"], "failure_class": g["grade"]["failure_class"]}
                                         for s in step["steps"] for g in graded_submits(s)]  # fmt: skip
                if not chat.done:  # ended here, not by the env: the grades still due (deferred grading) too
                    due, graded = await asyncio.to_thread(chat.settle)
                    if graded:
                        record["rewards"].append(due)
                        record["grades"] += [{"turn": g["turn"], "failure_class": g["grade"]["failure_class"]} for g in graded]
            _say_error(task, interaction.trace)
        finally:
            await asyncio.to_thread(chat.close)


def _say_error(task: StaminaTask, trace: vf.Trace) -> None:
    """An episode the library ended on an error (the policy server unreachable, say) has
    the reward 0 of no step, not the env's: said at ERROR level, as the library only
    records it on the trace (``trace.ok`` False, ``trace.errors``)."""
    if trace.has_error:
        error = trace.last_error
        _LOG.error("%s ended on an error after %d graded turns, its reward is not the env's: %s: %s",
                   task.data.name, len(trace.info.get("grades", [])), error.type, error.message)  # fmt: skip


def load_environment(env_id: str = "StaminaTodo-v2", num_examples: int = 1, start_turns: list[int] | None = None,
                     seed: int = 0, **make_kwargs: Any) -> StaminaVerifiersEnv:  # fmt: skip
    """The verifiers env for ``env_id``, through the library's own loader."""
    taskset = {"id": TASKSET_ID, "env_id": env_id, "num_examples": num_examples, "seed": seed,
               "start_turns": list(start_turns or [1]), "make_kwargs": make_kwargs}  # fmt: skip
    return vf.load_environment(vf.resolve_env_config({"taskset": taskset}))


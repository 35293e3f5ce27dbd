"""``stamina-gym run``: one agent through one episode (``stamina_gym.play``), every step
recorded as it happens."""

from __future__ import annotations

import contextlib
import platform
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import stamina_gym
from stamina_gym.agents import Agent, AgentError, has_hook
from stamina_gym.play import Observer, Step, play
from stamina_gym.records import JsonLines, Redactor, read_lines, write_json
from stamina_gym.submits import carried_reward, graded_submits, turn_ended


@dataclass
class TurnResult:
    turn: int
    title: str
    steps: int
    passed: int
    total: int
    regression_total: int
    newly_broken: int
    failure_class: str | None
    reward: float
    quality: float | None = None
    """The code-quality score after the turn (None when not measured)."""
    rules_broken: int = 0
    scores: dict[str, float | None] | None = None
    """``info["scores"]`` of the submit: clarification, planning, generation, composite."""


@dataclass
class EpisodeResult:
    env_id: str
    agent: str
    seed: int
    turns: list[TurnResult] = field(default_factory=list)
    total_reward: float = 0.0
    steps: int = 0
    terminated: bool = False
    truncated: bool = False
    failure: str | None = None
    """Set when the agent broke the protocol (``framework``) and the episode stopped."""

    @property
    def solved_turns(self) -> int:
        return sum(t.failure_class is None for t in self.turns)

    def mean_scores(self) -> dict[str, float | None]:
        """Each dialogue score averaged over the turns that measured it (None if none did)."""
        keys = ("clarification", "planning", "generation", "composite")
        values = {k: [t.scores[k] for t in self.turns if t.scores and t.scores.get(k) is not None] for k in keys}
        return {k: round(sum(v) / len(v), 6) if v else None for k, v in values.items()}


class Recorder:
    """JSONL records in ``out``: ``steps.jsonl`` and ``turns.jsonl``, ``model_calls.jsonl``
    for a model agent (each call's exact request and reply, as it is made), ``run.json``
    (written first) and ``summary.json`` (written last); through ``stamina_gym.records``:
    every line fsynced, secrets (of the header's config and of the process environment)
    redacted."""

    def __init__(self, out: Path, header: dict[str, Any], redact: Redactor | None = None) -> None:
        out.mkdir(parents=True, exist_ok=True)
        self.out = out
        self.redact = redact or Redactor.for_config(header)
        write_json(out / "run.json", header, self.redact)
        self._steps = JsonLines(out / "steps.jsonl", self.redact)
        self._turns = JsonLines(out / "turns.jsonl", self.redact)
        self._calls: JsonLines | None = None

    def step(self, record: dict[str, Any]) -> None:
        self._steps.append(record)

    def turn(self, record: dict[str, Any]) -> None:
        self._turns.append(record)

    def model_call(self, record: dict[str, Any]) -> None:
        if self._calls is None:
            self._calls = JsonLines(self.out / "model_calls.jsonl", self.redact)
        self._calls.append(record)

    def finish(self, summary: dict[str, Any]) -> None:
        write_json(self.out / "summary.json", summary, self.redact)
        for log in (self._steps, self._turns, self._calls):
            if log is not None:
                log.close()


def run_header(env: Any, agent: Agent, seed: int) -> dict[str, Any]:
    inner = env.unwrapped
    return {
        "env_id": env.spec.id if env.spec else inner.config.id,
        "task": inner.task.id,
        "task_version": inner.task.meta.version,
        "agent": agent.name,
        "seed": seed,
        "stamina_gym_version": stamina_gym.__version__,
        "python": platform.python_version(),
        "sandbox_python": inner.sandbox_python,
        "sandbox": inner.sandbox_isolation or inner.config.sandbox.kind,
        "config": inner.config.model_dump(),
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


class _RunRecords(Observer):
    """``stamina-gym run``'s observer: the ``EpisodeResult`` and, with a recorder, its records."""

    def __init__(self, result: EpisodeResult, recorder: Recorder | None, on_turn: Callable[[TurnResult], None] | None) -> None:
        self.result, self.recorder, self.on_turn = result, recorder, on_turn
        self.turn_steps, self.turn_reward = 0, 0.0
        self.ended: dict[int, tuple[int, float]] = {}
        """Turns submitted and not yet graded (deferred grading): their steps and reward so far."""

    def start(self, env: Any, agent: Any, observation: dict, info: dict) -> None:
        self.turns = env.unwrapped.turns
        if self.recorder and has_hook(agent, "on_call"):
            agent.on_call = self.recorder.model_call

    def agent_failed(self, observation: dict, error: AgentError) -> None:
        self.result.failure = f"framework: {error}"
        if self.recorder:
            self.recorder.step({"step": self.result.steps + 1, "turn": int(observation["turn"]), "agent_error": str(error)})

    def step(self, step: Step) -> bool:
        result, info, turn = self.result, step.info, step.turn
        result.steps += 1
        self.turn_steps += 1
        self.turn_reward += step.reward - carried_reward(info)  # deferred grades count for their own turns
        result.total_reward += step.reward
        if self.recorder:
            self.recorder.step(
                {"step": result.steps, "turn": turn + 1, "action": step.action, "reward": step.reward,
                 "duration_s": round(step.duration_s, 4), "terminated": step.terminated, "truncated": step.truncated,
                 "output": step.observation["output"], "info": info}
            )  # fmt: skip
        if turn_ended(info):
            self.ended[turn + 1] = (self.turn_steps, self.turn_reward)
            self.turn_steps, self.turn_reward = 0, 0.0
        for submit in graded_submits(info):
            steps, reward = self.ended.pop(submit["turn"])
            self._turn_done(submit, steps, reward + submit.get("reward", 0.0))
        return False

    def _turn_done(self, submit: dict[str, Any], steps: int, reward: float) -> None:
        """Record a graded turn: ``steps`` taken in it and the ``reward`` they earned."""
        grade, number = submit["grade"], submit["turn"]
        done = TurnResult(
            number, self.turns[number - 1].spec.title, steps, grade["passed"], grade["total"],
            grade["regression_total"], len(grade["newly_broken"]), grade["failure_class"], round(reward, 6),
            (grade.get("quality") or {}).get("score"), len(grade.get("rules", {}).get("broken", ())),
        )  # fmt: skip
        done.scores = submit.get("scores")
        self.result.turns.append(done)
        if self.recorder:
            self.recorder.turn({**asdict(done), "grade": grade, "reward_terms": submit["reward_terms"], "commit": submit["commit"],
                                "dialogue": submit.get("dialogue")})  # fmt: skip
        if self.on_turn:
            self.on_turn(done)


def run_episode(
    env: Any,
    agent: Agent,
    *,
    seed: int,
    recorder: Recorder | None = None,
    on_turn: Callable[[TurnResult], None] | None = None,
) -> EpisodeResult:
    """Play one episode (``stamina_gym.play``); a broken agent ends it as a recorded
    ``framework`` failure."""
    inner = env.unwrapped
    result = EpisodeResult(env.spec.id if env.spec else inner.config.id, agent.name, seed)
    played = play(env, agent, [_RunRecords(result, recorder, on_turn)], seed=seed)
    result.terminated, result.truncated = played.ended == "terminated", played.ended == "truncated"
    result.total_reward = round(result.total_reward, 6)
    if recorder:
        recorder.finish({**asdict(result), "solved_turns": result.solved_turns, "scores": result.mean_scores()})
    return result


def format_turn_row(turn: TurnResult) -> str:
    verdict = turn.failure_class or "solved"
    return (
        f"{turn.turn:>4}  {turn.title[:38]:<38} {turn.steps:>5}  {turn.passed:>3}/{turn.total:<3} "
        f"{turn.newly_broken:>4}/{turn.regression_total:<4} {verdict:<14} {turn.reward:>7.3f} "
        f"{'-' if turn.quality is None else f'{turn.quality:.3f}':>7} {turn.rules_broken:>5}"
    )


TABLE_HEADER = (
    f"{'turn':>4}  {'request':<38} {'steps':>5}  {'tests':<7} {'broken':<9} {'result':<14} {'reward':>7} "
    f"{'quality':>7} {'rules':>5}"
)


def play_rung(env_id: str, agent: str, kwargs: dict[str, Any], seed: int, turns: int | None, records: Path,
              sandbox: str | None = None) -> dict[str, Any]:  # fmt: skip
    """One episode of a ladder rung (``stamina_gym.agents.ladder``), in the env's own
    sandbox or one of kind ``sandbox``: its total reward, each reward term summed over its
    submits and the turns played (read back from the records it writes in ``records``)."""
    import gymnasium as gym

    from stamina_gym.agents import make_agent
    from stamina_gym.agents.ladder import owning_the_stream, rung_name

    grading = owning_the_stream() if agent == "guess" else contextlib.nullcontext()
    with grading:
        env = gym.make(env_id, **({"max_turns": turns} if turns else {}), **({"sandbox": {"kind": sandbox}} if sandbox else {}))
        player = make_agent(agent, **kwargs)
        try:
            result = run_episode(env, player, seed=seed, recorder=Recorder(records, {"agent": rung_name(agent, kwargs)}))
        finally:
            player.close()
            env.close()
    terms: dict[str, float] = {}
    played = 0
    for record in read_lines(records / "turns.jsonl"):
        played += 1
        for term, value in (record.get("reward_terms") or {}).items():
            terms[term] = terms.get(term, 0.0) + value
    return {"total": result.total_reward, "terms": terms, "solved": result.solved_turns, "turns": played}

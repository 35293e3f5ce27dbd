"""``stamina-gym eval``: every agent, N independent runs each, recorded step by step.

Each run (an agent, a seed) starts from a clean workspace and a fresh sandbox: a new env
is made for it and closed after it. A run whose sandbox broke (``infrastructure``) is an
invalid sample: its records are kept, marked invalid, and the run is played again from the
start as a new attempt, up to ``max_reruns`` times. Budgets are the env's (steps per turn,
wall clock), the sandbox's (command timeout, memory, CPU) and the harness's (model calls
and tokens, through ``ModelMeter``).

A run killed at any point continues with ``resume=True`` from its last finished turn: the
steps of the unfinished turn are dropped from the records, the env is reset with the same
seed and the recorded final patches of the finished turns are replayed into the workspace
(``StaminaEnv.restore``); the replayed commit ids must equal the recorded ones.
"""

from __future__ import annotations

import platform
import re
import resource
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import stamina_gym
from stamina_gym.agents import AgentError, has_hook, hook, make_agent
from stamina_gym.errors import ConfigError, StaminaError
from stamina_gym.evaluation.budget import BudgetExceeded, ModelMeter, ModelUsage
from stamina_gym.evaluation.config import (
    AgentSpec, EvalConfig, digest, explain_difference, frozen_rules, prompt_templates_digest, tree_digest,
)  # fmt: skip
from stamina_gym.grading.grade import voids_reward
from stamina_gym.play import Observer, Step, play
from stamina_gym.records import JsonLines, Redactor, read_json, read_lines, rewrite_lines, write_json

#: What kind of contestant each built-in agent is (an agent class may say so itself).
AGENT_LEVELS = {"openai": "model", "command": "system", "oracle": "reference", "null": "reference"}
_EXIT = re.compile(r"^\[(?:exit code (-?\d+)|(timed out))")
_PYTEST_COUNTS = re.compile(r"(\d+) (passed|failed|error|errors|skipped)")
INVALID_CLASSES = ("infrastructure",)


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(epoch)) + f".{int(epoch % 1 * 1000):03d}Z"


def attempt_dirs(out: Path, label: str, run: int) -> list[Path]:
    folder = out / "runs" / label / f"run-{run}"
    found = [p for p in folder.glob("attempt-*") if p.name.split("-")[1].isdigit()]
    return sorted(found, key=lambda p: int(p.name.split("-")[1]))


@dataclass
class _Resume:
    """What the records of an unfinished attempt say."""

    turns: list[dict[str, Any]] = field(default_factory=list)
    steps: int = 0
    dropped_steps: int = 0

    @property
    def ended(self) -> bool:
        return bool(self.turns) and not self.turns[-1].get("graded", True)


class Evaluation:
    """Plays ``config`` into ``out``. ``make_env(env_id, **overrides)`` defaults to ``gym.make``."""

    def __init__(
        self,
        config: EvalConfig,
        out: Path,
        *,
        resume: bool = False,
        progress: bool = True,
        make_env: Callable[..., Any] | None = None,
        environ: dict[str, str] | None = None,
    ) -> None:
        self.config, self.out, self.resume, self.progress = config, Path(out), resume, progress
        if make_env is None:
            import gymnasium as gym

            make_env = gym.make
        self._make_env = make_env
        self.redact = Redactor.for_config(config.model_dump(), environ)
        self._bar: Any = None

    # -- frozen rules -------------------------------------------------------------------

    def prepare(self) -> dict[str, Any]:
        """Record the config and its hash before the first run, or check it on resume."""
        env = self._new_env()
        try:
            inner = env.unwrapped
            first, last = inner.window  # eval plays from turn 1, up to max_turns
            self.turn_count = last - first + 1
            self.turn_meta = [
                {"turn": t.index, "id": t.id, "title": t.spec.title, "kind": t.spec.kind, "phase": inner.task.phase(t.index),
                 "sequence": t.spec.sequence}
                for t in inner.turns
            ]
            task = {"id": inner.task.id, "version": inner.task.meta.version, "digest": tree_digest(inner.task.root)}
            env_config = inner.config.model_dump()
        finally:
            env.close()
        config = self.redact(self.config.model_dump())
        rules = frozen_rules(config, env_config, task, stamina_gym.__version__)
        self.rules, self.config_hash, self.task = rules, digest(rules), task
        path = self.out / "eval.json"
        if path.exists():
            if not self.resume:
                raise ConfigError(f"{self.out} already holds an evaluation; pass --resume to continue it, or another --out")
            recorded = read_json(path)
            if recorded["config_hash"] != self.config_hash:
                changes = "; ".join(explain_difference(recorded["rules"], rules)[:8])
                raise ConfigError(
                    f"refusing to resume {self.out}: the evaluation config changed since it started "
                    f"(hash {recorded['config_hash'][:12]} -> {self.config_hash[:12]}): {changes}. "
                    "Rules frozen before an experiment stay frozen: start a new --out instead."
                )
            self._event({"event": "resume"})
        else:
            if self.resume and self.out.exists() and any(self.out.iterdir()):
                raise ConfigError(f"--resume: {self.out} has no eval.json, so there is nothing to resume")
            self.out.mkdir(parents=True, exist_ok=True)
            write_json(path, {"config_hash": self.config_hash, "created_at": now(), "rules": rules,
                              "turns": self.turn_meta, "python": platform.python_version()}, self.redact)  # fmt: skip
            self._event({"event": "start", "config_hash": self.config_hash})
        return rules

    def _event(self, record: dict[str, Any]) -> None:
        log = JsonLines(self.out / "events.jsonl", self.redact)
        log.append({"time": now(), **record})
        log.close()

    def _new_env(self) -> Any:
        env = self._make_env(self.config.env, **self.config.env_overrides())
        if getattr(getattr(env.unwrapped, "config", None), "deferred_grading", False):
            env.close()
            raise ConfigError("an evaluation reads each turn's grade as the turn ends: deferred_grading is for "
                              "training, leave it off in the evaluation's env overrides")  # fmt: skip
        return env

    # -- runs ---------------------------------------------------------------------------

    def run(self) -> None:
        self.prepare()
        total = len(self.config.agents) * self.config.runs * self.turn_count
        done = sum(self._finished_turns(spec, k) for spec in self.config.agents for k in range(self.config.runs))
        if self.progress:
            from tqdm import tqdm

            self._bar = tqdm(total=total, initial=done, unit="turn", file=sys.stderr, dynamic_ncols=True,
                             desc="eval", bar_format="{desc} {n_fmt}/{total_fmt} turns |{bar}| {elapsed} elapsed{postfix}")  # fmt: skip
        try:
            for spec in self.config.agents:
                for run, seed in enumerate(self.config.seeds):
                    self._run(spec, run, seed)
        finally:
            if self._bar is not None:
                self._bar.close()
        self._event({"event": "finish"})

    def _finished_turns(self, spec: AgentSpec, run: int) -> int:
        attempts = attempt_dirs(self.out, spec.label, run)
        if not attempts:
            return 0
        last = attempts[-1]
        if (last / "result.json").exists():
            result = read_json(last / "result.json")
            return self.turn_count if result["valid"] else 0
        return len(read_lines(last / "turns.jsonl"))

    def _run(self, spec: AgentSpec, run: int, seed: int) -> None:
        """Play one run to a valid result, rerunning invalid attempts."""
        while True:
            attempts = attempt_dirs(self.out, spec.label, run)
            if attempts and (attempts[-1] / "result.json").exists():
                result = read_json(attempts[-1] / "result.json")
                if result["valid"] or len(attempts) > self.config.max_reruns:
                    return
                folder, state = attempts[-1].with_name(f"attempt-{len(attempts) + 1}"), _Resume()
                self._event({"event": "rerun", "agent": spec.label, "run": run, "after": result["invalid_reason"]})
            elif attempts:
                folder, state = attempts[-1], self._load_resume(attempts[-1])
            else:
                folder, state = self.out / "runs" / spec.label / f"run-{run}" / "attempt-1", _Resume()
            self._attempt(spec, run, seed, folder, state)

    def _load_resume(self, folder: Path) -> _Resume:
        turns = read_lines(folder / "turns.jsonl", repair=True)
        steps = read_lines(folder / "steps.jsonl", repair=True)
        if [t["turn"] for t in turns] != list(range(1, len(turns) + 1)):
            raise StaminaError(f"{folder}/turns.jsonl: turns are not 1..{len(turns)} in order; the records were edited")
        keep = [s for s in steps if s["turn"] <= len(turns)]
        if len(keep) != len(steps):
            rewrite_lines(folder / "steps.jsonl", keep)
        state = _Resume(turns, len(keep), len(steps) - len(keep))
        self._event({"event": "resume_attempt", "folder": str(folder.relative_to(self.out)), "finished_turns": len(turns),
                     "dropped_steps": state.dropped_steps})  # fmt: skip
        return state

    def _attempt(self, spec: AgentSpec, run: int, seed: int, folder: Path, state: _Resume) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        attempt = int(folder.name.split("-")[1])
        if state.ended or len(state.turns) >= self.turn_count:
            self._finish(folder, state.turns, attempt, seed, None, None)
            return
        env = self._new_env()
        agent = None
        steps_log = JsonLines(folder / "steps.jsonl", self.redact)
        turns_log = JsonLines(folder / "turns.jsonl", self.redact)
        calls_log: JsonLines | None = None
        try:
            agent = make_agent(spec.name, **spec.args)
            if has_hook(agent, "on_call"):  # each model call's exact request and reply, as it is made
                calls_log = JsonLines(folder / "model_calls.jsonl", self.redact)
                agent.on_call = calls_log.append
            episode = _Episode(self, env, agent, spec, run, seed, attempt, state, steps_log, turns_log)
            invalid, ended = episode.play_into(folder)
        except (StaminaError, OSError) as exc:
            if isinstance(exc, ConfigError) or agent is None:
                raise
            invalid, ended = f"infrastructure: {type(exc).__name__}: {exc}", None
        finally:
            steps_log.close()
            turns_log.close()
            if calls_log is not None:
                calls_log.close()
            if agent is not None:
                agent.close()
            env.close()
        turns = read_lines(folder / "turns.jsonl")
        self._finish(folder, turns, attempt, seed, invalid, ended)

    def _finish(self, folder: Path, turns: list[dict], attempt: int, seed: int, invalid: str | None, ended: str | None) -> None:
        if invalid is None:
            invalid = next((f"infrastructure in turn {t['turn']}: {t['hidden_results']['detail']}" for t in turns
                            if t.get("failure_class") in INVALID_CLASSES), None)  # fmt: skip
        ended = ended or next((t.get("ended") for t in turns if not t.get("graded", True)), None)
        solved = sum(bool(t.get("solved")) for t in turns)
        usage = {k: sum(t.get("model", {}).get(k, 0) for t in turns) for k in ("calls", "prompt_tokens", "completion_tokens")}
        result = {
            "valid": invalid is None,
            "invalid_reason": invalid,
            "attempt": attempt,
            "seed": seed,
            "turns_total": self.turn_count,
            "turns_recorded": len(turns),
            "solved": solved,
            "success": solved / self.turn_count,
            "total_reward": round(sum(t.get("reward", 0.0) for t in turns), 6),
            "ended": ended,
            "model": usage,
            "elapsed_s": round(sum(t.get("duration_s", 0.0) for t in turns), 3),
            "finished_at": now(),
        }
        write_json(folder / "result.json", result, self.redact)
        if invalid is not None and self._bar is not None:
            self._bar.update(-len([t for t in turns if t.get("graded", True)]))

    def advance(self, label: str, run: int, turn: int) -> None:
        if self._bar is not None:
            self._bar.set_postfix_str(f"{label} run {run + 1}/{self.config.runs} turn {turn}", refresh=False)
            self._bar.update(1)


def agent_identity(spec: AgentSpec, agent: Any, redact: Redactor) -> dict[str, Any]:
    own = agent.describe() if has_hook(agent, "describe") else {}
    return {
        "name": spec.name,
        "label": spec.label,
        "class": f"{type(agent).__module__}.{type(agent).__qualname__}",
        "level": hook(agent, "level", AGENT_LEVELS.get(spec.name, "system")),
        "version": hook(agent, "version", stamina_gym.__version__),
        "config": redact({**spec.args, **own}),
        "config_digest": digest(redact({**spec.args, **own})),
    }


def exit_status(output: str) -> tuple[int | None, bool]:
    """Exit code and timeout flag of a ``run``/``run_tests`` observation."""
    match = _EXIT.match(output)
    if not match:
        return None, False
    return (int(match.group(1)) if match.group(1) else None), bool(match.group(2))


def patch_stats(patch: str) -> dict[str, Any]:
    """Files touched and lines added/removed, per file and in total."""
    files: dict[str, list[int]] = {}
    current = None
    for line in patch.splitlines():
        if line.startswith("diff --git "):
            current = line.split(" b/", 1)[-1]
            files.setdefault(current, [0, 0])
        elif current is None or line.startswith(("+++", "---")):
            continue
        elif line.startswith("+"):
            files[current][0] += 1
        elif line.startswith("-"):
            files[current][1] += 1
    return {
        "files": len(files),
        "added": sum(a for a, _ in files.values()),
        "removed": sum(r for _, r in files.values()),
        "churn": {path: a + r for path, (a, r) in files.items()},
    }


def _rusage() -> dict[str, float]:
    children, me = resource.getrusage(resource.RUSAGE_CHILDREN), resource.getrusage(resource.RUSAGE_SELF)
    return {
        "cpu_children_s": children.ru_utime + children.ru_stime,
        "cpu_self_s": me.ru_utime + me.ru_stime,
        "maxrss_children_mb": children.ru_maxrss / 1024,
        "maxrss_self_mb": me.ru_maxrss / 1024,
    }


class _Episode(Observer):
    """One attempt's episode, from reset or from a restored turn: the observer of the loop
    (``stamina_gym.play``) that keeps its records, its model budget and its progress."""

    def __init__(self, ev: Evaluation, env: Any, agent: Any, spec: AgentSpec, run: int, seed: int, attempt: int,
                 state: _Resume, steps_log: JsonLines, turns_log: JsonLines) -> None:  # fmt: skip
        self.ev, self.env, self.agent, self.spec = ev, env, agent, spec
        self.run, self.seed, self.attempt, self.state = run, seed, attempt, state
        self.steps_log, self.turns_log = steps_log, turns_log
        budgets = ev.config.budgets
        spent = ModelUsage(**{k: sum(t.get("model", {}).get(k, 0) for t in state.turns) for k in ModelUsage.__dataclass_fields__})
        self.meter = ModelMeter(budgets.max_model_calls, budgets.max_model_tokens, spent)

    def play_into(self, folder: Path) -> tuple[str | None, str | None]:
        """Play the attempt into ``folder``; returns (invalid reason, budget or protocol
        reason the episode ended on)."""
        self.folder, self.invalid, self.ended = folder, None, None
        play(self.env, self.agent, [self], seed=self.seed)
        return self.invalid, self.ended

    # -- the observer of the loop (stamina_gym.play) --------------------------------------

    def start(self, env: Any, agent: Any, observation: dict[str, Any], info: dict[str, Any]) -> dict[str, Any]:
        state, inner, folder = self.state, env.unwrapped, self.folder
        self.commit = inner.workspace.head()
        if state.turns:
            passing: frozenset[str] = frozenset()
            for record in state.turns:
                if not voids_reward(record["failure_class"]):
                    passing = frozenset(record["passing"])
            elapsed = sum(t["duration_s"] for t in state.turns)
            observation, commits = inner.restore(len(state.turns), [t["patch"] for t in state.turns], passing,
                                                 elapsed_s=elapsed, output=state.turns[-1]["feedback"])  # fmt: skip
            recorded = [t["commit"] for t in state.turns]
            if commits != recorded:
                raise StaminaError(f"{folder}: replaying the recorded patches gives commits {commits}, the records say "
                                   f"{recorded}; the records do not reproduce the run")  # fmt: skip
            self.commit = commits[-1]
        if not (folder / "run.json").exists():
            write_json(folder / "run.json", self._header(inner), self.ev.redact)
        attach = hook(agent, "attach_meter")
        if attach is not None:
            attach(self.meter)
        self.step_no = state.steps
        self.turn = self._new_turn(observation)
        return observation

    def before_act(self, observation: dict[str, Any]) -> None:
        self.usage_before = self.meter.snapshot()

    def agent_failed(self, observation: dict[str, Any], error: AgentError) -> None:
        reason = error.budget if isinstance(error, BudgetExceeded) else "agent_error"
        self.ended = self._end_turn(self.turn, self.step_no, "framework", reason, str(error))

    def after_act(self, observation: dict[str, Any], action: Any, think_s: float) -> bool:
        if self.meter.overrun:
            self.ended = self._end_turn(self.turn, self.step_no, "framework", self.meter.overrun,
                                        "the agent called the model past its budget")  # fmt: skip
            return True
        return False

    def step(self, step: Step) -> bool:
        turn, info, action, index = self.turn, step.info, step.action, step.turn
        self.step_no += 1
        step_no = self.step_no
        output = step.observation["output"]
        code, timed_out = exit_status(output) if info.get("tool") in ("run", "run_tests") else (None, False)
        tool = info.get("tool")
        self.steps_log.append({
            "step": step_no, "turn": index + 1, "time": iso(time.time()), "tool": tool, "action": action,
            "ok": info.get("ok"), "exit_code": code, "timed_out": timed_out, "duration_s": round(step.duration_s, 4),
            "think_s": round(step.think_s, 4), "reward": step.reward, "model": self.meter.snapshot().minus(self.usage_before),
            "output": output, "info": {k: v for k, v in info.items() if k != "grade"},
        })  # fmt: skip
        turn["steps"] += 1
        turn["reward"] += step.reward
        if tool and tool != "submit":
            turn["tools"][tool] = turn["tools"].get(tool, 0) + 1
            turn["failed_tool_calls"] += not info.get("ok", False)
        if tool == "run_tests" or (tool == "run" and isinstance(action, dict) and "pytest" in str(action.get("command", ""))):
            turn["test_runs"] += 1
            turn["public_tests"] = {"step": step_no, "exit_code": code, "counts": _pytest_counts(output)}
        if tool == "ask" and isinstance(action, dict):
            turn["questions"].append(str(action.get("question", "")))
        if info.get("infrastructure_error"):
            self.invalid = f"infrastructure in turn {index + 1}: {info['infrastructure_error']}"
            return True
        if "grade" in info:
            self.commit = self._graded_turn(turn, info, self.commit, output, step_no)
            if info["grade"]["failure_class"] in INVALID_CLASSES:
                self.invalid = f"infrastructure in turn {index + 1}: {info['grade']['detail']}"
                return True
            if not step.terminated:
                self.turn = self._new_turn(step.observation)
        if step.truncated and not step.terminated:
            budget = info.get("budget", "max_episode_steps")
            self.ended = self._end_turn(self.turn, step_no, "timeout" if budget == "wall_clock_s" else "framework", budget,
                                        f"budget {budget} spent before the turn was submitted")  # fmt: skip
        return False

    def _header(self, inner: Any) -> dict[str, Any]:
        from stamina_gym.tools import TOOLS

        return {
            "env_id": self.ev.config.env,
            "task": self.ev.task,
            "agent": agent_identity(self.spec, self.agent, self.ev.redact),
            "run": self.run,
            "attempt": self.attempt,
            "seed": self.seed,
            "config_hash": self.ev.config_hash,
            "stamina_gym_version": stamina_gym.__version__,
            "python": platform.python_version(),
            "prompt_templates": prompt_templates_digest(),
            "tools_allowed": list(TOOLS),
            "sandbox": inner.sandbox_isolation or inner.config.sandbox.kind,
            "env_config": inner.config.model_dump(),
            "budgets": {**inner.config.budgets.model_dump(), "command_timeout_s": inner.config.sandbox.timeout_s,
                        "memory_mb": inner.config.sandbox.memory_mb, "cpu_s": inner.config.sandbox.cpu_s,
                        "max_model_calls": self.meter.max_calls, "max_model_tokens": self.meter.max_tokens},
            "started_at": now(),
        }  # fmt: skip

    def _new_turn(self, observation: dict[str, Any]) -> dict[str, Any]:
        return {"index": int(observation["turn"]) - 1, "prompt": str(observation["prompt"]),
                "t0": time.monotonic(), "started_at": iso(time.time()), "steps": 0, "reward": 0.0,
                "tools": {}, "failed_tool_calls": 0, "test_runs": 0, "public_tests": None, "questions": [],
                "usage": self.meter.snapshot(), "rusage": _rusage()}  # fmt: skip

    def _turn_record(self, turn: dict[str, Any]) -> dict[str, Any]:
        meta = self.ev.turn_meta[turn["index"]]
        after = _rusage()
        questions = turn["questions"]
        return {
            "turn": turn["index"] + 1, "turn_id": meta["id"], "title": meta["title"], "kind": meta["kind"],
            "prompt": turn["prompt"],
            "phase": meta["phase"], "run": self.run, "attempt": self.attempt, "seed": self.seed,
            "started_at": turn["started_at"], "ended_at": iso(time.time()),
            "duration_s": round(time.monotonic() - turn["t0"], 4), "steps": turn["steps"],
            "tool_calls": sum(turn["tools"].values()), "tools": turn["tools"], "failed_tool_calls": turn["failed_tool_calls"],
            "test_runs": turn["test_runs"], "public_tests": turn["public_tests"],
            "questions": len(questions), "repeated_questions": len(questions) - len({q.strip().lower() for q in questions}),
            "model": self.meter.snapshot().minus(turn["usage"]),
            "resources": {
                "cpu_children_s": round(after["cpu_children_s"] - turn["rusage"]["cpu_children_s"], 3),
                "cpu_self_s": round(after["cpu_self_s"] - turn["rusage"]["cpu_self_s"], 3),
                "maxrss_children_mb": round(after["maxrss_children_mb"], 1),
                "maxrss_self_mb": round(after["maxrss_self_mb"], 1),
            },
            "reward": round(turn["reward"], 6),
        }  # fmt: skip

    def _graded_turn(self, turn: dict[str, Any], info: dict[str, Any], previous: str, feedback: str, step: int) -> str:
        grade = info["grade"]
        workspace = self.env.unwrapped.workspace
        commit = info["commit"]
        patch = workspace.git("diff", "--binary", "--full-index", "--no-renames", "--no-color", "--no-ext-diff",
                              previous, commit).stdout  # fmt: skip
        statuses = {**grade["regression_tests"], **grade["tests"]}
        record = {
            **self._turn_record(turn), "graded": True, "last_step": step,
            "passed": grade["passed"], "total": grade["total"], "regression_total": grade["regression_total"],
            "newly_broken": len(grade["newly_broken"]), "failure_class": grade["failure_class"],
            "solved": grade["failure_class"] is None, "reward_terms": info.get("reward_terms"),
            "hidden_results": grade, "feedback": feedback, "base_commit": previous, "commit": commit, "patch": patch,
            "patch_stats": patch_stats(patch), "passing": sorted(t for t, s in statuses.items() if s == "passed"),
            "scores": info.get("scores"), "quality": grade.get("quality"),
        }  # fmt: skip
        self.turns_log.append(record)
        self.ev.advance(self.spec.label, self.run, record["turn"])
        return commit

    def _end_turn(self, turn: dict[str, Any], step: int, failure: str, reason: str, detail: str) -> str:
        """The episode stopped inside a turn: record the turn as failed, ungraded."""
        record = {
            **self._turn_record(turn), "graded": False, "last_step": step, "ended": reason, "detail": detail,
            "passed": 0, "total": None, "regression_total": None, "newly_broken": 0, "failure_class": failure,
            "solved": False, "patch_stats": {"files": 0, "added": 0, "removed": 0, "churn": {}},
        }  # fmt: skip
        self.turns_log.append(record)
        return reason


def _pytest_counts(output: str) -> dict[str, int]:
    return {kind.rstrip("s") if kind == "errors" else kind: int(n) for n, kind in _PYTEST_COUNTS.findall(output[-2000:])}

"""The frozen rules of an evaluation: which agents, env, runs, seeds and budgets.

The config is hashed together with everything else that decides a score (the env's
reward weights and budgets, the task's version and content digest, the package version,
the prompt templates) and the hash is recorded before the first run. A ``--resume`` whose
hash differs is refused: rules fixed before an experiment stay fixed.
"""

from __future__ import annotations

import hashlib
import json
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from stamina_gym.errors import ConfigError


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class AgentSpec(_Strict):
    """One agent under evaluation."""

    name: str
    """Registry name: ``oracle``, ``null``, ``command``, ``openai``."""

    args: dict[str, str] = {}
    """Constructor arguments (``--agent-arg NAME:KEY=VALUE``); secret-looking values are
    redacted before they are recorded or hashed."""

    @property
    def label(self) -> str:
        return self.name


class EvalBudgets(_Strict):
    """Budgets enforced from outside the agent: by the env, the sandbox and the harness.
    Unset fields keep the env spec's value."""

    wall_clock_s: float | None = Field(None, gt=0)
    """Wall clock of one episode (env ``budgets.wall_clock_s``, 8 h in StaminaTodo-v2)."""

    max_steps_per_turn: int | None = Field(None, ge=1)
    """Tool calls allowed in one turn, submit included."""

    command_timeout_s: float | None = Field(None, gt=0)
    """Wall-clock limit of one command the agent runs (``sandbox.timeout_s``)."""

    memory_mb: int | None = Field(None, ge=64)
    """Address-space limit of every process in the sandbox (``sandbox.memory_mb``)."""

    cpu_s: int | None = Field(None, ge=1)
    """CPU-time limit of every process in the sandbox (``sandbox.cpu_s``)."""

    max_model_calls: int | None = Field(None, ge=1)
    """Model calls of a model-driven agent in one episode; counted by the harness."""

    max_model_tokens: int | None = Field(None, ge=1)
    """Prompt plus completion tokens of a model-driven agent in one episode."""

    def env_overrides(self) -> dict[str, Any]:
        budgets = {k: v for k, v in (("wall_clock_s", self.wall_clock_s), ("max_steps_per_turn", self.max_steps_per_turn)) if v}
        sandbox = {k: v for k, v in (("timeout_s", self.command_timeout_s), ("memory_mb", self.memory_mb), ("cpu_s", self.cpu_s)) if v}
        return {k: v for k, v in (("budgets", budgets), ("sandbox", sandbox)) if v}


class EvalConfig(_Strict):
    """``stamina-gym eval``: N independent runs of each agent on one env."""

    env: str
    """Gymnasium env id, e.g. ``StaminaTodo-v2``."""

    agents: tuple[AgentSpec, ...] = Field(min_length=1)
    runs: int = Field(3, ge=1)
    """Independent runs per agent, each from a clean workspace and a fresh sandbox."""

    seeds: tuple[int, ...] = ()
    """One seed per run, fixed before the first run (default 0..runs-1)."""

    turns: int | None = Field(None, ge=1)
    """Play only the first N turns of the task."""

    budgets: EvalBudgets = EvalBudgets()

    max_reruns: int = Field(2, ge=0)
    """Reruns of a run whose sandbox broke (an invalid sample, never the agent's zero)."""

    @model_validator(mode="after")
    def _seeds_and_labels(self) -> "EvalConfig":
        if not self.seeds:
            object.__setattr__(self, "seeds", tuple(range(self.runs)))
        if len(self.seeds) != self.runs:
            raise ValueError(f"--seeds gives {len(self.seeds)} seed(s) for --runs {self.runs}; give one per run")
        names = [a.label for a in self.agents]
        if len(set(names)) != len(names):
            raise ValueError(f"an agent is named twice: {names}")
        return self

    def env_overrides(self) -> dict[str, Any]:
        overrides = self.budgets.env_overrides()
        if self.turns:
            overrides["max_turns"] = self.turns
        return overrides


def canonical(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)


def digest(data: Any) -> str:
    return hashlib.sha256(canonical(data).encode()).hexdigest()


def tree_digest(root: Path) -> str:
    """sha256 over every file's relative path and bytes below ``root`` (caches skipped)."""
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def prompt_templates_digest() -> str:
    """Digest of the prompt templates the env and the built-in agents render."""
    folder = resources.files("stamina_gym").joinpath("prompts")
    return digest({item.name: item.read_text(encoding="utf-8") for item in sorted(folder.iterdir(), key=lambda i: i.name)
                   if item.name.endswith(".txt")})  # fmt: skip


def frozen_rules(config: dict[str, Any], env_config: dict[str, Any], task: dict[str, Any], version: str) -> dict[str, Any]:
    """Everything whose change would change a score, in one dict; its digest is the config hash."""
    return {"eval": config, "env": env_config, "task": task, "stamina_gym": version, "prompts": prompt_templates_digest()}


def explain_difference(old: dict[str, Any], new: dict[str, Any], prefix: str = "") -> list[str]:
    """Dotted keys whose values differ between two frozen-rules dicts."""
    keys = sorted(set(old) | set(new))
    out: list[str] = []
    for key in keys:
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out += explain_difference(a, b, f"{prefix}{key}.")
        elif canonical(a) != canonical(b):
            out.append(f"{prefix}{key}: {canonical(a)[:80]} -> {canonical(b)[:80]}")
    return out


def parse_agent_args(agents: list[str], pairs: list[str]) -> tuple[AgentSpec, ...]:
    """``--agent-arg NAME:KEY=VALUE`` (or ``KEY=VALUE`` when one agent is given)."""
    args: dict[str, dict[str, str]] = {name: {} for name in agents}
    for pair in pairs:
        target, colon, rest = pair.partition(":")
        if not colon or "=" in target:
            if len(agents) != 1:
                raise ConfigError(f"--agent-arg {pair!r}: with several agents write NAME:KEY=VALUE")
            target, rest = agents[0], pair
        if target not in args:
            raise ConfigError(f"--agent-arg {pair!r}: {target!r} is not among the agents {agents}")
        key, eq, value = rest.partition("=")
        if not eq or not key:
            raise ConfigError(f"--agent-arg expects [NAME:]KEY=VALUE, got {pair!r}")
        args[target][key] = value
    return tuple(AgentSpec(name=name, args=args[name]) for name in agents)

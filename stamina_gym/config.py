"""Typed configuration of an environment: the data in ``envs/<EnvId>.yaml``.

Every field has a docstring; unknown keys are rejected so that a typo in an env spec is
an error that names the key, not a silently ignored setting.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from stamina_gym.errors import ConfigError


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class RewardConfig(_Strict):
    """Weights of the reward terms paid at ``submit`` and per step (see ``StaminaEnv``)."""

    test_pass: float = 1.0
    """Weight of the fraction of this turn's hidden tests that pass (0..1): the main signal."""

    turn_bonus: float = 0.5
    """Paid once when every hidden test of the turn passes, so a full solution beats a
    partial one by more than its share of tests."""

    regression: float = 1.0
    """Weight of the fraction of earlier turns' tests (not retired) that passed at the
    previous submit and fail now: breaking old work costs as much as failing new work."""

    step_cost: float = 0.001
    """Charged on every step, submit included: a gentle push toward short turns."""

    invalid_action: float = 0.01
    """Extra charge for an action that cannot be parsed or that a tool refuses."""


class Budgets(_Strict):
    """Limits after which the episode is truncated (``truncated=True``)."""

    max_steps_per_turn: int = Field(100, ge=1)
    """Tool calls allowed within one turn, submit included."""

    max_episode_steps: int = Field(10_000, ge=1)
    """Tool calls allowed in the whole episode; enforced by Gymnasium's ``TimeLimit``."""

    wall_clock_s: float = Field(8 * 3600, gt=0)
    """Wall-clock seconds for the whole episode, measured from ``reset``."""


class ObservationConfig(_Strict):
    """What the agent sees."""

    repo: Literal["tree", "full", "diff"] = "tree"
    """``tree``: file paths with line counts; ``full``: the text of every file;
    ``diff``: the unified diff of the workspace since the turn began."""

    feedback: Literal["none", "summary"] = "summary"
    """After a submit, ``summary`` puts the grade's counts and failure class in ``output``
    (never test names or code); ``none`` gives no feedback at all."""

    max_chars: int = Field(200_000, ge=1000)
    """Length limit of each text field; longer text is cut with a marker."""


class SandboxConfig(_Strict):
    """Where the agent's commands and the hidden tests run."""

    kind: Literal["local", "docker"] = "local"
    """Backend: ``local`` (bubblewrap + rlimits) or ``docker`` (one locked-down container
    per env for the agent's commands, one more for grading; see ``stamina_gym.sandbox.docker``)."""

    isolation: Literal["auto", "bwrap", "rlimits"] = "auto"
    """``bwrap`` requires bubblewrap; ``rlimits`` runs without a mount/network namespace
    (loudly warned: the filesystem and the network are then not isolated); ``auto``
    takes bubblewrap when it is installed and works."""

    timeout_s: float = Field(60.0, gt=0)
    """Wall-clock limit of one command; the whole process tree is killed after it."""

    grading_timeout_s: float = Field(300.0, gt=0)
    """Wall-clock limit of one hidden-test run at submit."""

    memory_mb: int = Field(2048, ge=64)
    """Address-space limit (RLIMIT_AS) of every process the agent starts."""

    cpu_s: int = Field(120, ge=1)
    """CPU-time limit (RLIMIT_CPU) of every process the agent starts."""

    file_size_mb: int = Field(64, ge=1)
    """Largest file a process may write (RLIMIT_FSIZE)."""

    max_processes: int = Field(128, ge=8)
    """Processes the sandbox user may have at once (RLIMIT_NPROC): stops fork bombs."""

    max_output_chars: int = Field(20_000, ge=100)
    """Output of a command shown to the agent; the middle of longer output is cut."""

    user: int = 65534
    """Unprivileged uid (and gid) that runs the agent's code when the env runs as root."""

    docker_image: str | None = None
    """docker: the image to run; by default the tag that ``stamina-gym docker-build``
    gives the recipe in ``stamina_gym/sandbox/image.py``."""

    cpus: float = Field(1.0, gt=0)
    """docker: CPUs the container may use at once (its CPU quota)."""

    tmp_mb: int = Field(256, ge=16)
    """docker: size of the in-memory ``/tmp`` (and of each grading tree); counted in the
    container's memory limit on top of ``memory_mb``."""

    @model_validator(mode="before")
    @classmethod
    def _kind_shorthand(cls, data: Any) -> Any:
        """``sandbox: docker`` is short for ``sandbox: {kind: docker}``."""
        return {"kind": data} if isinstance(data, str) else data


class EnvConfig(_Strict):
    """One environment: a task plus budgets, reward weights, observation and sandbox."""

    id: str
    """The Gymnasium id, for example ``StaminaTodo-v0``."""

    task: str
    """Task id: a folder under ``tasks/`` or under a directory named in STAMINA_GYM_TASKS."""

    max_turns: int | None = Field(None, ge=1)
    """Play only the first N turns of the task (all when unset)."""

    budgets: Budgets = Budgets()
    reward: RewardConfig = RewardConfig()
    observation: ObservationConfig = ObservationConfig()
    sandbox: SandboxConfig = SandboxConfig()

    def with_overrides(self, overrides: dict[str, Any]) -> "EnvConfig":
        """A copy with ``overrides`` merged in (nested dicts merge key by key)."""
        if isinstance(overrides.get("sandbox"), str):
            overrides = {**overrides, "sandbox": {"kind": overrides["sandbox"]}}
        merged = _deep_merge(self.model_dump(), overrides)
        return _validate(EnvConfig, merged, "gym.make(...) keyword arguments")


def _deep_merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, BaseModel):
            value = value.model_dump()
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _validate(model: type[BaseModel], data: Any, where: str) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{where}: {format_validation_error(exc)}") from None


def format_validation_error(exc: ValidationError) -> str:
    """One line per problem: ``budgets.max_steps_per_turn: Input should be >= 1``."""
    lines = []
    for err in exc.errors():
        loc = ".".join(str(part) for part in err["loc"]) or "(top level)"
        msg = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
        lines.append(f"{loc}: {msg}")
    return "; ".join(lines)


def load_yaml(path: Path) -> Any:
    """Parse a YAML file, naming the file in any error."""
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: {exc}") from None


def load_env_config(path: Path) -> EnvConfig:
    """Read and validate one ``envs/<EnvId>.yaml``."""
    return _validate(EnvConfig, load_yaml(path), str(path))

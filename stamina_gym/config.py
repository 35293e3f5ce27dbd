"""Typed configuration of an environment: the data in ``envs/<EnvId>.yaml``.

Every field has a docstring; unknown keys are rejected so that a typo in an env spec is
an error that names the key, not a silently ignored setting.
"""

from __future__ import annotations

import os

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, model_validator

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

    quality: float = 1.0
    """Weight of the change of the quality score (0..1, see ``QualityConfig``) over the
    turn: a turn that takes the code from 0.80 to 0.75 pays ``-0.05 * quality``."""

    rule_violation: float = 0.1
    """Charged per consistency rule in force that the submitted code breaks (a rule
    counts once however many lines break it)."""

    out_of_scope: float = 0.05
    """Strict mode only: charged per file changed outside the paths the turn concerns."""

    clarification: float = 0.3
    """Weight of the clarification score C (0..1) on turns with a hidden spec: asking the
    key questions before coding pays on the turn's submit."""

    planning: float = 0.2
    """Weight of the planning score P (0..1) on turns with key decisions."""

    generation: float = 0.0
    """Weight of the generation score G (0..1), paid on every turn. 0 by default because
    ``test_pass`` already pays the hidden-test pass rate that dominates G; raise it to
    pay code quality and plan adherence too."""

    tamper: float = Field(1.0, ge=0)
    """Charged beyond the worst honest outcome when a submit is proven to have forged its
    test outcomes (failure class ``violation``). Such a submit pays ``-(test_pass +
    turn_bonus + regression + quality + rule_violation x rules in force + tamper)`` plus
    its scope term: below what the same turn pays when no test passes, every earlier test
    breaks, the quality score falls from 1 to 0 and every rule breaks. So forging never
    pays, not even to an agent that is failing anyway."""


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

    warm_grading: bool = True
    """Grade through a warm runner: one harness per env stays alive in the sandbox with
    pytest imported and forks a fresh child per submit, instead of a new interpreter per
    submit (``stamina_gym.grading.harness``). Between submits every other process of the
    sandbox user is killed and its scratch folders emptied. Needs bubblewrap or docker;
    without them grading starts a new harness each time."""

    grading_workers: int | None = Field(None, ge=1)
    """pytest processes that share one hidden-test run (the turns are split between them).
    None: one per CPU the sandbox may use (local: the machine's, at most 4; docker:
    ``cpus``). Set 1 when many envs already share the machine (vector envs, rollouts)."""

    memory_mb: int = Field(2048, ge=64)
    """Address-space limit (RLIMIT_AS) of every process the agent starts."""

    cpu_s: int = Field(120, ge=1)
    """CPU-time limit (RLIMIT_CPU) of every process the agent starts."""

    file_size_mb: int = Field(64, ge=1)
    """Largest file a process may write (RLIMIT_FSIZE)."""

    max_processes: int = Field(128, ge=8)
    """Processes the sandbox user may have at once (RLIMIT_NPROC): stops fork bombs."""

    disk_mb: int = Field(2048, ge=16)
    """Disk the agent's code may fill on the host while one command or test run runs (the
    workspace is a host folder; RLIMIT_FSIZE bounds only one file): past it the run is
    killed, a resource failure (``stamina_gym.sandbox.disk``)."""

    disk_files: int = Field(200_000, ge=100)
    """Files (inodes) it may create on the host meanwhile, likewise."""

    max_output_chars: int = Field(20_000, ge=100)
    """Output of a command shown to the agent; the middle of longer output is cut."""

    user: int = Field(200_000, ge=1)
    """First uid (and gid) of the unprivileged users that run the agent's code when the env
    runs as root. Each sandbox leases one uid of ``user .. user + users - 1`` for its life
    (``stamina_gym.sandbox.users``), so that RLIMIT_NPROC, which counts per uid across the
    machine, never lets one sandbox's processes starve another's."""

    users: int = Field(1024, ge=1)
    """How many uids the sandboxes of this machine may lease at once (one each)."""

    docker_image: str | None = None
    """docker: the image to run; by default the tag that ``stamina-gym docker-build``
    gives the recipe of ``docker_debian`` in ``stamina_gym/sandbox/image.py``."""

    docker_debian: Literal["bookworm", "trixie"] = "bookworm"
    """docker: the Debian release of the default image, which decides the sandbox's
    Python (bookworm: 3.11, trixie: 3.13); built with ``stamina-gym docker-build --debian``."""

    cpus: float = Field(1.0, gt=0)
    """docker: CPUs the container may use at once (its CPU quota)."""

    tmp_mb: int = Field(256, ge=16)
    """Size of the sandbox's in-memory ``/tmp`` on both backends (docker: of each grading
    tree too, counted in the container's memory limit on top of ``memory_mb``)."""

    def workers(self) -> int:
        """The number of pytest processes of one hidden-test run."""
        if self.grading_workers is not None:
            return self.grading_workers
        if self.kind == "docker":
            return max(1, int(self.cpus))
        return max(1, min(os.cpu_count() or 1, 4))

    @model_validator(mode="before")
    @classmethod
    def _kind_shorthand(cls, data: Any) -> Any:
        """``sandbox: docker`` is short for ``sandbox: {kind: docker}``."""
        return {"kind": data} if isinstance(data, str) else data


class QualityWeights(_Strict):
    """Weights of the quality components in the quality score (normalised by their sum)."""

    lint: float = Field(0.25, ge=0)
    """pylint's score / 10."""
    complexity: float = Field(0.25, ge=0)
    """1 - mean excess cyclomatic complexity over 5 (radon), per function."""
    maintainability: float = Field(0.25, ge=0)
    """radon's maintainability index / 100 per function, weighted by logical lines."""
    security: float = Field(0.25, ge=0)
    """1 / (1 + bandit findings weighted by severity and confidence, per 1000 statements
    past the first 1000)."""


class RegressionConfig(_Strict):
    """Which of the earlier turns' tests a submit runs again (the regression set).

    Rerunning all of them at every submit makes an episode's grading grow with the square
    of its length. With ``budget_ms`` (or ``sample``) set, a submit runs its own turn's
    tests and a part of the regression tests: whole test files drawn at random, from a
    stream of the episode seed that the agent never sees. Every ``full_every``-th turn and
    the last run them all. A test's last outcome is remembered, so a test broken unseen is
    counted as newly broken when it is next drawn or at the next full run, and the
    regression term stays the fraction of the tests run that broke: a sampled estimate of
    the full fraction."""

    budget_ms: float | None = Field(None, gt=0)
    """Draw files while their tests' stored costs (the task's ``costs.json``, see
    ``stamina_gym.costs``) fit in this many milliseconds: a submit's cost stays bounded
    whatever the draw, and a replay draws the same files on any machine. A file that alone
    costs more is rerun at full runs only. Needs the task's ``costs.json``."""

    sample: int | None = Field(None, ge=1)
    """Draw files until they hold this many tests (at least; files are drawn whole),
    whatever they cost. Null with ``budget_ms`` null: all of them at every submit."""

    full_every: int = Field(10, ge=1)
    """Every k-th turn (1-based), and the task's last, reruns the whole regression set;
    not the first turn of an episode that starts later (unless ``full_at_start``)."""

    full_at_start: bool = False
    """The first submit of an episode that starts at a later turn reruns the whole
    regression set too when its turn is a full one (by default it draws, as the turn
    after it would)."""

    @model_validator(mode="after")
    def _one_rule(self) -> "RegressionConfig":
        if self.budget_ms is not None and self.sample is not None:
            raise ValueError("set one of regression.budget_ms and regression.sample, not both")
        return self


class QualityConfig(_Strict):
    """Code-quality measurement at submit (``stamina_gym.quality``)."""

    enabled: bool = True
    """Measure code quality at every submit (consistency rules, memory probes and scope
    are checked either way)."""

    exclude: tuple[str, ...] = ("tests/**", "**/tests/**", "**/test_*.py", "**/*_test.py", "**/conftest.py")
    """Files left out of the measurement (glob patterns): by default the agent's own
    tests, so the score is the product's."""

    weights: QualityWeights = QualityWeights()

    pylint_every: int = Field(1, ge=1)
    """Run pylint every k-th turn (and always on the last); in between its score is
    carried from the last turn it ran, so its change is paid when it runs next."""

    max_file_kb: int = Field(256, ge=1)
    """Python files larger than this are not analysed (reported as skipped)."""

    analysis_budget_s: float = Field(10.0, gt=0)
    """Seconds the analysers (radon, bandit, pylint) may spend on one file. They run in a
    worker process that is killed at the deadline; a file past it, like one too large to
    analyse, counts as the worst possible file and is named in the grade."""

    review_budget_s: float = Field(120.0, gt=0)
    """Seconds all the analyses of one submit's review may take together (each file still
    within ``analysis_budget_s``). Files not analysed by then count as the worst possible
    file and are named in the grade: a tree of many slow files bounds the submit, not the
    other way round. The reference's review has no such bound."""

    cache_dir: str | None = None
    """Folder for per-file analysis results shared by every process on the machine;
    unset: an in-memory cache shared by the envs of one process."""

    reference_cache_dir: str | None = None
    """Folder keeping the analysis of the reference solution's files, so that its quality
    at each turn is measured once per machine, not once per process (``stamina-gym
    validate --quality`` fills it ahead); unset: ``STAMINA_GYM_QUALITY_CACHE``, else
    ``~/.cache/stamina-gym/reference-quality``; ``""``: not kept."""

class ScoreConfig(_Strict):
    """Weights of the dialogue scores reported in ``info["scores"]`` at every submit. A part
    that is not measured on a turn (no hidden spec, no key decisions, no quality signal)
    drops out and the remaining weights are scaled to sum to 1."""

    coverage: float = Field(0.6, ge=0)
    """C: share of the hidden spec's key points asked about before the first code change."""

    relevance: float = Field(0.4, ge=0)
    """C: share of questions that touched a key point not asked about before (0 when no
    question was asked): asking many vague questions costs."""

    tests: float = Field(0.7, ge=0)
    """G: share of this turn's hidden tests passing."""

    quality: float = Field(0.2, ge=0)
    """G: code quality in 0..1 (``grade["quality"]["score"]``) times the pass rate, so code
    that does not work, or was never written, earns no quality credit."""

    adherence: float = Field(0.1, ge=0)
    """G: share of the plan's decisions that the code follows (turns with key decisions)."""

    clarification: float = Field(0.3, ge=0)
    """Composite: weight of C."""

    planning: float = Field(0.2, ge=0)
    """Composite: weight of P."""

    generation: float = Field(0.5, ge=0)
    """Composite: weight of G."""


class LLMUserConfig(_Strict):
    """The LLM-played user (``user.kind: llm``): any OpenAI-compatible chat endpoint."""

    base_url: str | None = None
    """Endpoint, e.g. ``http://127.0.0.1:8000/v1``; else ``STAMINA_GYM_USER_BASE_URL``,
    else the ``openai`` client's own default (``OPENAI_BASE_URL``)."""

    model: str | None = None
    """Model name; else ``STAMINA_GYM_USER_MODEL``. Required for the LLM user."""

    api_key: SecretStr | None = None
    """Key; else ``STAMINA_GYM_USER_API_KEY``, else ``OPENAI_API_KEY``, else a placeholder
    (local servers take any key). Never written to records (shown as ``**********``)."""

    seed: int = 0
    """Sent to the endpoint and part of the cache key: another seed, another reply."""

    temperature: float = Field(0.0, ge=0)
    max_tokens: int = Field(300, ge=1)
    timeout_s: float = Field(60.0, gt=0)

    cache_dir: str | None = None
    """Replies are stored here keyed by (model, conversation, seed, temperature), so a
    rerun replays without the endpoint; else ``STAMINA_GYM_USER_CACHE``, else
    ``~/.cache/stamina-gym/user``."""


class UserConfig(_Strict):
    """The simulated user who answers ``ask`` and reads ``plan`` (``stamina_gym.user``)."""

    kind: Literal["rule", "llm", "human"] = "rule"
    """``rule``: answers from the hidden spec, deterministic; ``llm``: an LLM told the
    hidden spec plays the user; ``human``: a person answers in the terminal."""

    match_threshold: float = Field(0.5, gt=0, le=1)
    """Normalised BM25 similarity from which a question touches a key point (keywords
    match regardless): see ``stamina_gym.user.match``."""

    max_points_per_question: int = Field(2, ge=1)
    """A question touches at most this many key points (the best matches): a question
    that lists every topic at once does not get the whole spec."""

    max_question_chars: int = Field(500, ge=20)
    """Longer questions are refused: ask one thing at a time."""

    max_questions: int = Field(20, ge=0)
    """Questions per turn the user answers; later ones get no answer and count as irrelevant."""

    neutral_answer: str = "No preference there; use your judgement."
    """The answer to a question that touches no key point."""

    llm: LLMUserConfig = LLMUserConfig()


class EnvConfig(_Strict):
    """One environment: a task plus budgets, reward weights, observation and sandbox."""

    id: str
    """The Gymnasium id, for example ``StaminaTodo-v2``."""

    task: str
    """Task id: a folder under ``tasks/`` or under a directory named in STAMINA_GYM_TASKS."""

    max_turns: int | None = Field(None, ge=1)
    """At most how many turns an episode plays from the turn it starts at (to the task's
    last when unset); a reset's ``num_turns`` option asks for an exact number instead."""

    grading_cache: str | None = None
    """Folder of the on-disk grading cache (``stamina_gym.grading.cache``), or null for
    none. Envs on one machine may share it: a state graded once is not graded again.
    It must lie outside every workspace; the sandbox hides it from the agent's code."""

    budgets: Budgets = Budgets()
    reward: RewardConfig = RewardConfig()
    observation: ObservationConfig = ObservationConfig()
    sandbox: SandboxConfig = SandboxConfig()
    quality: QualityConfig = QualityConfig()
    regression: RegressionConfig = RegressionConfig()

    mode: Literal["free", "strict"] = "free"
    """``free``: the agent may refactor anywhere. ``strict``: edits outside the paths a
    turn declares are reported and cost ``reward.out_of_scope`` each."""

    action_format: Literal["json", "tolerant"] = "json"
    """How a text action is read. ``json``: one JSON object, nothing else. ``tolerant``:
    a tool call as chat models write it, in prose, a fenced block, ``<tool_call>`` tags,
    after ``<think>`` (``stamina_gym.action_text``). Dict actions are taken as they are."""

    user: UserConfig = UserConfig()
    scores: ScoreConfig = ScoreConfig()

    deferred_grading: bool = False
    """Grade each submit off the policy's critical path: ``submit`` returns the next turn's
    observation at once, paying the step cost alone, and the submit's grade and reward
    arrive at a fixed later step, the next submit's or the episode's last
    (``info["grades"]``), never "when grading finished": a seed still replays the episode."""

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

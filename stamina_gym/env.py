"""The StaminaEnv MDP: reset, step and termination; the reward of a submit is
``stamina_gym.reward`` (every term, its weight and the voiding rule)."""

from __future__ import annotations

import functools
import re
import string
import tempfile
import threading
import time
import warnings
import weakref
from concurrent.futures import Future, ThreadPoolExecutor
from importlib import resources
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from stamina_gym import costs, interpreter, safetree
from stamina_gym.config import EnvConfig, load_env_config
from stamina_gym.errors import ConfigError, SandboxError, TaskError, ToolError
from stamina_gym.grading.cache import GradingCache
from stamina_gym.grading.grade import grade_run
from stamina_gym.grading.hidden import HiddenRun
from stamina_gym.hidden_runner import copy_source, run_hidden_tests, sealing, stage_tests
from stamina_gym.packaged import env_spec_files
from stamina_gym.quality.reference import reference_store
from stamina_gym.quality.review import Reviewer
from stamina_gym.reproduce import run_repro
from stamina_gym.reward import Judged, submit_terms
from stamina_gym.sandbox import SANDBOXES, Sandbox
from stamina_gym.submits import GRADED_KEYS
from stamina_gym.task import load_task
from stamina_gym.text_space import UnicodeText, as_text
from stamina_gym.tools import MAX_ACTION_CHARS, SEARCH_TIMEOUT_S, Tool, ToolContext, describe_tools, list_files, parse_action
from stamina_gym.user import User, UserUnavailable, make_user
from stamina_gym.user.dialogue import Dialogue
from stamina_gym.user.templates import pick_values, render_prompt
from stamina_gym.workspace import Workspace

interpreter.install()  # CPython 3.11's AST race: stamina_gym.interpreter

#: Paths whose change is not a code change (caches the agent's commands leave behind).
_NOT_CODE = re.compile(r"(^|/)(__pycache__|\.pytest_cache|\.mypy_cache|\.ruff_cache)/|\.py[co]$")

#: What a step may take beyond the timeouts it runs under: walking, copying, staging and
#: committing a tree up to the caps on a loaded machine (``StaminaEnv.step_bound_s``).
STEP_GRACE_S = 30.0

#: What ``sample()`` of the text spaces draws from; observations and actions hold any text
#: (``stamina_gym.text_space``).
CHARSET = string.printable


def _discard_folder(job: Future) -> None:
    try:
        job.result().discard()
    except Exception:  # noqa: BLE001 - a folder that failed to be made leaves nothing to discard
        pass


#: The options ``reset`` takes.
RESET_OPTIONS = ("start_turn", "num_turns", "windows")


def _window(options: dict | None, turns: int, default: int | None, rng: np.random.Generator) -> tuple[int, int]:
    """The window ``reset``'s ``options`` give: its first turn (1-based) and how many turns
    it plays. ``start_turn`` (a turn, or a list to draw one from; 1 without it) and
    ``num_turns`` (without it: up to ``default``, the ``max_turns`` cap, and the last
    turn), or ``windows``: ``[start, count]`` pairs to draw one from. A window asked for
    that runs past the last turn is refused with its bounds, never shortened; ``rng``
    draws only when there is a choice."""
    options = {} if options is None else options
    if not isinstance(options, dict):
        raise TypeError(f"reset options must be a dict, got {type(options).__name__}")
    unknown = sorted(set(options) - set(RESET_OPTIONS))
    if unknown:
        raise ValueError(f"unknown reset option(s) {', '.join(map(repr, unknown))}; the env takes "
                         f"{', '.join(map(repr, RESET_OPTIONS))}")  # fmt: skip
    if "windows" in options:
        if {"start_turn", "num_turns"} & set(options):
            raise ValueError("give windows, or start_turn and num_turns, not both")
        windows = options["windows"]
        if not isinstance(windows, (list, tuple)) or not windows:
            raise ValueError(f"windows must be a non-empty list of [start_turn, num_turns] pairs, got {windows!r}")
        pairs = []
        for pair in windows:
            if not isinstance(pair, (list, tuple)) or len(pair) != 2:
                raise ValueError(f"each window is a [start_turn, num_turns] pair, got {pair!r}")
            pairs.append((_turn_number("start_turn", pair[0], turns), _count(pair[1])))
    else:
        start = options.get("start_turn", 1)
        starts = list(start) if isinstance(start, (list, tuple)) else [start]
        if not starts:
            raise ValueError("start_turn is an empty list: give a turn number, or turns to draw one from")
        count = None if options.get("num_turns") is None else _count(options["num_turns"])
        pairs = []
        for first in starts:
            first = _turn_number("start_turn", first, turns)
            pairs.append((first, count if count is not None else min(default or turns, turns - first + 1)))
    for first, count in pairs:
        if first + count - 1 > turns:
            raise ValueError(f"the window of {count} turns from turn {first} ends at turn {first + count - 1}, "
                             f"past the last turn, {turns}: it may start at turn {max(turns - count + 1, 1)} at the latest")  # fmt: skip
    return pairs[int(rng.integers(len(pairs)))] if len(pairs) > 1 else pairs[0]


def _turn_number(name: str, value: Any, turns: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 1 <= int(value) <= turns:
        raise ValueError(f"{name} must be a turn number from 1 to {turns} (or a list of them), got {value!r}")
    return int(value)


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or int(value) < 1:
        raise ValueError(f"num_turns must be a number of turns, at least 1, got {value!r}")
    return int(value)


def to_text(text: str, limit: int) -> str:
    """Fit ``text`` to a Text space: every character as it is (lone surrogates, which UTF-8
    cannot carry, written as ``\\udcXX``), cut past ``limit``."""
    text = as_text(text)
    if len(text) > limit:
        marker = f"\n[... cut: {len(text) - limit} more characters ...]"
        text = text[: limit - len(marker)] + marker
    return text


@functools.lru_cache(maxsize=1)
def _intro() -> str:
    """The first observation's instructions, read once per process, not at every reset."""
    template = resources.files("stamina_gym").joinpath("prompts/intro.txt").read_text(encoding="utf-8")
    return string.Template(template).substitute(tools=describe_tools())


class StaminaEnv(gym.Env[dict, str]):
    """A coding agent keeps one repository alive through a sequence of user requests.

    ## Action Space
    ``Text``: one JSON tool call, ``{"tool": NAME, ...arguments}`` (a dict is accepted
    too). Tools: list_files, read_file, search, find_references, write_file, apply_patch,
    delete_file, run, run_tests, ask, plan, summarize, submit (``stamina_gym.tools.TOOLS``
    documents each). ``ask`` puts a question to the simulated user and returns the answer;
    ``plan`` submits an ordered plan (steps with description, details, depends_on);
    ``summarize`` states the clarified requirements (key -> value) and closes the
    clarification phase.
    An action that cannot be parsed or that a tool refuses is answered in ``output``
    with what was wrong, never with an exception; so is one past ``MAX_ACTION_CHARS``
    (500,000 characters, the action space's ``max_length``; a dict counts its strings).

    ## Observation Space
    ``Dict``: ``prompt`` (Text: the user's request of the current turn), ``output``
    (Text: the result of the last action; after a submit, the grade summary when
    ``observation.feedback == "summary"``), ``repo`` (Text: the repository as a file tree
    with line counts, its full text, or the diff since the turn began, by
    ``observation.repo``), ``phase`` (Text: the project phase) and ``turn`` (Discrete,
    from 1: the current turn's number, as ``info["turn"]``, the records and the reset
    options count it; after the last submit, the last turn's). Text is as the files and commands have it, any Unicode
    character included (``stamina_gym.text_space.UnicodeText``; ``sample()`` draws from
    ``CHARSET``); only a lone surrogate, which UTF-8 cannot carry, reads ``\\udcXX``.

    ## Rewards
    Every step costs ``step_cost`` (0.001); a refused action costs ``invalid_action``
    (0.01) more. At ``submit`` the turn's hidden tests and the earlier turns' tests run in
    the sandbox, the tree is reviewed, the dialogue is scored, and the turn pays the terms
    of ``stamina_gym.reward`` (its docstring lists every term, its weight and the voiding
    rule; ``info["reward_terms"]`` gives each)::

        test_pass (1.0) * fraction of this turn's tests passing
        + turn_bonus (0.5) if every one passes
        - regression (1.0) * fraction of the earlier tests run that passed when last run and fail now
        + quality (1.0) * change over the turn of the code-quality score relative to the
                          reference's at the same turn (a gain only if every test passes)
        - rule_violation (0.1) * consistency rules in force that the code breaks
        - out_of_scope (0.05) * files changed outside the turn's paths (strict mode only)
        + clarification (0.3) * C, planning (0.2) * P, generation (0.0) * G

    The earlier tests run are all of those still in force, or with ``regression.budget_ms``
    (or ``sample``) a random sample of them, with all at every ``regression.full_every``-th turn and the
    last (``RegressionConfig``).

    The dialogue's scores (``stamina_gym.user``): C = 0.6 x key points asked before the
    first code change + 0.4 x share of relevant questions, P = F1 of the key decisions the
    plan settles, G = 0.7 x test pass rate + 0.2 x quality x pass rate + 0.1 x plan
    adherence (parts not measured drop out and the rest is rescaled; ``ScoreConfig``). ``generation`` is 0 by default because
    ``test_pass`` already pays the pass rate. ``info["scores"]`` holds C, P, G and the
    composite 0.3 C + 0.2 P + 0.5 G; ``info["dialogue"]`` the questions, matched key
    points, plan verdicts and adherence.

    The quality score (0..1) weighs pylint's score, radon's complexity and
    maintainability index and bandit's findings on the product code
    (``stamina_gym.quality.measure`` defines each; ``QualityConfig`` weighs them). Rules
    are the task's own (``stamina_gym.rules``) and bind from the turn that makes
    the decision. A submit proven to have forged its outcomes (``violation``: a must-fail
    canary passed, the harness's messages were forged, its audit hook fired, pytest was
    rebound) pays ``-(test_pass + turn_bonus + regression + quality + rule_violation x
    rules in force + tamper (1.0))``, below every honest outcome of the turn; a run that
    stopped early counts every test as failed; a sandbox that broke before the agent's
    code ran pays 0 (the sample is void).
    Weights are ``RewardConfig`` in the env spec. ``info["grade"]`` says which tests
    passed, the failure class, the quality report (absolute values, deltas, worst
    offenders, churn per file), the rules in force and their violations (rule, file,
    line), memory-probe accuracy and the scope check with the mode that ran;
    ``info["reward_terms"]`` gives each term. With a grading
    cache (``grading_cache``), ``info["grading_cache"]`` says ``hit`` or ``miss``.

    ## Deferred Grading
    ``deferred_grading=True`` takes grading off the policy's critical path: a submit
    commits and copies the tree, returns the next turn's observation at once and pays its
    step cost alone; the submit is graded on a thread of its own (submits in turn order,
    the agent's commands running beside it in the sandbox). Its grade and reward arrive at
    a fixed later step, never "when grading finished", so a seed replays the episode: the
    next submit's step, or the episode's last step (the last submit's carries the last two
    grades; a truncating step carries what is still due). That step's reward adds the
    graded submits' rewards, ``info["grades"]`` lists them (each with ``turn``, ``grade``,
    ``reward_terms``, ``scores``, ``dialogue``, ``commit`` and ``reward``) and ``info``
    holds the last one's entries as a synchronous submit's; ``info["submitted"]`` marks the
    step that ended a turn (``stamina_gym.submits`` reads both modes alike). The rewards
    are the synchronous env's, in the same order. The next observation says the grade is
    coming instead of giving it; an evaluation refuses the option.

    ## Starting State
    The task's seed repository, laid from git, with the first request. ``reset(seed=...)``
    picks the paraphrase of every turn's prompt and the values of its template variables
    from ``self.np_random``. A prompt with variables is rendered when its turn begins,
    with names found in the agent's repository and the real output of the turn's
    reproduction script on the agent's code.

    Windows, a curriculum knob: ``reset(seed=..., options={"start_turn": k, "num_turns":
    n})`` plays turns ``k..k+n-1`` (a list of starts: the seed draws one; ``{"windows":
    [[k, n], ...]}``: the seed draws a window). Without ``num_turns`` the episode plays up
    to ``max_turns`` turns from its start, or to the last turn; a window asked for that
    runs past the last turn is refused with its bounds. A start later than turn 1 begins
    on the reference solution of turns ``1..k-1`` (their reference patches under the
    episode's params, one commit per turn as the oracle's submits leave them), with those
    turns' tests in force as regressions and their memory probes bound; its first submit
    draws its regression tests even on a full turn (``regression.full_at_start`` asks for
    the full set), and the episode's last submit (its window's) reruns them all, so a test
    broken unseen by the draws is counted within the window. The seed's draws
    (paraphrases, params, regression sample) are those of the episode from turn 1.
    ``env.window`` gives the episode's first and last turn.

    ## Step Time
    No step raises or hangs, whatever the work tree holds: every walk, copy and stage of
    the tree is iterative (any depth) and stops at the caps (``workspace.MAX_FILES``
    entries, ``MAX_BYTES`` bytes; past one, a tool says so in ``error:`` and a submit is a
    ``resource`` failure). A step of ``tool`` answers within ``step_bound_s(tool)``: the
    timeouts it runs under plus ``STEP_GRACE_S`` (30 s) for the env's own work, on a
    machine whose cores are not shared with other work (where they are, the env's own work
    stretches with their load). ``run`` and ``run_tests``: ``sandbox.timeout_s``; ``search``:
    ``tools.SEARCH_TIMEOUT_S`` (20 s); ``submit``: ``sandbox.grading_timeout_s`` plus
    ``quality.review_budget_s`` plus the longest reproduction script's timeout (the next
    turn's prompt runs it); ``ask`` with the LLM user: ``user.llm.timeout_s``; every
    other tool: the grace alone. With deferred grading every step may wait for the grade
    due at it: one more ``grading_timeout_s`` plus ``review_budget_s``.

    ## Episode End
    Terminated after the submit of the window's last turn. Truncated when a budget runs out: steps in
    a turn (``budgets.max_steps_per_turn``), the episode's wall clock
    (``budgets.wall_clock_s``), or the episode's steps (``max_episode_steps`` in the
    registration, enforced by ``TimeLimit``).

    ## Arguments
    ``gym.make("StaminaTodo-v2", **overrides)``: any field of ``EnvConfig`` can be
    overridden, nested ones as dicts: ``observation={"repo": "diff"}``,
    ``sandbox={"timeout_s": 10}``, ``max_turns=5``, ``mode="strict"``,
    ``quality={"pylint_every": 5}``, ``user={"kind": "llm"}``. Unknown keys are an error.

    ## Version History
    * v3 (StaminaClarify): turn 2's test that the password is not kept in plain text also
      checks that it logs in, so an object that keeps nothing no longer passes it.
    * v2: the turns the fairness audit scored 2 or more are mended (``tasks/<task>/audit``):
      earlier prompts state what later tests rely on, a few tests check only what was
      asked, the clarify prompts invite the questions their tests need.
    * v1: turns count from 1 everywhere (``obs["turn"]`` was 0-based); episode windows
      (``num_turns``, ``windows``), with ``max_turns`` counted from the episode's start
      (it capped the absolute turn number); a later start's first submit draws its
      regression tests.
    * v0: initial release (setup phase of StaminaTodo); the simulated user (ask, plan,
      summarize; C, P, G scores).
    """

    metadata = {"render_modes": ["ansi"]}

    def __init__(self, config: EnvConfig | str | Path | dict | None = None, render_mode: str | None = None, **overrides: Any):
        if isinstance(config, str) and config in env_spec_files():  # a shipped env, by its id
            config = load_env_config(env_spec_files()[config])
        elif isinstance(config, (str, Path)):
            config = load_env_config(Path(config))
        elif isinstance(config, dict):
            config = EnvConfig.model_validate(config)
        elif config is None:
            raise TypeError("StaminaEnv needs a config: an EnvConfig, a path to envs/<id>.yaml, or use gym.make")
        self.config: EnvConfig = config.with_overrides(overrides) if overrides else config
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}")
        self.render_mode = render_mode
        self.task = load_task(self.config.task)
        self.turns = self.task.turns
        if self.config.regression.budget_ms is not None:
            self._costs = costs.load(self.task)
            if self._costs is None:
                raise ConfigError(f"regression.budget_ms needs the task's {costs.FILE_NAME}, which {self.task.root} lacks: "
                                  f"measure it with `stamina-gym costs {self.task.meta.id} --write`")  # fmt: skip
        else:  # the costs only balance the grading shards: a stale file is no reason to fail
            try:
                self._costs = costs.load(self.task)
            except TaskError:
                self._costs = None
        limit = self.config.observation.max_chars
        text = UnicodeText(limit, charset=CHARSET)
        self.observation_space = spaces.Dict(
            {
                "prompt": text,
                "output": text,
                "repo": text,
                "phase": UnicodeText(64, charset=CHARSET),
                "turn": spaces.Discrete(len(self.turns), start=1),
            }
        )
        self.action_space = UnicodeText(MAX_ACTION_CHARS, charset=CHARSET)
        self._root: Path | None = None
        self._workspace: Workspace | None = None
        self._reference_commits: dict[tuple, list[str]] = {}
        """(repository generation, params) -> commits of the reference's turns laid so far."""
        self._sandbox: Sandbox | None = None
        self._reviewer: Reviewer | None = None
        self._stager = ThreadPoolExecutor(1, thread_name_prefix="grading-stage")
        self._staging: tuple[tuple, Future] | None = None
        """What the grading folder being made is for (turn index, its regression draw, the
        params), and the folder."""
        self._spare: tuple[tuple, Future] | None = None
        """The last grading folder staged and never used, as ``_staging``: a reset to the same
        start (the same turn, draw and params) takes it instead of making it again."""
        self._seed_view: str | None = None
        """The ``repo`` observation of the seed as a reset lays it (made at the first reset)."""
        self._cache = GradingCache(self.config.grading_cache) if self.config.grading_cache else None
        self._turn: int | None = None
        self._first, self._end = 0, len(self.turns) if self.config.max_turns is None else min(self.config.max_turns, len(self.turns))
        """The episode's window: its first turn's index (0-based) and the index past its last."""
        self._last_output = ""
        self._user: User | None = None
        self._dialogue: Dialogue | None = None
        self._grader = ThreadPoolExecutor(1, thread_name_prefix="deferred-grading")
        self._graded: list[Future] = []
        """Deferred submits being graded, in turn order (``deferred_grading``)."""

    # -- the MDP --------------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        _window(options, len(self.turns), self.config.max_turns, np.random.default_rng(0))  # bad options fail before anything changes
        super().reset(seed=seed)
        self._drain()
        workspace = self._ensure_workspace()
        seed_commit = workspace.reset()
        self._sandbox.prepare(workspace.path)
        self._variants = [int(self.np_random.integers(len(t.spec.prompts))) for t in self.turns]
        self._turn, self._turn_steps, self._turn_start = 0, 0, seed_commit
        self._passing: frozenset[str] = frozenset()
        self._started = time.monotonic()
        self._picked = [pick_values(t, lambda n: int(self.np_random.integers(n))) for t in self.turns]
        self._params = self.task.choose_params(lambda n: int(self.np_random.integers(n)))
        self._reviewer.reset(self._params)
        self._regression_seed = int(self.np_random.integers(2**63))  # drawn last: earlier draws keep their values
        start, count = _window(options, len(self.turns), self.config.max_turns, self.np_random)  # drawn after all the rest
        self._first, self._end = start - 1, start - 1 + count
        self._prompts: dict[int, str] = {}
        self._discard_staged()
        intro = _intro()
        if start > 1:  # the reference solution of the turns before, as the oracle would have left it
            self._lay_reference(start - 1)
            self._start_turn_at(start - 1, frozenset(self.task.regression_ids(start)), reference=True)
            intro += (f"\n\nThis episode starts at request {start}: the repository holds the reference solution "
                      f"of requests 1-{start - 1}.")  # fmt: skip
        else:
            self._begin_turn()
        observation = self._observe(intro, seed=start == 1)
        return observation, {"turn": start, "start_turn": start, "num_turns": count, "variants": list(self._variants),
                             "params": dict(self._params)}  # fmt: skip

    def step(self, action: str | dict) -> tuple[dict, float, bool, bool, dict]:
        if self._turn is None:
            raise RuntimeError("the episode is over (or never began): call reset()")
        self._turn_steps += 1
        reward = -self.config.reward.step_cost
        info: dict[str, Any] = {"turn": self._turn + 1}
        try:
            tool, args = parse_action(action, self.config.action_format)
            info["tool"] = tool.name
            if tool.fn is None:
                return self._submit(reward, info)
            output = tool.fn(self._tools, **args)
            info["ok"] = True
            self._watch_changes(tool)
        except ToolError as exc:
            output, info["ok"] = f"error: {exc}", False
            reward -= self.config.reward.invalid_action
        except SandboxError as exc:
            output, info["ok"], info["infrastructure_error"] = f"error: the sandbox failed: {exc}", False, str(exc)
        except UserUnavailable as exc:
            output, info["ok"], info["infrastructure_error"] = f"error: the user is unavailable: {exc}", False, str(exc)
        return self._finish_step(self._observe(output), reward, info)

    def step_bound_s(self, tool: str) -> float:
        """The longest a step of ``tool`` takes, in seconds (the docstring's "Step Time")."""
        sandbox = self.config.sandbox
        if tool in ("run", "run_tests"):
            own = sandbox.timeout_s
        elif tool == "search":
            own = SEARCH_TIMEOUT_S
        elif tool == "submit":
            repro = max((t.spec.repro.timeout_s for t in self.turns if t.spec.repro), default=0.0)
            own = sandbox.grading_timeout_s + self.config.quality.review_budget_s + repro
        elif tool == "ask" and self.config.user.kind == "llm":
            own = self.config.user.llm.timeout_s
        else:
            own = 0.0
        if self.config.deferred_grading:  # any step may wait for the grade of the submit before (the last submit: and its own)
            own += sandbox.grading_timeout_s + self.config.quality.review_budget_s
        return own + STEP_GRACE_S

    def _finish_step(self, observation: dict, reward: float, info: dict[str, Any]) -> tuple[dict, float, bool, bool, dict]:
        """Truncate when a budget is spent: steps in this turn, or the episode's wall clock."""
        budgets = self.config.budgets
        if self._turn_steps >= budgets.max_steps_per_turn:
            info["budget"] = "max_steps_per_turn"
        elif time.monotonic() - self._started > budgets.wall_clock_s:
            info["budget"] = "wall_clock_s"
        if "budget" in info:
            self._turn = None
            reward += self._deliver(info, wait_all=True)  # the episode ends here: so do its deferred grades
        return observation, reward, False, "budget" in info, info

    def _submit(self, reward: float, info: dict[str, Any]) -> tuple[dict, float, bool, bool, dict]:
        turn = self.turns[self._turn]
        workspace = self._workspace
        last = self._turn + 1 == self._end
        regression, staging = self._staged_for(self._turn)
        if not self.config.deferred_grading:
            graded = self._grade(turn, workspace.path, regression, staging, last, self._dialogue, workspace.numstat, workspace.commit)
            reward += graded["reward"]
            info.update(ok=True, **{key: graded[key] for key in GRADED_KEYS if key in graded})
            feedback = graded["feedback"]
        else:
            # What grading reads of this submit is taken now: the changes, the commit, a copy
            # of the tree; the agent goes on at once, and the grade arrives at the next submit.
            info["submitted"] = turn.index  # the turn ended here; its grade comes later
            changed = workspace.numstat(self._turn_start)
            commit = workspace.commit(f"turn {turn.index}", stage=False)
            snapshot = self._root / "scratch" / f"submitted-{turn.index}-{time.monotonic_ns()}"
            copy_source(workspace.path, snapshot)
            self._graded.append(self._grader.submit(self._grade_snapshot, turn, snapshot, regression, staging, last,
                                                    self._dialogue, changed, commit))  # fmt: skip
            reward += self._deliver(info, wait_all=last)
            feedback = "Submitted: it is graded while you work on; its grade comes with your next submit."
            if "grades" in info:
                feedback = " ".join([f"Turn {g['turn']}: {g['feedback']}" for g in info["grades"]] + [feedback])
            info["ok"] = True
        self._turn += 1
        if self._turn == self._end:
            last_text = "That was the last request." if self._end == len(self.turns) else "That was the episode's last request."
            observation = self._observe(f"{feedback} {last_text}", final=True)
            self._turn = None
            return observation, reward, True, False, info
        self._turn_steps, self._turn_start = 0, workspace.head()
        self._begin_turn()
        return self._finish_step(self._observe(feedback), reward, info)

    def _grade(self, turn, tree: Path, regression: tuple[str, ...], staging: Future, last: bool, dialogue: Dialogue,
               numstat, commit) -> dict[str, Any]:  # fmt: skip
        """Grade the submit of ``turn`` from ``tree``: its hidden tests in the sandbox while
        the tree is reviewed here, the grade, the dialogue's scores and the reward terms.
        ``numstat`` gives the turn's changes and ``commit`` records the submit (the work
        tree's methods, or what a deferred submit took of them). Returns the submit's
        ``info`` entries with its ``reward`` and ``feedback``."""
        workspace, sandbox = self._workspace, self._sandbox
        in_force = self.task.regression_ids(turn.index)
        # The hidden tests run in the sandbox (this process only waits for them) while the
        # tree is reviewed here: a submit costs the longer of the two, not their sum. The
        # review starts once the run is handed to the sandbox: both are Python on one
        # interpreter lock, and every millisecond of staging delays the run.
        started = threading.Event()

        def grade_in_sandbox() -> HiddenRun:
            run = run_hidden_tests if self._cache is None else functools.partial(self._cache.run, run_hidden_tests)
            try:
                return run(
                    source=tree,
                    task=self.task,
                    turns=self.turns[: turn.index],
                    sandbox=sandbox,
                    scratch=self._root / "scratch",
                    timeout=self.config.sandbox.grading_timeout_s,
                    params=self._params,
                    only={*turn.test_ids, *regression},
                    costs=self._costs,
                    staged=staging.result(),
                    started=started.set,
                )
            finally:
                started.set()

        with ThreadPoolExecutor(1, thread_name_prefix="grading") as pool:
            hidden_tests = pool.submit(grade_in_sandbox)
            started.wait()
            # numstat stages the tree, which nothing writes during a submit (grading runs on
            # a copy): the commit below records that index as it is.
            review = self._reviewer.review(turn, tree, changed=numstat(self._turn_start), last=last)
            hidden = hidden_tests.result()
        graded: dict[str, Any] = {"turn": turn.index}
        if hidden.cache:
            graded["grading_cache"] = hidden.cache
        grade = grade_run(
            turn=turn.index,
            turn_ids=turn.test_ids,
            regression_ids=regression,
            previously_passing=self._passing,
            outcomes=hidden.outcomes,
            run=hidden.run,
            canaries=hidden.canaries,
            report_problem=hidden.problem,
            evidence=hidden.evidence,
            complete=hidden.complete,
        )
        review = review.with_memory(turn, grade.turn_tests)
        if not grade.voids_reward:
            ran = {**grade.regression_tests, **grade.turn_tests}  # the others keep their last outcome
            self._passing = frozenset(self._passing - ran.keys()) | {t for t, s in ran.items() if s == "passed"}
        grade_info = {**grade.to_info(), "regression_in_force": len(in_force), **review.to_info(),
                      "sealing": sealing(self.task, turn, self.params)}  # fmt: skip
        python = {path: text for path, text in review.sources.items() if path.endswith(".py")}
        scores, record = dialogue.score(grade_info, python, self.config.scores)
        terms = submit_terms(self.config.reward, Judged(grade, review.to_info(), scores))
        graded.update(grade=grade_info, reward_terms=terms, scores=scores, dialogue=record,
                      commit=commit(f"turn {turn.index}", stage=False))  # fmt: skip
        feedback = "Submitted."
        if self.config.observation.feedback == "summary":
            feedback = " ".join(filter(None, [grade.summary(), review.summary()]))
            if turn.spec.spec or turn.spec.decisions:
                feedback += " Dialogue: " + ", ".join(f"{k} {v:.2f}" for k, v in scores.items() if v is not None) + "."
        graded.update(reward=sum(terms.values()), feedback=feedback)
        return graded

    def _grade_snapshot(self, turn, snapshot: Path, regression: tuple[str, ...], staging: Future, last: bool,
                        dialogue: Dialogue, changed: dict, commit: str) -> dict[str, Any]:  # fmt: skip
        """``_grade`` of a deferred submit, on the grading thread: from the copy of the
        tree the submit took, which goes once graded."""
        try:
            return self._grade(turn, snapshot, regression, staging, last, dialogue, lambda base: changed,
                               lambda message, stage: commit)  # fmt: skip
        finally:
            safetree.rmtree(snapshot)

    def _deliver(self, info: dict[str, Any], *, wait_all: bool) -> float:
        """Put the deferred grades due at this step in ``info`` and return their reward: the
        one before the latest submit's (its next submit has come), or, at the episode's end,
        all of them. ``info["grades"]`` lists each graded submit (``turn``, ``grade``,
        ``reward_terms``, ``reward``...), in turn order; the last one's entries are also
        ``info``'s own, as a synchronous submit's are."""
        due = self._graded if wait_all else self._graded[:-1]
        self._graded = [] if wait_all else self._graded[-1:]
        reward = 0.0
        for job in due:
            graded = job.result()
            info.setdefault("grades", []).append(graded)
            info.update({key: graded[key] for key in GRADED_KEYS if key in graded})
            reward += graded["reward"]
        return reward

    def settle(self) -> tuple[float, list[dict[str, Any]]]:
        """Under deferred grading, wait for the grades still due and return their summed
        reward and records (``info["grades"]``'s form): what a caller that ends an episode
        itself, before the env does (a step cap of its own), adds to the episode's last
        reward. ``(0.0, [])`` when nothing is due (always, graded synchronously)."""
        info: dict[str, Any] = {}
        reward = self._deliver(info, wait_all=True)
        return reward, info.get("grades", [])

    def _drain(self) -> None:
        """Wait for the deferred grades still under way and drop them (a reset, a restore,
        a close): the grading thread is the reviewer's and the sandbox's until they end."""
        for job in self._graded:
            try:
                job.result()
            except Exception:  # noqa: BLE001 - an episode left behind: its grade is dropped either way
                pass
        self._graded = []

    def _stage_turn(self, index: int) -> None:
        """Start making the grading folder of the submit of turn ``index`` (0-based) on the
        staging thread: its hidden tests, the regression tests it will draw and fresh
        canaries; everything but the agent's source, which the submit copies in. A folder
        staged for the same turn, draw and params and never used is taken as it is (nothing
        ran in it: its canaries are as unseen as new ones)."""
        self._discard_staged()
        turn = self.turns[index]
        regression = self._regression_to_run(turn.index, self.task.regression_ids(turn.index))
        key = (index, regression, tuple(sorted(self._params.items())))
        spare, self._spare = self._spare, None
        if spare is not None and spare[0] == key and not (spare[1].done() and spare[1].exception() is not None):
            self._staging = spare
            return
        if spare is not None:
            self._stager.submit(_discard_folder, spare[1])
        job = self._stager.submit(stage_tests, task=self.task, turns=self.turns[: index + 1], scratch=self._root / "scratch",
                                  workers=self._sandbox.config.workers(), params=self._params,
                                  only={*turn.test_ids, *regression}, costs=self._costs)  # fmt: skip
        self._staging = (key, job)

    def _staged_for(self, index: int) -> tuple[tuple[str, ...], Future]:
        """The regression tests the submit of turn ``index`` runs and its grading folder
        (being made), staged now if nothing was."""
        if self._staging is None or self._staging[0][0] != index:
            self._stage_turn(index)
        (_, regression, _), job = self._staging
        self._staging = None
        return regression, job

    def _discard_staged(self, spare: bool = True) -> None:
        """Set the grading folder being made aside as the spare (``spare``), else drop it,
        and the spare it replaces, once made, on the staging thread (a reset neither waits
        for it nor spends its own time removing it)."""
        if spare and self._staging is not None:
            self._spare, self._staging = self._staging, self._spare  # the spare it replaces is dropped below
        dropped = [self._staging, *(() if spare else (self._spare,))]
        self._staging = None
        if not spare:
            self._spare = None
        for item in dropped:
            if item is not None:
                self._stager.submit(_discard_folder, item[1])

    def _regression_to_run(self, index: int, in_force: tuple[str, ...]) -> tuple[str, ...]:
        """The regression tests this submit reruns: all of them, or whole test files drawn
        at random (importing a file costs about as much as running a few of its tests)
        while their stored costs fit in ``budget_ms``, or until they hold ``sample`` tests.
        The draw depends on the episode seed, the turn and the stored costs only, so a
        restored or replayed episode draws what the live one drew."""
        rule = self.config.regression
        # The episode's last turn (its window's) reruns them all: a test broken unseen by the
        # draws is counted there at the latest, also when the project goes on past it.
        last = index == self._end
        full = index % rule.full_every == 0 or last
        if index == self._first + 1 and self._first and not rule.full_at_start:
            full = last  # an episode's first turn, started later: drawn, as the next one is
        if rule.budget_ms is not None:
            full = full or sum(self._costs[tid] for tid in in_force) <= rule.budget_ms
        elif rule.sample is None or len(in_force) <= rule.sample:
            full = True
        if full:
            return in_force
        by_file: dict[str, list[str]] = {}
        for tid in in_force:
            by_file.setdefault(tid.split("::")[0], []).append(tid)
        files, chosen, spent = list(by_file), set(), 0.0
        for i in np.random.default_rng([self._regression_seed, index]).permutation(len(files)):
            tests = by_file[files[i]]
            if rule.budget_ms is not None:
                cost = sum(self._costs[tid] for tid in tests)
                if spent + cost > rule.budget_ms:
                    continue  # too dear for what is left: a cheaper file may still fit
                spent += cost
            elif len(chosen) >= rule.sample:
                break
            chosen.update(tests)
        return tuple(tid for tid in in_force if tid in chosen)

    def restore(self, turn: int, patches: list[str], passing: frozenset[str], *, elapsed_s: float = 0.0,
                output: str = "") -> tuple[dict, list[str]]:  # fmt: skip
        """Put a freshly reset episode at the start of ``turn`` (0-based), as a recorded run
        left it: the final patches of turns 0..turn-1 are applied and committed one by one
        (as ``submit`` commits), ``passing`` is the set of hidden tests that passed at the
        last submit and ``elapsed_s`` the wall clock already spent. Returns the observation
        and the commit ids, which equal the recorded ones when the records are faithful."""
        if self._turn != 0 or self._turn_steps:
            raise RuntimeError("restore() needs a freshly reset episode")
        if not 0 < turn < self._end or len(patches) != turn:
            raise ValueError(f"restore to turn {turn} of {self._end} needs {turn} patches, got {len(patches)}")
        commits = self._lay_turns(patches)
        self._start_turn_at(turn, frozenset(passing))
        self._started = time.monotonic() - elapsed_s
        return self._observe(output), commits

    def _lay_turns(self, patches: list[str], first: int = 0) -> list[str]:
        """Commit ``patches`` as the submits of turns ``first``, ``first + 1``, ... would
        (one commit per turn, with its message) and lay the last in the work tree; returns
        the commit ids."""
        turns = self.turns[first : first + len(patches)]
        return self._workspace.lay_commits(patches, [f"turn {turn.index}" for turn in turns])

    def _lay_reference(self, turns: int) -> None:
        """The reference solution of the first ``turns`` turns in the work tree, committed
        turn by turn; the commits of earlier episodes with the same params are reused while
        the repository holds them."""
        workspace = self._workspace
        key = (workspace.generation, tuple(sorted(self._params.items())))
        laid = self._reference_commits.setdefault(key, [])
        if len(laid) < turns:
            if laid:
                workspace.checkout(laid[-1])
            patches = [self.task.reference_patch(turn, self._params) for turn in self.turns[len(laid) : turns]]
            laid += self._lay_turns(patches, first=len(laid))
        else:
            workspace.checkout(laid[turns - 1])

    def _start_turn_at(self, turn: int, passing: frozenset[str], *, reference: bool = False) -> None:
        """Begin ``turn`` (0-based) on the tree as it is, ``passing`` the tests that passed
        at the last submit; ``reference``: the tree is the reference's after those turns."""
        workspace = self._workspace
        self._sandbox.prepare(workspace.path)
        self._reviewer.resume_from(workspace.path, submits=turn, reference=reference)
        self._turn, self._turn_start, self._passing = turn, workspace.head(), passing
        self._begin_turn()

    # -- the user -----------------------------------------------------------------------

    def _begin_turn(self) -> None:
        """Render the turn's prompt (template variables, reproduction output) and open its dialogue."""
        index = self._turn
        turn = self.turns[index]
        if self._graded:  # deferred grading: after the reviews of the submits still being graded
            self._grader.submit(self._reviewer.prefetch, last=index + 1 == self._end)
        else:
            self._reviewer.prefetch(last=index + 1 == self._end)
        self._stage_turn(index)  # while the agent works (a submit then only copies its source in)
        raw = turn.spec.prompts[self._variants[index]]
        values = {**self._params, **self._picked[index]}
        repro = run_repro(turn, self._workspace.path, self._sandbox, self._root / "scratch") if turn.spec.repro else None
        self._prompts[index] = render_prompt(turn, raw, values, self._workspace.path, repro, always=bool(self._params))
        if self._user is None:
            self._user = make_user(self.config.user)
        self._dialogue = Dialogue(turn, self._prompts[index], self._user, self.config.user)
        self._tools.dialogue = self._dialogue

    def _watch_changes(self, tool: Tool) -> None:
        """Tell the dialogue when the code first differs from the turn's start."""
        if tool.changes_files and self._dialogue.watching:
            names = self._workspace.changed_paths(self._turn_start)
            if any(not _NOT_CODE.search(name) for name in names):
                self._dialogue.note_change()

    # -- observations -------------------------------------------------------------------

    def _observe(self, output: str, final: bool = False, seed: bool = False) -> dict:
        """The observation; ``seed``: the work tree is the seed as a reset lays it, whose
        ``repo`` view is the same at every reset and is made once per env."""
        limit = self.config.observation.max_chars
        index = self._end - 1 if final else self._turn
        turn = self.turns[index]
        prompt = "" if final else self._prompts[index]
        self._last_output = output
        if seed and self._seed_view is None:
            self._seed_view = self._repo_view()
        return {
            "prompt": to_text(prompt, limit),
            "output": to_text(output, limit),
            "repo": to_text(self._seed_view if seed else self._repo_view(), limit),
            "phase": to_text(self.task.phase(turn.index), 64),
            "turn": index + 1,
        }

    def _repo_view(self) -> str:
        """The ``repo`` observation. Past a cap of the work tree (``Workspace.listing``) it
        begins with ``error:`` naming the cap; named pipes and other special files are
        never opened; the full text stops once it fills the observation."""
        mode = self.config.observation.repo
        if mode == "tree":
            return list_files(self._tools)
        workspace = self._workspace
        if mode == "diff":
            over = workspace.stage()
            diff = workspace.diff(self._turn_start, stage=False, limit=self.config.observation.max_chars - 256)
            return f"error: {over} (the diff stops there)\n{diff}" if over else diff
        listing, budget = workspace.listing(), self.config.observation.max_chars
        parts = [f"error: {listing.over} (the text stops there)"] if listing.over else []
        for entry in listing.entries:
            if budget <= 0:
                break
            if entry.kind == "file":
                try:
                    text = safetree.read_bytes(entry.path, limit=budget).decode("utf-8", "replace")
                except OSError as exc:
                    text = f"(not read: {exc.strerror})"
                parts.append(f"=== {entry.rel} ===\n{text}")
                budget -= len(parts[-1])
        return "\n".join(parts)

    def render(self) -> str | None:
        if self.render_mode == "ansi":
            return self._last_output
        return None

    # -- resources ----------------------------------------------------------------------

    def _ensure_workspace(self) -> Workspace:
        if self._workspace is None:
            self._root = Path(tempfile.mkdtemp(prefix="stamina-gym-"))
            self._finalizer = weakref.finalize(self, safetree.rmtree, self._root)
            sandbox_cls = SANDBOXES.load(self.config.sandbox.kind)
            # the analysis caches too: results planted there would be read as the reference's
            stores = [Path(self.config.quality.cache_dir).expanduser()] if self.config.quality.cache_dir else []
            if (store := reference_store(self.config.quality)) is not None:
                stores.append(store.directory)
            hidden = [self._root, self.task.root, *([self._cache.root] if self._cache else []), *stores]
            self._sandbox = sandbox_cls(self.config.sandbox, hidden=hidden)
            self._warn_untried_python()
            self._workspace = Workspace(self._root / "ws", self.task.seed_dir)
            self._tools = ToolContext(self._workspace, self._sandbox, self.config.sandbox.timeout_s)
            self._reviewer = Reviewer(self.task, self.config.quality, self.config.mode, self._root / "scratch")
        return self._workspace

    @property
    def sandbox_isolation(self) -> str | None:
        """The isolation the sandbox really has (``bwrap``, ``rlimits``, ``docker``), None
        before the first reset."""
        return None if self._sandbox is None else self._sandbox.isolation

    @property
    def sandbox_python(self) -> str:
        """The version of the Python the agent's code and the hidden tests run on."""
        self._ensure_workspace()
        return self._sandbox.python_version()

    def _warn_untried_python(self) -> None:
        validated = self.task.meta.python
        version = self._sandbox.python_version()
        if validated and ".".join(version.split(".")[:2]) not in validated:
            warnings.warn(
                f"the sandbox runs Python {version}, but task {self.task.id} v{self.task.meta.version} was validated "
                f"on Python {', '.join(validated)} only: its hidden tests may judge the reference differently here",
                RuntimeWarning, stacklevel=3,
            )  # fmt: skip

    def reference_patch(self, index: int) -> str:
        """The reference patch of turn ``index`` (0-based) with this episode's params."""
        return self.task.reference_patch(self.turns[index], self._params)

    @property
    def params(self) -> dict[str, str | int]:
        """The procedural variant of this episode (task ``params``, picked at reset)."""
        return dict(self._params)

    @property
    def workspace(self) -> Workspace | None:
        return self._workspace

    @property
    def dialogue(self) -> Dialogue | None:
        """The current turn's conversation with the user (privileged: holds the hidden spec)."""
        return self._dialogue

    @property
    def turn(self) -> int | None:
        """0-based index of the current turn, None outside an episode."""
        return self._turn

    @property
    def window(self) -> tuple[int, int]:
        """The turns this episode plays, first and last, counted from 1 as in the
        observation (before the first reset: what ``max_turns`` gives from turn 1)."""
        return self._first + 1, self._end

    def close(self) -> None:
        self._drain()
        self._discard_staged(spare=False)
        self._stager.shutdown(wait=True)
        self._stager = ThreadPoolExecutor(1, thread_name_prefix="grading-stage")  # a closed env may be reset again
        if self._user is not None:
            self._user.close()
            self._user = None
        if self._sandbox is not None:
            self._sandbox.close()
        if self._reviewer is not None:
            self._reviewer.close()
            self._reviewer = None
        if self._root is not None:
            self._finalizer()
        self._workspace = self._sandbox = self._root = None
        super().close()

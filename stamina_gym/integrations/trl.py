"""StaminaEnv as an environment of TRL's GRPOTrainer (``pip install 'stamina-gym[trl]'``).

``GRPOTrainer(environment_factory=...)`` calls the factory with no arguments whenever it
needs one more instance at a time (one per rollout of a generation batch), keeps the
instances for reuse and, before each rollout, calls ``reset(**row)`` on one with every
column of its dataset row. The model's
tools are the instance's methods: TRL lists the functions of the class, leaves out
``reset``, ``get_reward`` and names that start with ``_``, and builds each tool's schema
from the method's type hints and its Google-style docstring (transformers'
``get_json_schema``); a tool call runs the method with the call's arguments and its return
value, as text, is the tool message. Here:

* The factory: ``StaminaTRLEnv`` (``StaminaTodo-v2``), or
  ``functools.partial(StaminaTRLEnv, env_id, **make_kwargs)`` for another env id or
  ``gym.make`` keyword arguments, or ``functools.partial(StaminaTRLEnv,
  base_url="http://host:8000")`` for TRL's OpenEnv path: each instance a session of a
  ``stamina-gym serve`` server (the serve extra), its env and sandbox there.
* ``reset(prompt=..., seed=..., start_turn=..., num_turns=...)``: begins an episode (other columns are
  ignored) and returns its opening, which TRL appends to the row's last user message: the
  chat system prompt (left out when the row's prompt has a system message of its own)
  and the first request with the repository, after a blank line when that message has
  text. A row can be as small as
  ``{"prompt": [{"role": "user", "content": ""}], "seed": 0}``.
* One method per env tool, ``list_files`` to ``submit``, typed and documented as the env's
  tool table (``stamina_gym.tools.TOOLS``) says; each call is one env step and returns the
  tool's output (a refusal starts with ``error:``). TRL cannot add a user message, so a
  submit returns the grade followed by the next request. After the episode's end a call
  runs nothing and says so. Nothing else on the class is a public function, so nothing
  else becomes a tool: ``steps``, the episode's steps so far, is a property.
* ``stamina_reward``: the reward function to pass as ``reward_funcs``; TRL hands it the
  rollouts' environments, and it returns each one's summed env rewards (the small charge
  of every step and the reward of every submit). The class has no ``get_reward``, TRL's
  other reward hook, so the env's reward is counted once and weighted like any other.
* TRL never closes an environment: the gym env is closed when its instance is garbage
  collected, or at the interpreter's exit.

A rollout ends when the model answers without a tool call, or at TRL's limits
(``max_completion_length``, ``max_tool_calling_iterations``), wherever the episode is.
"""

from __future__ import annotations

import importlib.util
import json
import weakref
from typing import Any

import gymnasium as gym

if importlib.util.find_spec("trl") is None:  # pragma: no cover - the message is the point
    raise ImportError("the TRL adapter is for TRL's GRPOTrainer: pip install 'stamina-gym[trl]'")

import stamina_gym  # noqa: F401 - registers the env ids
from stamina_gym.chat import after_step, opening_messages


class StaminaTRLEnv:
    """One StaminaEnv episode per rollout of TRL's GRPOTrainer (see the module docstring)."""

    def __init__(self, env_id: str = "StaminaTodo-v2", *, base_url: str | None = None, **make_kwargs: Any) -> None:
        if base_url is None:
            self._env = gym.make(env_id, **make_kwargs)
        elif make_kwargs:
            raise ValueError(f"a served env is made by its server (stamina-gym serve): no {', '.join(sorted(make_kwargs))}")
        else:
            self._env = _Served(base_url)
        self._closer = weakref.finalize(self, self._env.close)
        self._steps: list[tuple[str, float]] = []
        self._done = True

    @property
    def steps(self) -> list[tuple[str, float]]:
        """The tool and the env reward of each step of this episode (a property: not a tool)."""
        return list(self._steps)

    def reset(self, prompt: Any = None, seed: int | None = None, start_turn: int | None = None,
              num_turns: int | None = None, **columns: Any) -> str:  # fmt: skip
        """A new episode (TRL passes the dataset row's columns; ``start_turn`` and
        ``num_turns`` make it a window); returns its opening text."""
        window = {key: value for key, value in (("start_turn", start_turn), ("num_turns", num_turns)) if value}
        observation, _ = self._env.reset(seed=seed, options=window or None)
        self._steps, self._done = [], False
        system, request = opening_messages(observation)
        messages = prompt if isinstance(prompt, list) else []
        parts = [] if any(m.get("role") == "system" for m in messages) else [system["content"]]
        if messages and messages[-1].get("content"):  # TRL appends the opening to this text as it is
            parts.insert(0, "")
        return "\n\n".join([*parts, request["content"]])

    def _settle(self) -> None:
        """When TRL ends a rollout before the env does, the grades still due under deferred
        grading: their reward counts as a last entry of ``steps`` (``settle``)."""
        settle = getattr(getattr(self._env, "unwrapped", None), "settle", None)
        if settle is not None and not self._done:
            reward, graded = settle()
            if graded:
                self._steps.append(("settle", float(reward)))

    def _step(self, tool: str, **args: Any) -> str:
        """One env step: the tool's output, then the next request after a submit."""
        if self._done:
            return "not run: the episode is over"
        action = {"tool": tool, **{name: value for name, value in args.items() if value is not None}}
        observation, reward, terminated, truncated, info = self._env.step(action)
        self._steps.append((tool, float(reward)))
        self._done = bool(terminated or truncated)
        return "\n\n".join([observation["output"], *(m["content"] for m in after_step(observation, info, self._done))])

    def list_files(self, path: str | None = None) -> str:
        """List files under a folder with their line counts.

        Args:
            path: folder, default the repository root
        """
        return self._step("list_files", path=path)

    def read_file(self, path: str, start: int | None = None, end: int | None = None) -> str:
        """Read a file with line numbers, optionally lines start..end (1-based, inclusive).

        Args:
            path: the file, relative to the repository root
            start: first line to show, default 1
            end: last line to show, default the file's last
        """
        return self._step("read_file", path=path, start=start, end=end)

    def search(self, pattern: str, path: str | None = None) -> str:
        """Search file contents with a Perl-compatible regex; prints path:line:text.

        Args:
            pattern: the regular expression
            path: folder or file to search, default the repository root
        """
        return self._step("search", pattern=pattern, path=path)

    def find_references(self, symbol: str) -> str:
        """Find definitions, uses, attributes, imports and parameters of a Python name.

        Args:
            symbol: the name, a Python identifier
        """
        return self._step("find_references", symbol=symbol)

    def write_file(self, path: str, content: str) -> str:
        """Create or overwrite a file with the given text.

        Args:
            path: the file, relative to the repository root
            content: the file's whole new text
        """
        return self._step("write_file", path=path, content=content)

    def apply_patch(self, patch: str) -> str:
        """Apply a unified diff (paths relative to the repository root, a/ b/ prefixes allowed).

        Args:
            patch: the unified diff
        """
        return self._step("apply_patch", patch=patch)

    def delete_file(self, path: str) -> str:
        """Delete a file.

        Args:
            path: the file, relative to the repository root
        """
        return self._step("delete_file", path=path)

    def run(self, command: str, timeout: float | None = None) -> str:
        """Run a bash command in the sandbox (cwd /repo, no network); prints exit code and output.

        Args:
            command: the bash command
            timeout: seconds, capped by the sandbox
        """
        return self._step("run", command=command, timeout=timeout)

    def run_tests(self, args: list[str] | None = None) -> str:
        """Run the repository's own tests with pytest; args are passed to pytest.

        Args:
            args: extra pytest arguments, e.g. ["tests/test_api.py", "-x"]
        """
        return self._step("run_tests", args=args)

    def ask(self, question: str) -> str:
        """Ask the user one question about the request; the answer comes back. Ask before you code.

        Args:
            question: one question
        """
        return self._step("ask", question=question)

    def plan(self, steps: list[str | dict[str, Any]]) -> str:
        """Submit your plan: ordered steps, each a string or {description, details?, depends_on?: [earlier step numbers]}.

        Args:
            steps: the steps in order; an object step has a description, optional details and optional depends_on
                (a list of earlier step numbers)
        """
        return self._step("plan", steps=steps)

    def summarize(self, requirements: dict[str, str]) -> str:
        """State the clarified requirements as an object (requirement -> value); closes the questions.

        Args:
            requirements: each requirement's name and its value
        """
        return self._step("summarize", requirements=requirements)

    def submit(self) -> str:
        """Finish the turn: the work is graded and the next request arrives.

        Returns:
            The grade, then the next request with the repository.
        """
        return self._step("submit")


class _Served:
    """A session of a ``stamina-gym serve`` server (OpenEnv's client) behind the gym calls
    the adapter makes: TRL's OpenEnv path, the envs and sandboxes on another machine."""

    def __init__(self, base_url: str) -> None:
        from stamina_gym.integrations.openenv import StaminaClient

        self._client = StaminaClient(base_url=base_url, message_timeout_s=600).sync()
        self._client.connect()

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        result = self._client.reset(seed=seed, **(options or {}))
        return _fields(result.observation), result.observation.info

    def step(self, action: dict) -> tuple[dict, float, bool, bool, dict]:
        from stamina_gym.integrations.openenv import StaminaAction

        result = self._client.step(StaminaAction(text=json.dumps(action)))
        info = result.observation.info
        return _fields(result.observation), float(result.reward), info["terminated"], info["truncated"], info

    def close(self) -> None:
        self._client.close()


def _fields(observation: Any) -> dict:
    """The gym observation of a served one."""
    return {name: getattr(observation, name) for name in ("prompt", "output", "repo", "phase", "turn")}


def stamina_reward(environments: list[StaminaTRLEnv], **kwargs: Any) -> list[float]:
    """GRPOTrainer's reward function: each rollout's summed env rewards (TRL passes the
    rollouts' environments in ``environments``, in the order of its completions)."""
    for rollout in environments:
        rollout._settle()  # deferred grading: what a rollout cut short still has due
    return [sum(reward for _, reward in rollout.steps) for rollout in environments]

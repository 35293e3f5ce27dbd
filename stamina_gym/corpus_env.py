"""``StaminaCorpus-v0``: one env id over the built corpus (``stamina-gym corpus build``).

Each reset draws one of the built tasks of the env's split (``train`` by default; ``eval``
for projects training never saw; ``all``) with the env's own random generator, so a seed
gives the same draw, and plays it as ``Stamina-<task>-v1`` would; ``options={"task":
name}`` chooses instead. ``info["task"]`` names the task at every reset and step.

    env = gym.make("StaminaCorpus-v0", split="eval")          # ~/.cache/stamina-gym/corpus
    env = gym.make("StaminaCorpus-v0", corpus="built/", split="all")
    obs, info = env.reset(seed=0, options={"task": "parse"})

The tasks and their splits are read from the build's report (``corpus-build.yaml``): a
package whose build failed (problems, broken pins) is not drawn. Other keyword arguments
override the config of every task's env (``max_turns=5``, ``sandbox={"kind": "docker"}``).
The observation space is the tasks' with ``turn`` up to the longest task's length; what
the play loop reads of an env (``task``, ``turns``, ``config``) is the drawn task's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
from gymnasium import spaces

from stamina_gym.errors import ConfigError

SPLITS = ("train", "eval", "all")


def built_tasks(corpus: Path, split: str) -> dict[str, Path]:
    """Package -> task folder, for the packages of ``split`` that ``corpus`` holds built
    without problems or broken pins (what ``corpus build`` reports as failed), read from
    its ``corpus-build.yaml``."""
    from stamina_gym.config import load_yaml
    from stamina_gym.mining.corpus import BUILD_REPORT

    if split not in SPLITS:
        raise ConfigError(f"split must be one of {', '.join(SPLITS)}, not {split!r}")
    report_path = corpus / BUILD_REPORT
    if not report_path.is_file():
        raise ConfigError(f"{corpus} holds no built corpus ({BUILD_REPORT} is missing): run `stamina-gym corpus build --out {corpus}`")
    report = load_yaml(report_path) or {}
    found = {}
    for name, built in sorted(report.items()):
        folder = corpus / name.replace("-", "_")
        failed = built.get("problems") or built.get("pins_broken") or built.get("pinned_steps_not_kept")
        if (split == "all" or built.get("split") == split) and not failed and (folder / "task.yaml").is_file():
            found[name] = folder
    if not found:
        built = ", ".join(f"{name} ({entry.get('split')}, {len(entry.get('problems') or [])} problems)" for name, entry in report.items())
        raise ConfigError(f"{report_path}: no package of split {split!r} was built without problems (built: {built or 'none'})")
    return found


class CorpusEnv(gym.Env):
    """The built corpus as one env (see the module docstring)."""

    metadata = {"render_modes": ["ansi"]}

    def __init__(self, corpus: str | Path | None = None, split: str = "train", render_mode: str | None = None, **overrides: Any):
        from stamina_gym.env import CHARSET, MAX_ACTION_CHARS, StaminaEnv
        from stamina_gym.mining.corpus import DEFAULT_OUT
        from stamina_gym.text_space import UnicodeText

        self.corpus = Path(corpus) if corpus else DEFAULT_OUT
        self.split = split
        self.tasks = built_tasks(self.corpus, split)
        self.render_mode = render_mode
        self._overrides = overrides
        self._env: StaminaEnv | None = None
        self._name: str | None = None
        # every task's env is made once here: a bad override or task fails now, not mid-training
        lengths = {}
        for name in self.tasks:
            env = self._make(name)
            lengths[name] = len(env.turns)
            if self._env is not None:
                self._env.close()
            self._env, self._name = env, name
        text = self._env.observation_space["prompt"]
        self.observation_space = spaces.Dict({
            "prompt": text, "output": text, "repo": text,
            "phase": UnicodeText(64, charset=CHARSET),
            "turn": spaces.Discrete(max(lengths.values()), start=1),
        })  # fmt: skip
        self.action_space = UnicodeText(MAX_ACTION_CHARS, charset=CHARSET)
        self.turns_by_task = lengths

    def _make(self, name: str) -> Any:
        from stamina_gym.env import StaminaEnv

        config = {"id": f"StaminaCorpus-v0:{name}", "task": str(self.tasks[name])}
        return StaminaEnv(config, render_mode=self.render_mode, **self._overrides)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        options = dict(options or {})
        name = options.pop("task", None)
        if name is None:
            name = list(self.tasks)[int(self.np_random.integers(len(self.tasks)))]
        elif name not in self.tasks:
            raise ConfigError(f"options['task']: {name!r} is not a built task of split {self.split!r}; "
                              f"the split holds {', '.join(self.tasks)}")  # fmt: skip
        if name != self._name:
            if self._env is not None:
                self._env.close()
            self._env, self._name = self._make(name), name
        # the task's env is seeded from this env's generator too: a reset without a seed
        # follows from the last seeded one, whichever task it draws (a new env is unseeded)
        inner_seed = seed if seed is not None else int(self.np_random.integers(2**31))
        observation, info = self._env.reset(seed=inner_seed, options=options or None)
        return observation, {**info, "task": name}

    def step(self, action: str | dict) -> tuple[dict, float, bool, bool, dict]:
        if self._env is None:
            raise RuntimeError("call reset() first")
        observation, reward, terminated, truncated, info = self._env.step(action)
        return observation, reward, terminated, truncated, {**info, "task": self._name}

    def __getattr__(self, name: str) -> Any:
        """What the loop, the recorder and the agents' views read of an env (``task``,
        ``turns``, ``config``, ...): the current task's env's."""
        if name.startswith("__") or name in ("_env", "_name"):
            raise AttributeError(name)
        env = self.__dict__.get("_env")
        if env is None:
            raise AttributeError(f"{type(self).__name__} has no {name!r} before its first reset")
        return getattr(env, name)

    def render(self) -> str | None:
        return self._env.render() if self._env is not None else None

    def close(self) -> None:
        if self._env is not None:
            self._env.close()
            self._env = None

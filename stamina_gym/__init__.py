"""stamina-gym: a Gymnasium environment for coding agents on long, changing projects.

``import stamina_gym`` registers one env id per spec file in ``envs/`` and one
``Stamina-<task>-v1`` id for every other task found (see ``stamina_gym.task``), and
``StaminaCorpus-v0``, which draws a task of the built corpus at each reset. A shipped
env is registered by its id alone (``kwargs={"config": "StaminaTodo-v2"}``), so what a
dataset records of it holds no path of this machine.
"""

from __future__ import annotations

import gymnasium as gym
import yaml

from stamina_gym.packaged import data_dir, env_spec_files

__version__ = "0.1.0"

ENVS_DIR = data_dir("envs")
ENTRY_POINT = "stamina_gym.env:StaminaEnv"
#: One env id over the built corpus (``stamina_gym.corpus_env``).
CORPUS_ENV = "StaminaCorpus-v0"

__all__ = ["ENTRY_POINT", "ENVS_DIR", "env_spec_files", "register_envs"]


def register_envs() -> list[str]:
    """Register every env id; returns the ids. Full validation happens at ``gym.make``."""
    from stamina_gym.task import find_tasks

    ids, covered = [], set()
    for env_id, path in env_spec_files().items():
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        covered.add(data.get("task"))
        steps = (data.get("budgets") or {}).get("max_episode_steps", 10_000)
        _register(env_id, {"config": env_id}, steps)
        ids.append(env_id)
    _register(CORPUS_ENV, {}, 10_000, "stamina_gym.corpus_env:CorpusEnv")
    ids.append(CORPUS_ENV)
    for task in find_tasks():
        if task not in covered:
            env_id = f"Stamina-{task}-v1"
            _register(env_id, {"config": {"id": env_id, "task": task}}, 10_000)
            ids.append(env_id)
    return ids


def _register(env_id: str, kwargs: dict, max_episode_steps: int, entry_point: str = ENTRY_POINT) -> None:
    if env_id not in gym.registry:
        gym.register(id=env_id, entry_point=entry_point, kwargs=kwargs, max_episode_steps=max_episode_steps)


register_envs()

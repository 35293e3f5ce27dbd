"""Vector envs: ``gymnasium.vector.SyncVectorEnv`` and ``AsyncVectorEnv`` over StaminaEnv.

``make_vector_env("StaminaTodo-v2", 4, mode="async")`` is ``gym.make_vec`` with its
arguments checked; ``gym.make_vec(ID, n, vectorization_mode="async")`` itself works as
well, shared memory (its default) included: the env's text spaces bring their own
(``stamina_gym.text_space``), and each text field reads back as the env wrote it.

Each env of a vector env lays its own workspace in its own ``mkdtemp`` folder and runs
commands in its own bubblewrap namespaces with a private ``/tmp``: envs never share files.
Actions are a tuple of JSON texts (or dicts), one per env; with the default next-step
autoreset, the step after an episode's end resets that env and ignores its action.
"""

from __future__ import annotations

from typing import Any, Literal

import gymnasium as gym

from stamina_gym.errors import ConfigError


def make_vector_env(
    env_id: str,
    num_envs: int,
    *,
    mode: Literal["sync", "async"] = "sync",
    shared_memory: bool | None = None,
    vector_kwargs: dict[str, Any] | None = None,
    **env_kwargs: Any,
) -> gym.vector.VectorEnv:
    """``num_envs`` copies of ``env_id`` (``env_kwargs`` go to every ``gym.make``);
    ``shared_memory`` (async only) as ``AsyncVectorEnv`` takes it (default: shared)."""
    if num_envs < 1:
        raise ConfigError(f"num_envs must be >= 1, got {num_envs}")
    if mode not in ("sync", "async"):
        raise ConfigError(f"mode must be 'sync' or 'async', got {mode!r}")
    kwargs = dict(vector_kwargs or {})
    if shared_memory is not None:
        if mode != "async":
            raise ConfigError("shared_memory applies to mode='async' only")
        kwargs["shared_memory"] = shared_memory
    return gym.make_vec(env_id, num_envs=num_envs, vectorization_mode=mode, vector_kwargs=kwargs, **env_kwargs)

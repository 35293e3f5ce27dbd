"""Vector envs: ``gymnasium.vector.SyncVectorEnv`` and ``AsyncVectorEnv`` over StaminaEnv.

``make_vector_env("StaminaTodo-v0", 4, mode="async")`` is ``gym.make_vec`` with the one
setting this env needs: ``AsyncVectorEnv`` must pass observations through pipes
(``shared_memory=False``). Every observation is a ``Dict`` of ``Text`` fields, and Text
in shared memory does not work: Gymnasium versions without Text support raise deep in a
worker, and the versions with it (1.4 here) decode the buffer into Python strings once,
when the vector env is built, so every later observation reads back as that empty buffer
(200,000 ``"0"`` characters per field; ``tests/test_rollout.py`` shows it). Asking this
function for ``shared_memory=True`` raises a ``ConfigError`` that says so.

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
    shared_memory: bool = False,
    vector_kwargs: dict[str, Any] | None = None,
    **env_kwargs: Any,
) -> gym.vector.VectorEnv:
    """``num_envs`` copies of ``env_id`` (``env_kwargs`` go to every ``gym.make``)."""
    if num_envs < 1:
        raise ConfigError(f"num_envs must be >= 1, got {num_envs}")
    if mode not in ("sync", "async"):
        raise ConfigError(f"mode must be 'sync' or 'async', got {mode!r}")
    kwargs = dict(vector_kwargs or {})
    if mode == "async":
        if shared_memory:
            raise ConfigError(
                "shared_memory=True does not work with StaminaEnv's Text observations (gymnasium "
                f"{gym.__version__} would return its empty buffer on every step); use shared_memory=False, the default"
            )
        kwargs["shared_memory"] = shared_memory
    elif shared_memory:
        raise ConfigError("shared_memory applies to mode='async' only")
    return gym.make_vec(env_id, num_envs=num_envs, vectorization_mode=mode, vector_kwargs=kwargs, **env_kwargs)

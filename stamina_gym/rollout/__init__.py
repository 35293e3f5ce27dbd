"""Rollouts at scale: workers that play episodes, backends that spread them (in process,
a process pool, Ray actors), vector envs, and the datasets written from the records.

Ray, pyarrow and minari are imported only where they are used.
"""

from stamina_gym.rollout.collect import BACKENDS, Collection, collect
from stamina_gym.rollout.workers import OPERATIONAL_FIELDS, RolloutSpec, RolloutWorker, episode_seeds, play_episode

__all__ = [
    "BACKENDS",
    "OPERATIONAL_FIELDS",
    "Collection",
    "RolloutSpec",
    "RolloutWorker",
    "collect",
    "episode_seeds",
    "play_episode",
]

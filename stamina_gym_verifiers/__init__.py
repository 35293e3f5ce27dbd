"""The verifiers plugin id of stamina-gym (verifiers imports a plugin by a top-level
module name): ``vf-eval stamina_gym_verifiers``. The adapter is
``stamina_gym.integrations.verifiers``."""

from stamina_gym.integrations.verifiers import *  # noqa: F401,F403
from stamina_gym.integrations.verifiers import __all__  # noqa: F401

"""Adapters that plug the env into trainers' own env interfaces, and the OpenEnv server;
each imports its library only when used (install it with the matching extra):

* ``skyrl``: a SkyRL-gym ``BaseTextEnv`` registered as ``stamina`` (``stamina-gym[skyrl]``);
* ``verifiers``: a verifiers 0.4 taskset, env and harness, plugin id ``stamina_gym_verifiers``
  (``stamina-gym[verifiers]``);
* ``trl``: an environment class for TRL's ``GRPOTrainer(environment_factory=...)`` and its
  reward function (``stamina-gym[trl]``);
* ``openenv``: the app of ``stamina-gym serve`` and OpenEnv's client for it (``stamina-gym[serve]``).
"""

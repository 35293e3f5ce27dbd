"""Adapters that plug the env into trainers' own env interfaces; each imports its library
only when used (install it with the matching extra):

* ``skyrl``: a SkyRL-gym ``BaseTextEnv`` registered as ``stamina`` (``stamina-gym[skyrl]``).
"""

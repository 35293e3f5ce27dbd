"""The wheel carries the checkout's top-level ``envs/`` and ``tasks/`` as package data in
``stamina_gym/_data/`` (``stamina_gym.packaged`` finds them there); everything else about
the build is declared in pyproject.toml."""

import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

SHIPPED = ("envs", "tasks")


class BuildWithData(build_py):
    """setuptools' build_py, then the shipped folders copied under the package (caches and
    the tasks' fairness audits left out). An editable install reads them from the checkout
    instead."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        for name in SHIPPED:
            target = os.path.join(self.build_lib, "stamina_gym", "_data", name)
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(name, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", "audit", "cleanroom"))


setup(cmdclass={"build_py": BuildWithData})

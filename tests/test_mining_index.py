"""Mining real pure-Python packages from their releases on the package index, each over
a short range of releases: every step kept becomes a turn, and the task validates with no
hand edit. Needs the index (pip's configuration decides which).

The full build is ``scripts/mine_index.py``'s (a quarter of an hour and more): three
packages over their whole ranges, each a task of at least 15 turns with at least 60% of
its candidate steps kept, more-itertools among them (subtests, unittest.mock and a
600-test module: 460 s for two of its releases alone on a loaded machine). Here, in under
a minute or two: a module and its test file (parse); unittest classes with mixins in the
tests package with code older than today's Python, which needs its recipe's source fix
(cachetools 2); tests defined under ``if six.PY3:``, modules imported by a name built at
run time, and tests written for ``py.test``, mended by its recipe (six 1.8 to 1.10)."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from stamina_gym.mining.command import DEFAULT_CACHE, expand_versions
from stamina_gym.mining.mine import mine
from stamina_gym.mining.sources import index_versions, pypi_snapshots
from stamina_gym.mining.recipe import find_recipe, shipped_recipes
from stamina_gym.task import load_task_dir
from stamina_gym.validate import validate_task

pytestmark = [pytest.mark.index, pytest.mark.slow]

#: Package, a short release range, the fewest turns it must keep. Each is mined with its
#: shipped recipe where there is one.
PACKAGES = [("parse", "1.19.1:1.20.2", 3), ("cachetools", "2.0.0:2.1.0", 1), ("six", "1.8.0:1.10.0", 2)]


@pytest.fixture(scope="module")
def index():
    run = subprocess.run([sys.executable, "-m", "pip", "index", "versions", "idna", "--disable-pip-version-check"],
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    if run.returncode != 0:
        pytest.skip(f"the package index does not answer: {run.stderr.strip()[-200:]}")


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name, versions, turns", PACKAGES, ids=[name for name, *_ in PACKAGES])
def test_a_real_package_mines_into_a_valid_task(index, tmp_path, name, versions, turns):
    releases = expand_versions(name, [versions], index_versions)
    snapshots = pypi_snapshots(name, releases, DEFAULT_CACHE)
    recipe = find_recipe(name) if name in shipped_recipes() else None
    result = mine(snapshots, tmp_path / name.replace("-", "_"), recipe=recipe, runs=2)
    print(yaml.safe_dump(result.to_data(), sort_keys=False))
    assert len(result.kept) >= turns, [(s.ref, s.reason) for s in result.steps if s.status != "kept"]
    assert validate_task(load_task_dir(result.task)) == []

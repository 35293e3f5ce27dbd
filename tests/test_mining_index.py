"""Mining three real pure-Python packages from their releases on the package index: each
becomes a task of at least 15 turns that validates, with at least 60% of its candidate
steps kept and no hand edit. Needs the index (pip's configuration decides which)."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from stamina_gym.mining.command import DEFAULT_CACHE, expand_versions
from stamina_gym.mining.mine import mine
from stamina_gym.mining.sources import index_versions, pypi_snapshots
from stamina_gym.task import SourceFix, load_task_dir
from stamina_gym.validate import validate_task

pytestmark = [pytest.mark.index, pytest.mark.slow]

#: Package, release range, source fixes: a module and its test file (parse), unittest
#: classes with mixins in the tests package and code older than today's Python
#: (cachetools, whose early releases need one declared fix), subtests, unittest.mock and
#: a 600-test module (more-itertools).
MUTABLE_MAPPING = SourceFix(path="**/*.py", old="collections.MutableMapping", new="collections.abc.MutableMapping")
PACKAGES = [("parse", "1.8.0:1.22.4", []), ("cachetools", "2.0.0:6.0.0", [MUTABLE_MAPPING]),
            ("more-itertools", "8.6.0:10.8.0", [])]  # fmt: skip


@pytest.fixture(scope="module")
def index():
    run = subprocess.run([sys.executable, "-m", "pip", "index", "versions", "idna", "--disable-pip-version-check"],
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    if run.returncode != 0:
        pytest.skip(f"the package index does not answer: {run.stderr.strip()[-200:]}")


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("name, versions, fixes", PACKAGES, ids=[name for name, _, _ in PACKAGES])
def test_a_real_package_mines_into_a_valid_long_task(index, tmp_path, name, versions, fixes):
    releases = expand_versions(name, [versions], index_versions)
    snapshots = pypi_snapshots(name, releases, DEFAULT_CACHE)
    result = mine(snapshots, tmp_path / name.replace("-", "_"), fixes=fixes, runs=3)
    print(yaml.safe_dump(result.to_data(), sort_keys=False))
    assert len(result.kept) >= 15, [(s.ref, s.reason) for s in result.steps if s.status != "kept"]
    assert result.rate >= 0.6
    assert validate_task(load_task_dir(result.task)) == []

"""A project's conftest.py fixtures carried into the mined test modules that use them
(``stamina_gym.mining.fixtures``): the grader runs pytest without conftest files."""

from __future__ import annotations

import subprocess
import sys

from stamina_gym.mining.fixtures import with_conftest_fixtures
from stamina_gym.mining.mine import mine, split
from stamina_gym.mining.sources import Snapshot
from stamina_gym.task import load_task_dir
from stamina_gym.validate import validate_task

CONFTEST = '''"""Fixtures for every test module."""
from __future__ import annotations

import pytest

from store import Store
from docs_only import examples  # what only the project's own tooling has

ROWS = ("a", "b", "c")


def _filled(store):
    for row in ROWS:
        store.add(row)
    return store


@pytest.fixture
def empty():
    return Store()


@pytest.fixture(name="db")
def filled_db(empty):
    return _filled(empty)


@pytest.fixture(autouse=True)
def namespace(doctest_namespace):
    doctest_namespace["examples"] = examples


def pytest_addoption(parser):
    parser.addoption("--slow", action="store_true")
'''

STORE = "class Store:\n    def __init__(self):\n        self.rows = []\n\n    def add(self, row):\n        self.rows.append(row)\n\n    def __len__(self):\n        return len(self.rows)\n"

USES_DB = '''"""Tests of the store."""
from __future__ import annotations


def test_count(db):
    assert len(db) == 3


def test_plain():
    assert True
'''


def test_a_module_gets_the_fixtures_it_uses_and_what_they_read(tmp_path):
    """``db`` (named by ``name=``) takes ``empty``; both come, with the import, constant and
    helper they read, and the ``__future__`` import first. The autouse fixture (whose
    module only the project's tooling has) and the hook stay out: the module runs under
    pytest without conftest files and passes."""
    text = with_conftest_fixtures(USES_DB, [CONFTEST])
    assert text.startswith("from __future__ import annotations\n")
    assert "def filled_db(empty):" in text and "def empty():" in text and "def _filled(store):" in text
    assert "ROWS = " in text and "from store import Store" in text
    assert "docs_only" not in text and "pytest_addoption" not in text and "def namespace" not in text
    (tmp_path / "store.py").write_text(STORE)
    (tmp_path / "test_store.py").write_text(text)
    (tmp_path / "conftest.py").write_text("raise RuntimeError('a conftest file was read')\n")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--noconftest", "test_store.py"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert run.returncode == 0 and "2 passed" in run.stdout, run.stdout + run.stderr


def test_a_module_that_uses_no_fixture_or_defines_its_own_is_left_as_it_is():
    plain = "def test_plain():\n    assert True\n"
    assert with_conftest_fixtures(plain, [CONFTEST]) == plain
    own = "import pytest\n\n\n@pytest.fixture\ndef db():\n    return [1]\n\n\ndef test_one(db):\n    assert db == [1]\n"
    assert with_conftest_fixtures(own, [CONFTEST]) == own
    assert with_conftest_fixtures(USES_DB, ["def broken(:\n"]) == USES_DB


def test_an_inner_conftest_wins_and_helpers_are_not_given_fixtures():
    """pytest takes the nearest conftest's fixture; a helper module of the tests folder
    (``tests/base.py``, which a conftest may import) gets none, so it never imports itself."""
    inner = "import pytest\n\n\n@pytest.fixture\ndef db():\n    return ['inner']\n"
    files = {"store.py": STORE, "tests/conftest.py": CONFTEST, "tests/deep/conftest.py": inner,
             "tests/deep/test_deep.py": "def test_deep(db):\n    assert db == ['inner']\n",
             "tests/base.py": "def helper(db):\n    return db\n"}  # fmt: skip
    _, tests = split(files)
    assert "return ['inner']" in tests["deep/test_deep.py"] and "def filled_db" not in tests["deep/test_deep.py"]
    assert tests["base.py"] == files["tests/base.py"]


def test_a_step_whose_test_takes_a_conftest_fixture_is_kept(tmp_path):
    """Fails on a miner that left the conftest's fixtures where the grader never reads
    them: the step's one test errored at setup (``fixture 'db' not found``) at every state,
    and nothing was kept."""
    conftest = "import pytest\n\nfrom store import Store\n\n\n@pytest.fixture\ndef db():\n    store = Store()\n    store.add('a')\n    return store\n"
    seed = Snapshot("1", "R1", files={"store.py": STORE.replace("    def __len__(self):\n        return len(self.rows)\n", ""),
                                      "tests/conftest.py": conftest,
                                      "tests/test_store.py": "def test_add(db):\n    assert db.rows == ['a']\n"})  # fmt: skip
    counted = Snapshot("2", "R2", "Stores have a length: `len(store)` is how many rows it holds.", files={
        "store.py": STORE, "tests/conftest.py": conftest,
        "tests/test_store.py": "def test_add(db):\n    assert db.rows == ['a']\n\n\ndef test_len(db):\n    db.add('b')\n    assert len(db) == 2\n"})  # fmt: skip
    result = mine([seed, counted], tmp_path / "store", runs=1)
    task = load_task_dir(result.task)
    assert [len(turn.tests) for turn in task.turns] == [1], result
    assert validate_task(task) == []

"""Hidden test ids are read from syntax trees; they must be the ids pytest collects."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from stamina_gym import collection

FILES = {
    "__init__.py": """
        import unittest


        class StorageContract:
            def test_round_trip(self):
                self.assertEqual(self.store.load(self.store.save(3)), 3)

            def helper(self):
                return 1
        """,
    "base.py": """
        import unittest


        class BaseCase(unittest.TestCase):
            def test_base_holds(self):
                pass


        class Quiet:
            __test__ = False

            def test_never(self):
                pass
        """,
    "test_unittest_names.py": """
        import unittest
        from unittest import TestCase

        from . import StorageContract
        from .base import BaseCase, Quiet


        class MemoryStoreTest(StorageContract, unittest.TestCase):
            def setUp(self):
                self.store = None

            def test_empty(self):
                pass


        class DiskStoreTests(TestCase, StorageContract):
            pass


        class FromBase(BaseCase):
            def test_more(self):
                pass


        class TestQuietToo(Quiet):
            def test_silenced(self):
                pass


        class Helper:
            def test_not_collected(self):
                pass
        """,
    "test_plain.py": """
        import pytest


        def test_function():
            pass


        @pytest.mark.parametrize("value", [1, 2])
        def test_parametrised(value):
            pass


        class TestPlain:
            def test_method(self):
                pass


        class TestInherits(TestPlain):
            def test_own(self):
                pass


        class TestWithInit:
            def __init__(self):
                pass

            def test_skipped_by_pytest(self):
                pass


        class TestDisabled:
            __test__ = False

            def test_off(self):
                pass


        def helper_test():
            pass
        """,
    "deeper/__init__.py": "",
    "deeper/storage_test.py": """
        def test_in_a_subfolder():
            pass
        """,
}


def _write(root: Path) -> None:
    for rel, text in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")


def _static(root: Path) -> set[str]:
    ids = set()
    for path in collection.test_files(root):
        found = collection.collect(path, path.read_text(), [root])
        assert not found.unresolved, found.unresolved
        ids |= {f"{path.relative_to(root).as_posix()}::{tid}" for tid in found.ids}
    return ids


def _pytest_collects(root: Path) -> set[str]:
    """What pytest itself collects in ``root`` (a package named ``tests``), cases folded."""
    run = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "tests"],
                         cwd=root.parent, capture_output=True, text=True, timeout=120)  # fmt: skip
    ids = {line.split("[")[0].removeprefix("tests/") for line in run.stdout.splitlines() if "::" in line}
    assert ids, run.stdout + run.stderr
    return ids


def test_the_static_collection_is_what_pytest_collects(tmp_path):
    root = tmp_path / "tests"
    _write(root)
    static = _static(root)
    assert static == _pytest_collects(root)
    assert "test_unittest_names.py::MemoryStoreTest::test_round_trip" in static  # a mixin's test, inherited
    assert "test_unittest_names.py::DiskStoreTests::test_round_trip" in static  # a unittest class of any name
    assert "test_unittest_names.py::BaseCase::test_base_holds" in static  # imported, so pytest collects it here too
    assert "deeper/storage_test.py::test_in_a_subfolder" in static
    assert not {tid for tid in static if "Quiet" in tid or "Disabled" in tid or "WithInit" in tid or "Helper" in tid}



BRANCHED = """
import sys

if sys.version_info >= (3,):
    def test_on_python_3():
        pass

    class TestThree:
        def test_method(self):
            pass
else:
    def test_on_python_2():
        pass

try:
    import json
except ImportError:
    def test_without_json():
        pass
else:
    def test_with_json():
        pass
"""


def test_tests_in_every_branch_of_a_module_level_if_or_try_are_counted(tmp_path):
    """pytest collects the branch that runs; the reading counts every branch, so what
    pytest collects is always counted, and the branch not taken is graded as missing."""
    root = tmp_path / "tests"
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "test_branched.py").write_text(BRANCHED)
    static, collected = _static(root), _pytest_collects(root)
    assert collected == {"test_branched.py::test_on_python_3", "test_branched.py::TestThree::test_method",
                         "test_branched.py::test_with_json"}  # fmt: skip
    assert static - collected == {"test_branched.py::test_on_python_2", "test_branched.py::test_without_json"}

def test_a_base_that_cannot_be_read_is_reported(tmp_path):
    path = tmp_path / "test_x.py"
    path.write_text("from elsewhere import Mixin\n\n\nclass TestThing(Mixin):\n    def test_a(self):\n        pass\n")
    found = collection.collect(path, path.read_text(), [tmp_path])
    assert found.ids == ("TestThing::test_a",)
    assert found.unresolved == ("test_x.py: class TestThing: base Mixin",)

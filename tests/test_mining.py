"""``stamina-gym mine`` on a small git history built here: a feature, a refactor that
renames a module, a requirement change that retires a test, a bug fix with a flaky test
beside it, a unittest class of any name and a mixin in the tests package."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest
import yaml

from stamina_gym.errors import ConfigError
from stamina_gym.mining.mine import _public_definitions, changed_public_functions, changed_signatures, classify, diff_trees, error_line, kind_of, mine, relative_imports, split
from stamina_gym.mining.recipe import load_recipe
from stamina_gym.mining.sources import Snapshot, git_snapshots
from stamina_gym.task import SourceFix, load_task_dir
from stamina_gym.validate import validate_task

CART = """
class Cart:
    def __init__(self):
        self.items = []

    def add(self, name, price):
        self.items.append((name, price))

    def total(self):
        return sum(price for _, price in self.items) if self.items else None
"""

DISCOUNTED = CART.replace("        self.items = []\n", "        self.items = []\n        self.percent = 0\n").replace(
    "    def total(self):\n        return sum(price for _, price in self.items) if self.items else None\n",
    "    def discount(self, percent):\n        self.percent = percent\n\n"
    "    def total(self):\n        if not self.items:\n            return None\n"
    "        return sum(price for _, price in self.items) * (100 - self.percent) / 100\n",
)

CONTRACT = """
class CartContract:
    def make(self):
        raise NotImplementedError

    def test_add_then_total(self):
        cart = self.make()
        cart.add("tea", 3)
        self.assertEqual(cart.total(), 3)
"""

CART_TESTS = """
import unittest

from shop.cart import Cart
from tests import CartContract


class CartSpec(CartContract, unittest.TestCase):
    def make(self):
        return Cart()
"""

DISCOUNT_TESTS = """
import unittest

from shop.cart import Cart


def test_discount_80():
    cart = Cart()
    cart.add("tea", 10)
    cart.discount(80)
    assert cart.total() == 2


class DiscountBehaviour(unittest.TestCase):
    def test_no_discount_keeps_the_price(self):
        cart = Cart()
        cart.add("tea", 10)
        cart.discount(0)
        self.assertEqual(cart.total(), 10)
"""

FLAKY_AND_FIX = """

def test_empty_total_is_zero():
    assert Cart().total() == 0


def test_lucky():
    import os

    assert os.urandom(1)[0] < 128


from hypothesis import given, strategies


@given(strategies.integers(min_value=0, max_value=0))
def test_an_empty_total_for_any_empty_cart(_):
    assert Cart().total() == 0
"""


def _history(root: Path) -> list[str]:
    """Commit the steps; their hashes, seed first."""
    env = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "HOME": str(root), "PATH": "/usr/bin:/bin",
           "GIT_AUTHOR_NAME": "dev", "GIT_AUTHOR_EMAIL": "dev@example.org", "GIT_COMMITTER_NAME": "dev",
           "GIT_COMMITTER_EMAIL": "dev@example.org"}  # fmt: skip
    root.mkdir()

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, text=True, check=True).stdout.strip()

    def write(files: dict[str, str | None]) -> None:
        for rel, text in files.items():
            path = root / rel
            if text is None:
                path.unlink()
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text).lstrip())

    def commit(message: str, files: dict[str, str | None]) -> str:
        write(files)
        git("add", "-A")
        git("commit", "-q", "-m", message)
        return git("rev-parse", "HEAD")

    git("init", "-q")
    basket = DISCOUNTED.replace("return None", "return 0")
    return [
        commit("Cart with a total", {"shop/__init__.py": "", "shop/cart.py": CART, "tests/__init__.py": CONTRACT,
                                     "tests/test_cart.py": CART_TESTS, "README.md": "A shop.\n"}),
        commit("Add discounts\n\nA cart takes a discount in percent.", {"shop/cart.py": DISCOUNTED, "tests/test_discount.py": DISCOUNT_TESTS}),
        commit("Document the cart", {"shop/cart.py": '"""The cart."""\n' + DISCOUNTED}),
        commit("Rename the cart module to basket", {
            "shop/cart.py": None, "shop/basket.py": '"""The cart."""\n' + DISCOUNTED,
            "tests/test_cart.py": CART_TESTS.replace("shop.cart", "shop.basket"),
            "tests/test_discount.py": DISCOUNT_TESTS.replace("shop.cart", "shop.basket")}),
        commit("Cap discounts at 50 percent", {
            "shop/basket.py": '"""The cart."""\n' + DISCOUNTED.replace("self.percent = percent", "self.percent = min(percent, 50)"),
            "tests/test_discount.py": DISCOUNT_TESTS.replace("shop.cart", "shop.basket").replace(
                "def test_discount_80():", "def test_discount_is_capped():").replace("== 2", "== 5")}),
        commit("Fix the total of an empty cart: it is 0, not None", {
            "shop/basket.py": '"""The cart."""\n' + basket.replace("self.percent = percent", "self.percent = min(percent, 50)"),
            "tests/test_cart.py": CART_TESTS.replace("shop.cart", "shop.basket") + FLAKY_AND_FIX}),
    ]  # fmt: skip


@pytest.fixture(scope="module")
def mined(tmp_path_factory):
    root = tmp_path_factory.mktemp("mining")
    commits = _history(root / "project")
    snapshots = git_snapshots(root / "project", seed=commits[0])
    lines: list[str] = []
    fix = SourceFix(path="shop/*.py", old="self.items = []", new="self.items = list()")  # applied to every snapshot
    result = mine(snapshots, root / "shop", runs=5, fixes=[fix], progress=lines.append)
    return result, commits, lines


def test_every_step_that_changes_product_and_tests_is_a_candidate(mined):
    result, commits, _ = mined
    assert result.snapshots == 6 and result.candidates == 4  # "Document the cart" changes no test
    assert [step.ref for step in result.steps] == [commits[1], commits[3], commits[4], commits[5]]


def test_the_tests_that_fail_before_and_pass_after_become_the_turns_own(mined):
    result, _, _ = mined
    turns = {step.title: step for step in result.kept}
    assert len(result.kept) == 4 and result.rate == 1.0
    feature = turns["Add discounts"]
    assert sorted(t.split("::", 1)[1] for t in feature.tests) == ["DiscountBehaviour::test_no_discount_keeps_the_price",
                                                                  "test_discount_80"]  # fmt: skip
    # The rename changes no test's body: the import of the new module is the requirement.
    rename = turns["Rename the cart module to basket"]
    assert {t.split("::", 1)[1] for t in rename.tests} >= {"CartSpec::test_add_then_total", "test_discount_80"}
    capped = turns["Cap discounts at 50 percent"]
    assert [t.split("::", 1)[1] for t in capped.tests] == ["test_discount_is_capped"]
    fix = turns["Fix the total of an empty cart: it is 0, not None"]
    assert [t.split("::", 1)[1] for t in fix.tests] == ["test_empty_total_is_zero"]  # the flaky one is never the turn's
    assert not any("test_lucky" in t for step in result.kept for t in step.tests)
    assert any("test_lucky" in t for t in fix.flaky + fix.not_running)
    # hypothesis would trace a failing example, which the grader stops: never a turn's test
    assert [t.split("::", 1)[1] for t in fix.hypothesis] == ["test_an_empty_total_for_any_empty_cart"]


def test_a_changed_requirement_retires_the_earlier_test_it_contradicts(mined):
    result, _, _ = mined
    capped = next(step for step in result.kept if step.title.startswith("Cap"))
    assert capped.retires == [f"{capped_turn(result, 'Rename')}/test_discount.py::test_discount_80"]
    spec = yaml.safe_load((result.task / "turns" / capped.turn / "turn.yaml").read_text())
    assert spec["retires"] == capped.retires


def capped_turn(result, prefix: str) -> str:
    return next(step.turn for step in result.kept if step.title.startswith(prefix))


def test_the_mined_task_is_valid_and_its_prompts_name_what_the_tests_use(mined):
    result, _, _ = mined
    task = load_task_dir(result.task)
    assert len(task.turns) == 4
    assert validate_task(task) == []
    feature = task.turns[0]
    assert feature.spec.kind == "feature" and feature.spec.paths == ("shop/cart.py",)
    assert all("`discount`" in prompt for prompt in feature.spec.prompts)
    assert "This adds `Cart.discount`." in feature.spec.prompts[0] and "A cart takes a discount in percent." in feature.spec.prompts[0]
    assert "discount 80; no discount keeps the price" in feature.spec.prompts[1]  # what the tests check, from their names
    assert task.turns[3].spec.kind == "bugfix" and task.turns[1].spec.kind == "refactor"
    # the rename refactors the feature's module; the fix mends what features built
    assert [t.spec.sequence for t in task.turns] == [None, "implement-refactor", None, "feature-fix"]
    assert (result.task / "turns" / task.turns[0].id / "turn.yaml").read_text().startswith("# Drafted by stamina-gym mine")
    assert not (result.task / "repo" / "tests").exists()  # the seed holds the product only
    assert [f.old for f in task.meta.fixes] == ["self.items = []"] and "list()" in (result.task / "repo/shop/cart.py").read_text()
    assert not any("self.items = []" in t.reference_patch for t in task.turns)
    report = yaml.safe_load((result.task / "mining.yaml").read_text())
    assert report["candidates"] == 4 and report["kept"] == 4


def test_imports_of_the_tests_package_become_relative():
    text = "from tests import Mixin\nfrom tests.helpers import (a,\n    b)\nimport tests.util as u\nfrom shop import x\n"
    assert relative_imports(text, "tests", 0) == "from . import Mixin\nfrom .helpers import a, b\nfrom . import util as u\nfrom shop import x\n"
    product, tests = split({"shop/a.py": "A = 1\n", "tests/sub/test_b.py": "from tests.sub.helpers import h\n", "docs/x.md": "x",
                            "shop/test_tools.py": "class TestCase:\n    pass\n", "test_top.py": "def test_x():\n    pass\n"})  # fmt: skip
    # docs, CI and packaging files and a test.py script are neither product nor test
    none = {"documentation/x.py": "", ".github/workflows/ci.yml": "", "setup.cfg": "", "pyproject.toml": "", "test.py": "",
            "README.rst": "", "tox.ini": "", "shop.egg-info/PKG-INFO": "", "LICENSE": "MIT"}  # fmt: skip
    assert split(none) == ({"LICENSE": "MIT"}, {})
    # a module named like a test that holds none is the product's (markdown.test_tools)
    assert product == {"shop/a.py": "A = 1\n", "shop/test_tools.py": "class TestCase:\n    pass\n"}
    assert tests == {"sub/test_b.py": "from ..sub.helpers import h\n", "test_top.py": "def test_x():\n    pass\n"}


def test_source_fixes_apply_to_every_snapshot_and_are_recorded(tmp_path):
    fix = SourceFix(path="**/*.py", old="collections.MutableMapping", new="collections.abc.MutableMapping")
    files = {"pkg/a.py": "import collections\nBase = collections.MutableMapping\n", "notes.txt": "collections.MutableMapping"}
    assert fix.apply(files) == 1 and "collections.abc.MutableMapping" in files["pkg/a.py"] and files["notes.txt"].endswith("Mapping")


def test_bad_input_is_named(tmp_path):
    with pytest.raises(ConfigError, match="not a git repository"):
        git_snapshots(tmp_path, seed="HEAD")
    commits = _history(tmp_path / "project")
    with pytest.raises(ConfigError, match="at least two snapshots"):
        mine(git_snapshots(tmp_path / "project", seed=commits[0], commits=[])[:1], tmp_path / "out")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    with pytest.raises(ConfigError, match="not empty; mining never writes over a task"):
        mine(git_snapshots(tmp_path / "project", seed=commits[0]), tmp_path / "full")
    assert (tmp_path / "full" / "keep.txt").read_text() == "mine"


def test_a_diff_of_trees_applies_with_git():
    patch = diff_trees({"a.py": "x = 1\n", "gone.py": "y\n"}, {"a.py": "x = 2\n", "new/b.py": "z\n"})
    assert "--- a/a.py" in patch and "+++ b/new/b.py" in patch and "deleted file mode" in patch
    moved = diff_trees({"pkg/old.py": "x = 1\n" * 40}, {"pkg/new.py": "x = 1\n" * 39 + "x = 2\n"})
    assert "rename from pkg/old.py\nrename to pkg/new.py" in moved and len(moved.splitlines()) < 15


def test_a_src_layout_is_laid_flat_so_an_installed_package_of_that_name_is_not_tested(tmp_path):
    """The project is called like a package the sandbox's Python has installed (tqdm):
    laid out under src/, its tests would import the installed one and fail."""
    product, _ = split({"src/tqdm/__init__.py": "X = 1\n", "setup.py": "", "src/tqdm/data.txt": "d"})
    assert product == {"tqdm/__init__.py": "X = 1\n", "tqdm/data.txt": "d"}  # packaging is no product
    seed = Snapshot("v1", "Release 1", files={"src/tqdm/__init__.py": "def shout(text):\n    return text\n",
                                              "tests/test_shout.py": "from tqdm import shout\n\n\ndef test_same():\n    assert shout('a') == 'a'\n"})  # fmt: skip
    step = Snapshot("v2", "Release 2", "Shout in capitals.", files={
        "src/tqdm/__init__.py": "def shout(text):\n    return text.upper()\n",
        "tests/test_shout.py": "from tqdm import shout\n\n\ndef test_upper():\n    assert shout('a') == 'A'\n"})  # fmt: skip
    result = mine([seed, step], tmp_path / "loud", runs=1)
    assert [s.tests for s in result.steps] == [["01-release-2/test_shout.py::test_upper"]], result.steps


def test_sequence_types_follow_from_kinds_and_files():
    from stamina_gym.mining.mine import sequence_of

    feature = ("feature", ["pkg/a.py"])
    assert sequence_of("bugfix", ["pkg/a.py"], [feature]) == "feature-fix"
    assert sequence_of("bugfix", ["pkg/a.py"], [feature, ("bugfix", ["pkg/a.py"])]) == "fix-regression"
    assert sequence_of("refactor", ["pkg/a.py", "pkg/b.py"], [feature]) == "implement-refactor"
    assert sequence_of("feature", ["pkg/b.py", "pkg/c.py"], [feature]) == "multi-module"
    assert sequence_of("bugfix", ["pkg/z.py"], [feature]) is None
    # what the step does decides before its notes: a release that adds names is a feature
    assert kind_of("1.2: bug fixes and the new `shout_twice`", ["shout_twice"]) == "feature"
    assert kind_of("1.2: bug fixes") == "bugfix" and kind_of("Renamed shout to yell") == "refactor"


def test_releases_come_from_their_sdists_and_one_without_is_skipped_and_said(tmp_path, monkeypatch):
    from stamina_gym.mining import sources
    from tests.conftest import write_sdist

    def sdist(version: str) -> Path:
        files = {"CHANGES.rst": f"{version}\n-----\n\n- Shout in capitals.\n\n1.0\n---\n\n- First.\n",
                 "shout.py": "def shout(text):\n    return text\n", "PKG-INFO": "Name: shout\n"}  # fmt: skip
        return write_sdist(tmp_path / f"shout-{version}.tar.gz", f"shout-{version}", files)

    def fake(name, version, cache):
        if version == "1.1":
            raise ConfigError(f"pypi:{name}=={version}: no sdist could be downloaded: none on the index")
        return sdist(version)

    monkeypatch.setattr(sources, "_sdist", fake)
    said: list[str] = []
    snapshots = sources.pypi_snapshots("shout", ["1.0", "1.1", "1.2"], tmp_path / "cache", said.append)
    assert [s.ref for s in snapshots] == ["1.0", "1.2"]
    assert any("SKIPPED 1.1" in line and "none on the index" in line for line in said), said
    assert snapshots[1].message == "- Shout in capitals." and "PKG-INFO" not in snapshots[1].files
    assert snapshots[1].files["shout.py"].startswith("def shout")


def test_an_sdist_comes_straight_from_the_configured_index_with_its_hash_checked(tmp_path, monkeypatch):
    """A real HTTP index speaking the JSON simple API, named by PIP_INDEX_URL as pip's
    configuration would."""
    import hashlib
    import http.server
    import json
    import threading

    from stamina_gym.mining import sources

    data = b"not really a tarball"
    good = hashlib.sha256(data).hexdigest()
    listing = {"files": [{"filename": "shout-1.2.tar.gz", "url": "../../files/shout-1.2.tar.gz", "hashes": {"sha256": good}},
                         {"filename": "shout-1.3.tar.gz", "url": "../../files/shout-1.3.tar.gz", "hashes": {"sha256": "0" * 64}},
                         {"filename": "shout-1.2-py3-none-any.whl", "url": "../../files/x.whl", "hashes": {}}]}  # fmt: skip

    class Index(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps(listing).encode() if self.path == "/simple/shout/" else data
            self.send_response(200)
            self.send_header("Content-Type", "application/vnd.pypi.simple.v1+json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Index)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("PIP_INDEX_URL", f"http://127.0.0.1:{server.server_port}/simple")
        got = sources._from_simple_index("Shout", "1.2", tmp_path)
        assert got.name == "shout-1.2.tar.gz" and got.read_bytes() == data
        with pytest.raises(ValueError, match="does not match the index's sha256"):
            sources._from_simple_index("shout", "1.3", tmp_path)
        with pytest.raises(KeyError, match="no sdist"):
            sources._from_simple_index("shout", "9.9", tmp_path)
    finally:
        server.shutdown()


def test_windows_line_ends_and_a_release_without_tests_do_not_break_the_task(tmp_path):
    seed = Snapshot("1", "Release 1", files={"shout.py": "def shout(text):\r\n    return text\r\n",
                                             "tests/test_shout.py": "from shout import shout\n\n\ndef test_same():\n    assert shout('a') == 'a'\n"})  # fmt: skip
    bare = Snapshot("2", "Release 2", files={"shout.py": "def shout(text):\r\n    return text + ''\r\n"})  # its sdist left the tests out
    step = Snapshot("3", "Release 3", files={"shout.py": "def shout(text):\r\n    return text.upper()\r\n",
                                             "tests/test_shout.py": "from shout import shout\n\n\ndef test_upper():\n    assert shout('a') == 'A'\n"})  # fmt: skip
    from stamina_gym.mining.sources import _keep

    files = [{rel: _keep(rel, text.encode()) for rel, text in s.files.items()} for s in (seed, bare, step)]
    snapshots = [Snapshot(s.ref, s.title, files=f) for s, f in zip((seed, bare, step), files)]
    result = mine(snapshots, tmp_path / "shout", runs=1)
    assert result.candidates == 1 and len(result.kept) == 1
    assert validate_task(load_task_dir(result.task)) == []


def test_a_releases_changelog_entry_is_found_in_a_changelog_or_the_readmes_history():
    from stamina_gym.mining.sources import _changelog_entry

    readme = "Intro\n\nVersion history\n---------------\n\n- 1.9.0 We now honor width specifiers\n  when parsing.\n- 1.8.4 Fixed a crash.\n"
    assert _changelog_entry({"README.rst": readme}, "1.9.0") == "We now honor width specifiers\n  when parsing."
    changes = "v5.3.0 (2023-01-22)\n===================\n\n- Add ``cache_info()``.\n\nv5.2.1 (2023-01-08)\n===\n\n- Fix.\n"
    assert _changelog_entry({"CHANGELOG.rst": changes, "README.rst": readme}, "5.3.0") == "- Add ``cache_info()``."
    assert _changelog_entry({"README.rst": readme}, "2.0.0") == ""
    # a README without a changelog section names versions in prose and tables: no entry
    benchmark = "Performance\n===========\n\n=================  ======\ntabulate (0.8.2)     13.1\nother (1.0)          2.0\n"
    assert _changelog_entry({"README.md": benchmark}, "0.8.2") == ""
    # a wrapped line that starts with a version number is no other release's
    wrapped = "1.5.0\n-----\n\n- Removed support for Python 2.4. This is because py.test no longer supports\n  2.4.\n\n- Lazy moves.\n\n1.4.1\n-----\n\n- x\n"
    assert _changelog_entry({"CHANGES": wrapped}, "1.5.0").endswith("supports\n  2.4.\n- Lazy moves.")


def test_a_mining_that_keeps_nothing_leaves_its_reasons_classified(tmp_path):
    """Each dropped step names its cause (a test dependency the sandbox lacks, helpers the
    tests import by their top-level name), and ``mining.yaml`` is written though no task is."""
    seed = Snapshot("1", "Release 1", files={"shout.py": "def shout(text):\n    return text\n",
                                             "tests/test_shout.py": "from shout import shout\n\n\ndef test_same():\n    assert shout('a') == 'a'\n"})  # fmt: skip
    needs_a_dependency = Snapshot("2", "Release 2", files={
        "shout.py": "def shout(text):\n    return text.upper()\n",
        "tests/test_shout.py": "import pretend_not_installed\nfrom shout import shout\n\n\ndef test_upper():\n    assert shout('a') == 'A'\n"})  # fmt: skip
    imports_its_helpers = Snapshot("3", "Release 3", files={
        "shout.py": "def shout(text):\n    return text.upper() + '!'\n",
        "tests/helpers/helpers_of_mine.py": "BANG = '!'\n",
        "tests/test_shout.py": "from helpers_of_mine import BANG\nfrom shout import shout\n\n\ndef test_bang():\n    assert shout('a') == 'A' + BANG\n"})  # fmt: skip
    out = tmp_path / "quiet"
    with pytest.raises(ConfigError, match="nothing to mine; why each was dropped: .*mining.yaml"):
        mine([seed, needs_a_dependency, imports_its_helpers], out, runs=1)  # helpers/ is no import root by default
    assert sorted(p.name for p in out.iterdir()) == ["mining.yaml"]  # no half task, the reasons kept
    report = yaml.safe_load((out / "mining.yaml").read_text(encoding="utf-8"))
    assert [(s["ref"], s["cause"]) for s in report["steps"]] == [("2", "missing-test-dependency"), ("3", "import-root")]
    assert "pretend_not_installed" in report["steps"][0]["first_error"]
    assert report["kept"] == 0 and report["candidates"] == 2


def _wheel(folder: Path, name: str, module: str) -> Path:
    """A pure-Python wheel of one module, made by hand (pip installs it offline)."""
    import base64
    import hashlib
    import zipfile

    files = {f"{name}.py": module, f"{name}-1.0.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
             f"{name}-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}  # fmt: skip
    record = [f"{rel},sha256={base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b'=').decode()},"
              f"{len(text.encode())}" for rel, text in files.items()]  # fmt: skip
    files[f"{name}-1.0.dist-info/RECORD"] = "\n".join([*record, f"{name}-1.0.dist-info/RECORD,,"]) + "\n"
    path = folder / f"{name}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for rel, text in files.items():
            archive.writestr(rel, text)
    return path


def test_a_recipe_names_what_the_project_needs_and_the_steps_are_kept(tmp_path):
    """The steps the mining above dropped for a test dependency and an import root are kept
    with a recipe that names them (a dependency installed into the task's support, the
    helpers' folder, a helper the release lacks); the tests folder itself is an import root
    without one; an ignored folder is neither product nor test; the recipe goes with the task."""
    seed = Snapshot("1", "Release 1", files={"shout.py": "def shout(text):\n    return text\n",
                                             "bench/run.py": "import shout\n",
                                             "tests/test_shout.py": "from shout import shout\n\n\ndef test_same():\n    assert shout('a') == 'a'\n"})  # fmt: skip
    needs_a_dependency = Snapshot("2", "Release 2", files={
        "shout.py": "def shout(text):\n    return text.upper()\n", "bench/run.py": "import shout  # faster\n",
        "tests/test_shout.py": "import loudcheck\nfrom lost_helpers import LOUD\nfrom shout import shout\n\n\n"
                               "def test_upper():\n    assert LOUD\n    loudcheck.loud(shout('a'))\n"})  # its sdist lacks lost_helpers  # fmt: skip
    imports_its_helpers = Snapshot("3", "Release 3", files={
        "shout.py": "def shout(text):\n    return text.upper() + '!'\n",
        "tests/helpers/helpers_of_mine.py": "BANG = '!'\n", "tests/common.py": "import loudcheck\n\nloud = loudcheck.loud\n",
        "tests/test_shout.py": "import common as c\nfrom helpers_of_mine import BANG\nfrom shout import shout\n\n\n"
                               "def test_bang():\n    c.loud(shout('a'))\n    assert shout('a').endswith(BANG)\n"})  # fmt: skip
    wheel = _wheel(tmp_path, "loudcheck", "def loud(text):\n    assert text.isupper(), text\n")
    recipe_file = tmp_path / "recipe.yaml"
    recipe_file.write_text(yaml.safe_dump({"test_dependencies": [str(wheel)], "test_import_roots": [".", "helpers"],
                                           "ignore": ["bench/**"], "notes": "loudcheck is the tests' own checker",
                                           "support_files": {"lost_helpers.py": "LOUD = True\n"}}))  # fmt: skip
    result = mine([seed, needs_a_dependency, imports_its_helpers], tmp_path / "loud", recipe=load_recipe(recipe_file), runs=1)
    assert [(s.ref, s.status) for s in result.steps] == [("2", "kept"), ("3", "kept")], [s.reason for s in result.steps]
    task = load_task_dir(result.task)
    assert (task.root / "support" / "loudcheck.py").is_file() and (task.root / "recipe.yaml").is_file()
    assert (task.root / "support" / "lost_helpers.py").read_text() == "LOUD = True\n"
    assert not (task.root / "repo" / "bench").exists() and not any("bench/" in t.reference_patch for t in task.turns)
    test_text = (task.turns[1].dir / "tests" / "test_shout.py").read_text()
    assert test_text.startswith("from . import common as c\nfrom .helpers.helpers_of_mine import BANG\nfrom shout import shout")


def test_a_test_that_passes_on_the_seed_is_no_turns_test(tmp_path):
    """A release breaks ``shout``, the next fixes it and adds its test, which fails just
    before the fix but passes on the seed: an agent that never touched the code would be
    paid for it. The step's other, new test keeps it."""
    test = "from shout import shout, whisper\n\n\ndef test_shout():\n    assert shout('a') == 'A'\n"
    seed = Snapshot("1", "R1", files={"shout.py": "def shout(text):\n    return text.upper()\n\n\ndef whisper(text):\n    return text\n",
                                      "tests/test_base.py": "def test_nothing_yet():\n    pass\n"})  # fmt: skip
    breaks_it = Snapshot("2", "R2", files={
        "shout.py": "def shout(text):\n    return text\n\n\ndef whisper(text):\n    return text.lower()\n",
        "tests/test_base.py": "from shout import whisper\n\n\ndef test_whisper():\n    assert whisper('A') == 'a'\n"})  # fmt: skip
    fixes_it = Snapshot("3", "R3", files={
        "shout.py": "def shout(text):\n    return text.upper()\n\n\ndef whisper(text):\n    return text.lower() + '...'\n",
        "tests/test_base.py": "from shout import whisper\n\n\ndef test_whisper():\n    assert whisper('A') == 'a...'\n",
        "tests/test_shout.py": test})  # fmt: skip
    result = mine([seed, breaks_it, fixes_it], tmp_path / "again", runs=1)
    last = result.steps[-1]
    assert last.status == "kept" and last.passes_earlier == ["02-r3/test_shout.py::test_shout"]
    assert last.tests == ["02-r3/test_base.py::test_whisper"]
    assert load_task_dir(result.task).turns[1].spec.tests == ("test_base.py::test_whisper",)


def test_the_notes_of_the_steps_a_turn_folds_in_are_in_its_prompt(tmp_path):
    """A release whose tests did not change is no candidate, and one whose tests do not
    discriminate is dropped: their changes fold into the next kept turn, and so do their
    notes, each under its release."""
    base = "def shout(text):\n    return text\n"
    seed = Snapshot("1", "Release 1", files={"shout.py": base, "tests/test_shout.py": "def test_nothing():\n    pass\n"})
    quiet = Snapshot("2", "Release 2", "Shouting is faster.", files={"shout.py": base + "\nFAST = True\n",
                                                                      "tests/test_shout.py": "def test_nothing():\n    pass\n"})  # fmt: skip
    kept = Snapshot("3", "Release 3", "Shout upper case.", files={
        "shout.py": "def shout(text):\n    return text.upper()\n\nFAST = True\n",
        "tests/test_shout.py": "from shout import shout\n\n\ndef test_upper():\n    assert shout('a') == 'A'\n"})  # fmt: skip
    result = mine([seed, quiet, kept], tmp_path / "notes", runs=1)
    prompts = load_task_dir(result.task).turns[0].spec.prompts
    assert all("Release 2:\nShouting is faster." in p and "Release 3:\nShout upper case." in p for p in prompts), prompts


def test_the_signatures_a_step_adds_or_changes_are_told_as_calls_the_signature_check_reads():
    """A new keyword of a public function, a private helper the tests call, a class's
    constructor, a function defined under a module-level ``if``; an unchanged method, an
    uncalled private function and a private class's method are not repeated."""
    from stamina_gym.signatures import told_shapes

    before = {"t.py": "def table(data, headers=()):\n    pass\n\n\ndef _align(c):\n    pass\n\n\ndef _hidden(x):\n    pass\n\n\n"
                      "class Box:\n    def __init__(self, x):\n        pass\n\n    def size(self, a, *, b=1):\n        pass\n\n\n"
                      "class _Hook:\n    def find(self, name):\n        pass\n"}  # fmt: skip
    after = {"t.py": before["t.py"].replace("headers=()", "headers=(), index=\"default\"").replace("_align(c)", "_align(c, multi=False)")
                     .replace("_hidden(x)", "_hidden(x, y)").replace("(self, x)", "(self, x, y=None)")
                     .replace("find(self, name)", "find(self, name, path=None)") + "\nif True:\n    def wrap(f, *, keep=True):\n        pass\n"
                     "\n\ndef assert_items(self, *args):\n    pass\n"}  # a function whose first parameter is called self  # fmt: skip
    told = changed_signatures(before, after, ["assert _align('a', multi=True)"])
    assert told == ["table(data, headers=..., index='default')", "_align(c, multi=False)", "Box(x, y=None)", "wrap(f, *, keep=True)",
                    "assert_items(self, *args)"]  # fmt: skip
    shapes = told_shapes(" ".join(f"`{signature}`" for signature in told))
    assert shapes["table"][0].fits(1, ["index"]) and shapes["_align"][0].fits(1, ["multi"]) and shapes["Box"][0].fits(2, [])


def test_the_public_functions_a_step_rewrites_are_named():
    """six 1.7's notes say add_metaclass; its tests check with_metaclass, which it rewrote."""
    before = {"six.py": "def with_metaclass(meta, *bases):\n    return meta('X', bases, {})\n\n\ndef add_metaclass(m):\n    pass\n\n\n"
                        "def _helper():\n    pass\n\n\nclass Box:\n    def size(self):\n        return 1\n"}  # fmt: skip
    after = {"six.py": before["six.py"].replace("return meta('X', bases, {})", "return type.__new__(meta, 'X', (), {})")
                       .replace("    pass\n\n\nclass", "    return 1\n\n\nclass").replace("return 1\n", "return 2\n")}  # fmt: skip
    assert changed_public_functions(_public_definitions(before), _public_definitions(after)) == ["with_metaclass", "Box.size"]


def test_a_bad_recipe_is_named(tmp_path):
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("test_dependencies: [pretend]\ntest_import_root: tests\n")
    with pytest.raises(ConfigError, match=r"recipe.yaml: .*test_import_root"):
        load_recipe(recipe)
    with pytest.raises(ConfigError, match="no such recipe file"):
        load_recipe(tmp_path / "absent.yaml")
    recipe.write_text(yaml.safe_dump({"test_dependencies": [str(tmp_path / "no-such-1.0-py3-none-any.whl")]}))
    out = tmp_path / "out"
    seed = Snapshot("1", "R1", files={"a.py": "A = 1\n", "tests/test_a.py": "def test_a():\n    pass\n"})
    step = Snapshot("2", "R2", files={"a.py": "A = 2\n", "tests/test_a.py": "def test_a():\n    assert 1\n"})
    with pytest.raises(ConfigError, match="test_dependencies did not install"):
        mine([seed, step], out, recipe=load_recipe(recipe), runs=1)
    assert not out.exists()


def test_a_first_error_is_classified():
    tests, product = {"tests/test_a.py": "", "tests/common/__init__.py": ""}, {"pkg/__init__.py": "", "solo.py": ""}
    assert classify("ModuleNotFoundError: No module named 'nose'", tests, product) == "missing-test-dependency"
    assert classify("ModuleNotFoundError: No module named 'common.util'", tests, product) == "import-root"
    assert classify("ImportError: cannot import name 'x' from 'pkg'", tests, product) == "collection-error"
    assert classify("ModuleNotFoundError: No module named 'solo'", tests, product) == "collection-error"
    assert classify("AssertionError: assert 1 == 2", tests, product) == "failing-assertion"
    assert classify("the test timed out after 60 s", tests, product) == "timeout"
    assert classify("ZeroDivisionError: division by zero", tests, product) == "failing-test"
    # a report escapes its traceback's line ends; the module raised as it was imported
    imported = 'File "/grade/tests/t/test_six.py", line 79, in <module>\\n    @py.test.mark\\nAttributeError: module \'py\' has no attribute \'test\''
    assert error_line(imported) == "AttributeError: module 'py' has no attribute 'test'"
    assert classify(imported, tests, product) == "collection-error"
    assert classify("Skipped: requires gdbm", tests, product) == "skipped"


def test_thin_notes_get_the_docstrings_of_what_the_step_adds_or_rewrites():
    """A release whose notes are thin (tabulate's "bug fixes"): the prompt says what the
    added and rewritten public functions do, in their docstrings' first paragraph; a
    function without one is left out, and rich notes get none."""
    from stamina_gym.mining.mine import THIN_NOTES, _prompts, docstrings
    from stamina_gym.mining.sources import Snapshot

    after = {"t.py": 'def tabulate(rows, fmt="simple"):\n    """Format rows as a table.\n\n    Long details."""\n\n\n'
                     'def simple_separated_format(sep):\n    """Construct a format with columns separated by sep."""\n\n\n'
                     "def plain(x):\n    return x\n\n\nclass Table:\n    def width(self):\n        '''The widest row, in characters.'''\n"}  # fmt: skip
    described = docstrings(["simple_separated_format", "plain", "Table.width", "tabulate"], _public_definitions(after))
    assert described == ["simple_separated_format: Construct a format with columns separated by sep.",
                         "Table.width: The widest row, in characters.", "tabulate: Format rows as a table."]  # fmt: skip
    snapshot = Snapshot(ref="0.8.1", title="tabulate 0.8.1", message="Bug fixes.")
    first, second = _prompts(snapshot, ["tabulate.py"], [], ["simple_separated_format"], [], described=described)
    assert "- `Table.width`: The widest row, in characters." in first and "Construct a format" in second
    assert len("Bug fixes.") < THIN_NOTES


def test_example_calls_come_from_the_turns_own_tests_and_never_from_all_of_them():
    """``f(literals) == literal`` from the turn's tests, for what the step adds or rewrites,
    one per test, from fewer tests than the turn has: the shown examples stay graded, and
    a turn with one test shows none."""
    from stamina_gym.mining.mine import _TestSources, examples

    tests = {"test_t.py": "import t\n\n\ndef test_simple():\n    assert t.tabulate([[1, 2]]) == '-  -\\n1  2\\n-  -'\n\n\n"
                          "def test_fmt():\n    assert 'x' == t.tabulate([[3]], fmt='plain')\n\n\n"
                          "def test_other():\n    rows = [[1]]\n    assert t.tabulate(rows) == '1'\n    assert t.width('ab') == 2\n"}  # fmt: skip
    ids = ["test_t.py::test_simple", "test_t.py::test_fmt", "test_t.py::test_other"]
    shown = examples(_TestSources(tests), ids, ["tabulate", "Table.width"])
    assert shown == ["t.tabulate([[1, 2]]) == '-  -\\n1  2\\n-  -'", "t.tabulate([[3]], fmt='plain') == 'x'"]
    assert examples(_TestSources(tests), ids[:1], ["tabulate"]) == []  # its only test


def test_a_turn_holds_a_bounded_change_and_the_seed_moves_past_a_larger_one(tmp_path):
    """With turns bounded to 20 changed lines of product code: a release that rewrites 40
    lines before any turn is kept becomes the seed (the task starts there), the next small
    release is a turn whose patch starts from it, and a later 40-line release is dropped
    with its cause, never a turn an agent could not be asked for in one request."""
    def product(version: int, lines: int) -> str:
        body = "".join(f"CONSTANT_{i} = {version}\n" for i in range(lines))
        return body + f"\n\ndef shout(text):\n    return text{'.upper()' if version >= 3 else ''}\n"

    def test(name: str, body: str) -> str:
        return f"from shout import shout\n\n\ndef test_{name}():\n    {body}\n"

    seed = Snapshot("1", "R1", files={"shout.py": product(1, 20), "tests/test_shout.py": test("same", "assert shout('a') == 'a'")})
    large = Snapshot("2", "R2", files={"shout.py": product(2, 20) + "\nLOUD = 1\n",
                                       "tests/test_shout.py": test("loud", "import shout as s\n    assert s.LOUD == 1")})  # fmt: skip
    small = Snapshot("3", "R3", files={"shout.py": product(2, 20).replace("return text\n", "return text.upper()\n") + "\nLOUD = 1\n",
                                       "tests/test_shout.py": test("upper", "assert shout('a') == 'A'")})  # fmt: skip
    larger = Snapshot("4", "R4", files={"shout.py": product(4, 20) + "\nLOUD = 2\n",
                                        "tests/test_shout.py": test("louder", "import shout as s\n    assert s.LOUD == 2")})  # fmt: skip
    result = mine([seed, large, small, larger], tmp_path / "bounded", runs=1, max_turn_lines=20)
    causes = [(step.ref, step.status, step.cause) for step in result.steps]
    assert causes == [("2", "dropped", "too-large"), ("3", "kept", ""), ("4", "dropped", "too-large")], causes
    assert "the task's seed moves to this release" in result.steps[0].reason
    assert "fold into the next kept turn" in result.steps[2].reason
    assert (result.task / "repo" / "shout.py").read_text() == large.files["shout.py"]
    patch = (result.task / "turns" / "01-r3" / "reference.patch").read_text()
    assert not [line for line in patch.splitlines() if line[:1] in "+-" and "CONSTANT_" in line] and "+    return text.upper()" in patch
    assert validate_task(load_task_dir(result.task)) == []

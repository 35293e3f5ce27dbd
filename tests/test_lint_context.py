"""pylint's verdict on a file is a function of the tree, not of what the process measured
before: results are keyed by the file and every module its imports reach, and astroid
forgets what a changed tree no longer holds. Each attack below is a real measurement with
the real worker, set against a fresh meter (new cache, new worker) on the same tree."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from stamina_gym.quality.analyzers import AnalysisWorker
from stamina_gym.quality.lint_context import EVERYTHING, MAX_IMPORTS, ambiguous, module_imports, module_names, reached
from stamina_gym.quality.measure import AnalysisCache, QualityMeter, Snapshot


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def messages(snapshot: Snapshot, rel: str) -> set[str]:
    return {symbol for _, symbol, _ in snapshot.files[rel].pylint}


@pytest.fixture
def worker():
    worker = AnalysisWorker()
    yield worker
    worker.close()


def fresh(tree: Path, scratch: Path) -> Snapshot:
    """The tree measured by a process that has seen nothing else."""
    worker = AnalysisWorker()
    try:
        return QualityMeter(scratch, AnalysisCache(), worker=worker).measure(tree)
    finally:
        worker.close()


CALLER = '"""Caller."""\nfrom pkg import helpers\n\nVALUE = helpers.make(1, 2)\n'
LOOSE = '"""Helpers."""\n\n\ndef make(*args):\n    """Make."""\n    return args\n'
STRICT = '"""Helpers."""\n\n\ndef make(one):\n    """Make."""\n    return one\n'


def test_a_file_is_judged_again_when_a_module_it_imports_changes(tmp_path, worker):
    tree = write(tmp_path / "tree", {"pkg/__init__.py": "", "pkg/helpers.py": LOOSE, "pkg/caller.py": CALLER})
    meter = QualityMeter(tmp_path / "scratch", AnalysisCache(), worker=worker)
    assert "too-many-function-args" not in messages(meter.measure(tree), "pkg/caller.py")
    write(tree, {"pkg/helpers.py": STRICT})  # the caller's text is unchanged
    after = meter.measure(tree)
    assert "too-many-function-args" in messages(after, "pkg/caller.py")
    assert after.files == fresh(tree, tmp_path / "fresh").files


def test_a_module_planted_measured_and_deleted_leaves_no_clean_verdict_behind(tmp_path, worker):
    """The meter-blinding attack: plant the module an erring file needs, let the meter
    see the file clean, delete the module. Through a directory cache shared by processes,
    as the reference store and a training fleet share one."""
    caller = '"""Caller."""\nfrom pkg import plant\n\nVALUE = plant.grow()\n'
    plant = '"""Plant."""\n\n\ndef grow():\n    """Grow."""\n    return 1\n'
    tree = write(tmp_path / "tree", {"pkg/__init__.py": "", "pkg/plant.py": plant, "pkg/caller.py": caller})
    meter = QualityMeter(tmp_path / "scratch", AnalysisCache(tmp_path / "cache"), worker=worker)
    clean = meter.measure(tree)
    assert not clean.files["pkg/caller.py"].pylint
    (tree / "pkg/plant.py").unlink()
    for judge in (meter, QualityMeter(tmp_path / "scratch2", AnalysisCache(tmp_path / "cache"), worker=worker)):
        blinded = judge.measure(tree)
        assert {"no-name-in-module"} <= messages(blinded, "pkg/caller.py"), blinded.files["pkg/caller.py"].pylint
        assert blinded.lint_note() < clean.lint_note()
    assert blinded.files == fresh(tree, tmp_path / "fresh").files


def test_a_module_that_appears_is_found_where_astroid_once_found_nothing(tmp_path, worker):
    """astroid remembers a failed lookup by name and importing file: a module added later
    must be looked for again, or the file keeps an import error it no longer has."""
    caller = '"""Caller."""\nfrom pkg import late\n\nVALUE = late.VALUE\n'
    tree = write(tmp_path / "tree", {"pkg/__init__.py": "", "pkg/caller.py": caller})
    meter = QualityMeter(tmp_path / "scratch", AnalysisCache(), worker=worker)
    assert "no-name-in-module" in messages(meter.measure(tree), "pkg/caller.py")
    write(tree, {"pkg/late.py": '"""Late."""\n\nVALUE = 1\n'})
    after = meter.measure(tree)
    assert not after.files["pkg/caller.py"].pylint
    assert after.files == fresh(tree, tmp_path / "fresh").files


def test_two_modules_of_one_name_each_judge_their_own_neighbours(tmp_path, worker):
    """astroid keeps parsed modules by name: with ``a/models.py`` and ``b/models.py``, the
    one parsed first would stand in for the other."""
    tree = write(tmp_path / "tree", {
        "a/models.py": '"""A."""\n\nALPHA = 1\n',
        "a/use.py": '"""Use."""\nimport models\n\nVALUE = models.ALPHA\n',
        "b/models.py": '"""B."""\n\nBETA = 1\n',
        "b/use.py": '"""Use."""\nimport models\n\nVALUE = models.BETA\n',
    })  # fmt: skip
    snapshot = QualityMeter(tmp_path / "scratch", AnalysisCache(), worker=worker).measure(tree)
    assert "no-member" not in messages(snapshot, "a/use.py") | messages(snapshot, "b/use.py")


def test_the_same_text_in_two_trees_gets_each_trees_verdict(tmp_path, worker):
    """The agent's meter and the reference's share one cache: a file whose text both trees
    hold is not judged by the other tree's neighbours."""
    loose = write(tmp_path / "loose", {"pkg/__init__.py": "", "pkg/helpers.py": LOOSE, "pkg/caller.py": CALLER})
    strict = write(tmp_path / "strict", {"pkg/__init__.py": "", "pkg/helpers.py": STRICT, "pkg/caller.py": CALLER})
    cache = AnalysisCache()
    first = QualityMeter(tmp_path / "s1", cache, worker=worker).measure(loose)
    second = QualityMeter(tmp_path / "s2", cache, worker=worker).measure(strict)
    assert "too-many-function-args" not in messages(first, "pkg/caller.py")
    assert "too-many-function-args" in messages(second, "pkg/caller.py")


def test_a_change_relints_the_files_that_reach_it_and_no_other(tmp_path, worker):
    tree = write(tmp_path / "tree", {
        "pkg/__init__.py": "", "pkg/helpers.py": LOOSE, "pkg/caller.py": CALLER,
        "pkg/top.py": '"""Top."""\nfrom pkg.caller import VALUE\n\nTOTAL = VALUE\n',
        "pkg/alone.py": '"""Alone."""\n\nX = 1\n',
    })  # fmt: skip
    meter = QualityMeter(tmp_path / "scratch", AnalysisCache(), worker=worker)
    meter.measure(tree)
    assert meter.analysed["pylint"] == 5
    write(tree, {"pkg/helpers.py": STRICT})
    meter.measure(tree)
    # helpers itself, caller (imports it), top (through caller); __init__ is reached by all
    # of them but reaches none; alone reaches only itself
    assert meter.analysed["pylint"] == 5 + 3
    assert meter.analysed["radon"] == 5 + 1


def test_reached_follows_chains_cycles_and_relative_imports():
    imports = {
        "pkg/__init__.py": [],
        "pkg/a.py": [(1, "b")],  # from . import b
        "pkg/b.py": [(0, "pkg.c")],
        "pkg/c.py": [(0, "pkg.b")],  # a cycle with b
        "pkg/d.py": [(0, "json")],  # nothing of the tree
        "other/e.py": [(0, "a")],  # no package: a sibling's name or nothing; conservatively pkg/a.py
    }
    found = reached(imports)
    assert found["pkg/a.py"] == {"pkg/a.py", "pkg/b.py", "pkg/c.py", "pkg/__init__.py"}
    assert found["pkg/b.py"] == found["pkg/c.py"] == {"pkg/b.py", "pkg/c.py", "pkg/__init__.py"}
    assert found["pkg/d.py"] == {"pkg/d.py"}
    assert found["other/e.py"] == {"other/e.py", "pkg/a.py", "pkg/b.py", "pkg/c.py", "pkg/__init__.py"}


def test_a_long_import_chain_and_a_file_of_endless_imports_are_bounded():
    chain = {f"m{i}.py": [(0, f"m{i + 1}")] for i in range(5000)}
    assert len(reached(chain)["m0.py"]) == 5000  # no recursion limit met
    many = "\n".join(f"import mod{i}" for i in range(MAX_IMPORTS + 1))
    assert module_imports(ast.parse(many)) == EVERYTHING
    tree = {"big.py": EVERYTHING, "x.py": [], "y.py": []}
    assert reached(tree)["big.py"] == {"big.py", "x.py", "y.py"}


def test_module_names_and_ambiguity():
    assert module_names("a/b/c.py") == ["a.b.c", "b.c", "c"]
    assert module_names("a/b/__init__.py") == ["a.b", "b"]
    assert not ambiguous(["todo/__init__.py", "todo/models.py", "todo/web.py"])
    assert ambiguous(["a/models.py", "b/models.py"])


def test_imports_anywhere_in_the_file_are_read():
    source = "import a.b\nfrom c import d, e\nfrom . import f\nfrom ..g import h\ndef x():\n    import i\n"
    assert module_imports(ast.parse(source)) == sorted(
        [(0, "a.b"), (0, "c"), (0, "c.d"), (0, "c.e"), (1, "f"), (2, "g"), (2, "g.h"), (0, "i")]
    )

"""Task authoring round trip: a task's reference solution as a git repository (one commit
per turn) and back to reference patches, with params kept as templates."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from stamina_gym.authoring import checkout, export
from stamina_gym.cli import main
from stamina_gym.errors import TaskError
from stamina_gym.task import load_task_dir
from tests.conftest import DATA


def git(repo, *args):
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t.invalid", *args], cwd=repo,
                          check=True, capture_output=True, text=True).stdout  # fmt: skip


@pytest.fixture
def task_dir(tmp_path):
    shutil.copytree(DATA / "clip", tmp_path / "clip")
    return tmp_path / "clip"


def test_checkout_renders_the_chosen_params_and_commits_each_turn(task_dir, tmp_path):
    done = checkout(task_dir, tmp_path / "repo", {"limit": "11"})
    assert done == {"params": {"limit": 11, "name": "clip"}, "turns": 1}
    assert git(tmp_path / "repo", "log", "--format=%s").split() == ["01-clip", "seed"]
    code = (tmp_path / "repo" / "calc" / "__init__.py").read_text()
    assert "LIMIT = 11" in code and "def clip(x):" in code


def test_export_keeps_templated_patches_whose_commit_is_unchanged_and_writes_new_turns(task_dir, tmp_path):
    repo = tmp_path / "repo"
    checkout(task_dir, repo, {"name": "cap"})
    before = (task_dir / "turns" / "01-clip" / "reference.patch").read_text()
    (repo / "calc" / "double.py").write_text("def double(x):\n    return 2 * x\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "02-double")

    assert export(task_dir, repo) == ["02-double"]
    assert (task_dir / "turns" / "01-clip" / "reference.patch").read_text() == before  # {{ limit }} survives
    patch = (task_dir / "turns" / "02-double" / "reference.patch").read_text()
    assert "+def double(x):" in patch and patch.startswith("diff --git a/calc/double.py")
    assert export(task_dir, repo) == []  # idempotent


def test_export_keeps_templates_of_a_changed_commit_and_in_later_context_lines(task_dir, tmp_path):
    repo = tmp_path / "repo"
    checkout(task_dir, repo)
    code = (repo / "calc" / "__init__.py").read_text()
    (repo / "calc" / "__init__.py").write_text(code.replace("x, at most LIMIT", "x, clipped at LIMIT"))
    git(repo, "commit", "-qa", "--amend", "-m", "01-clip")
    (repo / "calc" / "__init__.py").write_text(code.replace("LIMIT = 7\n", "LIMIT = 7\nFLOOR = 0\n"))
    git(repo, "commit", "-qam", "02-floor")

    assert export(task_dir, repo) == ["01-clip", "02-floor"]
    first = (task_dir / "turns" / "01-clip" / "reference.patch").read_text()
    assert "+LIMIT = {{ limit }}" in first and "+def {{ name }}(x):" in first and "clipped at LIMIT" in first
    second = (task_dir / "turns" / "02-floor" / "reference.patch").read_text()
    assert " LIMIT = {{ limit }}" in second and "+FLOOR = 0" in second  # context templated too


def test_export_refuses_a_changed_commit_that_drops_a_templated_line(task_dir, tmp_path):
    repo = tmp_path / "repo"
    checkout(task_dir, repo)
    (repo / "calc" / "__init__.py").write_text('"""Tiny calculator."""\n\nLIMIT = 1\n')
    git(repo, "commit", "-qa", "--amend", "-m", "01-clip")
    with pytest.raises(TaskError, match="01-clip.*no longer shows the templated line"):
        export(task_dir, repo)


def test_export_names_a_commit_that_is_no_turn(task_dir, tmp_path):
    repo = tmp_path / "repo"
    checkout(task_dir, repo)
    git(repo, "commit", "-q", "--allow-empty", "-m", "fix things")
    with pytest.raises(TaskError, match="'fix things' is not a turn folder name"):
        export(task_dir, repo)


def test_exported_patches_load_and_replay(task_dir, tmp_path):
    """A turn written in the repo becomes a loadable turn once its folder has a turn.yaml."""
    repo = tmp_path / "repo"
    checkout(task_dir, repo)
    (repo / "calc" / "neg.py").write_text("def neg(x):\n    return -x\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "02-neg")
    export(task_dir, repo)
    turn = task_dir / "turns" / "02-neg"
    (turn / "turn.yaml").write_text("title: Negation\nkind: feature\nprompts: [Add neg(x)., Please add neg.]\n")
    (turn / "tests").mkdir()
    (turn / "tests" / "test_neg.py").write_text("from calc.neg import neg\n\n\ndef test_neg():\n    assert neg(2) == -2\n")
    task = load_task_dir(task_dir)
    assert [t.id for t in task.turns] == ["01-clip", "02-neg"]
    again = tmp_path / "again"
    checkout(task_dir, again)
    assert (again / "calc" / "neg.py").read_text() == "def neg(x):\n    return -x\n"


def test_cli_checkout_reports_bad_params(task_dir, tmp_path, capsys):
    assert main(["author", "checkout", str(task_dir), str(tmp_path / "r"), "--param", "limit=99"]) == 2
    assert "limit='99' is not one of [7, 11, 13]" in capsys.readouterr().err
    assert main(["author", "checkout", str(task_dir), str(tmp_path / "r2"), "--param", "size=1"]) == 2
    assert "unknown param(s) ['size']" in capsys.readouterr().err
    assert main(["author", "checkout", str(task_dir), str(tmp_path / "r3")]) == 0
    assert main(["author", "export", str(task_dir), str(tmp_path / "r3")]) == 0
    assert "wrote reference.patch of 0 turn(s)" in capsys.readouterr().out


def test_export_rewrites_a_patch_that_only_applies_with_offsets(task_dir, tmp_path):
    """The mutation check reads line numbers from the hunk headers, so a patch whose
    context moved must be written again even though git would still apply it."""
    repo = tmp_path / "repo"
    checkout(task_dir, repo)
    (repo / "calc" / "neg.py").write_text("def neg(x):\n    return -x\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "02-neg")
    export(task_dir, repo)
    (repo / "calc" / "neg.py").write_text("'''Negation.'''\n\n\ndef neg(x):\n    return -x\n")
    git(repo, "commit", "-qam", "03-doc")
    (repo / "calc" / "neg.py").write_text("'''Negation.'''\n\n\ndef neg(x):\n    return -x\n\n\ndef pos(x):\n    return x\n")
    git(repo, "commit", "-qam", "04-pos")
    export(task_dir, repo)
    before = (task_dir / "turns" / "04-pos" / "reference.patch").read_text()
    # drop the docstring turn: 04's hunk now sits three lines higher
    git(repo, "rebase", "-q", "--onto", "HEAD~2", "HEAD~1")
    git(repo, "commit", "-q", "--amend", "-m", "04-pos")
    assert "04-pos" in export(task_dir, repo)
    after = (task_dir / "turns" / "04-pos" / "reference.patch").read_text()
    assert "@@ -1,2 +1,6 @@" in after and after != before

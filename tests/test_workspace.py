"""Every tool refuses paths that leave the workspace; patches fail with clear errors."""

from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest

from stamina_gym import safetree
from stamina_gym.errors import TreeTooLarge
from stamina_gym.workspace import Workspace
from tests.conftest import MINI, act

ESCAPES = ["../outside.txt", "/etc/passwd", "calc/../../x", "link_out/passwd", "link_file"]
PATH_TOOLS = [
    {"tool": "read_file"},
    {"tool": "write_file", "content": "x"},
    {"tool": "delete_file"},
    {"tool": "list_files"},
    {"tool": "search", "pattern": "root"},
]


@pytest.fixture
def env_with_links(env):
    act(env, tool="run", command="ln -s /etc link_out && ln -s /etc/passwd link_file")
    return env


@pytest.mark.parametrize("path", ESCAPES)
@pytest.mark.parametrize("action", PATH_TOOLS, ids=lambda a: a["tool"])
def test_every_tool_refuses_paths_out_of_the_workspace(env_with_links, action, path):
    output, reward, info = act(env_with_links, **action, path=path)
    assert info["ok"] is False, output
    assert output.startswith("error:") and ("refused" in output or "outside" in output)
    assert "root:x:0:0" not in output
    assert os.path.exists("/etc/passwd")


def test_patch_with_escaping_path_is_refused(env):
    patch = "--- a/../evil.py\n+++ b/../evil.py\n@@ -0,0 +1 @@\n+x = 1\n"
    output, _, info = act(env, tool="apply_patch", patch=patch)
    assert not info["ok"] and "'..' is refused" in output


def test_patch_that_does_not_apply_names_the_file_and_changes_nothing(env):
    patch = "--- a/calc/__init__.py\n+++ b/calc/__init__.py\n@@ -1 +1 @@\n-nothing like this\n+x = 1\n"
    before = (env.workspace.path / "calc/__init__.py").read_text()
    output, _, info = act(env, tool="apply_patch", patch=patch)
    assert not info["ok"] and "calc/__init__.py" in output and "does not apply" in output
    assert (env.workspace.path / "calc/__init__.py").read_text() == before


def test_a_rename_patch_applies_and_a_rename_out_of_the_workspace_is_refused(env):
    """A moved file is a rename in git's diff, with no ``---``/``+++`` lines when its text is
    unchanged (mined reference patches are made so)."""
    rename = "diff --git a/calc/__init__.py b/calc/core.py\nsimilarity index 100%\nrename from calc/__init__.py\nrename to calc/core.py\n"
    output, _, info = act(env, tool="apply_patch", patch=rename)
    assert info["ok"], output
    assert (env.workspace.path / "calc/core.py").is_file() and not (env.workspace.path / "calc/__init__.py").exists()
    escape = rename.replace("calc/core.py", "../core.py").replace("calc/__init__.py", "calc/core.py")
    output, _, info = act(env, tool="apply_patch", patch=escape)
    assert not info["ok"] and "'..' is refused" in output
    assert (env.workspace.path / "calc/core.py").is_file()


def test_binary_patch_is_refused(env):
    patch = "diff --git a/x.bin b/x.bin\nnew file mode 100644\nGIT binary patch\nliteral 3\nKcmZQzU|;|M00aO5\n"
    output, _, info = act(env, tool="apply_patch", patch=patch)
    assert not info["ok"] and "binary" in output


def test_not_a_diff_is_refused(env):
    output, _, info = act(env, tool="apply_patch", patch="please add a function")
    assert not info["ok"] and "not a unified diff" in output


def test_tools_read_write_search_and_references(env):
    act(env, tool="write_file", path="calc/extra.py", content="from calc import add\n\ndef twice(x):\n    return add(x, x)\n")
    output, _, _ = act(env, tool="read_file", path="calc/extra.py", start=3, end=4)
    assert "3| def twice(x):" in output and "4|     return add(x, x)" in output
    output, _, _ = act(env, tool="search", pattern=r"def \w+\(")
    assert "calc/extra.py:3:def twice(x):" in output
    output, _, _ = act(env, tool="find_references", symbol="add")
    assert "calc/extra.py:1: import" in output and "calc/extra.py:4: use" in output
    output, _, _ = act(env, tool="delete_file", path="calc/extra.py")
    assert output == "deleted calc/extra.py"
    assert not (env.workspace.path / "calc/extra.py").exists()


def test_each_turn_is_a_commit_that_can_be_checked_out(env):
    act(env, tool="apply_patch", patch=env.turns[0].reference_patch)
    _, _, info = act(env, tool="submit")
    first = info["commit"]
    act(env, tool="write_file", path="notes.txt", content="turn two\n")
    assert "+turn two" in env.workspace.diff(first)
    env.workspace.checkout(first)
    assert not (env.workspace.path / "notes.txt").exists()
    assert "def add" in (env.workspace.path / "calc/__init__.py").read_text()


# -- the workspace against its own tree -------------------------------------------------


@pytest.fixture
def workspace(tmp_path):
    ws = Workspace(tmp_path / "ws", MINI / "repo")
    ws.reset()
    yield ws
    safetree.rmtree(tmp_path / "ws")  # pytest prunes with shutil.rmtree, which recurses


def test_staging_is_what_git_add_all_stages(workspace):
    """Same .gitignore rules (a tracked file stays, an untracked ignored one stays out),
    exec bits, symlinks and odd names: the tree id equals git's own ``add -A``."""
    work = workspace.path
    (work / "keep.log").write_text("tracked before it was ignored\n")
    workspace.commit("turn 1")
    (work / ".gitignore").write_text("*.log\nbuild/\n")
    (work / "new.log").write_text("ignored\n")
    (work / "build").mkdir()
    (work / "build" / "out.txt").write_text("ignored folder\n")
    (work / "tool.sh").write_text("#!/bin/sh\n")
    (work / "tool.sh").chmod(0o755)
    (work / "link").symlink_to("calc/__init__.py")
    (work / "empty").write_bytes(b"")
    (work / "pkg" / "deep").mkdir(parents=True)
    (work / "pkg" / "deep" / "m.py").write_text("m = 1\n")
    os.symlink("tool.sh", os.fsencode(work) + b"/bad\xffname")
    (work / "new\nline").write_text("odd\n")
    before = workspace.git_dir / "index.before"
    shutil.copy(workspace.git_dir / "index", before)
    assert workspace.stage() is None
    ours = workspace.git("write-tree").stdout
    workspace.git("add", "-A", index=before)
    assert workspace.git("write-tree", index=before).stdout == ours


def test_commit_ids_are_those_of_git_commit(workspace):
    (workspace.path / "notes.txt").write_text("notes\n")
    ours = workspace.commit("turn 1")
    workspace.git("update-ref", "HEAD", "HEAD~1")
    workspace.git("commit", "-q", "--no-verify", "--allow-empty", "-m", "turn 1")
    assert workspace.head() == ours


def test_attributes_in_the_tree_are_unspecified_for_every_git(workspace):
    """GIT_ATTR_SOURCE hides the tree's .gitattributes from git >= 2.40; for an older git
    (simulated by dropping the variable) info/attributes unsets what git acts on."""
    (workspace.path / ".gitattributes").write_text("* working-tree-encoding=UTF-16 eol=crlf filter=x ident\n*.py binary\n")
    acted_on = ["text", "eol", "crlf", "filter", "ident", "working-tree-encoding", "diff", "merge", "binary"]
    check = ("check-attr", *acted_on, "--", "calc/__init__.py")

    def specified() -> list[str]:
        return [line for line in workspace.git(*check).stdout.splitlines() if not line.endswith(": unspecified")]

    assert specified() == []
    workspace._env.pop("GIT_ATTR_SOURCE")
    assert specified() == []
    (workspace.git_dir / "info" / "attributes").unlink()
    assert len(specified()) == len(acted_on) - 1, "the check above proves nothing"  # all but crlf


def test_checkout_wipes_any_tree_and_keeps_the_folder(workspace):
    work = workspace.path
    folder = os.stat(work).st_ino
    os.mkfifo(work / "pipe")
    deep = work.joinpath(*["d"] * 1200)
    subprocess.run(["mkdir", "-p", "--", deep], check=True)
    (deep / "f").write_text("x")
    subprocess.run(["git", "init", "-q", str(work / "nested")], check=True, capture_output=True)
    (work / "ro").mkdir()
    (work / "ro" / "f").write_text("x")
    (work / "ro").chmod(0o500)
    (work / "loop").symlink_to("loop")
    workspace.checkout("seed")
    assert sorted(e.rel for e in safetree.walk(work)) == ["README.md", "calc", "calc/__init__.py"]
    assert os.stat(work).st_ino == folder


def test_a_symlink_loop_resolves_to_itself(workspace):
    (workspace.path / "loop").symlink_to("loop")
    assert workspace.resolve("loop") == workspace.path / "loop"


def test_caps_stop_the_walk_and_stage_what_came_before(tmp_path):
    ws = Workspace(tmp_path / "ws", MINI / "repo", max_files=5, max_bytes=1 << 20)
    ws.reset()
    for i in range(6):
        (ws.path / f"f{i}").write_text(f"{i}\n")
    listing = ws.listing()
    assert isinstance(listing.over, TreeTooLarge) and listing.over.cap == "max_files" and len(listing.entries) == 5
    over = ws.stage()
    assert over is not None and over.cap == "max_files"
    # walked first: calc, README.md, f0, f1, f2; calc/__init__.py lies past the cap and stays
    assert ws.git("ls-files").stdout.split() == ["README.md", "calc/__init__.py", "f0", "f1", "f2"]
    with open(ws.path / "f0", "wb") as handle:
        handle.truncate(2 << 20)  # sparse: no disk, but its full size counts
    assert ws.listing().over.cap == "max_bytes"


def test_a_blob_id_is_never_reused_for_new_content(workspace):
    """Blob ids are remembered by stat; a rewrite of the same size within the same clock
    tick, or with its mtime put back, must still be hashed anew."""
    path = workspace.path / "same.txt"
    path.write_text("aaaa")
    workspace.stage()
    path.write_text("bbbb")
    workspace.stage()
    assert workspace.git("show", ":same.txt").stdout == "bbbb"
    time.sleep(1.1)
    workspace.stage()  # now remembered
    info = path.stat()
    path.write_text("cccc")
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    workspace.stage()
    assert workspace.git("show", ":same.txt").stdout == "cccc"

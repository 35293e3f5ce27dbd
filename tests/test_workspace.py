"""Every tool refuses paths that leave the workspace; patches fail with clear errors."""

from __future__ import annotations

import os

import pytest

from tests.conftest import act

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

"""safetree walks, reads, copies, hashes and removes trees an adversary wrote: nothing
in a tree may block it, recurse it past the limit, follow a link out, or make it write
more than the caps allow."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from stamina_gym import safetree
from stamina_gym.errors import ToolError, TreeTooLarge
from stamina_gym.grading.cache import tree_digest as cache_digest
from stamina_gym.grading.hidden import not_graded as grading_ignore

DEPTH = sys.getrecursionlimit() + 500


@pytest.fixture(autouse=True)
def _remove_deep_trees(tmp_path):
    """pytest prunes old temporary folders with shutil.rmtree, which recurses: the deep
    trees made here go at once."""
    yield
    safetree.rmtree(tmp_path, keep_root=True)


def ordinary_tree(root: Path) -> Path:
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("x = 1\n")
    (root / "pkg" / "sub" / "data.txt").write_text("data\n")
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    (root / "conftest.py").write_text("steering\n")
    (root / "pkg" / "__pycache__").mkdir()
    (root / "pkg" / "__pycache__" / "m.pyc").write_bytes(b"\0")
    (root / "link").symlink_to("pkg/__init__.py")
    (root / "dangling").symlink_to("nowhere")
    return root


def hostile_tree(root: Path) -> Path:
    ordinary_tree(root)
    os.mkfifo(root / "pipe")
    os.mkfifo(root / "pkg" / "pipe.py")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(root / "sock"))
    (root / "loop1").symlink_to("loop2")
    (root / "loop2").symlink_to("loop1")
    (root / "self").symlink_to(".")
    (root / "out").symlink_to("/etc")
    deep = root.joinpath(*["d"] * DEPTH)
    subprocess.run(["mkdir", "-p", "--", deep], check=True)  # pathlib and os.makedirs recurse
    (deep / "bottom.txt").write_text("bottom\n")
    with open(root / "sparse", "wb") as handle:
        handle.truncate(64 << 20)
    return root


def test_walk_is_os_walk_order_and_never_follows_a_link(tmp_path):
    root = ordinary_tree(tmp_path)
    (root / "to_pkg").symlink_to("pkg")
    expected = []
    for folder, dirs, _ in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not os.path.islink(os.path.join(folder, d)))
        real_dirs = dirs[:]
        others = sorted(set(os.listdir(folder)) - set(real_dirs))
        rel = os.path.relpath(folder, root)
        expected += [os.path.normpath(os.path.join(rel, name)) for name in [*real_dirs, *others]]
    entries = list(safetree.walk(root))
    assert [e.rel for e in entries] == expected
    kinds = {e.rel: e.kind for e in entries}
    assert kinds["to_pkg"] == "symlink" and kinds["pkg"] == "dir" and kinds["run.sh"] == "file"
    assert not any(e.rel.startswith("to_pkg/") for e in entries)


@pytest.mark.timeout(60)
def test_walk_skips_special_files_unless_asked_and_survives_loops_and_depth(tmp_path):
    root = hostile_tree(tmp_path)
    entries = {e.rel: e for e in safetree.walk(root)}
    assert "pipe" not in entries and "sock" not in entries and "pkg/pipe.py" not in entries
    assert entries["loop1"].kind == entries["self"].kind == "symlink"
    assert "/".join(["d"] * DEPTH) + "/bottom.txt" in entries
    special = {e.rel: e.kind for e in safetree.walk(root, special=True)}
    assert special["pipe"] == "fifo" and special["sock"] == "socket" and special["pkg/pipe.py"] == "fifo"


def test_walk_caps_count_every_entry_and_apparent_sizes(tmp_path):
    root = ordinary_tree(tmp_path)
    total = len(list(safetree.walk(root, special=True)))
    assert len(list(safetree.walk(root, max_files=total))) == total
    seen = []
    with pytest.raises(TreeTooLarge) as caught:
        seen.extend(safetree.walk(root, max_files=3))
    assert len(seen) == 3 and caught.value.cap == "max_files" and caught.value.limit == 3
    assert "max_files" in str(caught.value) and isinstance(caught.value, ToolError)
    with open(root / "sparse", "wb") as handle:  # a gigabyte that takes no disk
        handle.truncate(1 << 30)
    assert os.stat(root / "sparse").st_blocks == 0
    with pytest.raises(TreeTooLarge, match="max_bytes") as caught:
        list(safetree.walk(root, max_bytes=1 << 29))
    assert caught.value.cap == "max_bytes"


def test_walk_leaves_out_ignored_names_and_paths_past_the_length_limit(tmp_path):
    root = ordinary_tree(tmp_path)
    rels = {e.rel for e in safetree.walk(root, grading_ignore)}
    assert "conftest.py" not in rels and not any("__pycache__" in r for r in rels) and "pkg/__init__.py" in rels
    name = "n" * 200
    long_dir = root.joinpath(*[name] * 17)  # 3417 bytes below the root
    long_dir.mkdir(parents=True)
    (long_dir / "f").write_text("x")
    rels = {e.rel for e in safetree.walk(root)}
    assert all(len(r.encode()) <= safetree.MAX_REL_PATH for r in rels)
    assert "/".join([name] * 15) in rels and "/".join([name] * 16) not in rels


@pytest.mark.timeout(30)
def test_open_regular_refuses_pipes_sockets_links_and_folders_without_blocking(tmp_path):
    root = hostile_tree(tmp_path)
    for name in ("pipe", "sock", "pkg", "link", "loop1"):
        with pytest.raises(OSError):
            os.close(safetree.open_regular(root / name))
    assert safetree.read_bytes(root / "link", follow_symlinks=True) == b"x = 1\n"
    (root / "link_to_pipe").symlink_to("pipe")
    with pytest.raises(OSError, match="fifo"):
        safetree.read_bytes(root / "link_to_pipe", follow_symlinks=True)
    assert safetree.read_bytes(root / "pkg" / "sub" / "data.txt", limit=2) == b"da"
    assert safetree.count_lines(root / "pipe") == 0 and safetree.count_lines(root / "pkg" / "__init__.py") == 1


@pytest.mark.timeout(120)
def test_copy_tree_copies_what_grading_needs_and_nothing_it_must_not(tmp_path):
    src = hostile_tree(tmp_path / "src")
    os.chmod(src / "run.sh", 0o4755)  # set-id bits never reach a copy
    (src / "ro").mkdir()
    (src / "ro" / "f").write_text("f")
    os.chmod(src / "ro", 0o555)
    count, size = safetree.copy_tree(src, tmp_path / "dst", grading_ignore, max_files=10_000, max_bytes=100 << 20)
    dst = tmp_path / "dst"
    assert size == sum(e.stat.st_size for e in safetree.walk(src, grading_ignore) if e.kind == "file")
    assert count == len(list(safetree.walk(src, grading_ignore)))
    for name in ("pipe", "sock", "pkg/pipe.py", "conftest.py", "pkg/__pycache__"):
        assert not os.path.lexists(dst / name)
    assert os.readlink(dst / "out") == "/etc" and os.readlink(dst / "loop1") == "loop2"
    assert (dst / "pkg" / "__init__.py").read_text() == "x = 1\n"
    assert stat.S_IMODE(os.stat(dst / "run.sh").st_mode) == 0o755
    assert stat.S_IMODE(os.stat(dst / "ro").st_mode) == 0o555 and (dst / "ro" / "f").read_text() == "f"
    assert (dst.joinpath(*["d"] * DEPTH) / "bottom.txt").read_text() == "bottom\n"
    assert os.path.getsize(dst / "sparse") == 64 << 20
    assert os.stat(dst / "sparse").st_blocks * 512 < 1 << 20, "the hole must stay a hole"
    assert safetree.tree_digest(src, grading_ignore) == safetree.tree_digest(dst)


@pytest.mark.parametrize("cap", ["max_files", "max_bytes"])
def test_copy_tree_stops_at_a_cap_and_leaves_no_copy(tmp_path, cap):
    src = ordinary_tree(tmp_path / "src")
    for i in range(5):
        with open(src / f"big{i}", "wb") as handle:
            handle.truncate(100 << 20)
    limits = {"max_files": 8, "max_bytes": 250 << 20}
    with pytest.raises(TreeTooLarge) as caught:
        safetree.copy_tree(src, tmp_path / "dst", **{"max_files": None, "max_bytes": None, cap: limits[cap]})
    assert caught.value.cap == cap and cap in str(caught.value)
    assert not (tmp_path / "dst").exists()


def test_tree_digest_agrees_with_the_grading_cache_and_sees_every_change(tmp_path):
    root = ordinary_tree(tmp_path)
    first = safetree.tree_digest(root, grading_ignore)
    assert first == cache_digest(root, grading_ignore)
    assert safetree.tree_digest(root) == cache_digest(root)
    (root / "conftest.py").write_text("ignored, so no change\n")
    assert safetree.tree_digest(root, grading_ignore) == first
    changes = [
        lambda: (root / "pkg" / "sub" / "data.txt").write_text("other\n"),
        lambda: (root / "run.sh").chmod(0o644),
        lambda: ((root / "link").unlink(), (root / "link").symlink_to("run.sh")),
        lambda: (root / "pkg" / "empty").mkdir(),
    ]
    seen = {first}
    for change in changes:
        change()
        seen.add(safetree.tree_digest(root, grading_ignore))
    assert len(seen) == len(changes) + 1
    with pytest.raises(TreeTooLarge, match="max_files"):
        safetree.tree_digest(root, max_files=2)


@pytest.mark.timeout(60)
def test_tree_digest_of_a_hostile_tree_ignores_what_copy_tree_leaves_out(tmp_path):
    root = hostile_tree(tmp_path)
    digest = safetree.tree_digest(root)
    os.unlink(root / "pipe")
    assert safetree.tree_digest(root) == digest


@pytest.mark.timeout(60)
def test_rmtree_removes_any_depth_and_never_follows_a_link(tmp_path):
    root = hostile_tree(tmp_path / "victim")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("keep")
    (root / "to_outside").symlink_to(outside)
    safetree.rmtree(root, keep_root=True)
    assert root.is_dir() and not os.listdir(root)
    hostile_tree(root)
    safetree.rmtree(root)
    assert not os.path.lexists(root) and (outside / "keep").read_text() == "keep"
    safetree.rmtree(root)  # already gone: fine
    (tmp_path / "file").write_text("x")
    safetree.rmtree(tmp_path / "file")
    assert not (tmp_path / "file").exists()


def test_rmtree_empties_folders_their_owner_made_unwritable(tmp_path):
    """As their unprivileged owner (root passes every permission check, so as root the
    removal runs in a child that drops to nobody): folders without write or search
    permission are opened up, then removed."""
    base = Path(tempfile.mkdtemp(prefix="rmtree-", dir="/tmp")) if os.geteuid() == 0 else tmp_path
    root = base / "root"
    (root / "a" / "b" / "c").mkdir(parents=True)
    (root / "a" / "b" / "c" / "f").write_text("f")
    if os.geteuid() == 0:
        base.chmod(0o777)
        for path in [root, *root.rglob("*")]:
            os.chown(path, 65534, 65534)
    for folder, mode in (("a/b/c", 0o500), ("a/b", 0o000), ("a", 0o500)):
        (root / folder).chmod(mode)
    try:
        pid = os.fork()
        if pid == 0:  # the child only removes, then leaves without running pytest's cleanup
            try:
                if os.geteuid() == 0:
                    os.setgroups([])
                    os.setgid(65534)
                    os.setuid(65534)
                safetree.rmtree(root)
                os._exit(0 if not os.path.lexists(root) else 1)
            except BaseException:
                os._exit(2)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0 and not root.exists()
    finally:
        if base != tmp_path:
            safetree.rmtree(base)

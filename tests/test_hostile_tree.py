"""Nothing in the work tree makes a step raise or hang.

The agent can put any file in /repo through ``run``: named pipes and sockets, symlink
loops, folders nested past the recursion limit, sparse files of gigabytes, tens of
thousands of files, nested git repositories, ``.gitattributes`` and git configuration,
names with newlines and bytes that are not UTF-8. Every attack here goes through the
env's own tools; each step must answer with an observation, in time, without changing
what the env's own git does, and ``close()`` must leave nothing behind.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from stamina_gym.workspace import MAX_BYTES, MAX_FILES
from tests.conftest import mini_env

#: Longest a step may take here: the sandbox's command timeout is set to SANDBOX_TIMEOUT_S,
#: so ``run`` and ``run_tests`` on a tree that blocks them answer within it.
SANDBOX_TIMEOUT_S = 5
STEP_LIMIT_S = 20.0
RECURSION_LIMIT = sys.getrecursionlimit()
DEPTH = RECURSION_LIMIT + 200

#: Tree features whose submit is not checked yet: none (grading copies with
#: ``safetree.copy_tree``; the quality reader walks with ``safetree.walk``).
SUBMIT_PENDING: frozenset[str] = frozenset()


def hostile_env(backend: str = "local", **overrides):
    env = mini_env(sandbox={"kind": backend, "timeout_s": SANDBOX_TIMEOUT_S, "grading_timeout_s": 60}, **overrides)
    env.reset(seed=0)
    return env


def crowding() -> float:
    """How many runnable processes each core had over the last minute, at least 1: on a
    machine that other work keeps busy a step's wall clock stretches by about this much,
    so a bound is scaled by it (measured in the same run, when the step ends). A step
    that hangs or blows up still fails: its time grows without bound, the load does not."""
    return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))


def step(env, **action) -> tuple[str, dict, dict]:
    """One step that must answer in time with a valid observation: (output, observation, info)."""
    start = time.monotonic()
    observation, _, _, _, info = env.step(action)
    elapsed, limit = time.monotonic() - start, STEP_LIMIT_S * crowding()
    assert elapsed < limit, f"{action['tool']} took {elapsed:.1f} s, past {limit:.0f} s"
    assert env.observation_space.contains(observation)
    return observation["output"], observation, info


def run(env, command: str) -> str:
    output, _, _ = step(env, tool="run", command=command)
    assert output.startswith("[exit code 0]"), output[:500]
    return output


def closed_leaves_nothing(env) -> None:
    root = env.workspace.root.parent
    env.close()
    assert not os.path.lexists(root), "close() left the env's state folder behind"


def committed(env, commit: str) -> dict[str, str]:
    """path -> "mode type" of every entry of a commit, recursively."""
    out = env.workspace.git_bytes("ls-tree", "-r", "-z", commit).stdout
    entries = {}
    for record in filter(None, out.split(b"\0")):
        meta, path = record.split(b"\t", 1)
        mode, kind, _ = meta.split()
        entries[os.fsdecode(path)] = f"{mode.decode()} {kind.decode()}"
    return entries


# -- named pipes, sockets ---------------------------------------------------------------

MAKE_SPECIALS = (
    "mkfifo pipe calc/pipe.py .gitattributes && mkdir sub && mkfifo sub/.gitignore && "
    "python -c 'import socket; socket.socket(socket.AF_UNIX).bind(\"sock\")'"
)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("mode", ["tree", "diff", "full"])
def test_named_pipes_and_sockets_are_listed_never_opened(mode):
    env = hostile_env(observation={"repo": mode})
    run(env, MAKE_SPECIALS)
    output, observation, _ = step(env, tool="list_files")
    assert "pipe (named pipe, not read)" in output and "sock (socket, not read)" in output
    assert "calc/pipe.py (named pipe, not read)" in output
    for path in ("pipe", "sock", "calc/pipe.py"):
        output, _, info = step(env, tool="read_file", path=path)
        assert not info["ok"] and "not a regular file" in output
        output, _, info = step(env, tool="write_file", path=path, content="x")
        assert not info["ok"] and "not a regular file" in output
    output, _, info = step(env, tool="search", pattern="x", path="pipe")
    assert info["ok"], output
    step(env, tool="write_file", path="calc/ops.py", content="def add(a, b):\n    return a + b\n")
    step(env, tool="search", pattern="def")
    output, _, _ = step(env, tool="find_references", symbol="add")
    assert output == "calc/ops.py:1: definition"
    patch = "--- /dev/null\n+++ b/calc/extra.py\n@@ -0,0 +1 @@\n+x = 1\n"
    output, _, info = step(env, tool="apply_patch", patch=patch)
    assert not info["ok"] and ".gitattributes is a fifo" in output
    step(env, tool="delete_file", path=".gitattributes")
    output, observation, info = step(env, tool="apply_patch", patch=patch)
    assert info["ok"], output
    if mode == "diff":
        assert "+x = 1" in observation["repo"] and "pipe" not in observation["repo"]
    if mode == "full":
        assert "=== calc/extra.py ===\nx = 1" in observation["repo"]
    step(env, tool="delete_file", path="pipe")
    output, _, _ = step(env, tool="list_files")
    assert "pipe (named pipe" not in output.replace("calc/pipe", "")
    closed_leaves_nothing(env)


@pytest.mark.timeout(300)
def test_submit_with_named_pipes_and_sockets_in_diff_mode():
    env = hostile_env(observation={"repo": "diff"})
    try:
        run(env, MAKE_SPECIALS)
        _, _, info = step(env, tool="submit")
        assert "grade" in info and "pipe" not in committed(env, info["commit"])
    finally:
        closed_leaves_nothing(env)


# -- git: attributes, nested repositories, configuration -------------------------------

HOSTILE_ATTRIBUTES = "* working-tree-encoding=UTF-16 eol=crlf ident filter=evil -diff\n*.py text=auto binary\n"


@pytest.mark.timeout(180)
def test_gitattributes_in_the_tree_change_nothing_git_does():
    env = hostile_env(observation={"repo": "diff"})
    step(env, tool="write_file", path=".gitattributes", content=HOSTILE_ATTRIBUTES)
    step(env, tool="write_file", path="calc/.gitattributes", content="* working-tree-encoding=BOGUS\n")
    content = "x = 1\r\n# $Id$\n"
    output, observation, info = step(env, tool="write_file", path="calc/extra.py", content=content)
    assert info["ok"], output
    assert "+x = 1" in observation["repo"] and "$Id$" in observation["repo"] and "Binary files" not in observation["repo"]
    output, observation, info = step(env, tool="apply_patch", patch="--- a/README.md\n+++ b/README.md\n@@ -1 +1,2 @@\n # calc\n+more\n")
    assert info["ok"], output
    output, _, info = step(env, tool="submit")
    assert "grade" in info, output
    commit = info["commit"]
    work = env.workspace.path
    for path in ("calc/extra.py", "README.md", ".gitattributes"):
        assert env.workspace.git_bytes("show", f"{commit}:{path}").stdout == (work / path).read_bytes()
    env.workspace.checkout(commit)  # write the commit back out: nothing converted
    assert (work / "calc/extra.py").read_bytes() == content.encode()
    env.reset(seed=1)
    assert not (work / ".gitattributes").exists() and (work / "calc/__init__.py").is_file()
    closed_leaves_nothing(env)


@pytest.mark.timeout(180)
def test_a_nested_repository_is_a_plain_folder():
    env = hostile_env(observation={"repo": "diff"})
    run(env, "git init -q empty && echo a > empty/a.txt && git init -q full && echo b > full/b.txt && "
             "git -C full add -A && git -C full -c user.name=a -c user.email=a@b.c commit -qm x && "
             "mkdir gitfile && echo 'gitdir: /nowhere' > gitfile/.git && echo c > gitfile/c.txt")  # fmt: skip
    output, observation, _ = step(env, tool="list_files")
    assert all(f"{path} (1 lines)" in output for path in ("empty/a.txt", "full/b.txt", "gitfile/c.txt"))
    assert "+++ b/empty/a.txt" in observation["repo"] and "+++ b/full/b.txt" in observation["repo"]
    assert "Subproject commit" not in observation["repo"]
    output, _, info = step(env, tool="submit")
    assert "grade" in info, output
    entries = committed(env, info["commit"])
    for path in ("empty/a.txt", "full/b.txt", "gitfile/c.txt"):
        assert entries[path] == "100644 blob"
    assert not any(kind.endswith("commit") for kind in entries.values()), "a nested repository became a gitlink"
    assert not any(".git" in Path(path).parts for path in entries)
    closed_leaves_nothing(env)


@pytest.mark.timeout(180)
def test_git_configuration_in_the_tree_never_runs(tmp_path):
    marker = tmp_path / "ran"
    command = f"touch {marker}"
    config = f"[core]\\n\\tfsmonitor = {command}\\n\\thooksPath = hooks\\n[diff]\\n\\texternal = {command}\\n"
    env = hostile_env(observation={"repo": "diff"})
    run(env, f"printf '{config}' > .gitconfig && mkdir -p .git/hooks && printf '{config}' > .git/config && "
             f"printf '#!/bin/sh\\n{command}\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && "
             f"git init -q sub && printf '{config}' > sub/.git/config && echo s > sub/s.txt && "
             f"printf '[submodule \"sub\"]\\n\\tpath = sub\\n\\turl = ./sub\\n' > .gitmodules")  # fmt: skip
    step(env, tool="write_file", path="calc/extra.py", content="x = 1\n")
    step(env, tool="apply_patch", patch="--- a/README.md\n+++ b/README.md\n@@ -1 +1,2 @@\n # calc\n+more\n")
    output, _, info = step(env, tool="submit")
    assert "grade" in info, output
    entries = committed(env, info["commit"])
    assert entries["sub/s.txt"] == "100644 blob" and ".gitconfig" in entries
    env.reset(seed=1)
    closed_leaves_nothing(env)
    assert not marker.exists(), "the env's git ran a command from configuration in the tree"


# -- depth, loops -----------------------------------------------------------------------

DEEP = "/".join(["d"] * DEPTH)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("mode", ["tree", "diff", "full"])
def test_folders_nested_past_the_recursion_limit(mode):
    env = hostile_env(observation={"repo": mode})
    run(env, f"mkdir -p {DEEP} && echo 'def deep():\n    pass' > {DEEP}/deep.py && chmod 555 {DEEP} && chmod 000 d/d")
    output, observation, _ = step(env, tool="list_files")
    assert f"{DEEP}/deep.py (2 lines)" in output
    output, _, _ = step(env, tool="read_file", path=f"{DEEP}/deep.py")
    assert "def deep():" in output
    output, _, _ = step(env, tool="find_references", symbol="deep")
    assert f"{DEEP}/deep.py:1: definition" in output
    step(env, tool="search", pattern="deep")
    output, observation, info = step(env, tool="write_file", path="d/near.py", content="near = 1\n")
    assert info["ok"], output
    if mode == "diff":
        assert f"+++ b/{DEEP}/deep.py" in observation["repo"]
    closed_leaves_nothing(env)


@pytest.mark.timeout(180)
def test_symlink_loops_answer_with_errors_not_exceptions():
    env = hostile_env(observation={"repo": "diff"})
    run(env, "ln -s loop2 loop1 && ln -s loop1 loop2 && ln -s . self && mkdir d && ln -s ../d d/up && "
             "ln -s self/self/self/loop1 far && ln -s /etc/passwd out")  # fmt: skip
    for path in ("loop1", "far", "self/loop1", "d/up/up/up/x"):
        output, _, info = step(env, tool="read_file", path=path)
        assert not info["ok"] and output.startswith("error:")
        output, _, info = step(env, tool="write_file", path=f"{path}/x.py" if path == "loop1" else path, content="x")
        assert output.startswith(("error:", "wrote"))
    output, _, info = step(env, tool="write_file", path="self/via_self.txt", content="through a link\n")
    assert info["ok"] and (env.workspace.path / "via_self.txt").is_file()
    output, _, _ = step(env, tool="list_files")
    assert "loop1 -> symlink" in output and "self -> symlink" in output
    step(env, tool="find_references", symbol="add")
    step(env, tool="search", pattern="x")
    output, _, info = step(env, tool="delete_file", path="loop1")
    assert info["ok"], output
    output, _, info = step(env, tool="submit")
    assert "grade" in info, output
    assert committed(env, info["commit"])["loop2"] == "120000 blob"
    closed_leaves_nothing(env)


# -- size -------------------------------------------------------------------------------


@pytest.mark.timeout(180)
@pytest.mark.parametrize("mode", ["tree", "diff", "full"])
def test_sparse_files_count_at_their_full_size(mode):
    env = hostile_env(observation={"repo": mode})
    count = MAX_BYTES // (60 << 20) + 1
    run(env, f"for i in $(seq {count}); do truncate -s 60M big$i; done")  # gigabytes that take no disk
    output, observation, _ = step(env, tool="list_files")
    assert output.startswith("error:") and "max_bytes" in output and f"{MAX_BYTES} bytes" in output
    assert observation["repo"].startswith("error:") and "max_bytes" in observation["repo"]
    step(env, tool="write_file", path="calc/extra.py", content="x = 1\n")
    step(env, tool="find_references", symbol="add")
    closed_leaves_nothing(env)


@pytest.mark.timeout(300)
def test_submit_over_the_size_cap_is_a_resource_failure():
    env = hostile_env()
    try:
        run(env, f"for i in $(seq {MAX_BYTES // (60 << 20) + 1}); do truncate -s 60M big$i; done")
        output, _, info = step(env, tool="submit")
        assert info["grade"]["failure_class"] == "resource", output
    finally:
        closed_leaves_nothing(env)


# -- every step within its bound, on both backends ------------------------------------------

#: Folders of the deep tree: past the recursion limit, as a policy makes them with
#: ``os.mkdir``/``os.chdir`` in a loop; and files of the wide one: three times the cap.
DEEP_FOLDERS, MANY_FILES = 1200, 60_000
SOLVED = "def add(a, b):\n    return a + b\n"


def lay_deep(root: Path, depth: int) -> str:
    """Folders ``d`` nested ``depth`` deep below ``root``, made one level at a time through
    descriptors, with a module at the bottom; returns the module's path."""
    flags = os.O_RDONLY | os.O_DIRECTORY
    fd = os.open(root, flags)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            fd, parent = os.open("d", flags, dir_fd=fd), fd
            os.close(parent)
        out = os.open("deep.py", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(out, b"def deep():\n    return 1\n")
        os.close(out)
    finally:
        os.close(fd)
    return "d/" * depth + "deep.py"


def bounded(env, **action) -> tuple[str, dict]:
    """One step that must answer within the bound the env states for its tool."""
    start = time.monotonic()
    observation, _, _, _, info = env.step(action)
    elapsed, bound, factor = time.monotonic() - start, env.step_bound_s(action["tool"]), crowding()
    assert elapsed < bound * factor, f"{action['tool']} took {elapsed:.1f} s, past its bound of {bound:g} s x {factor:.1f}"
    assert env.observation_space.contains(observation)
    return observation["output"], info


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("tree", ["deep", "wide"])
def test_every_tool_and_submit_answer_within_their_bound(backend, tree):
    """A tree 1,200 folders deep and one of 60,000 files (laid from the host: what is
    checked is the steps on them, not how fast a loaded sandbox makes them). Every tool
    answers within ``step_bound_s`` (times ``crowding()`` where other work shares the cores); the deep tree is graded as any other, the wide one is
    a ``resource`` failure. Before the quality stage made its folders iteratively the deep
    submit raised RecursionError; before write_file handed only the new subtree to the
    sandbox user, a deep write took minutes on docker."""
    env = hostile_env(backend)
    try:
        root = env.workspace.path
        if tree == "deep":
            deep = lay_deep(root, DEEP_FOLDERS)
        else:
            (root / "many").mkdir()
            folder = os.open(root / "many", os.O_RDONLY | os.O_DIRECTORY)
            try:
                for name in range(MANY_FILES):
                    os.close(os.open(str(name), os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=folder))
            finally:
                os.close(folder)
        env._sandbox.prepare(root)
        output, _ = bounded(env, tool="list_files")
        assert (f"{deep} (2 lines)" in output) if tree == "deep" else ("max_files" in output and output.startswith("error:"))
        output, _ = bounded(env, tool="find_references", symbol="deep")
        assert (f"{deep}:1: definition" in output) if tree == "deep" else output.startswith("error:")
        if tree == "deep":
            output, _ = bounded(env, tool="read_file", path=deep)
            assert "def deep():" in output
        bounded(env, tool="search", pattern="def deep")
        far = "e/" * (DEEP_FOLDERS - 100)  # new folders, made by the tools themselves
        output, info = bounded(env, tool="write_file", path=f"{far}w.py", content="w = 1\n")
        assert info["ok"], output
        patch = f"--- /dev/null\n+++ b/f/{far}p.py\n@@ -0,0 +1 @@\n+p = 1\n"
        output, info = bounded(env, tool="apply_patch", patch=patch)
        assert info["ok"], output
        output, info = bounded(env, tool="delete_file", path=f"{far}w.py")
        assert info["ok"], output
        output, info = bounded(env, tool="write_file", path="calc/__init__.py", content=SOLVED)
        assert info["ok"], output
        output, _ = bounded(env, tool="run", command="true")
        assert output.startswith("[exit code 0]"), output
        bounded(env, tool="run_tests")
        output, info = bounded(env, tool="submit")
        assert info["grade"]["failure_class"] == (None if tree == "deep" else "resource"), output
    finally:
        closed_leaves_nothing(env)


# -- names ------------------------------------------------------------------------------


@pytest.mark.timeout(180)
def test_odd_names_are_shown_escaped_and_committed():
    env = hostile_env(observation={"repo": "diff"})
    run(env, "touch $'new\\nline.py' $'bad\\xffname.py' 'back\\slash' ' space ' -- -n && mkdir .GIT && touch .GIT/x && "
             "printf 'def odd():\\n    pass\\n' > $'\\xe9t\\xe9.py'")  # fmt: skip
    output, _, _ = step(env, tool="list_files")
    assert '"new\\nline.py" (0 lines)' in output and '"back\\\\slash" (0 lines)' in output
    assert '"bad\\xffname.py" (0 lines)' in output and ".GIT/x (0 lines)" in output
    output, _, _ = step(env, tool="find_references", symbol="odd")
    assert ":1: definition" in output
    for tool in ("read_file", "write_file", "delete_file", "list_files", "search"):
        action = {"tool": tool, "path": "lone\ud800.py", **({"content": ""} if tool == "write_file" else {}),
                  **({"pattern": "x"} if tool == "search" else {})}  # fmt: skip
        output, _, info = step(env, **action)
        assert not info["ok"] and "lone surrogate" in output
    output, _, info = step(env, tool="write_file", path="lone.txt", content="a\ud800b\n")
    assert info["ok"] and (env.workspace.path / "lone.txt").read_bytes() == b"a?b\n"
    output, _, info = step(env, tool="submit")
    assert "grade" in info, output
    entries = committed(env, info["commit"])
    assert {"new\nline.py", "back\\slash", " space ", "-n"} <= entries.keys()
    assert os.fsdecode(b"bad\xffname.py") in entries and os.fsdecode(b"\xe9t\xe9.py") in entries
    closed_leaves_nothing(env)


# -- everything at once: a property ----------------------------------------------------

_FOLDERS = (b".", b"calc", b"sub", b"sub/inner")
_NAMES = st.one_of(
    st.sampled_from([b"a", b"x.py", b"test_x.py", b"calc", b".gitignore", b".gitattributes", b".git", b".GIT", b"-rf",
                     b"__pycache__", b"new\nline", b"bad\xff", b"sp ace"]),
    st.binary(min_size=1, max_size=10).filter(lambda b: b"/" not in b and b"\0" not in b and b not in (b".", b"..")),
)  # fmt: skip
_ATTRIBUTE_LINES = [b"* working-tree-encoding=UTF-16", b"* working-tree-encoding=BOGUS", b"* eol=crlf ident",
                    b"* filter=evil -diff", b"* binary", b"*.py text=auto"]  # fmt: skip

#: One operation on the tree: (kind, folder, *arguments).
OPERATIONS = st.one_of(
    st.tuples(st.just("fifo"), st.sampled_from(_FOLDERS), _NAMES),
    st.tuples(st.just("socket"), st.sampled_from(_FOLDERS), _NAMES),
    st.tuples(st.just("symlink"), st.sampled_from(_FOLDERS), _NAMES,
              st.sampled_from([b".", b"..", b"../..", b"/etc/passwd", b"loop", b"calc", b"sub/inner"])),
    st.tuples(st.just("loop"), st.sampled_from(_FOLDERS), _NAMES),
    # Depths past the recursion limit are drawn as often as shallow ones: a tree 1,200
    # deep with a module at the bottom made submit raise before the quality stage was iterative.
    st.tuples(st.just("deep"), st.sampled_from(_FOLDERS), st.sampled_from([7, 300, DEPTH, DEPTH + 150])),
    st.tuples(st.just("sparse"), st.sampled_from(_FOLDERS), _NAMES, st.sampled_from([0, 3 << 20, 40 << 20])),
    st.tuples(st.just("many"), st.sampled_from(_FOLDERS), st.integers(1, 3000)),
    st.tuples(st.just("git_init"), st.sampled_from(_FOLDERS), st.booleans()),
    st.tuples(st.just("gitattributes"), st.sampled_from(_FOLDERS), st.sampled_from(_ATTRIBUTE_LINES)),
    st.tuples(st.just("gitconfig"), st.sampled_from(_FOLDERS)),
    st.tuples(st.just("file"), st.sampled_from(_FOLDERS), _NAMES, st.binary(max_size=40)),
    st.tuples(st.just("readonly"), st.sampled_from(_FOLDERS[1:]), st.sampled_from(["555", "000"])),
)  # fmt: skip
TREES = st.tuples(st.lists(OPERATIONS, min_size=1, max_size=6), st.sampled_from(["tree", "diff", "full"]))


def _quoted(data: bytes) -> str:
    """Any bytes as one bash word."""
    return "$'" + "".join(f"\\x{byte:02x}" for byte in data) + "'"


def script(operations: list[tuple], marker: Path) -> str:
    """The bash that builds the tree of ``operations`` in /repo; a command that fails
    (a name taken twice) is skipped. Permission changes come last."""
    lines = ["mkdir -p sub/inner"]
    for kind, folder, *args in sorted(operations, key=lambda op: op[0] == "readonly"):
        at = (lambda name: _quoted(folder + b"/" + name))
        if kind == "fifo":
            lines.append(f"mkfifo -- {at(args[0])}")
        elif kind == "socket":
            lines.append(f"python -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' {at(args[0])}")
        elif kind == "symlink":
            lines.append(f"ln -s -- {_quoted(args[1])} {at(args[0])}")
        elif kind == "loop":
            lines.append(f"ln -s -- {_quoted(args[0])} {at(args[0])}")
        elif kind == "deep":
            lines.append(f"mkdir -p -- {at(b'/'.join([b'd'] * args[0]))} && touch {at(b'/'.join([b'd'] * args[0]) + b'/x.py')}")
        elif kind == "sparse":
            lines.append(f"truncate -s {args[1]} -- {at(args[0])}")
        elif kind == "many":
            lines.append(f"mkdir -p {at(b'many')} && (cd {at(b'many')} && seq {args[0]} | xargs touch)")
        elif kind == "git_init":
            commit = f" && git -C {at(b'repo')} -c user.name=a -c user.email=a@b.c commit -q --allow-empty -m x"
            lines.append(f"git init -q {at(b'repo')}" + (commit if args[0] else ""))
        elif kind == "gitattributes":
            lines.append(f"printf '%s\\n' {_quoted(args[0])} >> {at(b'.gitattributes')}")
        elif kind == "gitconfig":
            config = f"[core]\\n\\tfsmonitor = touch {marker}\\n[diff]\\n\\texternal = touch {marker}\\n"
            lines.append(f"mkdir -p {at(b'.git')} && printf '{config}' > {at(b'.git/config')}")
        elif kind == "file":
            lines.append(f"printf '%s' {_quoted(args[1])} > {at(args[0])}")
        elif kind == "readonly":
            lines.append(f"chmod {args[0]} {_quoted(folder)}")
    return "\n".join(f"{{ {line} ; }} >/dev/null 2>&1" for line in lines) + "\ntrue"


def features(operations: list[tuple]) -> set[str]:
    """The kinds of operation in a tree; ``deep`` only past 300 levels (``shutil.copytree``
    spends two frames a level)."""
    found = {op[0] for op in operations} - {"deep"}
    return found | ({"deep"} if any(op[0] == "deep" and op[2] > 300 for op in operations) else set())


def check_hostile_tree(tree: tuple[list[tuple], str], marker: Path) -> None:
    """Build the tree through ``run``, then call every tool on it: each answers in time
    with a valid observation; submit too unless the tree has a ``SUBMIT_PENDING``
    feature; then a reset brings back the seed and close() leaves nothing."""
    operations, mode = tree
    env = hostile_env(observation={"repo": mode})
    workspace = env.workspace
    workspace.max_files, workspace.max_bytes = 2_000, 64 << 20  # so that trees here reach the caps
    try:
        step(env, tool="run", command=script(operations, marker))
        named = ("fifo", "socket", "symlink", "loop", "sparse", "file")
        paths = [os.fsdecode(op[1] + b"/" + op[2]) for op in operations if op[0] in named]
        for path in [*paths[:3], "calc/__init__.py"]:
            step(env, tool="read_file", path=path)
        step(env, tool="list_files")
        step(env, tool="search", pattern="a")
        step(env, tool="find_references", symbol="add")
        step(env, tool="write_file", path=paths[0] if paths else "calc/new.py", content="x = 1\n")
        step(env, tool="write_file", path="calc/new.py", content="y = 2\n")
        step(env, tool="run", command="ls -la")
        step(env, tool="run_tests")
        if not features(operations) & SUBMIT_PENDING:
            output, _, info = step(env, tool="submit")
            assert "grade" in info or output.startswith("error:"), output
        env.reset(seed=1)
        output, _, _ = step(env, tool="list_files")
        assert output == "README.md (1 lines)\ncalc/__init__.py (1 lines)", output
    finally:
        closed_leaves_nothing(env)
    assert not marker.exists(), "the env's git ran a command from configuration in the tree"


@contextlib.contextmanager
def recursion_limit(limit: int):
    """Hypothesis raises the recursion limit while it runs a test (room for its own
    frames), which would hide every recursion past the limit a trainer's process has:
    the env runs at ``limit`` here, and hypothesis's limit comes back after."""
    raised = sys.getrecursionlimit()
    sys.setrecursionlimit(limit)
    try:
        yield
    finally:
        sys.setrecursionlimit(raised)


@pytest.mark.timeout(600)
@settings(max_examples=9, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])  # fmt: skip
@given(tree=TREES)
@example(tree=([("deep", b"sub", DEPTH + 150), ("fifo", b"calc", b"x.py"), ("many", b".", 2500)], "full"))
def test_every_tool_answers_on_any_hostile_tree(tree, tmp_path):
    """Nine drawn trees (the same nine every run) and one that is always tried: folders
    past the recursion limit beside a pipe and files past the cap (the deep-tree crash
    of the quality stage was found by a drawn tree; now it no longer depends on the draw)."""
    with recursion_limit(RECURSION_LIMIT):
        check_hostile_tree(tree, tmp_path / "ran")


@pytest.mark.timeout(300)
def test_a_hostile_tree_is_graded_on_every_backend(backend):
    """Pipes, a socket, a link loop, folders past the recursion limit and a sparse file,
    all at once, then the same with sparse files over the size cap: the grading copy (and,
    on docker, the archive packed for the grade container) meets none of them."""
    env = hostile_env(backend)
    try:
        run(env, MAKE_SPECIALS)
        run(env, f"ln -s loop2 loop1 && ln -s loop1 loop2 && mkdir -p {DEEP} && truncate -s 50M sparse.bin")
        step(env, tool="write_file", path="calc/__init__.py", content="def add(a, b):\n    return a + b\n")
        output, _, info = step(env, tool="submit")
        assert info["grade"]["failure_class"] is None, output
        run(env, f"for i in $(seq {MAX_BYTES // (60 << 20) + 1}); do truncate -s 60M big$i; done")
        output, _, info = step(env, tool="submit")
        assert info["grade"]["failure_class"] == "resource", output
    finally:
        closed_leaves_nothing(env)

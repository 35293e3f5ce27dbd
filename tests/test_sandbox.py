"""Each guarantee of the sandbox, proved by a real attempt through the env's own ``run``
tool, against every backend (``backend`` fixture: local bubblewrap and docker); after
each attempt the env must keep working."""

from __future__ import annotations

import os
import secrets
import shutil
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

import pytest

from stamina_gym.config import SandboxConfig
from stamina_gym.sandbox import Mount, local
from stamina_gym.sandbox.local import LocalSandbox, bwrap_works
from tests.conftest import MINI, act, mini_env



@pytest.fixture
def env(sandboxed_env):
    return sandboxed_env


def still_works(env) -> None:
    output, _, info = act(env, tool="run", command="echo alive > alive.txt && cat alive.txt")
    assert info["ok"] and "alive" in output, output


def test_cannot_read_reference_patch_by_absolute_path(env):
    patch = MINI / "turns" / "01-add" / "reference.patch"
    assert patch.is_file()
    output, _, _ = act(env, tool="run", command=f"cat {patch}; ls {MINI}")
    assert "def add" not in output
    # absent under bubblewrap; in a container the path may fall under its own private /root
    assert "No such file" in output or "Permission denied" in output, output
    still_works(env)


def test_cannot_see_the_package_or_import_it(env):
    output, _, _ = act(env, tool="run", command="python -c 'import stamina_gym' 2>&1; ls /root /tmp")
    assert "ModuleNotFoundError" in output
    still_works(env)


def test_no_network(env):
    script = "import socket; s = socket.socket(); s.settimeout(3); s.connect(('1.1.1.1', 53)); print('CONNECTED')"
    output, _, _ = act(env, tool="run", command=f'python -c "{script}"')
    assert "CONNECTED" not in output
    assert "unreachable" in output or "Errno" in output
    still_works(env)


def test_cannot_write_outside_the_workspace(env, tmp_path):
    target = tmp_path / "escaped.txt"
    output, _, _ = act(env, tool="run", command=f"echo x > /etc/escaped; echo x > /usr/escaped; echo x > {target}; echo x > /tmp/ok && echo tmp-writable")
    assert "Read-only file system" in output or "Permission denied" in output
    assert not target.exists()
    assert "tmp-writable" in output
    still_works(env)


def test_memory_bomb_is_stopped(env):
    output, _, _ = act(env, tool="run", command="python -c 'x = bytearray(8 * 1024**3)'")
    assert "MemoryError" in output and "memory limit hit" in output
    still_works(env)


def test_fork_bomb_is_contained(backend):
    env = mini_env(sandbox={"kind": backend, "timeout_s": 10, "max_processes": 64})
    env.reset(seed=0)
    try:
        output, _, _ = act(env, tool="run", command="bomb() { bomb | bomb & }; bomb; sleep 2; echo survived")
        assert "fork" in output.lower() or "Resource temporarily unavailable" in output, output[-500:]
        still_works(env)
    finally:
        env.close()


def test_a_fork_bomb_in_one_env_does_not_starve_another(backend):
    """RLIMIT_NPROC counts the processes of a uid across the machine: were both sandboxes
    one uid, the bomb would leave the other env unable to start a process (its tests
    failing for what another episode's agent did). Each sandbox leases a uid of its own."""
    bomber = mini_env(sandbox={"kind": backend, "timeout_s": 10, "max_processes": 64})
    victim = mini_env(sandbox={"kind": backend, "timeout_s": 10, "max_processes": 64})
    try:
        bomber.reset(seed=0)
        victim.reset(seed=0)
        bombed = []
        thread = threading.Thread(target=lambda: bombed.append(
            act(bomber, tool="run", command="bomb() { bomb | bomb & }; bomb; sleep 6; echo survived")[0]))
        thread.start()
        time.sleep(2)  # the bomb now holds every process its uid may have
        output, _, info = act(victim, tool="run", command="for i in 1 2 3 4 5 6 7 8; do (echo job $i) & done; wait; echo alive")
        assert info["ok"] and "alive" in output and output.count("job ") == 8 and "fork" not in output.lower(), output
        act(victim, tool="apply_patch", patch=victim.turns[0].reference_patch)
        grade = act(victim, tool="submit")[2]["grade"]
        assert thread.is_alive(), "the bomb ended before the other env was tried"
        assert grade["failure_class"] is None and grade["passed"] == grade["total"] > 0, grade
        thread.join()
        assert "Resource temporarily unavailable" in bombed[0] or "fork" in bombed[0].lower(), bombed[0][-500:]
    finally:
        bomber.close()
        victim.close()


def test_tmp_cannot_fill_the_machines_memory(backend):
    """/tmp is a tmpfs, memory outside every process's RLIMIT_AS: it is sized."""
    env = mini_env(sandbox={"kind": backend, "tmp_mb": 32})
    env.reset(seed=0)
    try:
        # (not du of /tmp itself: the interpreter's folders are shown inside it when they lie there)
        command = "for i in 1 2 3 4; do head -c 20M /dev/zero > /tmp/f$i || echo FULL $i; done; cat /tmp/f* | wc -c"
        output, _, _ = act(env, tool="run", command=command)
        assert "No space left on device" in output and "FULL 2" in output, output
        assert int(output.split()[-1]) <= 32 << 20, output
        still_works(env)
    finally:
        env.close()


@pytest.mark.parametrize("writer", [
    "i=0; while :; do i=$((i+1)); head -c 8M /dev/zero > big$i; done",  # space
    "i=0; while :; do i=$((i+1)); : > empty$i; done",  # inodes
], ids=["bytes", "files"])  # fmt: skip
def test_a_command_cannot_fill_the_hosts_disk(backend, writer):
    """The workspace is a host folder: past the disk budget the command is killed. What it
    wrote by then is bounded by how fast the kill lands after the budget is seen: under a
    second here, but on a loaded 2-core machine a docker writer of 8 MB files got to 419 MB
    (budget 64 MB), and a local one to 1.08 GB with an episode's grading beside the suite;
    an unwatched one writes for the whole 30 s timeout (many GB), which the two bounds below
    catch."""
    env = mini_env(sandbox={"kind": backend, "timeout_s": 30, "disk_mb": 64, "disk_files": 500})
    env.reset(seed=0)
    try:
        start = time.monotonic()
        output, _, _ = act(env, tool="run", command=writer)
        assert "past the sandbox's disk budget" in output, output[-500:]
        assert time.monotonic() - start < 20, "killed by its timeout, not by the budget"
        written = sum(entry.stat().st_size for entry in os.scandir(env.workspace.path) if entry.is_file())
        assert written < 2 << 30
        still_works(env)
    finally:
        env.close()


def test_one_env_filling_the_disk_does_not_get_another_envs_run_killed():
    """The budget is read off the filesystem, which envs share: the writer must not be
    able to charge its writes to a run beside it (its tests would fail as a resource
    failure for another episode's doing)."""
    writer = mini_env(sandbox={"timeout_s": 30, "disk_mb": 64})
    bystander = mini_env(sandbox={"timeout_s": 30, "disk_mb": 64})
    try:
        writer.reset(seed=0)
        bystander.reset(seed=0)
        quiet: list[str] = []
        thread = threading.Thread(target=lambda: quiet.append(act(bystander, tool="run", command="sleep 3; echo done")[0]))
        thread.start()
        time.sleep(0.5)
        output, _, _ = act(writer, tool="run", command="i=0; while :; do i=$((i+1)); head -c 8M /dev/zero > big$i; done")
        thread.join()
        assert "past the sandbox's disk budget" in output, output[-300:]
        assert quiet[0].strip().endswith("done") and "disk budget" not in quiet[0], quiet[0]
    finally:
        writer.close()
        bystander.close()


def test_a_test_run_that_fills_the_disk_is_a_resource_failure():
    """The same through the hidden tests: the local backend grades a host copy of the tree."""
    env = mini_env(sandbox={"disk_mb": 64})
    env.reset(seed=0)
    try:
        filler = 'import itertools\nfor i in itertools.count():\n    open(f"/repo/junk{i}", "wb").write(bytes(8 << 20))\n'
        act(env, tool="write_file", path="calc/__init__.py", content=filler)
        grade = act(env, tool="submit")[2]["grade"]
        assert grade["failure_class"] == "resource" and "disk" in grade["detail"], grade
        still_works(env)
    finally:
        env.close()


def test_infinite_loop_is_killed_with_its_children(backend):
    env = mini_env(sandbox={"kind": backend, "timeout_s": 2})
    env.reset(seed=0)
    try:
        command = "(sleep 3; echo late > late.txt) & setsid sh -c 'sleep 3; echo late > late2.txt' & while true; do :; done"
        output, _, _ = act(env, tool="run", command=command)
        assert output.startswith("[timed out]")
        still_works(env)
        time.sleep(4)
        assert not (env.workspace.path / "late.txt").exists()
        assert not (env.workspace.path / "late2.txt").exists()
    finally:
        env.close()


def test_no_process_outlives_its_command(env):
    output, _, _ = act(env, tool="run", command="(sleep 1; echo late > late.txt) & setsid sh -c 'sleep 1; echo late > late2.txt' & echo started")
    assert "started" in output
    time.sleep(2)
    assert not (env.workspace.path / "late.txt").exists()
    assert not (env.workspace.path / "late2.txt").exists()


def test_huge_output_is_cut_with_a_marker(env):
    output, _, _ = act(env, tool="run", command="head -c 100000000 /dev/zero | tr '\\0' 'a'; echo END")
    assert len(output) < 50_000
    assert "bytes of output cut" in output or "killed after" in output
    still_works(env)


def test_file_size_limit(backend):
    env = mini_env(sandbox={"kind": backend, "file_size_mb": 1})
    env.reset(seed=0)
    try:
        output, _, _ = act(env, tool="run", command="head -c 5000000 /dev/zero > big.bin; ls -l big.bin")
        assert "File size limit exceeded" in output or "file_size limit hit" in output
        still_works(env)
    finally:
        env.close()


def test_secrets_in_the_environment_do_not_reach_the_sandbox(env, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-not-leak")
    output, _, _ = act(env, tool="run", command="env")
    assert "sk-should-not-leak" not in output


def test_runs_unprivileged_when_root(env):
    import os

    output, _, _ = act(env, tool="run", command="id -u; grep CapEff /proc/self/status")
    if os.geteuid() == 0:
        uid = int(output.splitlines()[1].strip())
        config = env.config.sandbox
        assert config.user <= uid < config.user + config.users  # its own lease (sandbox/users.py)
    assert "0000000000000000" in output


@pytest.mark.skipif(bwrap_works() is not None, reason=f"bubblewrap unusable: {bwrap_works()}")
def test_without_bwrap_it_warns_loudly_and_names_what_is_lost():
    env = mini_env(sandbox={"isolation": "rlimits", "timeout_s": 5})
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            env.reset(seed=0)
        messages = [str(w.message) for w in caught if w.category is RuntimeWarning]
        assert any("NO FILESYSTEM/NETWORK ISOLATION" in m and "not isolated" in m for m in messages), messages
        output, _, info = act(env, tool="run", command="echo fallback > f.txt && cat f.txt")
        assert "fallback" in output
        output, _, _ = act(env, tool="run", command="python -c 'x = bytearray(8 * 1024**3)'")
        assert "MemoryError" in output
        act(env, tool="apply_patch", patch=env.turns[0].reference_patch)
        _, reward, info = act(env, tool="submit")
        assert info["grade"]["failure_class"] is None
    finally:
        env.close()


def test_ipc_objects_do_not_outlive_their_command(env):
    output, _, _ = act(env, tool="run", command="ipcmk -M 4096 && ipcs -m")
    assert "Shared memory id" in output and "4096" in output, output
    output, _, _ = act(env, tool="run", command="ipcs -m")
    assert "4096" not in output, output


# -- the local sandbox shows the host by allow list --------------------------------------

local_only = pytest.mark.parametrize("backend", ["local"], indirect=True)


@pytest.fixture
def planted():
    """A marker file holding a random token, in a new folder at each of several places of
    the host the sandbox does not show (readable by anyone, so only the sandbox can keep it
    out). Yields (token, file name, paths); the folders are removed afterwards."""
    token = secrets.token_hex(16)
    name = f"marker-{token}.txt"
    places = ["/srv", "/opt", "/var/lib", "/work", "/mnt", "/etc", "/var/tmp", "/tmp", str(Path.home())]
    places.append(str(Path(sys.base_prefix).parent))  # next to the interpreter that is shown
    folders: list[Path] = []
    try:
        for place in places:
            if os.path.isdir(place) and os.access(place, os.W_OK):
                folder = Path(tempfile.mkdtemp(prefix="planted-", dir=place))
                folders.append(folder)
                folder.chmod(0o755)
                (folder / name).write_text(f"{token}\n")
                (folder / name).chmod(0o644)
        assert len(folders) >= 3, f"could plant markers in only {folders}"
        yield token, name, [folder / name for folder in folders]
    finally:
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)


def _lines(output: str) -> list[str]:
    """The command's own output lines, without the run tool's status line."""
    return output.splitlines()[1:]


@local_only
def test_host_folders_outside_the_allow_list_cannot_be_read_or_found(env, planted):
    token, name, markers = planted
    (env.workspace.path / name).write_text(f"{token}\n")  # the control: the workspace is shown
    output, _, _ = act(env, tool="run", command="; ".join(f"cat {m}" for m in [*markers, f"/repo/{name}"]))
    assert _lines(output).count(token) == 1, output  # the control only
    for marker in markers:
        assert f"cat: {marker}: No such file or directory" in output, output
    output, _, _ = act(env, tool="run", command=f"find / -path /proc -prune -o -name {name} -print 2>/dev/null")
    assert [line for line in _lines(output) if name in line] == [f"/repo/{name}"], output
    still_works(env)


@pytest.mark.slow
@local_only
def test_a_search_of_every_file_finds_no_planted_marker(backend, planted):
    token, name, _ = planted
    env = mini_env(sandbox={"kind": backend, "timeout_s": 300})
    env.reset(seed=0)
    try:
        (env.workspace.path / name).write_text(f"{token}\n")
        # Every file the sandbox shows of the marker's size, whatever its name or folder, is
        # read: a file holding the marker is one of them. (Reading every byte the sandbox
        # shows, the trainer's torch included, took 50 s and finds nothing more.)
        size = len(f"{token}\n".encode())
        command = (f"timeout 280 find / \\( -path /proc -o -path /sys -o -path /dev \\) -prune -o -type f -size {size}c "
                   f"-print0 2>/dev/null | xargs -0 -r grep -lsF {token}")  # fmt: skip
        output, _, _ = act(env, tool="run", command=command)
        # Exit 123 is for files the sandbox user may not read (grep's 2, through xargs); 124 would be the timeout.
        assert output.startswith(("[exit code 0]", "[exit code 123]")), output
        assert _lines(output) == [f"/repo/{name}"], output
    finally:
        env.close()


@local_only
def test_python_pytest_and_the_usual_tools_work_inside(env):
    checks = {
        "python -c 'import pytest, sqlite3, ssl, socket; socket.getaddrinfo(\"localhost\", \"http\")'"
        " && echo py-ok": "py-ok",
        "python -m pytest --version": "pytest",
        "cd /tmp && git init -q g && cd g && git -c user.name=a -c user.email=a@b commit -q --allow-empty -m x"
        " && git log --format=git-ok": "git-ok",
        "echo a b | awk '{print $2 \"-awk-ok\"}'": "b-awk-ok",
        "ls /usr/bin | sort | head -1 | wc -l | sed s/1/coreutils-ok/": "coreutils-ok",
        "id -un": "sandbox" if os.geteuid() == 0 else "",
    }
    if shutil.which("sqlite3"):
        checks["sqlite3 :memory: \"select 'sqlite-ok';\""] = "sqlite-ok"
    for command, expected in checks.items():
        output, _, info = act(env, tool="run", command=command)
        assert info["ok"] and expected in output, (command, output)


def test_the_package_is_hidden_inside_a_shown_site_packages(tmp_path, monkeypatch):
    """A non-editable install puts the package in site-packages, which the sandbox shows."""
    if bwrap_works() is not None:
        pytest.skip(f"bubblewrap unusable: {bwrap_works()}")
    site_packages = tmp_path / "venv" / "lib" / "site-packages"
    package = site_packages / "stamina_gym"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("SECRET = 1\n")
    (site_packages / "neighbour.py").write_text("OK = 'neighbour-ok'\n")
    for folder in (tmp_path, *(tmp_path / "venv").rglob("*")):
        folder.chmod(0o755 if folder.is_dir() else 0o644)
    shown = local.shown_paths
    monkeypatch.setattr(local, "_PACKAGE_DIR", package)
    monkeypatch.setattr(local, "shown_paths", lambda: [*shown(), tmp_path / "venv"])
    sandbox = LocalSandbox(SandboxConfig(), hidden=[])
    hidden = local.default_hidden_paths()  # the package and our metadata, not the whole site-packages
    assert hidden[0] == package and site_packages not in hidden
    assert all(p.name.endswith((".dist-info", ".egg-info")) for p in hidden[1:])
    (tmp_path / "ws").mkdir(mode=0o755)
    mounts = [Mount(tmp_path / "ws", "/repo")]
    script = f"import sys; sys.path.insert(0, {str(site_packages)!r}); import neighbour; print(neighbour.OK)"
    script += "; from stamina_gym import SECRET; print('leaked', SECRET)"
    result = sandbox.run([sandbox.python, "-c", script], mounts=mounts)
    assert "neighbour-ok" in result.output and "leaked" not in result.output, result.output
    assert "cannot import name 'SECRET'" in result.output, result.output  # an empty folder there
    listing = sandbox.run(["ls", "-A", str(package)], mounts=mounts)
    assert listing.ok and listing.output.strip() == "", listing.output


def test_the_quality_caches_are_hidden_even_inside_a_shown_folder(tmp_path, monkeypatch):
    """The reference's kept analysis and the shared analysis cache may sit where the
    sandbox shows the host (under a shown prefix): the agent's code can neither read
    them nor plant results in them."""
    if bwrap_works() is not None:
        pytest.skip(f"bubblewrap unusable: {bwrap_works()}")
    shown_root = tmp_path / "shown"
    stores = {"reference": shown_root / "reference", "analysis": shown_root / "analysis"}
    for folder in stores.values():
        folder.mkdir(parents=True)
        (folder / "planted-before.json").write_text("{}")
    for folder in (tmp_path, shown_root, *stores.values()):
        folder.chmod(0o755)
    shown = local.shown_paths
    monkeypatch.setattr(local, "shown_paths", lambda: [*shown(), shown_root])
    env = mini_env(quality={"reference_cache_dir": str(stores["reference"]), "cache_dir": str(stores["analysis"])})
    try:
        env.reset(seed=0)
        for folder in stores.values():
            output, _, _ = act(env, tool="run", command=f"ls -A {folder}; echo x > {folder}/planted.json; echo done")
            assert "planted-before" not in output and "done" in output, output
            assert not (folder / "planted.json").exists()
        output, _, _ = act(env, tool="run", command=f"ls {shown_root}")
        assert "reference" in output  # the shown folder itself is there: only the caches are hidden
    finally:
        env.close()

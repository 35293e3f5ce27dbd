"""Each guarantee of the sandbox, proved by a real attempt through the env's own ``run``
tool, against every backend (``backend`` fixture: local bubblewrap and docker); after
each attempt the env must keep working."""

from __future__ import annotations

import time
import warnings

import pytest

from stamina_gym.sandbox.local import bwrap_works
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
    assert "No such file" in output
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
        assert output.splitlines()[1].strip() == "65534"
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

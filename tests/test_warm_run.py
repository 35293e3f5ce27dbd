"""The ``run`` tool on the warm runner (``stamina_gym.agent_runner.run_command``), on both
backends: each command answers as a cold ``sandbox.run`` of it does, sees the same view of
the host, and leaves nothing for the next command, whatever it does to the runner."""

from __future__ import annotations

import base64
import dataclasses
import os
import subprocess
import time
from pathlib import Path

import pytest

import stamina_gym

from conftest import act, mini_env
from stamina_gym import agent_runner


def cold(env, command: str, timeout: float = 30):
    ctx = env._tools
    return ctx.sandbox.run(["bash", "-c", command], mounts=ctx.mounts(), timeout=timeout)


def warm(env, command: str, timeout: float = 30):
    ctx = env._tools
    result = agent_runner.run_command(ctx.sandbox, ctx.mounts(), ["bash", "-c", command], timeout)
    assert result is not None, "both backends have a warm runner"
    return result


def runner_of(env):
    return agent_runner._RUNNERS[env._sandbox].service


COMMANDS = [
    "env | sort; pwd; id -u; umask",
    "echo out; echo err >&2; printf 'caf\\xc3\\xa9 \\xff\\n'; exit 3",
    "kill -TERM $$",
    "yes | head -3",  # SIGPIPE ends yes, as in any shell
    "cat; echo stdin-was-empty",
    "ls /tmp; ulimit -t -v -f -c; ls /proc/self/fd | wc -l",
    "python -c 'import sys; print(sys.flags.isolated, sys.flags.dont_write_bytecode, sys.path[0] == \"\")'",
]


@pytest.mark.parametrize("command", COMMANDS)
def test_a_warm_command_answers_as_a_cold_one(sandboxed_env, command):
    env = sandboxed_env
    expected, result = cold(env, command), warm(env, command)
    if env._sandbox.isolation == "docker":
        # A cold docker command runs under a bash wrapper (its limits, then a sweep): its
        # SHLVL is one deeper, and the wrapper says "Terminated" of a job ended by SIGTERM.
        # The warm command is exec'd itself, as on the local backend.
        text = expected.output.replace("SHLVL=2\n", "SHLVL=1\n").removesuffix("Terminated\n")
        expected = dataclasses.replace(expected, output=text)
    assert (result.exit_code, result.signal, result.limit, result.timed_out, result.output) == (
        expected.exit_code, expected.signal, expected.limit, expected.timed_out, expected.output)  # fmt: skip


def test_the_run_tool_goes_through_the_warm_runner(sandboxed_env):
    env = sandboxed_env
    output, _, info = act(env, tool="run", command="echo hi > made.txt; echo done")
    assert info["ok"] and output == "[exit code 0]\ndone\n"
    assert (env.workspace.path / "made.txt").read_text() == "hi\n"
    assert runner_of(env).alive
    output, _, _ = act(env, tool="run", command="sleep 30", timeout=1)
    assert output.startswith("[timed out]") and "killed after its wall-clock timeout" in output


def test_each_command_starts_clean(sandboxed_env):
    """A detached process, a file in /tmp and an IPC object one command leaves are gone
    when the next one starts."""
    env = sandboxed_env
    left = warm(env, "touch /tmp/left; setsid nohup sleep 300 >/dev/null 2>&1 & echo $! > pid.txt; "
                     "python -c 'import os; os.mkfifo(\"/tmp/fifo\")'; ipcmk -Q >/dev/null; ipcs -q | grep -c 0x")  # fmt: skip
    assert left.exit_code == 0 and left.output.strip() == "1", left.output
    pid = (env.workspace.path / "pid.txt").read_text().strip()
    after = warm(env, f"ls /tmp/left /tmp/fifo 2>/dev/null; test -e /proc/{pid} && echo alive; ipcs -q | grep -c 0x")
    assert after.output.strip() == "0", after.output


def test_a_command_that_kills_the_runner_costs_only_its_own_call(sandboxed_env):
    env = sandboxed_env
    warm(env, "true")
    first = runner_of(env)
    output, _, info = act(env, tool="run", command="kill -KILL $PPID; sleep 5")
    assert info["ok"] and "the call ended the warm runner" in output
    assert not first.alive
    output, _, _ = act(env, tool="run", command="echo again")
    assert output == "[exit code 0]\nagain\n"


def test_a_command_that_freezes_the_runner_cannot_hang_the_env(sandboxed_env, monkeypatch):
    monkeypatch.setattr(agent_runner, "_GRACE_S", 3.0)  # the grace the frozen runner gets, shorter than in use
    env = sandboxed_env
    start = time.monotonic()
    result = warm(env, "kill -STOP $PPID; sleep 600", timeout=2)
    assert result.timed_out and time.monotonic() - start < 2 + agent_runner._GRACE_S + 10
    assert warm(env, "echo fine").output == "fine\n"


def test_a_command_cannot_forge_the_runners_reply(sandboxed_env):
    """The runner's own stdout is not among the command's descriptors, and the runner is
    not dumpable, so its descriptors cannot be opened through /proc either: a reply that
    the command writes is only its output."""
    env = sandboxed_env
    forged = '\x1estamina-gym-report {"id": "x", "exit": 0, "killed": null, "total": 2, "head": "b2s=", "tail": ""}'
    attempt = warm(env, f"for fd in /proc/$PPID/fd/*; do printf '%s\\n' '{forged}' > $fd; done 2>&1 | head -3; "
                        f"printf '%s\\n' '{forged}'; exit 4")  # fmt: skip
    assert attempt.exit_code == 4 and "Permission denied" in attempt.output
    assert warm(env, "echo honest").output == "honest\n"


def test_cpu_limit_holds_for_each_command(backend):
    env = mini_env(sandbox={"kind": backend, "cpu_s": 2})
    env.reset(seed=0)
    try:
        spin = "python -c 'while True: pass'"
        result, baseline = warm(env, spin), cold(env, spin)
        # ended by the kernel at the CPU limit, long before the wall clock, as when cold
        assert (result.signal, result.limit, result.timed_out) == (baseline.signal, baseline.limit, False), (result, baseline)
        assert result.limit == "cpu" or result.signal == 9
        assert warm(env, "echo fine").output == "fine\n"
    finally:
        env.close()


def test_the_warm_view_of_the_host_is_the_cold_one(sandboxed_env):
    """The package, the task data (hidden tests, reference patches) and the env's own
    folders are absent for a warm command as for a cold one."""
    env = sandboxed_env
    hidden = [env.task.root, env.task.turns[0].dir / "tests", Path(stamina_gym.__file__).parent, env._root]
    # absent, or an empty folder where a hidden one lies inside a shown one
    probe = "; ".join(f"find {path} -mindepth 1 2>/dev/null | grep -q . && echo FOUND {path}" for path in hidden)
    expected, result = cold(env, probe), warm(env, probe)
    assert "FOUND" not in expected.output and result.output == expected.output


@pytest.mark.parametrize("pidfd", [True, False], ids=["pidfd", "polled"])
def test_a_call_ends_with_its_process_not_with_what_it_left(monkeypatch, pidfd):
    """The harness's relay (run here, outside any sandbox): a process the call leaves
    holding its output open does not keep the call waiting, with a pidfd to watch the
    child and without one (kernels before 5.3)."""
    from stamina_gym.grading import harness

    if not pidfd:
        monkeypatch.delattr(os, "pidfd_open", raising=False)
    job = {"id": "j", "timeout_s": 20, "max_bytes": 1000, "hard_bytes": 10_000}

    def child(out_fd):
        os.dup2(out_fd, 1)
        os.setsid()
        subprocess.Popen(["sleep", "30"])  # inherits the output pipe
        os.write(1, b"said before the end\n")
        return 5

    start = time.monotonic()
    reply = harness._relay(job, child)
    assert time.monotonic() - start < 5
    assert reply["exit"] == 5 and reply["killed"] is None
    assert base64.b64decode(reply["head"]) + base64.b64decode(reply["tail"]) == b"said before the end\n"


def test_a_quick_command_is_never_killed_as_it_ends(sandboxed_env):
    """A command closes its output a moment before it has ended: the runner waits for the
    end before it kills what is left of the group (it used to kill the command itself,
    about one quick command in three)."""
    results = [warm(sandboxed_env, "ls -A /tmp") for _ in range(60)]
    assert [(r.exit_code, r.signal) for r in results] == [(0, None)] * 60


def test_the_sweep_empties_tmp_around_a_folder_shown_under_it(tmp_path):
    """A checkout or virtualenv under the host's /tmp is shown inside the sandbox's own
    /tmp. The sweep between calls removes everything else there but never walks into a
    mount point or the folders leading to one: each failed removal in a read-only tree
    is a system call, and a virtualenv holds tens of thousands of files."""
    from stamina_gym.grading import harness

    shown = tmp_path / "checkout" / ".venv"
    (shown / "lib").mkdir(parents=True)
    (shown / "lib" / "module.py").write_text("")
    (tmp_path / "checkout" / "left.txt").write_text("")
    (tmp_path / "made" / "deep").mkdir(parents=True)
    (tmp_path / "file").write_text("")
    removed = []

    def rmtree(path, ignore_errors=False):
        removed.append(path)

    harness._empty(str(tmp_path), frozenset({str(shown)}), rmtree)
    assert removed == [str(tmp_path / "made")]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkout", "made"]
    assert sorted(p.name for p in (tmp_path / "checkout").iterdir()) == [".venv"]
    assert (shown / "lib" / "module.py").exists()


def test_a_folder_shown_under_tmp_stays_visible_while_each_call_starts_with_an_empty_tmp(tmp_path, monkeypatch):
    """The layout of a checkout under /tmp, for real: the interpreter's folders shown
    there, a call's own files in /tmp gone for the next one, the shown folder intact."""
    from stamina_gym.sandbox import local

    if not tmp_path.is_relative_to("/tmp"):
        pytest.skip("the test folder is not under /tmp")
    shown = tmp_path / "venv"
    (shown / "bin").mkdir(parents=True)
    (shown / "bin" / "marker").write_text("shown\n")
    monkeypatch.setattr(local, "shown_paths", lambda paths=local.shown_paths(): [*paths, shown])
    env = mini_env(sandbox={"kind": "local"})
    try:
        env.reset(seed=0)
        # as a policy would: a mount of its own under /tmp (the sweep spares mount points),
        # and a file beside the shown folder (the sweep steps into the folders leading to one)
        hide = (f"mkdir -p /tmp/keep; unshare -Urm sh -c 'mount -t tmpfs none /tmp/keep && touch /tmp/keep/x' "
                f"2>/dev/null; touch {tmp_path}/sneak 2>/dev/null; ")  # fmt: skip
        first = warm(env, f"cat {shown}/bin/marker; {hide}touch /tmp/left; mkdir -p /tmp/dir/sub; ls /tmp")
        assert first.exit_code == 0 and first.output.startswith("shown\n"), first.output
        assert {"left", "dir"} <= set(first.output.split()), first.output
        second = warm(env, f"cat {shown}/bin/marker; ls -A /tmp")
        listed = second.output.split()
        # what stays: the folders leading to what the sandbox shows under /tmp (this one's,
        # and the checkout's own where it lies under /tmp too)
        assert listed[0] == "shown" and tmp_path.relative_to("/tmp").parts[0] in listed[1:], second.output
        assert not {"left", "dir", "keep"} & set(listed), second.output
        assert warm(env, f"ls -A {tmp_path}").output.split() == ["venv"]
    finally:
        env.close()

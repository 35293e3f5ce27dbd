"""The warm runner (``harness.serve``): one harness per env stays alive in the sandbox and
forks a fresh child per submit. Nothing of one submit's children may reach the next."""

from __future__ import annotations

import os

from stamina_gym import hidden_runner as runner
from stamina_gym.grading import harness
from tests.conftest import act

#: At import: note whether a process or a file left by an earlier grading run is still
#: there, then leave both behind (a detached process in a new session, a file in /tmp and
#: /dev/shm). ``add`` is right only when nothing was left over.
LINGER = '''
import glob, os, subprocess, sys

MARK = "stamina-linger-mark"
LEFT = []
for path in glob.glob("/proc/[0-9]*/cmdline"):
    try:
        with open(path, "rb") as handle:
            if MARK.encode() in handle.read() and int(path.split("/")[2]) != os.getpid():
                LEFT.append(path)
    except OSError:
        pass
LEFT += [p for p in ("/tmp/" + MARK, "/dev/shm/" + MARK) if os.path.exists(p)]
for folder in ("/tmp", "/dev/shm"):
    try:
        open(os.path.join(folder, MARK), "w").close()
    except OSError:
        pass
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", MARK], start_new_session=True,
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def add(a, b):
    return 0 if LEFT else a + b


def mul(a, b):
    return 0 if LEFT else a * b
'''


def test_nothing_of_one_submit_reaches_the_next(backend):
    """(One pytest process per run: within one run, parallel shards see each other.)"""
    from tests.conftest import mini_env

    env = mini_env(sandbox={"kind": backend, "grading_workers": 1})
    env.reset(seed=0)
    try:
        _two_submits(env)
    finally:
        env.close()


def _two_submits(env) -> None:
    act(env, tool="write_file", path="calc/__init__.py", content=LINGER)
    _, _, info = act(env, tool="submit")
    assert info["grade"]["failure_class"] is None, info["grade"]["detail"]
    service = runner._WARM[env.unwrapped._sandbox].service
    _, _, info = act(env, tool="submit")  # turn 2 reruns turn 1's tests: add must still be right
    assert info["grade"]["failure_class"] is None, info["grade"]["detail"]
    assert runner._WARM[env.unwrapped._sandbox].service is service, "the same warm runner graded both"


def test_a_killed_runner_is_replaced_and_its_submit_counts_as_failed(sandboxed_env):
    env = sandboxed_env
    act(env, tool="apply_patch", patch=env.turns[0].reference_patch)
    _, _, info = act(env, tool="submit")
    first = runner._WARM[env.unwrapped._sandbox].service
    killer = "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n\n\ndef add(a, b):\n    return a + b\n"
    act(env, tool="write_file", path="calc/__init__.py", content=killer)
    _, reward, info = act(env, tool="submit")
    assert info["grade"]["failure_class"] == "build" and info["grade"]["passed"] == 0
    assert reward < -1, "the earlier tests count as broken"
    env.reset(seed=0)
    act(env, tool="apply_patch", patch=env.turns[0].reference_patch)
    _, _, info = act(env, tool="submit")
    assert info["grade"]["failure_class"] is None
    assert runner._WARM[env.unwrapped._sandbox].service is not first


def test_the_sweep_kills_nothing_outside_a_sandbox(monkeypatch):
    """``kill(-1)`` as root on the host would end every process: the sweep refuses to run
    anywhere but as the sandbox user right below a PID namespace's init."""
    calls = []
    monkeypatch.setattr(os, "kill", lambda *args: calls.append(args))
    monkeypatch.setattr(os, "listdir", lambda *args: calls.append(args) or [])
    harness._sweep()
    assert os.getppid() not in (0, 1) or os.geteuid() == 0, "this test must run outside a sandbox"
    assert calls == []


def test_without_warm_grading_each_submit_starts_its_own_harness(backend):
    from tests.conftest import mini_env

    env = mini_env(sandbox={"kind": backend, "warm_grading": False})
    try:
        env.reset(seed=0)
        act(env, tool="apply_patch", patch=env.turns[0].reference_patch)
        _, _, info = act(env, tool="submit")
        assert info["grade"]["failure_class"] is None
        assert env.unwrapped._sandbox not in runner._WARM
    finally:
        env.close()


def test_closing_the_env_ends_its_runner(backend):
    from tests.conftest import mini_env

    env = mini_env(sandbox={"kind": backend})
    env.reset(seed=0)
    act(env, tool="submit")
    service = runner._WARM[env.unwrapped._sandbox].service
    assert service.alive
    env.close()
    assert not service.alive



#: A failing agent's bid to void its turns (infrastructure pays 0): leave a detached
#: process that kills every new warm runner before it says it is ready, then kill the
#: current one. Its descendants must not outlive the runner, so the next start succeeds.
RUNNER_HUNTER = '''
import os, signal, subprocess, sys

HUNT = """
import glob, os, signal, time
while True:
    for path in glob.glob('/proc/[0-9]*/cmdline'):
        try:
            if b'--serve' in open(path, 'rb').read():
                os.kill(int(path.split('/')[2]), signal.SIGKILL)
        except (OSError, ValueError):
            pass
    time.sleep(0.005)
"""
subprocess.Popen([sys.executable, "-c", HUNT], start_new_session=True,
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
import time
time.sleep(2)  # the run must not end before the hunter has found its runner


def add(a, b):
    return 0
'''


def test_a_process_that_hunts_new_runners_cannot_void_the_next_turn(backend):
    from tests.conftest import mini_env

    env = mini_env(sandbox={"kind": backend})
    env.reset(seed=0)
    try:
        act(env, tool="write_file", path="calc/__init__.py", content=RUNNER_HUNTER)
        _, reward, info = act(env, tool="submit")  # the hunter kills this runner too: all fail
        assert info["grade"]["failure_class"] == "build", "the hunter must really kill the runner, or this proves nothing"
        assert reward < 0
        act(env, tool="write_file", path="calc/__init__.py", content="def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return 0\n")
        _, reward, info = act(env, tool="submit")
        assert info["grade"]["failure_class"] != "infrastructure", info["grade"]["detail"]
        assert info["grade"]["failure_class"] == "functional" and reward < 0
    finally:
        env.close()

"""``run_tests`` on the warm runner (``stamina_gym.agent_runner``), on both backends: the
same answer as a cold ``python -m pytest``, the sandbox's guarantees for every call, and
nothing of one call left for the next."""

from __future__ import annotations

import re
import time

import pytest

from conftest import act, mini_env
from stamina_gym import agent_runner, tools
from stamina_gym.sandbox import PYTEST_ENVIRONMENT


def write(env, rel: str, text: str) -> None:
    path = env.workspace.path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    env._sandbox.prepare(env.workspace.path)


def cold(env, *args: str) -> tuple[int, str]:
    ctx = env._tools
    argv = [ctx.sandbox.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--color=no", *args]
    result = ctx.sandbox.run(argv, mounts=ctx.mounts(), timeout=60, env=PYTEST_ENVIRONMENT)
    return result.exit_code, tools._PYTEST_TIME.sub("", result.output)


def warm(env, *args: str):
    ctx = env._tools
    return agent_runner.run_tests(ctx.sandbox, ctx.mounts(), ["-q", "-p", "no:cacheprovider", "--color=no", *args], 60)


def runner_of(env):
    return agent_runner._RUNNERS[env._sandbox].service


SUITE = '''
import os, sys
import pytest

def test_passes():
    assert sum([1, 2]) == 3

def test_fails():
    assert [1, 2, 3] == [1, 2, 4], "lists differ"

def test_prints_and_skips():
    print("café \\U0001F680 on stdout")
    print("on stderr", file=sys.stderr)
    pytest.skip("not today")

@pytest.mark.parametrize("n", [1, 2])
def test_param(n):
    assert n < 2

def test_sees_repo_first_on_path():
    assert os.getcwd() == "/repo" in sys.path
    import helper_mod
    assert helper_mod.VALUE == 7
'''


def test_warm_answers_as_a_cold_run(sandboxed_env):
    env = sandboxed_env
    write(env, "tests/test_suite.py", SUITE)
    write(env, "helper_mod.py", "VALUE = 7\n")
    write(env, "conftest.py", "def pytest_report_header(config):\n    return 'agent conftest loaded'\n")
    code, expected = cold(env, "tests/test_suite.py", "-rA")
    result = warm(env, "tests/test_suite.py", "-rA")
    assert result is not None, "both backends have a warm runner"
    assert code == result.exit_code == 1
    assert tools._PYTEST_TIME.sub("", result.output) == expected
    assert "lists differ" in expected and "2 failed, 3 passed, 1 skipped" in expected
    # the tool goes through the warm runner and strips durations the same way
    output, _, info = act(env, tool="run_tests", args=["tests/test_suite.py", "-rA"])
    assert info["ok"] and output == f"[exit code 1]\n{expected}"
    assert runner_of(env).alive


def test_each_call_starts_clean(sandboxed_env):
    """A process a test leaves behind is dead, and /tmp empty, when the next call starts."""
    env = sandboxed_env
    write(env, "tests/test_leave.py", '''
import os, subprocess, sys
def test_leave_things():
    with open("/tmp/left-behind", "w") as handle:
        handle.write("x")
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
    with open("/repo/pid.txt", "w") as handle:
        handle.write(str(proc.pid))
''')
    assert warm(env, "tests/test_leave.py").exit_code == 0
    pid = (env.workspace.path / "pid.txt").read_text()
    write(env, "tests/test_leave.py", f'''
import os
def test_nothing_left():
    assert not os.path.exists("/tmp/left-behind")
    assert not os.path.exists("/proc/{pid}") or open("/proc/{pid}/stat").read().split()[2] == "Z"
''')
    result = warm(env, "tests/test_leave.py")
    assert result.exit_code == 0, result.output


def test_a_hanging_test_is_killed_at_the_timeout_and_the_next_call_runs(sandboxed_env):
    env = sandboxed_env
    write(env, "tests/test_hang.py", "import time\ndef test_hang():\n    time.sleep(600)\n")
    ctx = env._tools
    start = time.monotonic()
    result = agent_runner.run_tests(ctx.sandbox, ctx.mounts(), ["-q", "tests/test_hang.py"], 2)
    assert result.timed_out and time.monotonic() - start < 15
    assert "killed after its wall-clock timeout" in result.output
    write(env, "tests/test_hang.py", "def test_fine():\n    pass\n")
    assert warm(env, "tests/test_hang.py").exit_code == 0


def test_a_test_that_kills_the_runner_costs_only_its_own_call(sandboxed_env):
    env = sandboxed_env
    write(env, "tests/test_kill.py", "import os, signal\ndef test_kill():\n    os.kill(os.getppid(), signal.SIGKILL)\n")
    first = runner_of(env) if env._sandbox in agent_runner._RUNNERS else None
    output, _, info = act(env, tool="run_tests", args=["tests/test_kill.py"])
    assert info["ok"] and "the call ended the warm runner" in output
    assert first is None or not first.alive
    write(env, "tests/test_kill.py", "def test_fine():\n    pass\n")
    output, _, info = act(env, tool="run_tests", args=["tests/test_kill.py"])
    assert output.startswith("[exit code 0]") and "1 passed" in output


def test_cpu_limit_holds_for_each_call(backend):
    env = mini_env(sandbox={"kind": backend, "cpu_s": 2})
    env.reset(seed=0)
    try:
        write(env, "tests/test_spin.py", "def test_spin():\n    while True:\n        pass\n")
        result = warm(env, "tests/test_spin.py")
        ctx = env._tools
        baseline = ctx.sandbox.run([ctx.sandbox.python, "-m", "pytest", "-q", "tests/test_spin.py"], mounts=ctx.mounts(), timeout=60,
                                    env=PYTEST_ENVIRONMENT)
        # the kernel ends it at the CPU limit (soft and hard alike: SIGKILL), long before the wall clock
        assert (result.signal, result.limit, result.timed_out) == (baseline.signal, baseline.limit, False), (result, baseline)
        assert result.signal == 9 and result.duration_s < 30
        write(env, "tests/test_spin.py", "def test_fine():\n    pass\n")
        assert warm(env, "tests/test_spin.py").exit_code == 0
    finally:
        env.close()


def test_only_pytest_and_the_projects_own_plugins_load(sandboxed_env):
    """The sandbox interpreter's installed plugins (anyio comes with the openai client,
    a main dependency) stay out, as for the hidden tests and in the docker image; a plugin
    the project names itself loads, on the warm runner and cold alike."""
    env = sandboxed_env
    write(env, "plugin_of_mine.py", "def pytest_configure(config):\n    config.mine = True\n")
    write(env, "tests/conftest.py", "pytest_plugins = ['plugin_of_mine']\n")
    write(env, "tests/test_plugins.py", (
        "def test_plugins(request):\n"
        "    manager = request.config.pluginmanager\n"
        "    assert request.config.mine and not manager.hasplugin('anyio')\n"))  # fmt: skip
    assert warm(env, "tests/test_plugins.py").exit_code == 0
    assert cold(env, "tests/test_plugins.py")[0] == 0
    # a call that turns autoload back on changes its own process only, not the next call's
    write(env, "tests/test_unset.py", "import os\ndef test_unset():\n    os.environ.pop('PYTEST_DISABLE_PLUGIN_AUTOLOAD')\n"
                                      "    os.environ['PYTEST_ADDOPTS'] = '-p anyio'\n")  # fmt: skip
    assert warm(env, "tests/test_unset.py").exit_code == 0
    assert warm(env, "tests/test_plugins.py").exit_code == 0
    if env._sandbox.isolation == "docker":
        return  # the image holds pytest alone
    installed = env._tools.sandbox.run([env._tools.sandbox.python, "-m", "pytest", "-q", "tests/test_plugins.py"],
                                       mounts=env._tools.mounts(), timeout=60)  # fmt: skip
    assert installed.exit_code == 1 and "hasplugin" in installed.output  # the check can fail: anyio is there


def test_the_runner_follows_a_work_tree_laid_again(sandboxed_env):
    """The env lays the seed afresh now and then (``Workspace._init``): the folder the
    runner holds stays the one the env writes to."""
    env = sandboxed_env
    write(env, "tests/test_one.py", "def test_one():\n    pass\n")
    assert warm(env, "tests/test_one.py").exit_code == 0
    env.workspace._init()
    write(env, "tests/test_two.py", "def test_two():\n    assert 1\n")
    result = warm(env, "tests/test_two.py")
    assert result.exit_code == 0 and "1 passed" in result.output
    assert re.search(r"no tests ran|not found|ERROR", warm(env, "tests/test_one.py").output)


def test_a_test_that_freezes_the_runner_cannot_hang_the_env(sandboxed_env, monkeypatch):
    """SIGSTOP to the warm process (same user, so allowed): the call ends at its timeout
    plus the runner's grace, the frozen runner is discarded, the next call runs."""
    monkeypatch.setattr(agent_runner, "_GRACE_S", 3.0)  # the grace the frozen runner gets, shorter than in use
    env = sandboxed_env
    write(env, "tests/test_freeze.py", "import os, signal\ndef test_freeze():\n    os.kill(os.getppid(), signal.SIGSTOP)\n")
    ctx = env._tools
    start = time.monotonic()
    result = agent_runner.run_tests(ctx.sandbox, ctx.mounts(), ["-q", "tests/test_freeze.py"], 2)
    assert result.timed_out and time.monotonic() - start < 2 + agent_runner._GRACE_S + 10
    write(env, "tests/test_freeze.py", "def test_fine():\n    pass\n")
    assert warm(env, "tests/test_freeze.py").exit_code == 0

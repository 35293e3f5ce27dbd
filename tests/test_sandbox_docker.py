"""What only the docker backend promises: how its containers are locked down, that the
grading container keeps nothing between runs, that no container outlives its env (close,
interpreter exit, a SIGKILLed worker), the timeout enforced from outside, and the clear
error when the image is missing. Attacks shared with the local sandbox are in
test_sandbox.py and test_tamper.py, which run them on both backends."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from stamina_gym import agent_runner
from stamina_gym.errors import SandboxError
from stamina_gym.sandbox import Mount
from stamina_gym.sandbox.docker import INNER_GRACE_S, LABEL, LABEL_OWNER, LABEL_ROLE, connect, owner_id
from tests.conftest import act, docker_problem, mini_env

pytestmark = [
    pytest.mark.docker,
    pytest.mark.skipif(docker_problem() is not None, reason=f"no Docker engine reachable: {docker_problem()}"),
]
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def client():
    docker_client = connect()
    yield docker_client
    docker_client.close()


@pytest.fixture
def env():
    environment = mini_env(sandbox={"kind": "docker"})
    environment.reset(seed=0)
    yield environment
    environment.close()


def exists(client, container_id: str) -> bool:
    import docker

    try:
        client.containers.get(container_id)
    except docker.errors.NotFound:
        return False
    return True


def test_every_container_is_locked_down(env, client):
    act(env, tool="run", command="true")  # the warm runner's container (tests)
    env._sandbox.run(["true"], mounts=env._tools.mounts())  # a cold command's (work)
    act(env, tool="apply_patch", patch=env.turns[0].reference_patch)
    _, _, info = act(env, tool="submit")
    assert info["grade"]["failure_class"] is None
    ids = env._sandbox.container_ids()
    assert set(ids) == {"work", "tests", "grade"}
    for role, container_id in ids.items():
        attrs = client.api.inspect_container(container_id)
        host = attrs["HostConfig"]
        assert host["NetworkMode"] == "none"
        assert host["ReadonlyRootfs"] is True
        assert host["CapDrop"] == ["ALL"] and not host["CapAdd"]
        assert "no-new-privileges:true" in host["SecurityOpt"]
        assert host["Privileged"] is False
        assert host["Memory"] == (2048 + 256) * 2**20 and host["MemorySwap"] == host["Memory"]
        assert host["PidsLimit"] == 128 + 4 and host["NanoCpus"] == 10**9
        assert host["Tmpfs"]["/tmp"].startswith("rw,nosuid,nodev,size=256m")
        assert attrs["Config"]["User"] not in ("", "0", "root", "0:0")
        assert attrs["Config"]["Labels"][LABEL] == "1" and attrs["Config"]["Labels"][LABEL_ROLE] == role
        assert attrs["Config"]["Labels"][LABEL_OWNER] == owner_id()
        binds = [m for m in attrs["Mounts"] if m["Type"] == "bind"]
        if role == "work":
            assert [(m["Source"], m["Destination"]) for m in binds] == [(str(env.workspace.path), "/repo")]
        elif role == "tests":  # and the folder holding only the harness, read-only
            harness = agent_runner._harness_folder()
            assert sorted((m["Destination"], m["Source"], m["RW"]) for m in binds) == [
                ("/harness", str(harness), False), ("/repo", str(env.workspace.path), True)]  # fmt: skip
        else:
            assert binds == [], "the grading container must see no host path"
    output, _, _ = act(env, tool="run", command="grep -E 'NoNewPrivs|CapEff|CapBnd' /proc/self/status; id -u")
    assert "NoNewPrivs:\t1" in output and "CapBnd:\t0000000000000000" in output
    assert output.split()[-1] != "0"


def test_grading_container_holds_nothing_between_runs(env, client):
    act(env, tool="apply_patch", patch=env.turns[0].reference_patch)
    act(env, tool="submit")
    grade = client.containers.get(env._sandbox.container_ids()["grade"])
    find = ["find", "/repo", "/grade", "/tmp", "-mindepth", "1", "!", "-path", "/grade/report"]  # a mount point
    listing = grade.exec_run(find, user="65533").output.decode()
    give_up = time.monotonic() + 20  # the wipe runs in the background after each grading run
    while listing.strip() and time.monotonic() < give_up:
        time.sleep(0.1)
        listing = grade.exec_run(find, user="65533").output.decode()
    assert listing.strip() == "", listing
    script = "for p in /proc/[0-9]*; do echo $(awk '/^Uid/ {print $2}' $p/status) $(tr '\\0' ' ' < $p/cmdline); done"
    owners = grade.exec_run(["sh", "-c", script], user="65533").output.decode().splitlines()
    assert len(owners) >= 3, owners
    left = [line for line in owners if line.startswith(f"{env._sandbox.uid} ")]
    # the warm runner stays (it never runs the agent's code); nothing the tests started does
    assert len(left) == 1 and "harness.py --serve" in left[0], left


def test_the_agent_container_never_holds_hidden_tests(env, client):
    act(env, tool="apply_patch", patch=env.turns[0].reference_patch)
    act(env, tool="submit")
    act(env, tool="run", command="true")
    env._sandbox.run(["true"], mounts=env._tools.mounts())
    for role in ("work", "tests"):  # the agent's commands run in these two
        container = client.containers.get(env._sandbox.container_ids()[role])
        found = container.exec_run(["grep", "-rls", "test_add_small", "/", "--exclude-dir=proc", "--exclude-dir=sys"], user="0",
                                   stderr=False)  # fmt: skip
        assert found.output.decode().strip() == "", role


def test_close_removes_the_containers(client):
    env = mini_env(sandbox={"kind": "docker"})
    env.reset(seed=0)
    act(env, tool="run", command="true")
    act(env, tool="submit")
    ids = list(env._sandbox.container_ids().values())
    assert len(ids) == 2 and all(exists(client, i) for i in ids)
    env.close()
    assert not any(exists(client, i) for i in ids)


WORKER = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {root!r})
    from tests.conftest import mini_env, act
    env = mini_env(sandbox={{"kind": "docker"}})
    env.reset(seed=0)
    act(env, tool="run", command="true")
    print(" ".join(env._sandbox.container_ids().values()), flush=True)
    if {hang}:
        time.sleep(600)
    """
)


def start_worker(hang: bool) -> tuple[subprocess.Popen, list[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", WORKER.format(root=str(ROOT), hang=hang)], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    line = proc.stdout.readline()
    ids = line.split()
    assert ids, "the worker did not start a container"
    return proc, ids


def test_interpreter_exit_removes_the_containers(client):
    proc, ids = start_worker(hang=False)
    assert proc.wait(timeout=60) == 0
    assert not any(exists(client, i) for i in ids)


def test_docker_clean_removes_what_a_killed_worker_left(client):
    proc, ids = start_worker(hang=True)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert all(exists(client, i) for i in ids), "SIGKILL leaves the container: this is what docker-clean is for"
    out = subprocess.run(
        [sys.executable, "-m", "stamina_gym.cli", "docker-clean", "--stale"], capture_output=True, text=True, check=True
    ).stdout
    assert not any(exists(client, i) for i in ids)
    assert "removed stamina-gym-tests-" in out


def test_listing_stamina_containers_survives_another_env_removing_its_own(client):
    """Envs on one machine start and stop at any time: the sweep at a sandbox's start lists
    every managed container while another env removes its own. The SDK's containers.list
    inspects each listed container and raised NotFound for one removed in between (52
    times in 5 rounds of this test); the sweep reads the one listing call."""
    import threading

    from stamina_gym.sandbox.docker import managed_containers, sweep_stale

    image = sorted(t for i in client.images.list() for t in i.tags if t.startswith("stamina-gym-sandbox"))[0]
    for _ in range(3):
        ids = [client.api.create_container(image, ["true"], labels={LABEL: "1", LABEL_OWNER: owner_id()})["Id"]
               for _ in range(15)]  # fmt: skip
        remover = threading.Thread(target=lambda: [client.api.remove_container(i, force=True) for i in ids])
        remover.start()
        listings = 0
        while remover.is_alive():
            managed_containers(client)
            sweep_stale(client)  # a live owner's containers stay; none raises
            listings += 1
        remover.join()
        assert listings > 0
        assert not any(c.id in ids for c in managed_containers(client))


def test_the_next_sandbox_sweeps_what_a_killed_worker_left(client):
    proc, ids = start_worker(hang=True)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert all(exists(client, i) for i in ids)
    env = mini_env(sandbox={"kind": "docker"})
    try:
        env.reset(seed=0)
        act(env, tool="run", command="true")
        assert not any(exists(client, i) for i in ids)
        assert all(exists(client, i) for i in env._sandbox.container_ids().values()), "a live owner's containers stay"
    finally:
        env.close()


def test_timeout_is_enforced_from_outside(env):
    sandbox = env._sandbox
    mounts = [Mount(env.workspace.path, "/repo", writable=True)]
    result = sandbox.run(["sleep", "30"], mounts=mounts, timeout=1)
    assert result.timed_out and result.exit_code == 137
    # The inner `timeout -s KILL` would fire only at 1 + INNER_GRACE_S seconds.
    assert result.duration_s < 1 + INNER_GRACE_S - 0.3, result.duration_s
    assert sandbox.run(["true"], mounts=mounts).ok


def test_missing_image_names_the_build_command():
    env = mini_env(sandbox={"kind": "docker", "docker_image": "stamina-gym-sandbox:no-such-recipe"})
    with pytest.raises(SandboxError, match=r"stamina-gym-sandbox:no-such-recipe is missing: build it with stamina-gym docker-build"):
        env.reset(seed=0)
    env.close()


def test_a_workspace_too_big_for_grading_is_a_resource_failure():
    env = mini_env(sandbox={"kind": "docker", "tmp_mb": 16})
    env.reset(seed=0)
    try:
        output, _, _ = act(env, tool="run", command="head -c 20000000 /dev/zero > big.bin && echo written")
        assert "written" in output
        act(env, tool="apply_patch", patch=env.turns[0].reference_patch)
        reward, info = act(env, tool="submit")[1:]
        assert info["grade"]["failure_class"] == "resource", info["grade"]
        assert reward < 0
    finally:
        env.close()


def test_gym_make_takes_the_backend_by_name():
    import gymnasium as gym

    env = gym.make("StaminaTodo-v2", sandbox="docker", max_turns=1)
    try:
        assert env.unwrapped.config.sandbox.kind == "docker"
        assert env.unwrapped.config.sandbox.timeout_s == 60, "the env spec's other sandbox settings stay"
        env.reset(seed=0)
        assert env.unwrapped._sandbox.isolation == "docker"
    finally:
        env.close()


TURNS = 34


def _outcome(reward: float, info: dict) -> tuple[float, dict | None]:
    """What must be equal on both backends at a step: the reward and every test outcome."""
    grade = info.get("grade")
    return round(reward, 9), grade and json.loads(json.dumps({**grade["tests"], **grade["regression_tests"]}))


@pytest.mark.slow
def test_oracle_earns_the_same_rewards_as_on_local(todo_oracle_episode):
    """Same seed, same actions: every reward and every test outcome equal on both backends
    (the image's Python is Debian's, the local one is this interpreter), over the first
    TURNS turns of the episode (setup and the start of the features phase, full regression
    runs at turns 10, 20 and 30 included). The local side is the whole local oracle episode
    (conftest's ``todo_oracle_episode``, shared with test_agents' oracle test); the docker
    episode stops after its TURNS-th submit."""
    import gymnasium as gym

    from stamina_gym.agents import make_agent
    from stamina_gym.agents.view import view_for
    from stamina_gym.task import load_task

    env = gym.make("StaminaTodo-v2", sandbox={"kind": "docker"})
    agent = make_agent("oracle")
    docker = []
    try:
        observation, _ = env.reset(seed=0)
        agent.reset(view_for(agent, env))
        while sum(grade is not None for _, grade in docker) < TURNS:
            observation, reward, terminated, truncated, info = env.step(agent.act(observation))
            docker.append(_outcome(reward, info))
            if terminated or truncated:
                break
    finally:
        agent.close()
        env.close()
    local = [_outcome(step["reward"], step["info"]) for step in todo_oracle_episode.lines("steps.jsonl")]
    graded = [grade for _, grade in docker if grade is not None]
    assert len(graded) == min(TURNS, len(load_task("todo").turns)) and all(set(g.values()) == {"passed"} for g in graded)
    assert docker == local[: len(docker)]

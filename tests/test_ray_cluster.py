"""``collect`` on a real two-node Ray cluster, started with ``ray start`` on this machine (a
head and a worker node, one CPU each, each in a session of its own so that it can be
killed and torn down alone), whose worker node dies half way through a collection."""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import pyarrow.parquet as pq

from stamina_gym.sandbox.users import lease_folder
from tests.conftest import DATA

pytest.importorskip("ray")

RAY = Path(sys.executable).with_name("ray")
#: The sandbox uids of this test's envs: a range no other test leases, so that what is
#: left of them afterwards is this test's.
USERS = (930_000, 4)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _session(sid: int) -> list[int]:
    """The live processes of session ``sid`` (zombies left out: their parent reaps them)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            if os.getsid(int(name)) == sid and " Z " not in Path(f"/proc/{name}/stat").read_text().split(")", 1)[1][:4]:
                found.append(int(name))
        except (OSError, IndexError):
            continue
    return found


def _kill_session(sid: int) -> None:
    for _ in range(50):
        pids = _session(sid)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.1)


class Cluster:
    """A head and a worker node, each ``ray start``-ed with ``setsid`` (its daemons keep
    that session), sharing a token this test made; torn down by killing both sessions."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token",
                    "RAY_AUTH_TOKEN": secrets.token_hex(16)}  # fmt: skip
        self.sessions: dict[str, int] = {}
        self._start("head", "--head", f"--port={self.port}", "--include-dashboard=false",
                    f"--dashboard-port={_free_port()}", f"--ray-client-server-port={_free_port()}")
        self._start("worker", f"--address={self.address}")

    def _start(self, name: str, *args: str) -> None:
        log = self.root / f"{name}.log"
        with log.open("w") as out:
            started = subprocess.Popen([str(RAY), "start", *args, "--num-cpus=1", "--disable-usage-stats",
                                        f"--temp-dir={self.root / 'ray'}"], stdout=out, stderr=subprocess.STDOUT,
                                       env=self.env, start_new_session=True)  # fmt: skip
            self.sessions[name] = started.pid  # setsid in a new session: its sid is its pid
            code = started.wait(timeout=120)
        assert code == 0, log.read_text()[-3000:]

    def kill(self, name: str) -> None:
        _kill_session(self.sessions[name])

    def stop(self) -> None:
        for name in self.sessions:
            self.kill(name)


@pytest.fixture(scope="module")
def cluster():
    """One cluster for the module: the token test first, then the one that kills its worker node."""
    root = Path(tempfile.mkdtemp(prefix="sgray", dir="/tmp"))  # short: Ray's socket paths must fit
    running = None
    try:
        running = Cluster(root)
        yield running
    finally:
        if running is not None:
            running.stop()
        shutil.rmtree(root, ignore_errors=True)


def _processes_of(uids: range) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.stat(f"/proc/{name}").st_uid in uids:
                    found.append(int(name))
            except OSError:
                continue
    return found


def _leased(uids: range) -> list[int]:
    """The uids of ``uids`` whose lease file someone holds."""
    held = []
    for uid in uids:
        path = lease_folder() / f"{uid}.lock"
        if not path.exists():
            continue
        fd = os.open(path, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            held.append(uid)
        finally:
            os.close(fd)
    return held


def _collect(cluster: Cluster, out: Path, *args: str, env: dict | None = None) -> subprocess.Popen:
    """``stamina-gym collect`` of the mini task on the cluster, in a process of its own."""
    command = [sys.executable, "-m", "stamina_gym.cli", "collect", "--env", "Stamina-mini-v1", "--tasks", str(DATA),
               "--ray", cluster.address, "--workers", "2", "--out", str(out), "--grading-cache", "none", *args]  # fmt: skip
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env or cluster.env)  # fmt: skip


@pytest.mark.ray
def test_a_cluster_that_asks_for_a_token_is_named_as_such(cluster, tmp_path):
    """Connecting without the cluster's token fails with the setting to give."""
    env = {key: value for key, value in cluster.env.items() if key not in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN")}
    env["RAY_AUTH_TOKEN_PATH"] = str(tmp_path / "no-token")
    collecting = _collect(cluster, tmp_path / "out", "--episodes", "1", env=env)
    output = collecting.communicate(timeout=300)[0]
    assert collecting.returncode != 0 and "needs RAY_AUTH_MODE=token here too" in output, output[-3000:]


@pytest.mark.ray
def test_a_collection_loses_no_episode_when_a_worker_node_dies(cluster, tmp_path):
    """Two actors, one per node (one CPU each). When the first episode is in, the worker
    node dies (its raylet and every process of it, SIGKILL): what it was playing, or was
    handed next, goes back in the queue and the head's actor plays it. Every episode ends
    once, none lost, and collect exits 0; nothing of the dead node's envs is left (its
    processes, a sandbox uid or its lease)."""
    uids = range(USERS[0], USERS[0] + USERS[1])
    sandbox = f'{{"sandbox": {{"user": {USERS[0]}, "users": {USERS[1]}}}}}'
    collecting = _collect(cluster, tmp_path / "out", "--episodes", "4", "--make-kwargs", sandbox)
    lines = []
    for line in collecting.stdout:
        lines.append(line)
        if line.lstrip().startswith("[1/4]"):
            cluster.kill("worker")
    assert collecting.wait(timeout=300) == 0, "".join(lines)[-4000:]
    output = "".join(lines)
    assert "infrastructure failure on attempt 1 of 3, queued again" in output, output[-4000:]
    records = [json.loads(line) for line in (tmp_path / "out" / "records.jsonl").read_text().splitlines()[1:]]
    assert sorted(r["episode"] for r in records) == [0, 1, 2, 3], output[-4000:]
    assert all(r["failure_class"] is None for r in records) and max(r["attempts"] for r in records) == 2
    assert pq.read_table(tmp_path / "out" / "episodes.parquet").num_rows == 4
    assert not _session(cluster.sessions["worker"])
    deadline = time.monotonic() + 10
    while (_processes_of(uids) or _leased(uids)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _processes_of(uids) and not _leased(uids)

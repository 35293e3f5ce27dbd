"""``stamina-gym serve``: the env behind OpenEnv's server, in its own process, driven by
OpenEnv's own clients (the serve extra, which the test extra installs)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import DATA, MINI

pytest.importorskip("openenv.core")

from openenv.core.generic_client import GenericEnvClient  # noqa: E402
from websockets.exceptions import ConnectionClosed  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

from stamina_gym.integrations.openenv import StaminaAction, StaminaClient  # noqa: E402

ENV = "Stamina-mini-v1"
MINI_ARGS = ("--env", ENV, "--tasks", str(DATA))


def _patch(turn: str) -> str:
    return (MINI / "turns" / turn / "reference.patch").read_text()


class Server:
    """A ``stamina-gym serve`` process (``args``; on a free port) with a TMPDIR of its own
    (where every env lays its workspace), so that the tests can see what it leaves behind."""

    def __init__(self, tmp: Path, *args: str) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.tmp = tmp / "server-tmp"
        self.tmp.mkdir()
        command = [sys.executable, "-m", "stamina_gym.cli", "serve", *args, "--port", str(self.port)]  # the last port wins
        self.log = (tmp / "server.log").open("w+")
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT,
                                        env={**os.environ, "TMPDIR": str(self.tmp)})  # fmt: skip
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=2) as reply:
                    assert reply.status == 200
                    return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"the server did not start:\n{self.output()}") from None
                time.sleep(0.2)

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read()

    def workspaces(self) -> list[str]:
        return sorted(p.name for p in self.tmp.glob("stamina-gym-*"))

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=60)
        finally:
            if self.process.poll() is None:
                self.process.kill()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    running = Server(tmp_path_factory.mktemp("serve"), *MINI_ARGS, "--max-sessions", "3", "--idle-timeout", "0")
    yield running
    running.stop()


def test_openenvs_client_plays_a_turn_with_a_tool_step_and_a_submit(server):
    with StaminaClient(base_url=server.url).sync() as env:
        result = env.reset(seed=0)
        assert result.observation.turn == 1 and "add" in result.observation.prompt and not result.done
        result = env.step(StaminaAction(text='First a look.\n```json\n{"tool": "read_file", "path": "calc/__init__.py"}\n```'))
        assert result.observation.info["ok"] and "lines 1-1 of 1" in result.observation.output
        assert result.reward < 0  # the step cost
        call = json.dumps({"name": "apply_patch", "arguments": {"patch": _patch("01-add")}})
        result = env.step(StaminaAction(text=f"<tool_call>\n{call}\n</tool_call>"))
        assert result.observation.info["ok"], result.observation.output
        result = env.step(StaminaAction(text='{"tool": "submit"}'))
        grade = result.observation.info["grade"]
        assert grade["failure_class"] is None and result.reward > 1 and not result.done
        assert result.observation.turn == 2 and "mul" in result.observation.prompt
        state = env.state()
        assert (state.step_count, state.turn, state.env_id, state.done) == (3, 2, ENV, False)
        assert state.total_reward == pytest.approx(sum([-0.001, -0.001, result.reward]), abs=0.01)


def test_a_client_that_disconnects_leaves_no_traceback_in_the_log(server):
    """OpenEnv's endpoint closes a socket its client already closed; that used to print a
    60-line traceback per normal disconnect."""
    for _ in range(2):
        with StaminaClient(base_url=server.url).sync() as env:
            env.reset(seed=0)
    deadline = time.monotonic() + 30
    while server.workspaces() and time.monotonic() < deadline:
        time.sleep(0.2)  # the server closes a session's env (and its workspace) once its client has gone
    time.sleep(1)  # then closes the socket: where the traceback came from
    assert "Traceback" not in server.output() and "WebSocketDisconnect" not in server.output(), server.output()[-3000:]


def test_the_generic_client_needs_no_stamina_types_and_starts_at_a_later_turn(server):
    with GenericEnvClient(base_url=server.url).sync() as env:
        result = env.reset(seed=1, start_turn=2)
        assert result.observation["turn"] == 2 and "starts at request 2" in result.observation["output"]
        env.step({"text": json.dumps({"tool": "apply_patch", "patch": _patch("02-mul")})})
        result = env.step({"text": '{"tool": "submit"}'})
        assert result.done and result.reward > 1
        assert result.observation["info"]["terminated"] and not result.observation["info"]["truncated"]
        # A window: turn 1 alone, over by its submit.
        result = env.reset(seed=1, start_turn=1, num_turns=1)
        assert result.observation["turn"] == 1 and result.observation["info"]["num_turns"] == 1
        env.step({"text": json.dumps({"tool": "apply_patch", "patch": _patch("01-add")})})
        result = env.step({"text": '{"tool": "submit"}'})
        assert result.done and result.observation["turn"] == 1 and result.observation["info"]["terminated"]


def test_bad_requests_are_refused_with_what_was_wrong_and_the_session_goes_on(server):
    with GenericEnvClient(base_url=server.url).sync() as env:
        with pytest.raises(RuntimeError, match="reset first"):
            env.step({"text": '{"tool": "list_files"}'})
        with pytest.raises(RuntimeError, match="not bogus"):
            env.reset(seed=0, bogus=1)
        with pytest.raises(RuntimeError, match="start_turn"):
            env.reset(seed=0, start_turn=99)
        env.reset(seed=0)
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
            env.step({"txt": '{"tool": "list_files"}'})  # no "text"
        result = env.step({"text": "no call here at all"})
        assert not result.observation["info"]["ok"] and result.observation["output"].startswith("error:")
        assert env.step({"text": '{"tool": "list_files"}'}).observation["info"]["ok"]


def _refusal(server: Server) -> str | None:
    """The error code the server answers a new WebSocket session with (None: none, it
    was taken). OpenEnv's server sends it as its first message and closes; its client
    sees either that message or the closed socket, whichever it reads first."""
    with connect(server.url.replace("http", "ws") + "/ws", open_timeout=10) as ws:
        try:
            message = json.loads(ws.recv(timeout=2))
        except TimeoutError:  # no refusal: the session is open and waits for a message
            return None
    return message["data"]["code"] if message.get("type") == "error" else None


def test_a_session_past_the_limit_is_refused_and_a_closed_one_frees_its_place(server):
    clients = [StaminaClient(base_url=server.url).sync() for _ in range(3)]
    try:
        for client in clients:
            client.connect()
            client.reset(seed=0)
        assert _refusal(server) == "CAPACITY_REACHED"
        # OpenEnv's stateless HTTP reset makes an env outside the session count: refused too.
        request = urllib.request.Request(f"{server.url}/reset", data=b"{}", headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=30)
        assert refused.value.code == 503 and "holds 3 envs, its limit" in refused.value.read().decode()
        clients.pop().close()
        deadline = time.monotonic() + 30
        while True:  # until the server has seen the disconnect and closed that session's env
            try:
                with StaminaClient(base_url=server.url).sync() as again:
                    assert again.reset(seed=0).observation.turn == 1
                break
            except (RuntimeError, ConnectionClosed) as exc:
                assert time.monotonic() < deadline, f"the closed session kept its place: {exc}"
                time.sleep(0.2)
    finally:
        for client in clients:
            client.close()


def test_an_idle_session_is_closed_with_its_sandbox_and_stopping_leaves_nothing(tmp_path):
    server = Server(tmp_path, *MINI_ARGS, "--max-sessions", "1", "--idle-timeout", "1")
    try:
        idle = StaminaClient(base_url=server.url).sync()
        idle.connect()
        idle.reset(seed=0)
        assert len(server.workspaces()) == 1
        deadline = time.monotonic() + 30
        while server.workspaces():  # the reaper looks every 5 s at most
            assert time.monotonic() < deadline, "the idle session was never closed"
            time.sleep(0.2)
        with pytest.raises((RuntimeError, ConnectionError, OSError)):
            idle.step(StaminaAction(text='{"tool": "list_files"}'))
        idle.close()
        with StaminaClient(base_url=server.url).sync() as busy:  # its place is free
            busy.reset(seed=0)
            busy.step(StaminaAction(text='{"tool": "list_files"}'))
            assert len(server.workspaces()) == 1
            code = server.stop()  # while a session is open
        assert code in (0, -signal.SIGTERM), f"exit {code}:\n{server.output()}"
        assert "stopped: closed the" in server.output()  # by then the server may have closed it itself
        assert server.workspaces() == []
    finally:
        if server.process.poll() is None:
            server.stop()

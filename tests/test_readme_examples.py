"""The trainer examples of docs/trainers.md (chat mode, SkyRL, verifiers, TRL, serve and
its client), run as written (only a port or a URL is swapped for one this test owns)."""

from __future__ import annotations

import re
import shlex
import socket
from pathlib import Path

import pytest

from tests.evaluation.chat_server import ChatServer

PAGE = "docs/trainers.md"
TRAINERS = (Path(__file__).parents[1] / PAGE).read_text(encoding="utf-8")


def blocks(heading: str, language: str) -> list[str]:
    """The ``language`` code blocks of the page's section under ``## heading``."""
    start = TRAINERS.index(f"\n## {heading}\n")
    end = TRAINERS.find("\n## ", start + 1)
    section = TRAINERS[start:] if end == -1 else TRAINERS[start:end]
    return re.findall(rf"^```{language}\n(.*?)^```$", section, flags=re.S | re.M)


def run_python(code: str) -> dict:
    namespace: dict = {"__name__": "readme_example"}
    exec(compile(code, PAGE, "exec"), namespace)  # noqa: S102 - the page's own example
    return namespace


@pytest.mark.slow
def test_the_chat_mode_loop_plays_until_done_against_an_openai_compatible_server():
    (code,) = blocks("Chat mode", "python")
    assert "http://127.0.0.1:8001/v1" in code
    with ChatServer([[("read_file", {"path": "README.md"})]]) as server:  # then it submits, turn after turn
        namespace = run_python(code.replace("http://127.0.0.1:8001/v1", server.base_url))
    assert namespace["done"] and len(server.requests) == 6  # a read, then five submits
    assert "grade" in namespace["info"]


def test_the_skyrl_example_runs():
    pytest.importorskip("skyrl_gym")
    (code,) = blocks("SkyRL", "python")
    run_python(code)


def test_the_serve_example_serves_and_the_client_example_plays(tmp_path, capsys):
    pytest.importorskip("openenv.core")
    from tests.test_serve import Server

    (shell,) = blocks("An OpenEnv server: `stamina-gym serve`", "bash")
    (client,) = blocks("An OpenEnv server: `stamina-gym serve`", "python")
    command = [line for line in shell.splitlines() if line.startswith("stamina-gym serve")][0]
    args = shlex.split(command)[2:]  # what follows `stamina-gym serve`
    server = Server(tmp_path, *args)  # on a port of its own
    try:
        run_python(client.replace("127.0.0.1:8000", f"127.0.0.1:{server.port}"))
    finally:
        assert server.stop() in (0, -15), server.output()
    assert "lines 1-" in capsys.readouterr().out  # the read_file step's output, printed by the example


@pytest.mark.slow
def test_the_verifiers_example_plays_its_episodes(monkeypatch, capsys):
    pytest.importorskip("verifiers")
    (code,) = blocks("verifiers", "python")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-readme-example")
    with ChatServer(lambda body: [("submit", {})]) as server:
        run_python(code.replace("http://127.0.0.1:8001/v1", server.base_url))
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 2 and all("'failure_class'" in line for line in printed), printed


def test_the_verifiers_example_says_when_the_policy_server_is_down(monkeypatch, caplog):
    """No server answers on the example's address: the example exits with the error, and
    the adapter has logged it for each episode (the library alone records it on the trace
    and gives reward 0)."""
    pytest.importorskip("verifiers")
    (code,) = blocks("verifiers", "python")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-readme-example")
    with socket.socket() as closed:  # a port that was free a moment ago: nothing listens there
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    with pytest.raises(SystemExit) as ended:
        run_python(code.replace("http://127.0.0.1:8001/v1", f"http://127.0.0.1:{port}/v1"))
    assert "StaminaTodo-v2#seed0@turn1" in str(ended.value) and "connect" in str(ended.value).lower(), ended.value
    said = [r.getMessage() for r in caplog.records if r.levelname == "ERROR" and r.name.endswith("integrations.verifiers")]
    assert len(said) == 2 and all("reward is not the env's" in line for line in said), said


@pytest.mark.slow
def test_the_trl_example_plays_a_turn(capsys):
    pytest.importorskip("trl")
    (code,) = blocks("TRL", "python")
    run_python(code)
    assert "graded" in capsys.readouterr().out

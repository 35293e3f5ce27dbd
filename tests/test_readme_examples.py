"""The README's Trainers examples, run as written (only a port or a URL is swapped for one
this test owns)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.evaluation.chat_server import ChatServer

README = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")


def blocks(heading: str, language: str) -> list[str]:
    """The ``language`` code blocks of the README section under ``### heading``."""
    start = README.index(f"\n### {heading}\n")
    end = min((i for i in (README.find("\n## ", start + 1), README.find("\n### ", start + 1)) if i != -1), default=len(README))
    return re.findall(rf"^```{language}\n(.*?)^```$", README[start:end], flags=re.S | re.M)


def run_python(code: str) -> dict:
    namespace: dict = {"__name__": "readme_example"}
    exec(compile(code, "README.md", "exec"), namespace)  # noqa: S102 - the README's own example
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


@pytest.mark.slow
def test_the_trl_example_plays_a_turn(capsys):
    pytest.importorskip("trl")
    (code,) = blocks("TRL", "python")
    run_python(code)
    assert "graded" in capsys.readouterr().out

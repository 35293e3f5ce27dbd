"""The LLM-played user over the real ``openai`` client and real HTTP, against a small local
server that speaks the chat-completions wire format; replies replay from the disk cache
with the server gone."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from stamina_gym.errors import ConfigError
from tests.conftest import act
from tests.test_dialogue import KEY_QUESTIONS, REFERENCE_PLAN, chat_env, play_turn_one


class ChatServer:
    """``POST /v1/chat/completions`` answers ``reply #n to: <last user message>``."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server hook name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), **body})
                content = f"reply #{len(server.requests)} to: {body['messages'][-1]['content']}"
                payload = json.dumps({
                    "id": f"chatcmpl-{len(server.requests)}", "object": "chat.completion", "created": 0,
                    "model": body["model"],
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }).encode()  # fmt: skip
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        if self.thread.is_alive():
            self.httpd.shutdown()
            self.httpd.server_close()
            self.thread.join()


@pytest.fixture
def server():
    chat = ChatServer()
    yield chat
    chat.stop()


def llm_env(url: str, cache, **llm):
    return chat_env(user={"kind": "llm", "llm": {"base_url": url, "model": "tiny-user", "api_key": "k-test", "seed": 7,
                                                 "cache_dir": str(cache), **llm}})  # fmt: skip


def ask_all(env, questions):
    return [act(env, tool="ask", question=q)[0] for q in questions]


def test_llm_user_answers_over_http_and_replays_from_cache_with_the_server_down(server, tmp_path):
    cache = tmp_path / "cache"
    env = llm_env(server.url, cache)
    env.reset(seed=0)
    first = ask_all(env, KEY_QUESTIONS)
    _, _, info = play_turn_one(env, plan=REFERENCE_PLAN)
    env.close()
    assert first == [f"reply #1 to: {KEY_QUESTIONS[0]}", f"reply #2 to: {KEY_QUESTIONS[1]}"]
    assert info["scores"]["clarification"] == 1.0  # scores come from the matching, whoever answers
    request = server.requests[1]
    assert request["path"] == "/v1/chat/completions" and request["auth"] == "Bearer k-test"
    assert request["model"] == "tiny-user" and request["seed"] == 7 and request["temperature"] == 0.0
    system = request["messages"][0]
    assert system["role"] == "system" and "An empty input raises ValueError." in system["content"]
    assert "Round the result to 2 decimal places." in system["content"]
    assert [m["role"] for m in request["messages"]] == ["system", "user", "assistant", "user"]
    assert request["messages"][2]["content"] == first[0]  # the conversation so far goes along
    assert len(list(cache.rglob("*.json"))) == 2

    server.stop()
    replay = llm_env(server.url, cache)
    replay.reset(seed=0)
    assert ask_all(replay, KEY_QUESTIONS) == first
    assert replay.dialogue.user.calls == 0
    output, _, info = act(replay, tool="ask", question="A question never asked before?")
    assert output.startswith("error: the user is unavailable: the LLM user at http://127.0.0.1:")
    assert not info["ok"] and "infrastructure_error" in info
    replay.close()


def test_another_seed_is_another_conversation(server, tmp_path):
    for seed in (7, 8):
        env = llm_env(server.url, tmp_path, seed=seed)
        env.reset(seed=0)
        ask_all(env, KEY_QUESTIONS[:1])
        env.close()
    assert len(server.requests) == 2 and [r["seed"] for r in server.requests] == [7, 8]


def test_model_and_endpoint_come_from_the_environment(server, tmp_path, monkeypatch):
    monkeypatch.setenv("STAMINA_GYM_USER_BASE_URL", server.url)
    monkeypatch.setenv("STAMINA_GYM_USER_MODEL", "env-model")
    monkeypatch.setenv("STAMINA_GYM_USER_CACHE", str(tmp_path))
    env = chat_env(user={"kind": "llm"})
    env.reset(seed=0)
    assert ask_all(env, ["Hello?"]) == ["reply #1 to: Hello?"]
    env.close()
    assert server.requests[0]["model"] == "env-model"
    monkeypatch.delenv("STAMINA_GYM_USER_MODEL")
    env = chat_env(user={"kind": "llm"})
    with pytest.raises(ConfigError, match="needs a model"):
        env.reset(seed=0)
    env.close()

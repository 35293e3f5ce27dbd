"""A small HTTP server speaking the chat-completions wire format, for tests.

It answers ``POST /v1/chat/completions`` with scripted replies (a reply is a list of
tool calls ``(name, arguments)`` or a text), and keeps every request it received
(headers and JSON body) and every response body it sent, so tests can check what the
client really sent and got.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

Reply = list[tuple[str, dict[str, Any]]] | str


class ChatServer:
    def __init__(self, script: list[Reply] | Callable[[dict[str, Any]], Reply]) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.responses: list[bytes] = []
        """Every response body, as sent."""
        self._count = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body})
                if self.path != "/v1/chat/completions":
                    self._send(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})
                    return
                self._send(200, server.completion(body))

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                server.responses.append(data)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def completion(self, body: dict[str, Any]) -> dict[str, Any]:
        self._count += 1
        if callable(self.script):
            reply = self.script(body)
        else:
            reply = self.script.pop(0) if self.script else [("submit", {})]
        if isinstance(reply, str):
            message: dict[str, Any] = {"role": "assistant", "content": reply}
            finish = "stop"
        else:
            message = {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"call_{self._count}_{i}", "type": "function",
                 "function": {"name": name, "arguments": json.dumps(args)}} for i, (name, args) in enumerate(reply)]}  # fmt: skip
            finish = "tool_calls"
        prompt_chars = len(json.dumps(body["messages"]))
        return {
            "id": f"chatcmpl-{self._count}", "object": "chat.completion", "created": 1_700_000_000,
            "model": body["model"], "system_fingerprint": "test",
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": {"prompt_tokens": prompt_chars // 4, "completion_tokens": 10, "total_tokens": prompt_chars // 4 + 10},
        }  # fmt: skip

    def __enter__(self) -> "ChatServer":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)

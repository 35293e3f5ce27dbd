"""Tiny WSGI test client used by the hidden tests of the todo task.

``call(app, method, path, json=None, headers=None, body=None)`` builds a WSGI
environ, invokes ``app`` and returns ``(status_code, headers, body)`` where
``headers`` is a dict with lower-cased names and ``body`` is the decoded JSON
document when the response is JSON, ``None`` when it is empty, else the text.
"""

from __future__ import annotations

import io
import json as _json
import sys
from typing import Any, Callable, Mapping

__all__ = ["call"]


def call(
    app: Callable[..., Any],
    method: str,
    path: str,
    json: Any = None,
    headers: Mapping[str, str] | None = None,
    body: bytes | str | None = None,
) -> tuple[int, dict[str, str], Any]:
    """Perform one request against a WSGI ``app``."""
    path, _, query = path.partition("?")
    content_type = ""
    if json is not None:
        data = _json.dumps(json).encode("utf-8")
        content_type = "application/json"
    elif body is not None:
        data = body.encode("utf-8") if isinstance(body, str) else body
        content_type = "application/json"
    else:
        data = b""
    environ: dict[str, Any] = {
        "REQUEST_METHOD": method.upper(),
        "SCRIPT_NAME": "",
        "PATH_INFO": path,
        "QUERY_STRING": query,
        "CONTENT_TYPE": content_type,
        "CONTENT_LENGTH": str(len(data)),
        "SERVER_NAME": "testserver",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(data),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": False,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
    }
    for name, value in (headers or {}).items():
        key = name.upper().replace("-", "_")
        if key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
            environ[key] = value
        else:
            environ["HTTP_" + key] = value

    captured: dict[str, Any] = {}
    chunks: list[bytes] = []

    def start_response(status: str, response_headers: list[tuple[str, str]], exc_info: Any = None) -> Callable[[bytes], None]:
        captured["status"] = status
        captured["headers"] = response_headers
        return chunks.append

    result = app(environ, start_response)
    try:
        for chunk in result:
            chunks.append(chunk)
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()

    status_code = int(str(captured["status"]).split()[0])
    response_headers = {str(k).lower(): str(v) for k, v in captured["headers"]}
    raw = b"".join(chunks)
    parsed: Any
    if not raw:
        parsed = None
    elif "json" in response_headers.get("content-type", ""):
        parsed = _json.loads(raw.decode("utf-8"))
    else:
        parsed = raw.decode("utf-8", errors="replace")
    return status_code, response_headers, parsed

import io
import json
import sys
import tempfile
from datetime import datetime, timezone
from urllib.parse import urlencode

from todo.web import create_app


def call(app, method, path, body=None, query=""):
    data = json.dumps(body).encode() if body is not None else b""
    environ = {
        "REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": query, "SERVER_NAME": "localhost",
        "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1", "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(data)), "wsgi.input": io.BytesIO(data), "wsgi.errors": sys.stderr,
        "wsgi.url_scheme": "http", "wsgi.version": (1, 0), "wsgi.multithread": False,
        "wsgi.multiprocess": False, "wsgi.run_once": False,
    }
    status = []
    text = b"".join(app(environ, lambda s, h, exc_info=None: status.append(s))).decode()
    return status[0], json.loads(text) if text else None


ACUTE = "\u0301"  # the accent as a separate combining character, as some keyboards send it
misses = 0
with tempfile.TemporaryDirectory() as tmp:
    app = create_app(f"{tmp}/todo.db", clock=lambda: datetime(2025, 3, 3, 9, 0, tzinfo=timezone.utc))
    call(app, "POST", "/todos", {"title": "Book a table at Caf\u00e9 M\u00fcller"})
    call(app, "POST", "/todos", {"title": "Send CV", "notes": "update the re" + ACUTE + "sume" + ACUTE + " first"})

    for word in ("caf\u00e9", "cafe" + ACUTE, "r\u00e9sum\u00e9", "re" + ACUTE + "sume" + ACUTE):
        status, body = call(app, "GET", "/todos", query=urlencode({"q": word}))
        found = [todo["title"] for todo in body["todos"]]
        misses += not found
        print(f"search {ascii(word):24} -> {status} {found}")
sys.exit(1 if misses else 0)

import io
import json
import sys
import tempfile
from datetime import datetime, timezone

from todo.web import create_app


def call(app, method, path, body=None, token=None):
    data = json.dumps(body).encode() if body is not None else b""
    environ = {
        "REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": "", "SERVER_NAME": "localhost",
        "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1", "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(data)), "wsgi.input": io.BytesIO(data), "wsgi.errors": sys.stderr,
        "wsgi.url_scheme": "http", "wsgi.version": (1, 0), "wsgi.multithread": False,
        "wsgi.multiprocess": False, "wsgi.run_once": False,
    }
    if token:
        environ["HTTP_AUTHORIZATION"] = f"Bearer {token}"
    status = []
    text = b"".join(app(environ, lambda s, h, exc_info=None: status.append(s))).decode()
    return status[0], json.loads(text) if text else None


with tempfile.TemporaryDirectory() as tmp:
    app = create_app(f"{tmp}/todo.db", clock=lambda: datetime(2025, 3, 3, 9, 0, tzinfo=timezone.utc))
    tokens = {}
    for name in ("alice", "bob"):
        credentials = {"username": name, "password": "correct-horse-battery-staple"}
        call(app, "POST", "/users", credentials)
        tokens[name] = call(app, "POST", "/users/login", credentials)[1]["token"]

    print("alice saves 'job-hunt':", *call(app, "PUT", "/todos/views/job-hunt", {"query": "tag=interview&sort=due"}, tokens["alice"]))
    print("bob's views:           ", *call(app, "GET", "/todos/views", token=tokens["bob"]))
    print("views WITHOUT token:   ", *call(app, "GET", "/todos/views"))
    print("bob saves 'job-hunt':  ", *call(app, "PUT", "/todos/views/job-hunt", {"query": "tag=hiring"}, tokens["bob"]))
    print("alice's views:         ", *call(app, "GET", "/todos/views", token=tokens["alice"]))
    print("anonymous deletes it:  ", *call(app, "DELETE", "/todos/views/job-hunt"))
    views = call(app, "GET", "/todos/views", token=tokens["alice"])[1]
    print("alice's views:         ", views)
    sys.exit(0 if views["views"] == [{"name": "job-hunt", "query": "tag=interview&sort=due"}] else 1)

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


def titles(app, token=None):
    _, body = call(app, "GET", "/todos", token=token)
    return [f"{todo['title']} (due {todo['due']})" for todo in body["todos"]]


with tempfile.TemporaryDirectory() as tmp:
    app = create_app(f"{tmp}/todo.db", clock=lambda: datetime(2025, 3, 3, 9, 0, tzinfo=timezone.utc))
    alice = {"username": "alice", "password": "correct-horse-battery-staple"}
    call(app, "POST", "/users", alice)
    token = call(app, "POST", "/users/login", alice)[1]["token"]

    _, rent = call(app, "POST", "/todos", {"title": "Pay rent", "due": "2025-03-01", "repeat": "monthly"}, token)
    _, doctor = call(app, "POST", "/todos", {"title": "Call the doctor", "notes": "about the test results"}, token)

    status, body = call(app, "POST", f"/todos/{doctor['id']}/duplicate", token=token)
    print("alice duplicates 'Call the doctor':", status, body)
    status, body = call(app, "POST", f"/todos/{rent['id']}/complete", token=token)
    print("alice completes 'Pay rent':", status, body)
    print()
    print("alice's list:    ", titles(app, token))
    print("list WITHOUT token:", titles(app))
    sys.exit(1 if titles(app) else 0)

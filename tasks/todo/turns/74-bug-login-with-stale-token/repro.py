import io
import json
import sys
import tempfile
from datetime import datetime, timedelta, timezone

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
    chunks = app(environ, lambda s, h, exc_info=None: status.append(s))
    text = b"".join(chunks).decode()
    return status[0], text


now = [datetime(2025, 3, 1, 9, 0, tzinfo=timezone.utc)]
with tempfile.TemporaryDirectory() as tmp:
    app = create_app(f"{tmp}/todo.db", clock=lambda: now[0])
    credentials = {"username": "dana", "password": "correct-horse-battery-staple"}
    print("register:", *call(app, "POST", "/users", credentials))
    status, text = call(app, "POST", "/users/login", credentials)
    print("login:", status)
    token = json.loads(text)["token"]
    now[0] += timedelta(days=30)
    print("a month later, GET /todos:", *call(app, "GET", "/todos", token=token))
    status, text = call(app, "POST", "/users/login", credentials, token=token)
    print("log in again (the app still sends the old token):", status, text)
    assert status.startswith("200"), "cannot log in again"

import json
import logging
import os
import re
import select
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path


def _repo_root():
    import todo

    return str(Path(todo.__file__).resolve().parent.parent)


def _env(tmp_path, **values):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TODO_")}
    env.pop("PYTHONUNBUFFERED", None)
    env["PYTHONPATH"] = _repo_root()
    env.update(values)
    return env


def _serve_one(server, path, data=None):
    """One request, answered on this thread (the one that made the server): the client
    runs on a worker."""
    port = server.server_address[1]
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data,
                                     headers={"Content-Type": "application/json"} if data else {})
    answer = {}

    def client():
        with urllib.request.urlopen(request, timeout=20) as response:
            answer["status"], answer["body"] = response.status, json.load(response)

    worker = threading.Thread(target=client, daemon=True)
    worker.start()
    server.timeout = 20
    server.handle_request()
    worker.join(20)
    return answer["status"], answer["body"]


def test_create_server_uses_the_given_settings(tmp_path):
    from todo.config import Settings
    from todo.server import create_server
    from todo.storage import TodoStore

    db = tmp_path / "given.db"
    server = create_server(Settings(db_path=str(db), host="127.0.0.1", port=0, log_level="INFO"))
    try:
        assert server.server_address[1] > 0
        status, body = _serve_one(server, "/todos", json.dumps({"title": "over the wire"}).encode())
        assert status == 201 and body["title"] == "over the wire"
        status, body = _serve_one(server, "/todos")
        assert status == 200 and [t["title"] for t in body["todos"]] == ["over the wire"]
    finally:
        server.server_close()
    with TodoStore(db) as store:
        assert [t.title for t in store.list()] == ["over the wire"]


def test_create_server_without_settings_reads_the_environment(tmp_path, monkeypatch):
    from todo.server import create_server
    from todo.storage import TodoStore

    db = tmp_path / "env.db"
    monkeypatch.setenv("TODO_DB", str(db))
    monkeypatch.setenv("TODO_HOST", "127.0.0.1")
    monkeypatch.setenv("TODO_PORT", "0")
    server = create_server()
    try:
        assert server.server_address[0] == "127.0.0.1" and server.server_address[1] > 0
        status, _ = _serve_one(server, "/todos", json.dumps({"title": "from env"}).encode())
        assert status == 201
    finally:
        server.server_close()
    with TodoStore(db) as store:
        assert [t.title for t in store.list()] == ["from env"]


def test_requests_are_logged_through_logging(tmp_path, caplog):
    from todo.config import Settings
    from todo.server import create_server

    caplog.set_level(logging.INFO, logger="todo.server")
    server = create_server(Settings(db_path=str(tmp_path / "log.db"), port=0))
    try:
        _serve_one(server, "/todos?done=false")
    finally:
        server.server_close()
    lines = [r.getMessage() for r in caplog.records if r.name == "todo.server" and r.levelno == logging.INFO]
    assert any("GET /todos" in line and "200" in line for line in lines), lines


def _start(tmp_path, **values):
    return subprocess.Popen(
        [sys.executable, "-m", "todo.server"], env=_env(tmp_path, **values), cwd=str(tmp_path),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def _wait_for_address(proc):
    ready, _, _ = select.select([proc.stdout], [], [], 30)
    assert ready, "the server printed nothing"
    line = proc.stdout.readline()
    found = re.fullmatch(r"Serving on http://([\d.]+):(\d+)\s*", line)
    assert found, line
    return found[1], int(found[2])


def _stop(proc):
    proc.terminate()
    try:
        return proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.communicate()


def test_python_dash_m_todo_server(tmp_path):
    db = tmp_path / "served.db"
    proc = _start(tmp_path, TODO_DB=str(db), TODO_PORT="0", TODO_HOST="127.0.0.1")
    try:
        host, port = _wait_for_address(proc)
        assert host == "127.0.0.1" and port > 0
        request = urllib.request.Request(f"http://{host}:{port}/todos", data=b'{"title": "served"}',
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=20) as response:
            assert response.status == 201
        with urllib.request.urlopen(f"http://{host}:{port}/todos", timeout=20) as response:
            assert [t["title"] for t in json.load(response)["todos"]] == ["served"]
    finally:
        _, err = _stop(proc)
    assert "POST /todos" in err


def test_log_level_warning_silences_the_access_log(tmp_path):
    proc = _start(tmp_path, TODO_DB=str(tmp_path / "quiet.db"), TODO_PORT="0", TODO_LOG_LEVEL="warning")
    try:
        host, port = _wait_for_address(proc)
        for query in ("", "?done=true"):
            with urllib.request.urlopen(f"http://{host}:{port}/todos{query}", timeout=20) as response:
                assert response.status == 200
    finally:
        _, err = _stop(proc)
    assert "GET /todos" not in err


def test_bad_setting_stops_the_server_with_a_clear_message(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "todo.server"], env=_env(tmp_path, TODO_DB=str(tmp_path / "x.db"), TODO_PORT="eighty"),
        cwd=str(tmp_path), capture_output=True, text=True, timeout=60,
    )
    assert result.returncode != 0
    assert "TODO_PORT" in result.stderr and "eighty" in result.stderr
    assert "Traceback" not in result.stderr
    assert "Serving on" not in result.stdout

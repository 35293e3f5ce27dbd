import json
import os
import re
import select
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest


def _env(**values):
    import todo

    env = {k: v for k, v in os.environ.items() if not k.startswith("TODO_")}
    env.pop("PYTHONUNBUFFERED", None)
    env["PYTHONPATH"] = str(Path(todo.__file__).resolve().parent.parent)
    env.update(values)
    return env


def _start(tmp_path, **values):
    proc = subprocess.Popen(
        [sys.executable, "-m", "todo.server"], env=_env(TODO_DB=str(tmp_path / "s.db"), TODO_PORT="0", **values),
        cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    ready, _, _ = select.select([proc.stdout], [], [], 30)
    if not ready:
        proc.kill()
        pytest.fail("the server printed nothing")
    found = re.fullmatch(r"Serving on http://([\d.]+):(\d+)\s*", proc.stdout.readline())
    assert found
    return proc, f"http://{found[1]}:{found[2]}"


def _stop(proc, signum):
    proc.send_signal(signum)
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"the server ignored signal {signum}: {err}")
    return proc.returncode, out, err


def test_stops_cleanly_on_sigterm(tmp_path):
    proc, url = _start(tmp_path)
    request = urllib.request.Request(url + "/todos", data=b'{"title": "saved"}', headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=20) as response:
        assert response.status == 201
    code, _, err = _stop(proc, signal.SIGTERM)
    assert code == 0, err
    assert "Traceback" not in err
    assert "shutting down" in err.lower()
    from todo.storage import TodoStore

    with TodoStore(tmp_path / "s.db") as store:
        assert [t.title for t in store.list()] == ["saved"]


def test_shutdown_is_logged_at_info(tmp_path):
    proc, url = _start(tmp_path, TODO_LOG_LEVEL="WARNING")
    with urllib.request.urlopen(url + "/health", timeout=20) as response:
        assert json.load(response)["status"] == "ok"
    code, _, err = _stop(proc, signal.SIGTERM)
    assert code == 0, err
    assert "shutting down" not in err.lower()
    assert "Traceback" not in err

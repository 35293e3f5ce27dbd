"""The sandbox's Python is recorded with every run, an env warns when its task was not
validated on it, and the validator names the turns whose outcome depends on it."""

from __future__ import annotations

import json
import platform
import re
import shutil
import subprocess
import sys

import pytest

from tests.conftest import MINI, docker_problem

HOST = ".".join(platform.python_version_tuple()[:2])
TRIXIE = "3.13"  # the Python of the docker:trixie image


def _mini(tmp_path, python: list[str] | None = None):
    root = tmp_path / "mini"
    shutil.copytree(MINI, root)
    if python is not None:
        meta = root / "task.yaml"
        meta.write_text(meta.read_text().replace("version: 1\n", f"version: 1\npython: {json.dumps(python)}\n"))
    return root


def _cli(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stamina_gym.cli", *args], capture_output=True, text=True, check=check,
                          timeout=600)  # fmt: skip


def _run(tmp_path, python: list[str]) -> tuple[dict, str]:
    root = _mini(tmp_path, python)
    out = tmp_path / "records"
    proc = _cli("run", "--env", "Stamina-mini-v1", "--agent", "oracle", "--tasks", str(root.parent), "--out", str(out))
    return json.loads((out / "run.json").read_text()), proc.stderr


def test_a_run_records_the_sandbox_python_and_warns_when_the_task_was_not_validated_on_it(tmp_path):
    header, stderr = _run(tmp_path / "a", ["2.7"])
    assert header["sandbox_python"] == platform.python_version()
    assert f"the sandbox runs Python {platform.python_version()}, but task mini v1 was validated on Python 2.7 only" in stderr
    header, stderr = _run(tmp_path / "b", ["2.7", HOST])
    assert header["sandbox_python"] == platform.python_version()
    assert "was validated on" not in stderr


# Turn 2 of the mini task made to lean on RecursionError the way a real reference did:
# json's decoder raises it for deep nesting on Python 3.11 and not on 3.12 or later.
_DEPTH_PATCH = """\
+
+
+def parse_list(text):
+    import json
+
+    try:
+        return json.loads(text)
+    except RecursionError:
+        raise ValueError("nested too deeply") from None
"""
_DEPTH_TEST = """\
import pytest
from calc import parse_list


def test_deep_lists_are_refused():
    assert parse_list("[[1]]") == [[1]]
    with pytest.raises(ValueError):
        parse_list("[" * 1000 + "]" * 1000)
"""


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.skipif(docker_problem() is not None, reason=f"no Docker engine reachable: {docker_problem()}")
@pytest.mark.skipif(HOST == TRIXIE, reason="the host's Python is the trixie image's: nothing to compare")
def test_validate_names_the_turns_whose_outcome_depends_on_the_python(tmp_path):
    root = _mini(tmp_path)
    turn = root / "turns" / "02-mul"
    patch = (turn / "reference.patch").read_text()
    (turn / "reference.patch").write_text(patch.replace("@@ -3,3 +3,7 @@", "@@ -3,3 +3,16 @@") + _DEPTH_PATCH)
    (turn / "tests" / "test_depth.py").write_text(_DEPTH_TEST)
    spec = (turn / "turn.yaml").read_text()
    (turn / "turn.yaml").write_text(spec.replace("returning the product.", "returning the product, and `parse_list(text)`.")
                                        .replace("It should multiply.", "It should multiply. And `parse_list(text)` too."))
    proc = _cli("validate", str(root), "--sandbox", "local", "--sandbox", "docker:trixie", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert f"sandbox local: Python {platform.python_version()}" in out and f"sandbox docker:trixie: Python {TRIXIE}." in out
    depends = [line for line in out.splitlines() if line.startswith("DEPENDS ON THE PYTHON VERSION")]
    assert len(depends) == 1, out
    assert "turn 2: 02-mul/test_depth.py::test_deep_lists_are_refused should pass after the reference patch" in depends[0]
    assert re.search(rf"; found on docker:trixie \(Python {TRIXIE}\.\d+\) only$", depends[0]), depends[0]
    assert f"the reference passes on Python {HOST}, which task.yaml's python: does not list" in out

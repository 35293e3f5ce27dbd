"""A user's install: the sdist and the wheel built from it carry the envs and tasks, and in
a fresh virtual environment, from a folder outside the checkout, every shipped env plays an
oracle turn while the installed package, its task data and its metadata stay out of the
sandbox's sight (pytest, in the same site-packages, stays in it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

from stamina_gym.packaged import env_spec_files

ROOT = Path(__file__).resolve().parents[1]

PLAY = r'''
import importlib.metadata, json, sys
import gymnasium as gym
import stamina_gym
from stamina_gym.agents import make_agent
from stamina_gym.agents.view import view_for
from stamina_gym.packaged import DATA_DIR

task = next(p for p in (DATA_DIR / "tasks").rglob("test_*.py") if "/turns/" in p.as_posix())
patch = next((DATA_DIR / "tasks").rglob("*.patch"), None) or next((DATA_DIR / "tasks").rglob("*.diff"))
metadata = [str(importlib.metadata.distribution("stamina-gym")._path)]  # the folder holding RECORD
peeks = {
    "hidden test": f"cat {task}",
    "reference patch": f"cat {patch}",
    "task data": f"ls {DATA_DIR}",
    "package": f"ls {DATA_DIR.parent}",
    "metadata": "ls " + " ".join(metadata),
    "pytest": "python -c 'import pytest; print(\"pytest\", pytest.__version__)'",
}
for env_id in sys.argv[1:]:
    env = gym.make(env_id)
    observation, info = env.reset(seed=0)
    agent = make_agent("oracle")
    agent.reset(view_for(agent, env))
    while "grade" not in info:
        observation, reward, terminated, truncated, info = env.step(agent.act(observation))
    seen = {name: env.step({"tool": "run", "command": command})[0]["output"] for name, command in peeks.items()}
    print(json.dumps({"env": env_id, "reward": reward, "passed": info["grade"]["passed"], "total": info["grade"]["total"],
                      "kwargs": gym.registry[env_id].kwargs, "file": stamina_gym.__file__, "metadata": metadata,
                      "task": task.read_text()[:200], "seen": seen}))
    env.close()
'''


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The sdist and the wheel, built with this venv's setuptools (the test extra's): no
    download of a build environment, which failed once under load with nothing to say why."""
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "-o", str(out), str(ROOT)],
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


def test_the_sdist_and_the_wheel_carry_the_envs_and_the_tasks(built):
    with tarfile.open(next(built.glob("*.tar.gz"))) as sdist:
        names = sdist.getnames()
    wheel = zipfile.ZipFile(next(built.glob("*.whl"))).namelist()
    for spec in env_spec_files().values():
        assert any(n.endswith(f"/envs/{spec.name}") for n in names)
        assert f"stamina_gym/_data/envs/{spec.name}" in wheel
    for path in (ROOT / "tasks").rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts and not {"audit", "cleanroom"} & set(path.parts):
            assert f"stamina_gym/_data/tasks/{path.relative_to(ROOT / 'tasks').as_posix()}" in wheel, path
    assert not [n for n in wheel if "__pycache__" in n or n.endswith(".pyc")]
    assert not [n for n in wheel if "/audit/" in n or "/cleanroom/" in n]  # the fairness audits stay in the repository


@pytest.mark.slow
def test_every_env_plays_from_a_wheel_in_a_fresh_venv(built, tmp_path):
    home = tmp_path / "venv"
    venv.create(home, with_pip=True)
    python = home / "bin" / "python"
    subprocess.run([python, "-m", "pip", "install", "-q", next(built.glob("*.whl"))], check=True, capture_output=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    environment = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    ids = sorted(env_spec_files())
    done = subprocess.run([python, "-c", PLAY, *ids], cwd=elsewhere, env=environment, capture_output=True, text=True,
                          check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [r["env"] for r in results] == ids
    for result in results:
        assert result["file"].startswith(str(home)) and result["kwargs"] == {"config": result["env"]}
        assert result["passed"] == result["total"] > 0 and result["reward"] > 0, result
        assert result["metadata"] and result["task"]  # the host reads what the sandbox must not
        seen = result["seen"]
        assert result["task"].strip().splitlines()[0] not in seen["hidden test"]
        for name in ("hidden test", "reference patch"):
            assert "No such file" in seen[name], (name, seen[name])
        for name in ("task data", "package", "metadata"):  # empty, or not there at all
            listed = seen[name].split("\n", 1)[1].strip()
            assert listed == "" or "No such file" in listed, (name, seen[name])
        assert "pytest " in seen["pytest"]

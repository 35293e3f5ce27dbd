"""The grading cache: keys, reuse, concurrent writers, and that the agent cannot reach it."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from stamina_gym.grading.cache import GradingCache, tree_digest
from stamina_gym.grading.grade import Canaries
from stamina_gym.grading.report import Outcome
from stamina_gym.grading.hidden import HiddenRun, not_graded
from stamina_gym.sandbox import RunResult
from tests.conftest import act, mini_env


def _hidden(status: str = "passed", **run) -> HiddenRun:
    result = RunResult(exit_code=0, output="1 passed", output_bytes=8, **run)
    return HiddenRun(result, {"01-add/test_add.py::test_add": Outcome(status, "")}, Canaries({"c/test_c.py::test_x": "passed"}))


def test_tree_digest_follows_what_grading_copies(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("x = 1\n")
    base = tree_digest(tmp_path, not_graded)
    # Files grading leaves out do not change the key ...
    (tmp_path / "conftest.py").write_text("raise SystemExit\n")
    (tmp_path / "pkg" / "__pycache__").mkdir()
    (tmp_path / "pkg" / "__pycache__" / "a.pyc").write_bytes(b"junk")
    (tmp_path / "evil.pth").write_text("import os\n")
    assert tree_digest(tmp_path, not_graded) == base
    # ... anything graded does, git-ignored or not, content, name, mode or link target.
    (tmp_path / ".gitignore").write_text("secret.py\n")
    with_ignore = tree_digest(tmp_path, not_graded)
    assert with_ignore != base
    (tmp_path / "secret.py").write_text("y = 2\n")
    assert tree_digest(tmp_path, not_graded) != with_ignore
    before = tree_digest(tmp_path, not_graded)
    (tmp_path / "pkg" / "a.py").chmod(0o755)
    assert tree_digest(tmp_path, not_graded) != before
    before = tree_digest(tmp_path, not_graded)
    (tmp_path / "link").symlink_to("pkg")
    linked = tree_digest(tmp_path, not_graded)
    assert linked != before
    (tmp_path / "link").unlink()
    (tmp_path / "link").symlink_to("secret.py")
    assert tree_digest(tmp_path, not_graded) != linked


def test_put_get_round_trip_and_counts(tmp_path):
    cache = GradingCache(tmp_path / "c")
    key = cache.key("src", "tests", "grader")
    assert cache.get(key) is None
    assert cache.put(key, _hidden())
    hit = cache.get(key)
    assert hit.cache == "hit" and hit.outcomes == _hidden().outcomes and hit.run == _hidden().run
    assert hit.canaries.expected == {"c/test_c.py::test_x": "passed"}
    assert cache.stats() == {"hits": 1, "misses": 1}
    assert (tmp_path / "c").stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize(
    "hidden",
    [
        HiddenRun(None, None, Canaries({}), "bwrap broke"),
        HiddenRun(RunResult(1, "", 0), None, Canaries({}), "no report"),
        _hidden(timed_out=True),
        _hidden(limit="memory"),
    ],
    ids=["infrastructure", "no-report", "timeout", "resource"],
)
def test_runs_that_depend_on_the_machine_are_not_stored(tmp_path, hidden):
    cache = GradingCache(tmp_path)
    assert not cache.put("k" * 64, hidden)
    assert cache.get("k" * 64) is None


def test_a_corrupt_or_misplaced_entry_is_a_miss(tmp_path):
    cache = GradingCache(tmp_path)
    key, other = "a" * 64, "b" * 64
    cache.put(key, _hidden())
    path = tmp_path / key[:2] / f"{key}.json"
    path.write_text(path.read_text()[:40])
    assert cache.get(key) is None
    cache.put(key, _hidden())
    (tmp_path / other[:2]).mkdir()
    os.replace(path, tmp_path / other[:2] / f"{other}.json")
    assert cache.get(other) is None


def _writer(root: str, index: int, rounds: int) -> None:
    cache = GradingCache(root)
    for n in range(rounds):
        for key in ("c" * 64, "d" * 64):
            cache.put(key, _hidden("passed" if (index + n) % 2 else "failed"))
            assert cache.get(key) is not None


def test_concurrent_writers_never_leave_a_torn_entry(tmp_path):
    context = multiprocessing.get_context("fork")
    procs = [context.Process(target=_writer, args=(str(tmp_path), i, 60)) for i in range(4)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(120)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    cache = GradingCache(tmp_path)
    for key in ("c" * 64, "d" * 64):
        entry = cache.get(key)
        assert entry is not None and entry.outcomes["01-add/test_add.py::test_add"].status in ("passed", "failed")
    leftovers = [p for p in tmp_path.rglob("*") if p.is_file() and p.suffix != ".json"]
    assert leftovers == []


def _oracle_submit(env) -> dict:
    act(env, tool="apply_patch", patch=env.turns[0].reference_patch)
    observation, reward, terminated, truncated, info = env.step({"tool": "submit"})
    return info


def test_env_grades_an_identical_state_once(tmp_path):
    first, second = mini_env(grading_cache=str(tmp_path)), mini_env(grading_cache=str(tmp_path))
    try:
        first.reset(seed=0)
        second.reset(seed=1)
        cold, warm = _oracle_submit(first), _oracle_submit(second)
        assert (cold["grading_cache"], warm["grading_cache"]) == ("miss", "hit")
        assert cold["grade"] == warm["grade"] and cold["reward_terms"] == warm["reward_terms"]
        # A different state is a miss, and its grade is its own.
        second.reset(seed=1)
        act(second, tool="write_file", path="calc/__init__.py", content="def add(a, b):\n    return a - b\n")
        _, _, _, _, info = second.step({"tool": "submit"})
        assert info["grading_cache"] == "miss" and info["grade"]["failure_class"] == "functional"
    finally:
        first.close()
        second.close()


def test_without_a_cache_info_says_nothing(env):
    assert "grading_cache" not in _oracle_submit(env)


def _outside_tmp() -> Path:
    """A cache root the sandbox would not hide by default (not under /tmp or a home)."""
    for base in ("/var/cache", "/var/lib", "/srv"):
        if os.access(base, os.W_OK):
            return Path(tempfile.mkdtemp(prefix="stamina-cache-test-", dir=base))
    pytest.fail("no writable folder outside /tmp and the homes to hold the cache root")


def test_the_agent_cannot_read_or_write_the_cache(tmp_path):
    root = _outside_tmp()
    env = mini_env(grading_cache=str(root))
    try:
        env.reset(seed=0)
        assert root in env._sandbox._hidden  # hidden because the env names it, not by luck
        _oracle_submit(env)
        entries = list(root.rglob("*.json"))
        assert len(entries) == 1
        entry = entries[0]
        # A real attempt from the agent's side: list, read, and overwrite the entry.
        listing, _, _ = act(env, tool="run", command=f"ls -A {root}")
        assert listing.strip() == "[exit code 0]"  # an empty folder: the tmpfs over the root
        read, _, _ = act(env, tool="run", command=f"cat {entry}")
        assert "No such file or directory" in read and '"outcomes"' not in read
        write, _, _ = act(env, tool="run", command=f"mkdir -p {entry.parent} && echo forged > {entry} && echo written")
        assert json.loads(entry.read_text())["outcomes"]  # on the host the entry is untouched
        assert list(root.rglob("*.json")) == [entry]
    finally:
        env.close()
        shutil.rmtree(root, ignore_errors=True)

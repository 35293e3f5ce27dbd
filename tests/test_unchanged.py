"""Refactoring keeps behaviour: the oracle's rewards, grades and records on every turn of
every env equal those recorded in ``tests/data/unchanged/`` before the package's loops,
reward and records were restructured.

Each record file is kept as a fingerprint: per line, the rewards in the clear and a short
digest of every field, after the fields that vary by nature are dropped (``VARYING``:
clocks, durations, where it ran, cache hits, versions of the machine) and temporary paths
are masked. A difference names the file, the line and the fields that changed.

To record them again after a change that is meant to change behaviour::

    STAMINA_GYM_WRITE_UNCHANGED=1 .venv/bin/python -m pytest tests/test_unchanged.py -m slow
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from stamina_gym.evaluation.config import AgentSpec, EvalConfig
from stamina_gym.evaluation.runner import Evaluation
from stamina_gym.rollout import RolloutSpec, collect

GOLDEN = Path(__file__).parent / "data" / "unchanged"

#: Fields whose values vary by nature from one run to the next (dropped at any depth).
VARYING = frozenset({
    "duration_s", "think_s", "elapsed_s", "time", "started_at", "ended_at", "finished_at", "created_at",
    "grading_cache", "cache_hits", "cache_misses", "worker", "resources", "python", "sandbox_python",
    "stamina_gym_version", "versions", "config_hash", "digest", "env_config", "config", "prompt_templates",
    # How many of a turn's tests sealed judging seals: a report on the compiler, which
    # moves whenever it seals more, not behaviour of the env.
    "sealing",
})  # fmt: skip
_TEMP = re.compile(r"/tmp/[^\s\"':]+")
_WRITE = os.environ.get("STAMINA_GYM_WRITE_UNCHANGED") == "1"


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in VARYING}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    if isinstance(value, str):
        return _TEMP.sub("<tmp>", value)
    return value


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


def fingerprint(record: dict[str, Any]) -> dict[str, Any]:
    """The rewards of a record in the clear and a digest of each field of it."""
    record = _strip(record)
    clear = {k: record[k] for k in ("turn", "step", "reward", "reward_terms", "submit_rewards", "turn_rewards") if k in record}
    return {"clear": clear, "fields": {k: _digest(v) for k, v in sorted(record.items())}}


def compare(name: str, records: list[dict[str, Any]]) -> None:
    """Assert ``records`` fingerprint as the stored ``name`` does (or store them)."""
    prints = [fingerprint(record) for record in records]
    path = GOLDEN / f"{name}.json"
    if _WRITE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(prints, indent=0, sort_keys=True) + "\n", encoding="utf-8")
        return
    stored = json.loads(path.read_text(encoding="utf-8"))
    assert len(prints) == len(stored), f"{name}: {len(prints)} records, {len(stored)} recorded"
    problems = []
    for line, (now, then) in enumerate(zip(prints, stored), 1):
        if now["clear"] != then["clear"]:
            problems.append(f"{name} record {line}: rewards {now['clear']} != recorded {then['clear']}")
        changed = sorted(k for k in now["fields"].keys() | then["fields"].keys() if now["fields"].get(k) != then["fields"].get(k))
        if changed:
            problems.append(f"{name} record {line}: fields changed: {', '.join(changed)}")
    assert not problems, "\n".join(problems[:40])


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.slow
def test_the_oracles_todo_episode_is_unchanged(todo_oracle_episode):
    for name in ("turns", "steps", "summary"):
        records = todo_oracle_episode.lines(f"{name}.jsonl") if name != "summary" else [
            json.loads((todo_oracle_episode.records / "summary.json").read_text())]
        compare(f"todo-run-{name}", records)


@pytest.mark.slow
def test_the_oracles_clarify_episode_is_unchanged(clarify_oracle_episode):
    for name in ("turns", "steps"):
        compare(f"clarify-run-{name}", clarify_oracle_episode.lines(f"{name}.jsonl"))


@pytest.mark.slow
def test_collected_and_evaluated_records_are_unchanged(tmp_path):
    """The other two record formats, on the first three clarify turns."""
    spec = RolloutSpec("StaminaClarify-v3", agent="oracle", env_kwargs={"max_turns": 3})
    (record,) = collect(spec, episodes=1, workers=1, backend="inline").records
    compare("clarify-collect", [record])
    compare("clarify-collect-steps", record["steps"])
    config = EvalConfig(env="StaminaClarify-v3", agents=(AgentSpec(name="oracle"),), runs=1, turns=3)
    Evaluation(config, tmp_path, progress=False).run()
    attempt = tmp_path / "runs" / "oracle" / "run-0" / "attempt-1"
    for name in ("turns", "steps"):
        compare(f"clarify-eval-{name}", lines(attempt / f"{name}.jsonl"))
    compare("clarify-eval-result", [json.loads((attempt / "result.json").read_text())])
    compare("clarify-eval-run", [json.loads((attempt / "run.json").read_text())])

"""Evaluation runs: records, frozen config, redaction, budgets, infrastructure reruns,
summary statistics; and resume after ``kill -9`` of a real ``stamina-gym eval`` process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from stamina_gym.errors import ConfigError, SandboxError
from stamina_gym.evaluation.config import AgentSpec, EvalConfig
from stamina_gym.records import Redactor, read_lines
from stamina_gym.evaluation.runner import Evaluation
from stamina_gym.evaluation.report import radar_dimensions
from stamina_gym.evaluation.summary import pass_at_k, pass_hat_k, summarize, summarize_agent
from stamina_gym.config import QualityWeights
from stamina_gym.quality.analyzers import FileQuality
from stamina_gym.quality.measure import Snapshot, quality_report
from stamina_gym.sandbox.local import LocalSandbox
from tests.conftest import MINI
from tests.evaluation.chat_server import ChatServer

ROOT = Path(__file__).resolve().parents[2]
ENV_ID = "Stamina-mini-v1"


@pytest.fixture(autouse=True)
def mini_registered(monkeypatch):
    import stamina_gym

    monkeypatch.setenv("STAMINA_GYM_TASKS", str(MINI))
    stamina_gym.register_envs()


def evaluate(out: Path, *agents: AgentSpec, runs: int = 2, **kwargs) -> dict:
    config = EvalConfig(env=ENV_ID, agents=agents, runs=runs, **kwargs)
    Evaluation(config, out, progress=False).run()
    return summarize(out)


def test_pass_at_k_and_pass_hat_k_by_their_definitions():
    solved = np.array([[1, 0, 1, 0], [1, 0, 0, 0], [1, 1, 0, 0]])  # 3 runs x 4 turns
    # Per turn c = 3, 1, 1, 0 of n = 3.
    assert pass_at_k(solved, 1) == pytest.approx(np.mean([1, 1 / 3, 1 / 3, 0]))
    assert pass_at_k(solved, 2) == pytest.approx(np.mean([1, 2 / 3, 2 / 3, 0]))
    assert pass_hat_k(solved, 2) == pytest.approx(np.mean([1, 0, 0, 0]))
    assert pass_hat_k(solved, 3) == pytest.approx(0.25)


def test_oracle_and_null_records_and_summary(tmp_path):
    out = tmp_path / "ev"
    summary = evaluate(out, AgentSpec(name="oracle"), AgentSpec(name="null"), seeds=(5, 7))
    oracle, null = summary["agents"]
    assert oracle["success_values"] == [1.0, 1.0] and oracle["success_std"] == 0.0
    assert null["success_values"] == [0.0, 0.0] and null["failure_classes"] == {"functional": 4}
    assert oracle["pass@k"] == {"1": 1.0, "2": 1.0} and null["pass^k"] == {"1": 0.0, "2": 0.0}
    assert oracle["stamina_curve"] == [1.0, 1.0] and oracle["efficiency"]["changed_code_share"] == 1.0
    assert null["efficiency"]["changed_code_share"] == 0.0 and oracle["success_by_kind"] == {"feature": 1.0}
    assert oracle["success_by_sequence"] == {}  # the mini task tags no turn with a sequence type
    # the null agent changed nothing: it cannot have kept from regressions or timeouts, and is not credited
    assert null["regression_rate"] is None and null["timeout_ratio"] is None
    assert oracle["regression_rate"] == 0.0 and oracle["timeout_ratio"] == 0.0
    assert radar_dimensions(null)["no regression"] == radar_dimensions(null)["no timeout"] == 0.0
    assert radar_dimensions(oracle)["no regression"] == radar_dimensions(oracle)["no timeout"] == 1.0
    assert oracle["churn_by_file"] == {"calc/__init__.py": [4.0, 4.0]}
    assert oracle["quality_by_turn"]["sloc"] == [2.0, 4.0] and oracle["scores"]["planning"] is None
    meta = json.loads((out / "eval.json").read_text())
    assert meta["rules"]["eval"]["seeds"] == [5, 7] and len(meta["config_hash"]) == 64
    folder = out / "runs/oracle/run-1/attempt-1"
    header = json.loads((folder / "run.json").read_text())
    assert header["seed"] == 7 and header["agent"]["level"] == "reference" and "submit" in header["tools_allowed"]
    assert header["task"]["id"] == "mini" and len(header["task"]["digest"]) == 64
    turns = read_lines(folder / "turns.jsonl")
    assert [t["turn"] for t in turns] == [1, 2]
    assert turns[0]["patch"].startswith("diff --git a/calc/__init__.py") and turns[0]["patch_stats"]["added"] == 4
    assert turns[1]["regression_total"] == 2 and turns[1]["resources"]["maxrss_self_mb"] > 0
    steps = read_lines(folder / "steps.jsonl")
    assert [(s["turn"], s["tool"]) for s in steps] == [(1, "apply_patch"), (1, "submit"), (2, "apply_patch"), (2, "submit")]


def test_quality_metrics_scores_and_churn_are_used_when_the_grades_carry_them():
    meta = [{"turn": i, "id": f"0{i}", "title": "t", "kind": "feature", "phase": "setup"} for i in (1, 2)]
    weights = QualityWeights().model_dump()
    simple = Snapshot({"a.py": FileQuality(sloc=4, functions=[("f", 1, 1)], statements=4)})
    branchy = Snapshot({"a.py": FileQuality(sloc=9, functions=[("f", 1, 1), ("g", 5, 4)], statements=9)})

    def turn(index, before, after, churn, scores):
        return {"turn": index, "graded": True, "solved": True, "failure_class": None, "passed": 1, "total": 1, "reward": 1.5,
                "duration_s": 1.0, "tool_calls": 1, "test_runs": 0, "regression_total": 0, "newly_broken": 0,
                "patch_stats": {"added": 1, "removed": 0, "churn": {"a.py": 1}}, "scores": scores,
                "quality": quality_report(before, after, weights, churn)}  # fmt: skip

    runs = [{"run": 0, "header": {}, "result": {"seed": 0, "success": 1.0, "solved": 2, "total_reward": 3.0, "attempt": 1,
                                                "ended": None, "model": {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0}},
             "turns": [turn(1, simple, simple, {"a.py": (3, 1)}, {"planning": 0.5, "clarification": None}),
                       turn(2, simple, branchy, {"a.py": (2, 0), "b.py": (1, 0)}, None)]}]  # fmt: skip
    agent = summarize_agent("x", runs, [], 0, meta)
    assert agent["quality_by_turn"]["cc_mean"] == [1.0, 2.5] and agent["quality_by_turn"]["sloc"] == [4.0, 9.0]
    assert agent["churn_by_file"] == {"a.py": [4.0, 2.0], "b.py": [0.0, 1.0]}
    assert agent["scores"]["planning"] == 0.5 and agent["scores"]["clarification"] is None


def test_resume_with_a_different_config_is_refused(tmp_path):
    out = tmp_path / "ev"
    evaluate(out, AgentSpec(name="null"), runs=1)
    changed = EvalConfig(env=ENV_ID, agents=(AgentSpec(name="null"),), runs=1, budgets={"command_timeout_s": 5})
    with pytest.raises(ConfigError, match=r"config changed.*sandbox\.timeout_s"):
        Evaluation(changed, out, resume=True, progress=False).prepare()
    same = EvalConfig(env=ENV_ID, agents=(AgentSpec(name="null"),), runs=1)
    with pytest.raises(ConfigError, match="pass --resume"):
        Evaluation(same, out, progress=False).prepare()
    Evaluation(same, out, resume=True, progress=False).prepare()  # the same rules resume


def test_an_infrastructure_failure_is_rerun_and_counted_apart(tmp_path, monkeypatch):
    real_serve, broken = LocalSandbox.serve, {"left": 1}

    def flaky(self, argv, **kwargs):  # the warm grading runner fails to start, once
        if broken["left"]:
            broken["left"] -= 1
            raise SandboxError("bwrap: setting up the mount namespace failed (simulated)")
        return real_serve(self, argv, **kwargs)

    monkeypatch.setattr(LocalSandbox, "serve", flaky)
    out = tmp_path / "ev"
    summary = evaluate(out, AgentSpec(name="oracle"), runs=1)
    first = json.loads((out / "runs/oracle/run-0/attempt-1/result.json").read_text())
    second = json.loads((out / "runs/oracle/run-0/attempt-2/result.json").read_text())
    assert not first["valid"] and "infrastructure in turn 1" in first["invalid_reason"] and second["valid"]
    oracle = summary["agents"][0]
    assert oracle["invalid_attempts"] == 1 and oracle["success_values"] == [1.0]
    assert "infrastructure" not in oracle["failure_classes"]


def test_model_budget_is_enforced_and_secrets_are_redacted(tmp_path, monkeypatch):
    key = "sk-secret-abcdef0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "tok-9876543210-zyx")
    reads = [[("read_file", {"path": "README.md"})] for _ in range(10)]
    out = tmp_path / "ev"
    with ChatServer(reads) as server:
        spec = AgentSpec(name="openai", args={"model": "m", "base_url": server.base_url})
        summary = evaluate(out, spec, runs=1, budgets={"max_model_calls": 3})
    assert len(server.requests) == 3
    assert all(r["headers"]["authorization"] == f"Bearer {key}" for r in server.requests)
    turns = read_lines(out / "runs/openai/run-0/attempt-1/turns.jsonl")
    assert turns == [turns[0]] and turns[0]["ended"] == "max_model_calls" and turns[0]["failure_class"] == "framework"
    assert turns[0]["model"]["calls"] == 3 and turns[0]["tool_calls"] == 3
    agent = summary["agents"][0]
    assert agent["level"] == "model" and agent["failure_classes"] == {"framework": 1, "not played": 1}
    # Echo the key into the records through the repository and an action: it must not land.
    for path in out.rglob("*"):
        if path.is_file():
            text = path.read_text()
            assert key not in text and "tok-9876543210-zyx" not in text, path


def test_redactor_covers_environment_config_and_nested_values():
    redact = Redactor.for_config({"agents": [{"args": {"api_key": "abcdefgh1234", "model": "m"}}]},
                                 environ={"HF_TOKEN": "hf_zzzzzzzzzz", "PATH": "/usr/bin:/bin", "max_tokens": "4096"})  # fmt: skip
    record = {"output": "key abcdefgh1234 and hf_zzzzzzzzzz", "list": ["hf_zzzzzzzzzz"], "password": "x", "n": 3}
    assert redact(record) == {"output": "key [REDACTED] and [REDACTED]", "list": ["[REDACTED]"], "password": "[REDACTED]", "n": 3}
    assert redact("/usr/bin:/bin 4096") == "/usr/bin:/bin 4096"


def test_redactor_leaves_a_test_named_like_a_secret_alone():
    """A grade keyed by test ids: ``...::test_locked_even_with_the_right_password`` is not a
    setting, and its outcome is not a secret (the records once hid it)."""
    redact = Redactor.for_config({}, environ={})
    tests = {"02-login/test_lockout.py::test_locked_even_with_the_right_password": "passed", "api_token": "t0ps3cr3t"}
    assert redact({"tests": tests}) == {"tests": {**tests, "api_token": "[REDACTED]"}}


def _cli(out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "stamina_gym.cli", "eval", "--agent", "oracle", "--tasks", str(MINI), "--env", ENV_ID,
            "--runs", "2", "--out", str(out), *extra]  # fmt: skip


def _records(out: Path) -> dict[int, tuple[list[dict], list[dict], dict]]:
    found = {}
    for run in (0, 1):
        folder = out / f"runs/oracle/run-{run}/attempt-1"
        found[run] = (read_lines(folder / "turns.jsonl"), read_lines(folder / "steps.jsonl"),
                      json.loads((folder / "result.json").read_text()))  # fmt: skip
    return found


def _kill_when(out: Path, ready, log: Path) -> None:
    """Start an eval, SIGKILL it once ``ready(out)`` holds; it must not have finished."""
    # A killed env cannot remove its temporary folder: keep it under the test's own tmp.
    scratch = log.parent / "tmp"
    scratch.mkdir(exist_ok=True)
    with open(log, "ab") as err:
        proc = subprocess.Popen(_cli(out, "--resume") if (out / "eval.json").exists() else _cli(out), cwd=ROOT,
                                stdout=subprocess.DEVNULL, stderr=err, env={**os.environ, "TMPDIR": str(scratch)})  # fmt: skip
    deadline = time.monotonic() + 120
    while not ready(out) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=30) == -signal.SIGKILL, "the run ended before it could be killed"
    assert not (out / "summary.json").exists()


def _lines(path: Path) -> list[dict]:
    try:
        return read_lines(path)
    except (OSError, ValueError):
        return []


def test_kill_9_then_resume_loses_nothing_and_counts_nothing_twice(tmp_path):
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    subprocess.run(_cli(whole, "--no-progress"), cwd=ROOT, check=True, capture_output=True)
    log = tmp_path / "stderr.log"
    run0 = cut / "runs/oracle/run-0/attempt-1"
    # First kill: inside turn 2 of run 0 (its first step recorded, its submit not).
    _kill_when(cut, lambda o: any(s["turn"] == 2 for s in _lines(run0 / "steps.jsonl")), log)
    assert len(_lines(run0 / "turns.jsonl")) == 1
    # Second kill: once run 1 has begun.
    _kill_when(cut, lambda o: (o / "runs/oracle/run-1/attempt-1/steps.jsonl").exists(), log)
    done = subprocess.run(_cli(cut, "--resume"), cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "turns |" in log.read_text() + done.stderr  # the progress bar
    expected, got = _records(whole), _records(cut)
    for run in (0, 1):
        turns, steps, result = got[run]
        assert [t["turn"] for t in turns] == [1, 2]
        assert [s["step"] for s in steps] == list(range(1, len(steps) + 1)) == [s["step"] for s in expected[run][1]]
        assert [(s["turn"], s["tool"]) for s in steps] == [(s["turn"], s["tool"]) for s in expected[run][1]]
        assert [t["commit"] for t in turns] == [t["commit"] for t in expected[run][0]]
        for key in ("solved", "success", "total_reward", "turns_recorded", "valid"):
            assert result[key] == expected[run][2][key], key
    summaries = [json.loads((o / "summary.json").read_text())["agents"][0] for o in (whole, cut)]
    for key in ("success_values", "pass@k", "pass^k", "failure_classes", "stamina_curve"):
        assert summaries[0][key] == summaries[1][key], key
    events = [e["event"] for e in read_lines(cut / "events.jsonl")]
    assert events.count("resume") == 2 and "resume_attempt" in events
    resumed = [e for e in read_lines(cut / "events.jsonl") if e["event"] == "resume_attempt"]
    assert resumed[0]["finished_turns"] == 1 and resumed[0]["dropped_steps"] >= 1
    # A resume under other rules is refused with the reason.
    refused = subprocess.run(_cli(cut, "--resume", "--command-timeout", "5"), cwd=ROOT, capture_output=True, text=True)
    assert refused.returncode == 2 and "refusing to resume" in refused.stderr and "timeout_s" in refused.stderr

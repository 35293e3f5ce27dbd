"""Summary statistics of an evaluation folder, computed from its records alone.

Only valid runs are scored; invalid attempts (a broken sandbox) are counted apart.
``success`` of a run is the share of the env's turns it solved (turns it never reached
count as unsolved). pass@k and pass^k are over turns: for each turn, the chance that at
least one (pass@k) or every one (pass^k) of k runs drawn from the n valid runs solved it.
"""

from __future__ import annotations

from collections import Counter
from math import comb
from pathlib import Path
from typing import Any

import numpy as np

from stamina_gym.records import read_json, read_lines
from stamina_gym.evaluation.runner import attempt_dirs

SCORE_DIMENSIONS = ("clarification", "planning", "generation", "composite")


def load_agent_runs(out: Path, label: str, runs: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    """(valid runs, invalid attempts, runs not finished) of one agent."""
    valid, invalid, unfinished = [], [], 0
    for run in range(runs):
        found = None
        for folder in attempt_dirs(out, label, run):
            if not (folder / "result.json").exists():
                continue
            result = read_json(folder / "result.json")
            entry = {"run": run, "folder": str(folder.relative_to(out)), "result": result,
                     "turns": read_lines(folder / "turns.jsonl"), "header": read_json(folder / "run.json")
                     if (folder / "run.json").exists() else {}}  # fmt: skip
            if result["valid"]:
                found = entry
            else:
                invalid.append(entry)
        if found:
            valid.append(found)
        else:
            unfinished += 1
    return valid, invalid, unfinished


def pass_at_k(solved: np.ndarray, k: int) -> float:
    """solved: runs x turns of 0/1. Mean over turns of 1 - C(n-c, k) / C(n, k)."""
    n = solved.shape[0]
    return float(np.mean([1 - comb(n - int(c), k) / comb(n, k) for c in solved.sum(axis=0)]))


def pass_hat_k(solved: np.ndarray, k: int) -> float:
    """Mean over turns of C(c, k) / C(n, k): every one of k runs solved the turn."""
    n = solved.shape[0]
    return float(np.mean([comb(int(c), k) / comb(n, k) for c in solved.sum(axis=0)]))


def _mean(values: list[float]) -> float | None:
    return float(np.mean(values)) if values else None


def summarize_agent(label: str, runs: list[dict], invalid: list[dict], unfinished: int, turn_meta: list[dict]) -> dict[str, Any]:
    n_turns = len(turn_meta)
    solved = np.zeros((len(runs), n_turns))
    reward = np.zeros((len(runs), n_turns))
    pass_fraction = np.zeros((len(runs), n_turns))
    for i, run in enumerate(runs):
        for t in run["turns"]:
            solved[i, t["turn"] - 1] = bool(t.get("solved"))
            reward[i, t["turn"] - 1] = t.get("reward", 0.0)
            pass_fraction[i, t["turn"] - 1] = t["passed"] / t["total"] if t.get("total") else 0.0
    played = [t for run in runs for t in run["turns"]]
    graded = [t for t in played if t.get("graded")]
    success = [run["result"]["success"] for run in runs]
    durations = [t["duration_s"] for t in played]
    # A turn on which the agent changed nothing can neither break an earlier test nor run
    # out of time working: the regression and timeout rates count the turns it worked on.
    worked = [t for t in played if t["patch_stats"]["added"] + t["patch_stats"]["removed"] > 0]
    with_regression = [t for t in worked if t.get("graded") and t.get("regression_total")]
    header = runs[0]["header"].get("agent", {}) if runs else {}

    def share(rows: list[dict], key) -> float | None:
        return float(np.mean([bool(key(t)) for t in rows])) if rows else None

    def group_success(field: str) -> dict[str, float]:
        groups: dict[str, list[int]] = {}
        for index, meta in enumerate(turn_meta):
            if meta.get(field) is not None:  # turns without a sequence type are in no sequence group
                groups.setdefault(meta[field], []).append(index)
        return {name: float(solved[:, cols].mean()) if len(runs) else 0.0 for name, cols in groups.items()}

    failures = Counter(t["failure_class"] or "solved" for t in played)
    not_played = len(runs) * n_turns - len(played)
    if not_played:
        failures["not played"] = not_played
    scores = {}
    for dim in SCORE_DIMENSIONS:
        values = [t["scores"][dim] for t in played if isinstance(t.get("scores"), dict) and t["scores"].get(dim) is not None]
        scores[dim] = _mean(values)
    quality: dict[str, list[float | None]] = {}
    for t in graded:
        for name, value in debt_curves(t.get("quality") or {}).items():
            quality.setdefault(name, [[] for _ in range(n_turns)])[t["turn"] - 1].append(float(value))
    quality_curves = {name: [_mean(v) for v in per_turn] for name, per_turn in quality.items()}
    churn: dict[str, list[float]] = {}
    for t in graded:
        own = (t.get("quality") or {}).get("churn")
        for path, lines in (own if isinstance(own, dict) else t["patch_stats"]["churn"]).items():
            changed = sum(lines) if isinstance(lines, (list, tuple)) else lines  # [added, removed] or a count
            churn.setdefault(path, [0.0] * n_turns)[t["turn"] - 1] += changed / max(len(runs), 1)
    k_values = range(1, len(runs) + 1)
    by_term: dict[str, list[float]] = {}
    for run in runs:
        sums: dict[str, float] = {}
        for t in run["turns"]:
            for term, value in (t.get("reward_terms") or {}).items():
                sums[term] = sums.get(term, 0.0) + value
        sums["step costs"] = run["result"]["total_reward"] - sum(sums.values())  # what the terms leave: per-step costs
        for term, value in sums.items():
            by_term.setdefault(term, []).append(value)
    return {
        "agent": label,
        "level": header.get("level"),
        "version": header.get("version"),
        "config_digest": header.get("config_digest"),
        "valid_runs": len(runs),
        "invalid_attempts": len(invalid),
        "invalid_reasons": [a["result"]["invalid_reason"] for a in invalid],
        "unfinished_runs": unfinished,
        "runs": [{"run": r["run"], "seed": r["result"]["seed"], "success": r["result"]["success"],
                  "solved": r["result"]["solved"], "total_reward": r["result"]["total_reward"],
                  "attempt": r["result"]["attempt"], "ended": r["result"]["ended"], "folder": r.get("folder"),
                  "solved_turns": [t["turn"] for t in r["turns"] if t.get("solved")]} for r in runs],  # fmt: skip
        "success_mean": _mean(success),
        "success_std": float(np.std(success, ddof=1)) if len(success) > 1 else 0.0 if success else None,
        "success_values": success,
        "pass@k": {str(k): pass_at_k(solved, k) for k in k_values},
        "pass^k": {str(k): pass_hat_k(solved, k) for k in k_values},
        "turn_time_median_s": float(np.median(durations)) if durations else None,
        "turn_time_p90_s": float(np.percentile(durations, 90)) if durations else None,
        "timeout_ratio": share(worked, lambda t: t["failure_class"] == "timeout"),
        "tool_calls_per_turn": _mean([t["tool_calls"] for t in played]),
        "test_runs_per_turn": _mean([t["test_runs"] for t in played]),
        "patch_lines_mean": _mean([t["patch_stats"]["added"] + t["patch_stats"]["removed"] for t in graded]),
        "regression_rate": share(with_regression, lambda t: t["newly_broken"] > 0),
        "success_by_kind": group_success("kind"),
        "success_by_phase": group_success("phase"),
        "success_by_sequence": group_success("sequence"),
        "stamina_curve": solved.mean(axis=0).tolist() if len(runs) else [],
        "pass_fraction_by_turn": pass_fraction.mean(axis=0).tolist() if len(runs) else [],
        "reward_by_turn": reward.mean(axis=0).tolist() if len(runs) else [],
        "reward_by_term": {term: round(float(np.mean(values)), 6) for term, values in by_term.items()},
        "failure_classes": dict(failures),
        "efficiency": {
            "changed_code_share": share(graded, lambda t: t["patch_stats"]["added"] + t["patch_stats"]["removed"] > 0),
            "resolved_share": share(played, lambda t: t.get("solved")),
            "questions": sum(t.get("questions", 0) for t in played),
            "repeated_questions": sum(t.get("repeated_questions", 0) for t in played),
        },
        "scores": scores,
        "quality_by_turn": quality_curves or None,
        "churn_by_file": churn,
        "model_per_run": {k: _mean([r["result"]["model"][k] for r in runs]) for k in ("calls", "prompt_tokens", "completion_tokens")},
        "resources": {
            "cpu_children_s": round(sum(t.get("resources", {}).get("cpu_children_s", 0.0) for t in played), 3),
            "maxrss_children_mb": max((t.get("resources", {}).get("maxrss_children_mb", 0.0) for t in played), default=None),
        },
    }


def summarize(out: Path) -> dict[str, Any]:
    meta = read_json(out / "eval.json")
    config = meta["rules"]["eval"]
    agents = []
    for spec in config["agents"]:
        runs, invalid, unfinished = load_agent_runs(out, spec["name"], config["runs"])
        agents.append(summarize_agent(spec["name"], runs, invalid, unfinished, meta["turns"]))
    return {
        "env": config["env"],
        "task": meta["rules"]["task"],
        "config_hash": meta["config_hash"],
        "runs": config["runs"],
        "seeds": config["seeds"],
        "turns": meta["turns"],
        "agents": agents,
    }


def _fmt(value: Any, pattern: str = "{:.3f}") -> str:
    return "-" if value is None else pattern.format(value)


def format_table(summary: dict[str, Any]) -> str:
    """One line per agent; the raw per-run values follow the mean and std."""
    n = summary["runs"]
    head = (f"{'agent':<10} {'level':<9} {'valid':>5} {'invalid':>7}  {'success mean±std':<17} {'per run':<22} "
            f"{'pass@1':>6} {f'pass@{n}':>6} {f'pass^{n}':>6} {'t med s':>7} {'t p90 s':>7} {'timeout':>7} "
            f"{'tools/t':>7} {'tests/t':>7} {'patch':>6} {'regress':>7}")  # fmt: skip
    lines = [f"{summary['env']}  task {summary['task']['id']} v{summary['task']['version']}  runs {n}  "
             f"seeds {summary['seeds']}  config {summary['config_hash'][:12]}", head]  # fmt: skip
    for a in summary["agents"]:
        raw = ",".join(f"{v:.2f}" for v in a["success_values"]) or "-"
        mean_std = f"{_fmt(a['success_mean'])}±{_fmt(a['success_std'])}"
        lines.append(
            f"{a['agent']:<10} {a['level'] or '-':<9} {a['valid_runs']:>5} {a['invalid_attempts']:>7}  {mean_std:<17} {raw:<22} "
            f"{_fmt(a['pass@k'].get('1')):>6} {_fmt(a['pass@k'].get(str(n))):>6} {_fmt(a['pass^k'].get(str(n))):>6} "
            f"{_fmt(a['turn_time_median_s'], '{:.2f}'):>7} {_fmt(a['turn_time_p90_s'], '{:.2f}'):>7} "
            f"{_fmt(a['timeout_ratio'], '{:.2f}'):>7} {_fmt(a['tool_calls_per_turn'], '{:.2f}'):>7} "
            f"{_fmt(a['test_runs_per_turn'], '{:.2f}'):>7} {_fmt(a['patch_lines_mean'], '{:.1f}'):>6} "
            f"{_fmt(a['regression_rate'], '{:.2f}'):>7}"
        )  # fmt: skip
    for a in summary["agents"]:
        classes = ", ".join(f"{k} {v}" for k, v in sorted(a["failure_classes"].items()))
        lines.append(f"{a['agent']}: turn results: {classes}")
    return "\n".join(lines)


def debt_curves(quality: dict[str, Any]) -> dict[str, float]:
    """The per-turn numbers the report draws as growth curves, from a grade's quality
    report (``stamina_gym.quality``); empty when the turn was not measured."""
    metrics = quality.get("metrics")
    if not metrics:
        return {}
    relative = {"quality vs reference": quality["relative"]} if quality.get("relative") is not None else {}
    return {
        **relative,
        "quality score": quality["score"],
        "sloc": metrics["sloc"],
        "cc_mean": metrics["cc_mean"],
        "cc_max": metrics["cc_max"],
        "mi_mean": metrics["mi_mean"],
        "pylint_score": metrics["pylint_score"],
        "lint messages": sum(n for cat, n in metrics["pylint_messages"].items() if cat != "info"),
        "security findings": sum(metrics["bandit"].values()),
    }

"""Blind human review of an evaluation's turns, to calibrate the automatic scores.

``export_pack`` samples graded turns from every agent's valid runs, shuffles them and
writes, per turn, a self-contained page (the request, the agent's questions with the
answers it got, its plan, its diff) with nothing that names the agent, plus a CSV to fill
in (code quality, clarification and plan, 1-5, and notes) and ``key.json``, which maps
each item back to its agent, run and turn and holds the automatic scores; a reviewer
should not open it.

``import_scores`` reads the filled CSV back, pairs each human score with its automatic
counterpart (code quality with the grade's quality score, clarification with C,
plan with P) and measures their agreement: Spearman's rho and Kendall's tau-b, each with a
95% bootstrap interval over the items. The result goes to ``agreement.json`` in the pack
and, when the evaluation folder is at hand, into its ``summary.json`` and report.

    stamina-gym review export --from EVAL_DIR --sample 30 [--out PACK] [--seed 0]
    stamina-gym review import PACK scores.csv
"""

from __future__ import annotations

import csv
import html
import json
from pathlib import Path
from typing import Any

import numpy as np

from stamina_gym.errors import ConfigError
from stamina_gym.records import read_json, read_lines, write_json
from stamina_gym.evaluation.summary import load_agent_runs
from stamina_gym.evaluation.transcript import html_page

#: CSV column -> the automatic score it is compared with.
DIMENSIONS = {"code_quality": "quality", "clarification": "clarification", "plan": "planning"}
COLUMNS = ("item", *DIMENSIONS, "notes")
BOOTSTRAP_SAMPLES = 2000


# -- export -------------------------------------------------------------------------------


def export_pack(eval_dir: Path, out: Path, sample: int, seed: int = 0) -> list[str]:
    """Write a review pack of ``sample`` graded turns to ``out``; returns the item ids."""
    if sample < 1:
        raise ConfigError(f"--sample must be at least 1, not {sample}")
    if out.exists() and any(out.iterdir()):
        raise ConfigError(f"{out} is not empty: a review pack goes to a new folder (nothing was written)")
    candidates = _graded_turns(eval_dir)
    if not candidates:
        raise ConfigError(f"{eval_dir}: no graded turn to review (is it an evaluation folder with finished runs?)")
    rng = np.random.default_rng(seed)
    chosen = [candidates[i] for i in rng.permutation(len(candidates))[: min(sample, len(candidates))]]
    (out / "items").mkdir(parents=True, exist_ok=True)
    key, ids = {}, []
    for number, (agent, run, folder, turn) in enumerate(chosen, start=1):
        item = f"item-{number:03d}"
        ids.append(item)
        steps = [s for s in read_lines(eval_dir / folder / "steps.jsonl") if s["turn"] == turn["turn"]]
        (out / "items" / f"{item}.html").write_text(_page(item, turn, steps), encoding="utf-8")
        scores = turn.get("scores") or {}
        key[item] = {
            "agent": agent, "run": run, "folder": folder, "turn": turn["turn"], "turn_id": turn.get("turn_id"),
            "automatic": {"quality": (turn.get("quality") or {}).get("score"),
                          "clarification": scores.get("clarification"), "planning": scores.get("planning")},
        }  # fmt: skip
    with open(out / "scores.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        writer.writerows([[item, "", "", "", ""] for item in ids])
    write_json(out / "key.json", {"eval_dir": str(eval_dir.resolve()), "seed": seed, "items": key})
    (out / "index.html").write_text(_index(ids), encoding="utf-8")
    return ids


def _graded_turns(eval_dir: Path) -> list[tuple[str, int, str, dict[str, Any]]]:
    meta = read_json(eval_dir / "eval.json")
    config = meta["rules"]["eval"]
    out = []
    for spec in config["agents"]:
        runs, _, _ = load_agent_runs(eval_dir, spec["name"], config["runs"])
        for run in runs:
            out += [(spec["name"], run["run"], run["folder"], t) for t in run["turns"] if t.get("graded")]
    return out


_STYLE = ("body{font-family:sans-serif;max-width:60rem;margin:2rem auto;line-height:1.4}"
          "pre{background:#f6f6f6;padding:.8rem;overflow-x:auto;white-space:pre-wrap}"
          ".add{color:#064}.del{color:#900}h2{margin-top:2rem}")  # fmt: skip


def _page(item: str, turn: dict[str, Any], steps: list[dict[str, Any]]) -> str:
    """One item: nothing on it names the agent, its run or its reward."""
    questions = [(s["action"].get("question", ""), s.get("output", "")) for s in steps
                 if s.get("tool") == "ask" and isinstance(s.get("action"), dict)]  # fmt: skip
    plans = [s["action"].get("steps") for s in steps if s.get("tool") == "plan" and isinstance(s.get("action"), dict)]
    diff = "\n".join(
        f'<span class="{"add" if line.startswith("+") else "del" if line.startswith("-") else ""}">{html.escape(line)}</span>'
        for line in (turn.get("patch") or "").splitlines()
    )
    parts = [f"<h1>{item}</h1>", "<h2>The request</h2>", f"<pre>{html.escape(turn.get('prompt') or '(not recorded)')}</pre>"]
    parts.append("<h2>Questions asked</h2>")
    parts += [f"<p><b>Q:</b> {html.escape(q)}<br><b>A:</b> {html.escape(a)}</p>" for q, a in questions] or ["<p>None.</p>"]
    parts.append("<h2>Plan</h2>")
    parts += [f"<pre>{html.escape(json.dumps(plan, indent=2, ensure_ascii=False))}</pre>" for plan in plans] or ["<p>None.</p>"]
    parts += ["<h2>The change</h2>", f"<pre>{diff or '(no change)'}</pre>"]
    return html_page(item, "".join(parts), _STYLE)


def _index(ids: list[str]) -> str:
    links = "".join(f'<li><a href="items/{item}.html">{item}</a></li>' for item in ids)
    body = ("<h1>Review pack</h1><p>Score each item in scores.csv: code_quality, clarification and plan from 1 (poor) "
            "to 5 (excellent), blank where it does not apply, notes free. Do not open key.json until you are done.</p>"
            f"<ol>{links}</ol>")  # fmt: skip
    return html_page("Review pack", body, _STYLE)


# -- import -------------------------------------------------------------------------------


def import_scores(pack: Path, scores_csv: Path) -> dict[str, Any]:
    """Agreement between the human scores in ``scores_csv`` and the automatic ones; written
    to ``pack/agreement.json`` and, when the evaluation folder named in the key exists,
    into its ``summary.json`` (and report)."""
    key = read_json(pack / "key.json")
    human = _read_csv(scores_csv, set(key["items"]))
    result: dict[str, Any] = {"items_scored": len(human), "dimensions": {}}
    for column, automatic in DIMENSIONS.items():
        pairs = [(row[column], key["items"][item]["automatic"][automatic]) for item, row in human.items()
                 if row[column] is not None and key["items"][item]["automatic"][automatic] is not None]  # fmt: skip
        result["dimensions"][column] = agreement(pairs)
    write_json(pack / "agreement.json", result)
    eval_dir = Path(key["eval_dir"])
    if (eval_dir / "summary.json").exists():
        from stamina_gym.evaluation.report import write_report

        summary = read_json(eval_dir / "summary.json")
        summary["human_calibration"] = result
        write_json(eval_dir / "summary.json", summary)
        write_report(summary, eval_dir / "report.html")
    return result


def _read_csv(path: Path, items: set[str]) -> dict[str, dict[str, Any]]:
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise ConfigError(f"{path}: missing column(s) {', '.join(missing)}; the header must be {','.join(COLUMNS)}")
        rows: dict[str, dict[str, Any]] = {}
        for line, row in enumerate(reader, start=2):
            item = (row["item"] or "").strip()
            if item not in items:
                raise ConfigError(f"{path}:{line}: item {item!r} is not in this pack")
            if item in rows:
                raise ConfigError(f"{path}:{line}: item {item} is scored twice")
            parsed: dict[str, Any] = {"notes": row["notes"] or ""}
            for column in DIMENSIONS:
                text = (row[column] or "").strip()
                if text and text not in ("1", "2", "3", "4", "5"):
                    raise ConfigError(f"{path}:{line}: {column} must be a whole number from 1 to 5 or blank, not {text!r}")
                parsed[column] = int(text) if text else None
            rows[item] = parsed
    return rows


def agreement(pairs: list[tuple[float, float]], samples: int = BOOTSTRAP_SAMPLES, seed: int = 0) -> dict[str, Any]:
    """Spearman's rho and Kendall's tau-b of (human, automatic) pairs, each with a 95%
    percentile bootstrap interval over the pairs; None where fewer than 3 pairs or no
    variation make them undefined."""
    n = len(pairs)
    out: dict[str, Any] = {"n": n, "spearman": None, "spearman_ci95": None, "kendall": None, "kendall_ci95": None}
    if n < 3:
        return out
    x = np.array([p[0] for p in pairs], dtype=float)
    y = np.array([p[1] for p in pairs], dtype=float)
    rng = np.random.default_rng(seed)
    for name, statistic in (("spearman", spearman), ("kendall", kendall_tau_b)):
        value = statistic(x, y)
        if value is None:
            continue
        draws = [statistic(x[i], y[i]) for i in (rng.integers(0, n, n) for _ in range(samples))]
        draws = [d for d in draws if d is not None]
        out[name] = round(value, 4)
        out[f"{name}_ci95"] = [round(float(np.percentile(draws, 2.5)), 4), round(float(np.percentile(draws, 97.5)), 4)]
    return out


def _ranks(values: np.ndarray) -> np.ndarray:
    """Ranks from 1, ties sharing their mean rank."""
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values))
    ranks[order] = np.arange(1, len(values) + 1)
    for value in np.unique(values):
        tied = values == value
        ranks[tied] = ranks[tied].mean()
    return ranks


def spearman(x: np.ndarray, y: np.ndarray) -> float | None:
    """Pearson's correlation of the ranks (ties averaged); None without variation."""
    rx, ry = _ranks(x), _ranks(y)
    if rx.std() == 0 or ry.std() == 0:
        return None
    return float(np.corrcoef(rx, ry)[0, 1])


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> float | None:
    """(concordant - discordant) / sqrt((pairs - ties in x) (pairs - ties in y)); None
    without variation."""
    dx = np.sign(x[:, None] - x[None, :])
    dy = np.sign(y[:, None] - y[None, :])
    upper = np.triu_indices(len(x), k=1)
    sx, sy = dx[upper], dy[upper]
    both = float(np.sum(sx * sy))
    untied_x, untied_y = float(np.sum(sx != 0)), float(np.sum(sy != 0))
    if untied_x == 0 or untied_y == 0:
        return None
    return both / float(np.sqrt(untied_x * untied_y))

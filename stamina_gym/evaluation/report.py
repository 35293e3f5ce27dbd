"""One self-contained HTML report of an evaluation: plots are SVG embedded as data URIs,
the page needs no network and no file beside it.

Plots: stamina curve (success by turn), radar of score dimensions, pass waterfall by
turn, complexity and debt growth (from per-turn quality metrics, when recorded), change
heat map (lines changed per file and turn), failure breakdown; every agent side by side.
"""

from __future__ import annotations

import base64
import io
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("MPLBACKEND", "Agg")

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape  # noqa: E402

FAILURE_COLORS = {
    "solved": "#2e7d32", "functional": "#ef6c00", "build": "#6d4c41", "regression": "#c62828",
    "timeout": "#6a1b9a", "resource": "#ad1457", "framework": "#37474f", "infrastructure": "#9e9e9e",
    "violation": "#000000", "not played": "#cfd8dc",
}  # fmt: skip
#: Quality metrics where a higher value means more complexity or debt.
DEBT_METRICS = ("sloc", "cc_mean", "cc_max", "lint messages", "security findings")


def _svg(fig: Any) -> str:
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight")
    plt.close(fig)
    return "data:image/svg+xml;base64," + base64.b64encode(buffer.getvalue().encode()).decode()


def _colors(n: int) -> list[Any]:
    return [plt.get_cmap("tab10")(i % 10) for i in range(n)]


def stamina_plot(summary: dict[str, Any]) -> str:
    fig, ax = plt.subplots(figsize=(7, 3.2))
    turns = np.arange(1, len(summary["turns"]) + 1)
    for agent, color in zip(summary["agents"], _colors(len(summary["agents"])), strict=True):
        if agent["stamina_curve"]:
            ax.plot(turns, agent["stamina_curve"], marker="o", ms=3, color=color, label=agent["agent"])
    ax.set(xlabel="turn", ylabel="share of runs solving the turn", ylim=(-0.05, 1.05), title="Stamina curve")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(loc="best", fontsize=8)
    ax.grid(alpha=0.3)
    return _svg(fig)


def radar_dimensions(agent: dict[str, Any]) -> dict[str, float]:
    """Each axis in [0, 1], 1 best. A rate that could not be measured (no turn on which the
    agent changed code) counts 0, not 1: doing nothing earns no "no regression" credit."""
    dims = {
        "success": agent["success_mean"] or 0.0,
        "pass@1": agent["pass@k"].get("1", 0.0),
        "no regression": 1 - agent["regression_rate"] if agent["regression_rate"] is not None else 0.0,
        "no timeout": 1 - agent["timeout_ratio"] if agent["timeout_ratio"] is not None else 0.0,
        "resolved": agent["efficiency"]["resolved_share"] or 0.0,
    }
    for name, value in agent["scores"].items():
        if value is not None:
            dims[name] = float(value)
    return dims


def radar_plot(summary: dict[str, Any]) -> str:
    names: list[str] = []
    for agent in summary["agents"]:
        names += [n for n in radar_dimensions(agent) if n not in names]
    angles = np.linspace(0, 2 * np.pi, len(names), endpoint=False).tolist()
    fig, ax = plt.subplots(figsize=(4.6, 4.6), subplot_kw={"polar": True})
    for agent, color in zip(summary["agents"], _colors(len(summary["agents"])), strict=True):
        dims = radar_dimensions(agent)
        values = [dims.get(n, 0.0) for n in names]
        ax.plot(angles + angles[:1], values + values[:1], color=color, label=agent["agent"])
        ax.fill(angles + angles[:1], values + values[:1], color=color, alpha=0.15)
    ax.set_xticks(angles, names, fontsize=8)
    ax.set_ylim(0, 1)
    ax.set_title("Score dimensions")
    ax.legend(loc="upper right", bbox_to_anchor=(1.3, 1.1), fontsize=8)
    return _svg(fig)


def waterfall_plot(summary: dict[str, Any]) -> str:
    agents = summary["agents"]
    fig, axes = plt.subplots(1, len(agents), figsize=(3.6 * len(agents) + 0.5, 3.2), squeeze=False, sharey=True)
    for ax, agent in zip(axes[0], agents, strict=True):
        gains = np.array(agent["reward_by_turn"] or [0.0] * len(summary["turns"]))
        before = np.concatenate([[0.0], np.cumsum(gains)[:-1]])
        colors = ["#2e7d32" if g >= 0 else "#c62828" for g in gains]
        ax.bar(np.arange(1, len(gains) + 1), gains, bottom=before, color=colors)
        ax.set(title=agent["agent"], xlabel="turn")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3, axis="y")
    axes[0][0].set_ylabel("cumulative reward (mean of runs)")
    fig.suptitle("Pass waterfall: reward gained or lost at each turn", y=1.04)
    return _svg(fig)


def quality_plot(summary: dict[str, Any]) -> str | None:
    agents = [a for a in summary["agents"] if a.get("quality_by_turn")]
    if not agents:
        return None
    metrics = sorted({m for a in agents for m in a["quality_by_turn"]})
    columns = min(4, len(metrics))
    rows = -(-len(metrics) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(3.4 * columns + 0.5, 2.8 * rows), squeeze=False)
    for ax in axes.flat[len(metrics):]:
        ax.set_visible(False)
    for ax, metric in zip(axes.flat, metrics):
        for agent, color in zip(agents, _colors(len(agents)), strict=True):
            values = agent["quality_by_turn"].get(metric)
            if values:
                turns = [i + 1 for i, v in enumerate(values) if v is not None]
                ax.plot(turns, [v for v in values if v is not None], marker="o", ms=3, color=color, label=agent["agent"])
        ax.set(title=metric + (" (debt)" if metric in DEBT_METRICS else ""), xlabel="turn")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.subplots_adjust(hspace=0.55, wspace=0.3)
    fig.suptitle("Complexity and debt growth", y=1.04)
    return _svg(fig)


def reward_split_plot(summary: dict[str, Any]) -> str:
    """Each agent's mean episode reward as a stacked bar of its terms (negative terms to
    the left of 0), so what an agent is paid for shows at a glance."""
    agents = summary["agents"]
    terms = sorted({t for a in agents for t in a["reward_by_term"]})
    fig, ax = plt.subplots(figsize=(8, 0.6 * len(agents) + 1.6))
    positive, negative = np.zeros(len(agents)), np.zeros(len(agents))  # where each agent's bar has got to
    for color, term in zip(_colors(len(terms)), terms, strict=True):
        values = np.array([a["reward_by_term"].get(term, 0.0) for a in agents])
        left = np.where(values >= 0, positive, negative)
        ax.barh([a["agent"] for a in agents], values, left=left, color=color, label=term)
        positive += np.maximum(values, 0)
        negative += np.minimum(values, 0)
    ax.axvline(0, color="black", lw=0.8)
    ax.set(xlabel="mean reward per episode", title="Reward split by term")
    ax.legend(fontsize=7, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.3))
    return _svg(fig)


def heatmap_plot(agent: dict[str, Any], n_turns: int, max_files: int = 30) -> str | None:
    churn = agent["churn_by_file"]
    if not churn:
        return None
    files = sorted(churn, key=lambda f: -sum(churn[f]))[:max_files]
    files.sort()
    grid = np.array([churn[f] for f in files])
    fig, ax = plt.subplots(figsize=(max(4.0, 0.32 * n_turns + 2.5), 0.26 * len(files) + 1.4))
    image = ax.imshow(grid, aspect="auto", cmap="viridis", interpolation="nearest")
    ax.set_yticks(range(len(files)), files, fontsize=7)
    ax.set_xticks(range(n_turns), [str(i + 1) for i in range(n_turns)], fontsize=7)
    ax.set(xlabel="turn", title=f"Lines changed per file and turn: {agent['agent']}")
    fig.colorbar(image, ax=ax, label="lines (mean of runs)")
    return _svg(fig)


def failure_plot(summary: dict[str, Any]) -> str:
    agents = summary["agents"]
    classes = [c for c in FAILURE_COLORS if any(c in a["failure_classes"] for a in agents)]
    fig, ax = plt.subplots(figsize=(7, 0.5 * len(agents) + 1.4))
    left = np.zeros(len(agents))
    for name in classes:
        counts = np.array([a["failure_classes"].get(name, 0) for a in agents], dtype=float)
        ax.barh([a["agent"] for a in agents], counts, left=left, color=FAILURE_COLORS[name], label=name)
        left += counts
    ax.set(xlabel="turns (all valid runs)", title="Failure breakdown")
    ax.legend(fontsize=8, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.35))
    return _svg(fig)


def build_report(summary: dict[str, Any]) -> str:
    n_turns = len(summary["turns"])
    env = Environment(loader=PackageLoader("stamina_gym.evaluation", "templates"), undefined=StrictUndefined,
                      autoescape=select_autoescape(["html", "j2"]))  # fmt: skip
    template = env.get_template("report.html.j2")
    return template.render(
        summary=summary,
        plots={
            "stamina": stamina_plot(summary),
            "radar": radar_plot(summary),
            "reward_split": reward_split_plot(summary),
            "waterfall": waterfall_plot(summary),
            "quality": quality_plot(summary),
            "failures": failure_plot(summary),
            "heatmaps": [(a["agent"], heatmap_plot(a, n_turns)) for a in summary["agents"]],
        },
        fmt=lambda v, p="{:.3f}": "-" if v is None else p.format(v),
        radar={a["agent"]: radar_dimensions(a) for a in summary["agents"]},
        reward_terms=sorted({t for a in summary["agents"] for t in a["reward_by_term"]}),
        to_json=lambda value: json.dumps(value, sort_keys=True),
    )


def write_report(summary: dict[str, Any], path: Path) -> Path:
    path.write_text(build_report(summary), encoding="utf-8")
    return path

"""The HTML report, opened in a real headless Chromium: it loads without script or
console errors and shows its plots."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from stamina_gym.evaluation.config import AgentSpec, EvalConfig
from stamina_gym.evaluation.report import write_report
from stamina_gym.evaluation.runner import Evaluation
from stamina_gym.evaluation.summary import summarize
from tests.conftest import MINI
from tests.evaluation.browser import chromium, load_page

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"

needs_browser = pytest.mark.skipif(
    chromium() is None and not os.environ.get("CI"), reason="chromium is not installed (scripts/setup.sh installs it)"
)


@pytest.fixture(scope="module")
def summary(tmp_path_factory):
    import stamina_gym

    old = os.environ.get("STAMINA_GYM_TASKS")
    os.environ["STAMINA_GYM_TASKS"] = str(MINI)
    try:
        stamina_gym.register_envs()
        out = tmp_path_factory.mktemp("eval")
        config = EvalConfig(env="Stamina-mini-v1", agents=(AgentSpec(name="oracle"), AgentSpec(name="null")), runs=2)
        Evaluation(config, out, progress=False).run()
        return summarize(out)
    finally:
        if old is None:
            os.environ.pop("STAMINA_GYM_TASKS")
        else:
            os.environ["STAMINA_GYM_TASKS"] = old


def test_report_is_one_self_contained_file(summary, tmp_path):
    html = write_report(summary, tmp_path / "report.html").read_text()
    assert html.count('src="data:image/svg+xml;base64,') == 7  # no heat map for the null agent
    assert "http://" not in html and "https://" not in html and "<link" not in html
    assert 'alt="complexity and debt growth"' in html  # every submit records its quality


def test_report_without_quality_metrics_says_so(summary, tmp_path):
    bare = {**summary, "agents": [{**a, "quality_by_turn": None} for a in summary["agents"]]}
    html = write_report(bare, tmp_path / "report.html").read_text()
    assert "Quality metrics not recorded" in html
    assert html.count('src="data:image/svg+xml;base64,') == 6


def test_report_with_quality_metrics_and_scores_plots_them(summary, tmp_path):
    richer = {**summary, "agents": [dict(a) for a in summary["agents"]]}
    richer["agents"][0]["quality_by_turn"] = {"cc_mean": [1.0, 1.5], "pylint_score": [9.0, 8.5]}
    richer["agents"][0]["scores"] = {"clarification": 0.5, "planning": None, "generation": 0.8, "composite": 0.6}
    html = write_report(richer, tmp_path / "report.html").read_text()
    assert "Quality metrics not recorded" not in html and 'alt="complexity and debt growth"' in html
    assert html.count('src="data:image/svg+xml;base64,') == 7


@needs_browser
def test_report_renders_in_headless_chromium(summary, tmp_path):
    screenshot = ARTIFACTS / "report.png"  # kept after the run, for a person to look at
    page = load_page(write_report(summary, tmp_path / "report.html"), screenshot=screenshot)
    assert page.errors == []
    assert page.ready == "1", "the page's script did not run to its end"
    assert page.title == "stamina-gym evaluation: Stamina-mini-v1"
    alts = sorted(p["alt"] for p in page.visible_plots)
    assert alts == sorted(["stamina curve", "radar of score dimensions", "reward split by term", "pass waterfall",
                           "change heat map oracle", "failure breakdown", "complexity and debt growth"]), page.plots  # fmt: skip
    assert "Quality metrics not recorded" not in page.text and "null: no changes recorded" in page.text
    # doing nothing never looks good: every radar axis of the null agent is below full marks
    radar = page.values("radar-values")
    assert set(radar) == {"oracle", "null"} and all(v < 1 for v in radar["null"].values()), radar["null"]
    assert radar["oracle"]["no regression"] == 1.0
    # each agent's reward, term by term, adds up to its mean episode reward
    split = page.values("reward-split")
    assert set(split) == {"oracle", "null"}
    for agent in summary["agents"]:
        mean_total = sum(run["total_reward"] for run in agent["runs"]) / len(agent["runs"])
        assert sum(split[agent["agent"]].values()) == pytest.approx(mean_total, abs=1e-5)
    assert split["oracle"]["tests"] > 0 and split["null"]["tests"] == 0 and split["null"]["quality"] <= 0
    assert screenshot.read_bytes().startswith(b"\x89PNG")


@needs_browser
def test_the_browser_check_sees_a_broken_page(tmp_path):
    broken = tmp_path / "broken.html"
    broken.write_text('<html><body><img alt="gone" src="data:image/png;base64,AAAA"><script>undefinedThing();</script>'
                      "<script>console.error('boom')</script></body></html>")  # fmt: skip
    page = load_page(broken)
    assert any("undefinedThing" in e for e in page.errors) and any("boom" in e for e in page.errors)
    assert page.visible_plots == [] and page.ready is None

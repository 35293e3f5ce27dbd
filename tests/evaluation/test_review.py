"""The blind review pack: exported from a real evaluation, filled in, imported back; the
agreement statistics by their definitions."""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from stamina_gym.evaluation.review import agreement, kendall_tau_b, spearman
from tests.conftest import MINI


def cli(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stamina_gym.cli", *args], capture_output=True, text=True, check=check,
                          timeout=600)  # fmt: skip


@pytest.fixture(scope="module")
def evaluation(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("review") / "eval"
    cli("eval", "--env", "Stamina-mini-v1", "--tasks", str(MINI.parent), "--agent", "oracle", "--agent", "null",
        "--runs", "2", "--out", str(out), "--no-progress")  # fmt: skip
    return out


def test_statistics_by_their_definitions():
    x = np.array([1, 2, 3, 4, 5.0])
    assert spearman(x, np.array([2, 1, 4, 3, 5.0])) == pytest.approx(0.8)  # 1 - 6 * 4 / (5 * 24)
    assert kendall_tau_b(x, np.array([2, 1, 4, 3, 5.0])) == pytest.approx(0.6)  # (8 - 2) / 10 pairs
    assert spearman(x, -x) == pytest.approx(-1.0) and kendall_tau_b(x, x) == pytest.approx(1.0)
    # ties: 4 concordant, 0 discordant, one tie in each: 4 / sqrt(5 * 5)
    assert kendall_tau_b(np.array([1, 1, 2, 3.0]), np.array([1, 2, 2, 3.0])) == pytest.approx(0.8)
    assert spearman(x, np.ones(5)) is None and kendall_tau_b(x, np.ones(5)) is None
    assert agreement([(1, 0.1), (2, 0.2)])["spearman"] is None  # too few pairs
    perfect = agreement([(h, h / 10) for h in (1, 2, 3, 4, 5, 2, 4)])
    assert perfect["spearman"] == 1.0 == perfect["kendall"] and perfect["spearman_ci95"] == [1.0, 1.0]
    noisy = agreement([(1, 0.3), (2, 0.1), (3, 0.5), (4, 0.4), (5, 0.9), (3, 0.2), (1, 0.6)])
    low, high = noisy["spearman_ci95"]
    assert low < noisy["spearman"] < high and -1 <= low and high <= 1


def test_a_pack_hides_the_agents_and_round_trips_into_the_summary_and_report(evaluation, tmp_path):
    pack = tmp_path / "pack"
    out = cli("review", "export", "--from", str(evaluation), "--sample", "6", "--out", str(pack)).stdout
    assert f"6 items in {pack}" in out
    items = sorted((pack / "items").glob("item-*.html"))
    assert len(items) == 6
    for page in [*items, pack / "index.html", pack / "scores.csv"]:
        text = page.read_text(encoding="utf-8")
        assert "oracle" not in text and "null" not in text, page  # blind
    pages = [p.read_text(encoding="utf-8") for p in items]
    assert all("<h2>The request</h2>" in p and "calc" in p for p in pages)
    assert any('<span class="add">+def add(a, b):</span>' in p or "+def mul(a, b):" in p for p in pages)
    key = json.loads((pack / "key.json").read_text())["items"]
    assert {entry["agent"] for entry in key.values()} <= {"oracle", "null"}

    # a reviewer who agrees with the meter: higher automatic quality, higher score
    order = sorted(key, key=lambda item: key[item]["automatic"]["quality"])
    ranks = {item: 1 + sorted({key[i]["automatic"]["quality"] for i in key}).index(key[item]["automatic"]["quality"])
             for item in order}  # fmt: skip
    with open(pack / "scores.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        row["code_quality"] = str(min(5, ranks[row["item"]]))
        row["notes"] = "café, «quoted»"
    with open(pack / "scores.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    printed = cli("review", "import", str(pack), str(pack / "scores.csv")).stdout
    assert "code_quality: 6 pairs" in printed
    result = json.loads((pack / "agreement.json").read_text())
    assert len(set(ranks.values())) > 1  # the sample holds turns of different quality
    assert result["dimensions"]["code_quality"]["spearman"] == 1.0 == result["dimensions"]["code_quality"]["kendall"]
    assert result["dimensions"]["clarification"]["n"] == 0  # left blank: nothing to compare
    summary = json.loads((evaluation / "summary.json").read_text())
    assert summary["human_calibration"] == result
    assert 'id="human-calibration"' in (evaluation / "report.html").read_text()


@pytest.mark.parametrize(("cell", "message"), [
    ("7", "code_quality must be a whole number from 1 to 5 or blank, not '7'"),
    ("good", "code_quality must be a whole number from 1 to 5 or blank, not 'good'"),
])  # fmt: skip
def test_a_bad_score_is_refused_with_its_line_and_column(evaluation, tmp_path, cell, message):
    pack = tmp_path / "pack"
    cli("review", "export", "--from", str(evaluation), "--sample", "2", "--out", str(pack))
    text = (pack / "scores.csv").read_text().splitlines()
    first = text[1].split(",")
    text[1] = ",".join([first[0], cell, *first[2:]])
    (pack / "scores.csv").write_text("\n".join(text) + "\n")
    failed = cli("review", "import", str(pack), str(pack / "scores.csv"), check=False)
    assert failed.returncode != 0 and f"scores.csv:2: {message}" in failed.stderr
    assert not (pack / "agreement.json").exists()


def test_an_unknown_item_and_a_used_folder_are_refused(evaluation, tmp_path):
    pack = tmp_path / "pack"
    cli("review", "export", "--from", str(evaluation), "--sample", "2", "--out", str(pack))
    again = cli("review", "export", "--from", str(evaluation), "--sample", "2", "--out", str(pack), check=False)
    assert again.returncode != 0 and "is not empty" in again.stderr
    (pack / "scores.csv").write_text("item,code_quality,clarification,plan,notes\nitem-999,3,,,\n")
    failed = cli("review", "import", str(pack), str(pack / "scores.csv"), check=False)
    assert "scores.csv:2: item 'item-999' is not in this pack" in failed.stderr


def test_the_report_links_each_turn_of_each_run_to_its_transcript(evaluation):
    report = (evaluation / "report.html").read_text(encoding="utf-8")
    links = re.findall(r'href="(runs/[^"#]+/transcript\.html)#turn-(\d+)">(solved|failed)<', report)
    assert len(links) == 2 * 2 * 2  # agents x runs x turns
    for path, turn, verdict in links:
        page = (evaluation / path).read_text(encoding="utf-8")
        assert f'id="turn-{turn}"' in page and "submit" in page
        assert (verdict == "solved") == ("/oracle/" in path)
    oracle = next(path for path, _, _ in links if "/oracle/" in path)
    page = (evaluation / oracle).read_text(encoding="utf-8")
    assert "apply_patch" in page and "mul(a, b)" in page  # the actions sent, and the request as the agent saw it

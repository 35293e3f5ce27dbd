"""A run's transcript as a page a person reads: each turn's request, then every step
(tool, action, output, reward), with an anchor per turn (``#turn-3``) that the report's
per-turn table links to. Written from the run's records, beside them."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from stamina_gym.records import read_lines

#: Characters of one step's output shown; the rest is in steps.jsonl.
MAX_OUTPUT_CHARS = 4000

_STYLE = ("body{font-family:sans-serif;max-width:70rem;margin:2rem auto;line-height:1.35}"
          "pre{background:#f6f6f6;padding:.6rem;overflow-x:auto;white-space:pre-wrap;font-size:.85rem}"
          ".step{border-left:3px solid #ccc;padding-left:.8rem;margin:.8rem 0}.meta{color:#666}")  # fmt: skip


def write_transcripts(out: Path) -> list[Path]:
    """``transcript.html`` in every attempt folder of the evaluation ``out``."""
    written = []
    for steps_file in sorted((out / "runs").glob("*/run-*/attempt-*/steps.jsonl")):
        folder = steps_file.parent
        turns_file = folder / "turns.jsonl"
        turns = read_lines(turns_file) if turns_file.exists() else []
        page = transcript_page(folder.relative_to(out).as_posix(), turns, read_lines(steps_file))
        (folder / "transcript.html").write_text(page, encoding="utf-8")
        written.append(folder / "transcript.html")
    return written


def transcript_page(title: str, turns: list[dict[str, Any]], steps: list[dict[str, Any]]) -> str:
    records = {t["turn"]: t for t in turns}
    parts = [f"<h1>{html.escape(title)}</h1>"]
    for number in sorted({s["turn"] for s in steps} | set(records)):
        record = records.get(number, {})
        verdict = "solved" if record.get("solved") else record.get("failure_class") or "not finished"
        parts.append(f'<h2 id="turn-{number}">Turn {number}: {html.escape(str(record.get("title", "")))} '
                     f'<span class="meta">({html.escape(str(verdict))}, reward {record.get("reward", 0):.3f})</span></h2>')  # fmt: skip
        if record.get("prompt"):
            parts.append(f"<pre>{html.escape(record['prompt'])}</pre>")
        for step in (s for s in steps if s["turn"] == number):
            action = step.get("action")
            shown = action if isinstance(action, str) else json.dumps(action, indent=1, ensure_ascii=False)
            output = str(step.get("output", ""))
            if len(output) > MAX_OUTPUT_CHARS:
                output = output[:MAX_OUTPUT_CHARS] + f"\n... ({len(output) - MAX_OUTPUT_CHARS} more characters in steps.jsonl)"
            parts.append(f'<div class="step"><p class="meta">step {step["step"]}: {html.escape(str(step.get("tool")))}, '
                         f'reward {step.get("reward", 0):.3f}</p><pre>{html.escape(shown)}</pre>'
                         f"<pre>{html.escape(output)}</pre></div>")  # fmt: skip
    return html_page(title, "".join(parts), _STYLE)


def html_page(title: str, body: str, style: str) -> str:
    """A self-contained page: ``body`` is HTML, ``title`` text."""
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f"<style>{style}</style></head><body>{body}</body></html>")  # fmt: skip

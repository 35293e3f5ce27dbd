"""How much of each task's hidden tests sealed judging can seal: every hidden test module
compiled (``stamina_gym.grading.seal``), its points counted by status and kind.

    .venv/bin/python scripts/seal_report.py [TASK ...]   # default: the shipped tasks

A point is sealed when its expected value is in no line of the probe and is not a first
guess; guessable when it is True/False/None, "", a small integer, a common HTTP status or a
literal the test itself passes to the code; open when the sandbox computes the verdict.
"""

from __future__ import annotations

import sys
from pathlib import Path

from stamina_gym.grading import seal

ROOT = Path(__file__).resolve().parents[1]
STATUSES = ("sealed", "guessable", "open")
KINDS = ("compare", "truth", "raises", "open")


def report(task: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for path in sorted(task.glob("turns/*/tests/**/*.py")):
        module = seal.compile_module(path.read_text(encoding="utf-8"), str(path))
        counts["modules"] = counts.get("modules", 0) + 1
        for point in module.points.values():
            counts[point.status] = counts.get(point.status, 0) + 1
            counts[f"kind:{point.kind}"] = counts.get(f"kind:{point.kind}", 0) + 1
    return counts


def main(argv: list[str]) -> int:
    tasks = [Path(name) if "/" in name else ROOT / "tasks" / name for name in argv] or sorted(
        path for path in (ROOT / "tasks").iterdir() if (path / "task.yaml").exists())  # fmt: skip
    print("| task | modules | points | " + " | ".join(STATUSES) + " | " + " | ".join(f"{k} points" for k in KINDS) + " |")
    print("|---|" + "---:|" * (2 + len(STATUSES) + len(KINDS)))
    for task in tasks:
        counts = report(task)
        total = sum(counts.get(status, 0) for status in STATUSES)
        shares = [f"{counts.get(s, 0)} ({100 * counts.get(s, 0) / total:.0f}%)" if total else "0" for s in STATUSES]
        print(f"| {task.name} | {counts.get('modules', 0)} | {total} | " + " | ".join(shares) + " | "
              + " | ".join(str(counts.get(f"kind:{k}", 0)) for k in KINDS) + " |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

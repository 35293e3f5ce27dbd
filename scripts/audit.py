"""The fairness audit of a hand-written task, turn by turn (``tasks/<task>/audit/``).

Each turn is read by a fresh reader who sees only what this script assembles: the seed
repository, every earlier turn's prompts (every paraphrase) and the answers its hidden spec
gives when asked, this turn's prompts and spec answers, the test support code and this
turn's hidden tests (params at their first value). The reader scores every paraphrase the
way SWE-bench Verified's annotators do (``RUBRIC``) and writes a record; ``collect`` merges
the records into ``tasks/<task>/audit/audit.yaml`` and states the second reader's agreement.

    .venv/bin/python scripts/audit.py context todo 28 > /tmp/28.md   # what a reader gets
    .venv/bin/python scripts/audit.py check todo tasks/todo/audit/28-csv-export.reader1.yaml
    .venv/bin/python scripts/audit.py collect todo                   # audit.yaml + agreement
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

from stamina_gym.task import RepoVariable, Task, Turn, load_task_dir

ROOT = Path(__file__).resolve().parents[1]

RUBRIC = """\
Score each paraphrase on two scales (SWE-bench Verified's):

Spec, is the request specified well enough that an engineer knows what a successful
solution is?
  0  well specified;
  1  some blanks, but a sensible reading of what is needed is clear;
  2  vague: there is room for ambiguity about what a successful solution would be;
  3  it is almost impossible to know what to build without more information.

Tests, do the hidden tests accept every correct solution of the request as stated (this
paraphrase, the earlier prompts, the seed, and what the spec answers when asked)?
  0  they accept every correct solution;
  1  they accept the majority; some unusual solutions may fail;
  2  they check something no prompt states, or reject a reasonable solution;
  3  they are too narrow or too broad, or check something other than what was asked.

A score above 0 needs evidence: the test (file::name and line), what it checks, and why a
reader of this paraphrase could not know it or could reasonably do otherwise. Exact output
text, an argument never named, an earlier rule a test now contradicts, a case the prompt's
own rule classifies the other way, a comparison wider than the prompt's promise, details
found only in the hidden spec where the prompt gives no invitation to ask: each of these
is a 2.
"""

RECORD = """\
turn: <turn folder name>
reader: <1 or 2>
paraphrases:            # one entry per paraphrase, in the order shown
  - spec: <0-3>
    tests: <0-3>
    evidence:           # empty when both are 0
      - test: <file::test name>
        line: <line>
        kind: <exact-text | unnamed-argument | contradicts-earlier | rule-contradiction |
               wider-than-promised | hidden-spec-only | other>
        detail: <one or two sentences>
"""


def _code(text: str, lang: str = "") -> str:
    fence = "````" if "```" in text else "```"
    return f"{fence}{lang}\n{text.rstrip()}\n{fence}\n"


def _prompt(task: Task, turn: Turn, text: str) -> str:
    """A paraphrase with the task's params and the turn's variables at their first value;
    a reproduction script's output is said to be the agent's own, not shown."""
    values: dict[str, object] = dict(turn.example_params)
    for name, spec in turn.spec.variables.items():
        values[name] = spec.default if isinstance(spec, RepoVariable) else spec[0]
    if turn.spec.repro:
        values["repro_script"] = (turn.dir / turn.spec.repro.script).read_text(encoding="utf-8")
        values["repro_output"] = "<the output of the script above, run on the agent's own code at the start of the turn>"
    if "{{" not in text:
        return text
    return task.render(text, values, f"{turn.dir}/turn.yaml") if task.meta.params else _render_plain(text, values)


def _render_plain(text: str, values: dict[str, object]) -> str:
    from stamina_gym.task import render_params

    return render_params(text, values, "prompt")  # type: ignore[arg-type]


def _intro() -> str:
    """The env's first observation's instructions, with the tools it describes."""
    from stamina_gym.env import _intro as intro

    return intro()


def _spec(turn: Turn) -> str:
    if not turn.spec.spec:
        return ""
    lines = ["The user answers these only when the agent asks about them:\n"]
    for point in turn.spec.spec.key_points:
        lines.append(f"- asked e.g. \"{point.phrasings[0]}\": \"{point.answer}\"")
    return "\n".join(lines) + "\n"


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def _installed(support: Path) -> set[str]:
    """The top-level entries of ``support`` that a recipe installed as test dependencies
    (each ``*.dist-info`` folder and what its RECORD lists)."""
    found = set()
    for info in support.glob("*.dist-info"):
        found.add(info.name)
        record = info / "RECORD"
        if record.is_file():
            found |= {line.split(",", 1)[0].split("/", 1)[0] for line in record.read_text(encoding="utf-8").splitlines() if line}
    return found


def context(task: Task, number: int) -> str:
    """Everything a reader of turn ``number`` gets, as one Markdown text."""
    turn = task.turns[number - 1]
    out = [f"# Audit of {task.id} turn {turn.index}: {turn.id}\n",
           "You are auditing one turn of a long coding task for fairness. An agent works on one repository "
           "through the turns below, in order; at each turn it is shown ONE paraphrase of that turn's request "
           "(the episode picks which), and it may ask the user questions (answers below, where a turn has them). "
           "It never sees the hidden tests. Read the seed, every earlier request, this turn's request, then this "
           "turn's hidden tests, and score each paraphrase of this turn. A fact from an earlier turn counts as told "
           "only if every paraphrase of that turn states it (the episode may have shown any one). An answer from "
           "a hidden spec counts only where the request gives the agent reason to ask about it.\n", RUBRIC,
           "Write the record below to the file you were given (YAML), then answer with one line per paraphrase.\n",
           _code(RECORD, "yaml"), "## What the agent is told before the first request\n",
           _code(_intro(), "text"), "Each request comes with the project's phase (shown below with each turn).\n",
           "## The seed repository\n"]  # fmt: skip
    for path in _files(task.seed_dir):
        out.append(f"### {path.relative_to(task.seed_dir).as_posix()}\n" + _code(path.read_text(encoding="utf-8")))
    out.append("## Earlier turns (every paraphrase of each)\n")
    for earlier in task.turns[: number - 1]:
        out.append(f"### Turn {earlier.index}: {earlier.spec.title} (phase: {task.phase(earlier.index)})\n")
        for i, text in enumerate(earlier.spec.prompts, 1):
            out.append(f"Paraphrase {i}:\n\n" + _code(_prompt(task, earlier, text), "text"))
        if earlier.spec.spec:
            out.append(_spec(earlier))
    out.append(f"## This turn: turn {turn.index}, {turn.spec.title} (phase: {task.phase(turn.index)})\n")
    for i, text in enumerate(turn.spec.prompts, 1):
        out.append(f"Paraphrase {i}:\n\n" + _code(_prompt(task, turn, text), "text"))
    if turn.spec.spec:
        out.append(_spec(turn))
    if task.meta.params:
        out.append("The task's params (each episode draws one value of each; shown here at the first):\n\n"
                   + "\n".join(f"- {name}: {values!r}" for name, values in sorted(task.meta.params.items())) + "\n")  # fmt: skip
    if task.support_dir:
        out.append("## Test support code (hidden from the agent; the tests import it)\n")
        vendored = _installed(task.support_dir)
        for name in sorted(vendored):
            slash = "/" if (task.support_dir / name).is_dir() else ""
            out.append(f"### support/{name}{slash}\n\n(an installed test dependency, not shown)\n")
        for path in _files(task.support_dir):
            rel = path.relative_to(task.support_dir).as_posix()
            if rel.split("/", 1)[0] in vendored:
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except UnicodeDecodeError:  # a vendored package's compiled or data file
                out.append(f"### support/{rel}\n\n(binary, {path.stat().st_size} bytes)\n")
                continue
            out.append(f"### support/{rel}\n" + _code(task.render(text, turn.example_params, str(path)), "python"))
    out.append("## This turn's hidden tests\n")
    helpers = [path for path in sorted((turn.dir / "tests").rglob("*.py")) if path not in turn.tests and "__pycache__" not in path.parts]
    if any(path.name == "conftest.py" for path in helpers):  # the grader runs pytest with --noconftest
        helpers = [path for path in helpers if path.name != "conftest.py"]
        out.append("(The tests run with pytest's `--noconftest`: the tests folder's conftest.py files are never loaded, "
                   "and are not shown.)\n")  # fmt: skip
    for path in [*helpers, *turn.tests]:  # the tests folder's own helpers first (a mixin in its __init__.py)
        text = task.render(path.read_text(encoding="utf-8"), turn.example_params, str(path))
        out.append(f"### {path.relative_to(turn.dir / 'tests').as_posix()}\n" + _code(text, "python"))
    if turn.spec.tests:
        out.append("Only these tests of the files above count for this turn: " + ", ".join(turn.spec.tests) + "\n")
    return "\n".join(out)


def check(path: Path, task: Task | None = None) -> dict:
    """A reader's record, read and checked: every paraphrase scored 0-3 on both scales,
    evidence for every score above 0 (``ValueError`` naming what is wrong)."""
    record = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(record, dict) or not isinstance(record.get("paraphrases"), list):
        raise ValueError(f"{path}: not a record (a mapping with a 'paraphrases' list)")
    turn = next((t for t in task.turns if t.id == record.get("turn")), None) if task else None
    if task and turn is None:
        raise ValueError(f"{path}: turn {record.get('turn')!r} is not a turn of {task.id}")
    if turn and len(record["paraphrases"]) != len(turn.spec.prompts):
        raise ValueError(f"{path}: {len(record['paraphrases'])} paraphrases scored, the turn has {len(turn.spec.prompts)}")
    for i, scored in enumerate(record["paraphrases"], 1):
        for scale in ("spec", "tests"):
            if scored.get(scale) not in (0, 1, 2, 3):
                raise ValueError(f"{path}: paraphrase {i}: {scale} must be 0-3, not {scored.get(scale)!r}")
        if max(scored["spec"], scored["tests"]) > 0 and not scored.get("evidence"):
            raise ValueError(f"{path}: paraphrase {i}: a score above 0 needs evidence")
    return record


def collect(task: Task, folder: Path) -> dict:
    """Every record in ``folder`` merged by turn (reader 1 decides; reader 2 is compared):
    the worst score of each turn, and the agreement of the second reader."""
    turns: dict[str, dict] = {}
    for path in sorted(folder.glob("*.reader*.yaml")):
        record = check(path, task)
        turns.setdefault(record["turn"], {})[f"reader{record['reader']}"] = record
    agree = same = both = 0
    for readers in turns.values():
        if "reader1" in readers and "reader2" in readers:
            for a, b in zip(readers["reader1"]["paraphrases"], readers["reader2"]["paraphrases"]):
                both += 1
                agree += (max(a["spec"], a["tests"]) >= 2) == (max(b["spec"], b["tests"]) >= 2)
                same += (a["spec"], a["tests"]) == (b["spec"], b["tests"])
    worst = {tid: max(max(p["spec"], p["tests"]) for p in r.get("reader1", r.get("reader2"))["paraphrases"])
             for tid, r in turns.items()}  # fmt: skip
    return {"task": task.id, "turns_read": len(turns), "of": len(task.turns),
            "at_2_or_more": sorted(tid for tid, score in worst.items() if score >= 2),
            "second_reader": {"turns": sum("reader2" in r for r in turns.values()), "paraphrases": both,
                              "agree_on_2_or_more": agree, "same_scores": same},
            "worst": dict(sorted(worst.items()))}  # fmt: skip


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    ctx = sub.add_parser("context", help="what a reader of one turn gets")
    ctx.add_argument("task")
    ctx.add_argument("turn", type=int)
    chk = sub.add_parser("check", help="check readers' records")
    chk.add_argument("task")
    chk.add_argument("records", type=Path, nargs="+")
    col = sub.add_parser("collect", help="merge the records of a task and state the agreement")
    col.add_argument("task")
    args = parser.parse_args(argv)
    if args.command == "context":
        task = load_task_dir(ROOT / "tasks" / args.task)
        if not 1 <= args.turn <= len(task.turns):
            parser.error(f"turn must be 1-{len(task.turns)}")
        sys.stdout.write(context(task, args.turn))
    elif args.command == "check":
        task = load_task_dir(ROOT / "tasks" / args.task)
        for path in args.records:
            record = check(path, task)
            print(f"{path.name}: " + "; ".join(f"spec {p['spec']} tests {p['tests']}" for p in record["paraphrases"]))
    else:
        task = load_task_dir(ROOT / "tasks" / args.task)
        summary = collect(task, task.root / "audit")
        (task.root / "audit" / "audit.yaml").write_text(yaml.safe_dump(summary, sort_keys=False), encoding="utf-8")
        print(yaml.safe_dump({k: v for k, v in summary.items() if k != "worst"}, sort_keys=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

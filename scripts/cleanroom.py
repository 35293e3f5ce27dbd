"""Clean-room solutions of a hand-written task's turns (``tasks/<task>/cleanroom/``).

An implementer in a fresh session gets a folder that ``prepare`` lays: the repository at
the reference state before the turn (the reference patches of every earlier turn, as an
episode that starts at that turn lays it) and one paraphrase of the turn's request, drawn
by a seed, in ``REQUEST.md``, and on a turn whose request invites questions the answers
the user gives when asked (the implementer cannot ask). Nothing else: no hidden tests, no
earlier prompts.
The implementer edits ``repo/`` and stops. ``run`` grades the folder's work exactly as the
env grades a submit (the tree is laid into an episode started at the same seed and turn,
and submitted) and appends the result to ``tasks/<task>/cleanroom/results.yaml``; the
first run of a solution also freezes it there as a patch, which later runs replay
unchanged (``run --frozen``, after the turn's tests or prompt were mended).

    .venv/bin/python scripts/cleanroom.py prepare todo 28 /tmp/cleanroom/28   # the implementer's folder
    .venv/bin/python scripts/cleanroom.py run todo /tmp/cleanroom/28          # grade and freeze it
    .venv/bin/python scripts/cleanroom.py run todo --frozen 28                # replay the frozen patch
    .venv/bin/python scripts/cleanroom.py table todo                          # cleanroom.md from results.yaml
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
ENV_IDS = {"todo": "StaminaTodo", "clarify": "StaminaClarify"}

BRIEF = """\
# Request {turn} of a long project (phase: {phase})

You are the developer of the repository in `repo/` (a git repository; its last commit is
the state before this request). A user has been sending requests one at a time; this is
the request of this turn, exactly as the user wrote it:

{prompt}

{answers}Do the request in `repo/`. You may read and change any file there and run anything
(Python 3: `python3`). Your work is checked by the user's own tests of this request and of
every earlier one, which you do not see. When the request is done, stop and say so.
"""

ANSWERS = """\
You cannot ask the user here, so here is what they answer when asked (questions they
would answer in the same words if put another way):

{points}

"""


def _env(task: str):
    import gymnasium as gym

    import stamina_gym  # noqa: F401  (registers the env ids)

    env_id = next(i for i in gym.registry if i.startswith(ENV_IDS[task] + "-"))
    return gym.make(env_id, sandbox="local").unwrapped, env_id


def _seed_for(env, turn: int, paraphrase: int | None, seed: int | None) -> int:
    """The given seed, or the first seed whose episode shows ``paraphrase`` at ``turn``."""
    if seed is not None or paraphrase is None:
        return 0 if seed is None else seed
    count = len(env.turns[turn - 1].spec.prompts)
    if not 1 <= paraphrase <= count:
        raise SystemExit(f"turn {turn} has paraphrases 1-{count}, not {paraphrase}")
    for candidate in range(1000):
        env.reset(seed=candidate, options={"start_turn": turn, "num_turns": 1})
        if env._variants[turn - 1] == paraphrase - 1:
            return candidate
    raise SystemExit(f"no seed below 1000 shows paraphrase {paraphrase} at turn {turn}")


def _git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True, text=True).stdout


def prepare(task: str, turn: int, out: Path, paraphrase: int | None, seed: int | None, mended: bool = False) -> dict:
    if out.exists():
        raise SystemExit(f"{out} exists: prepare lays a new folder")
    env, env_id = _env(task)
    if not 1 <= turn <= len(env.turns):
        raise SystemExit(f"turn must be 1-{len(env.turns)}, not {turn}")
    seed = _seed_for(env, turn, paraphrase, seed)
    observation, _ = env.reset(seed=seed, options={"start_turn": turn, "num_turns": 1})
    shutil.copytree(env._workspace.path, out / "repo", ignore=shutil.ignore_patterns(".git"))
    _git(out / "repo", "init", "-q")
    _git(out / "repo", "add", "-A")
    _git(out / "repo", "-c", "user.name=cleanroom", "-c", "user.email=cleanroom@localhost",
         "commit", "-q", "-m", f"the state before request {turn}")  # fmt: skip
    spec = env.turns[turn - 1].spec.spec
    answers = ANSWERS.format(points="\n".join(f"- {p.phrasings[0]} {p.answer}" for p in spec.key_points)) if spec else ""
    (out / "REQUEST.md").write_text(BRIEF.format(turn=turn, phase=observation["phase"], prompt=observation["prompt"],
                                                 answers=answers), encoding="utf-8")  # fmt: skip
    meta = {"task": task, "env": env_id, "turn": turn, "turn_id": env.turns[turn - 1].id, "seed": seed,
            "paraphrase": env._variants[turn - 1] + 1, "mended": mended}  # fmt: skip (the seed gives the params; the folder holds none)
    (out / "cleanroom.yaml").write_text(yaml.safe_dump(meta, sort_keys=False), encoding="utf-8")
    env.close()
    return meta


def _patch_of(folder: Path) -> str:
    """The implementer's work as a binary git diff against the prepared commit."""
    repo = folder / "repo"
    base = _git(repo, "rev-list", "--max-parents=0", "HEAD").split()[0]
    _git(repo, "add", "-A")
    return _git(repo, "diff", "--cached", "--binary", base)


def grade(task: str, turn: int, seed: int, patch: str) -> dict:
    """The patch laid on the reference state before ``turn`` and submitted, as an episode
    started there at ``seed`` grades it."""
    env, env_id = _env(task)
    env.reset(seed=seed, options={"start_turn": turn, "num_turns": 1})
    if patch.strip():
        subprocess.run(["git", "-C", str(env._workspace.path), "apply", "--binary", "-"], input=patch, text=True,
                       check=True, capture_output=True)  # fmt: skip
    _, reward, _, _, info = env.step({"tool": "submit"})
    grade_info = info["grade"]
    env.close()
    failing = sorted(t for t, status in grade_info["tests"].items() if status != "passed")
    return {"env": env_id, "passed": grade_info["passed"], "total": grade_info["total"],
            "newly_broken": sorted(grade_info["newly_broken"]), "failure_class": grade_info["failure_class"],
            "reward": round(float(reward), 3), "failing": failing}  # fmt: skip


def _store(task: str) -> Path:
    return ROOT / "tasks" / task / "cleanroom"


def run(task: str, folder: Path | None, frozen: int | None, label: str) -> dict:
    store = _store(task)
    store.mkdir(exist_ok=True)
    results_path = store / "results.yaml"
    results = yaml.safe_load(results_path.read_text(encoding="utf-8")) if results_path.exists() else {}
    if folder is not None:
        meta = yaml.safe_load((folder / "cleanroom.yaml").read_text(encoding="utf-8"))
        if meta.get("mended"):  # a second solution, written from the mended prompt
            meta["turn_id"] += " (mended prompt)"
        patch_path = store / f"{meta['turn_id'].replace(' (mended prompt)', '.mended')}.p{meta['paraphrase']}.patch"
        if patch_path.exists():
            raise SystemExit(f"{patch_path.name} is frozen already: replay it with --frozen {meta['turn']}")
        patch_path.write_text(_patch_of(folder), encoding="utf-8")
        results[meta["turn_id"]] = {k: meta[k] for k in ("turn", "seed", "paraphrase")} | {
            "written_from": "the mended prompt" if meta.get("mended") else "the first prompt", "patch": patch_path.name,
            "runs": []}  # fmt: skip
    else:
        entry = next((e for e in results.values() if e["turn"] == frozen and e.get("written_from") != "the mended prompt"), None)
        if entry is None:
            raise SystemExit(f"turn {frozen} has no frozen solution in {results_path}")
        meta = entry | {"turn_id": next(k for k, e in results.items() if e is entry)}
    entry = results[meta["turn_id"]]
    patch = (store / entry["patch"]).read_text(encoding="utf-8")
    result = {"label": label} | grade(task, entry["turn"], entry["seed"], patch)
    entry["runs"].append(result)
    results_path.write_text(yaml.safe_dump(dict(sorted(results.items(), key=lambda kv: kv[1]["turn"])),
                                           sort_keys=False), encoding="utf-8")  # fmt: skip
    return {"turn": entry["turn"]} | result


def table(task: str) -> str:
    """``cleanroom.md``: one row per frozen solution, with its result before the mends and
    its latest after them (a solution written from a mended prompt has only the latter)."""
    results = yaml.safe_load((_store(task) / "results.yaml").read_text(encoding="utf-8"))
    lines = ["| turn | paraphrase | written from | before the mends | after the mends | failing after |",
             "|---|---|---|---|---|---|"]  # fmt: skip

    def shown(run: dict | None) -> str:
        return "-" if run is None else f"{run['passed']}/{run['total']} ({run['env']})" + (
            f", {len(run['newly_broken'])} earlier broken" if run["newly_broken"] else "")

    for turn_id, entry in results.items():
        before = next((r for r in entry["runs"] if r["label"] == "before the mends"), None)
        after = next((r for r in reversed(entry["runs"]) if r["label"] == "after the mends"), None)
        failing = ", ".join(t.split("::")[-1] for t in after["failing"]) if after else ""
        lines.append(f"| {turn_id.removesuffix(' (mended prompt)')} | {entry['paraphrase']} "
                     f"| {entry.get('written_from', 'the first prompt')} | {shown(before)} | {shown(after)} | {failing} |")  # fmt: skip
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    prep = sub.add_parser("prepare", help="lay an implementer's folder")
    prep.add_argument("task", choices=sorted(ENV_IDS))
    prep.add_argument("turn", type=int)
    prep.add_argument("out", type=Path)
    prep.add_argument("--paraphrase", type=int, help="1-based; default: the one the seed draws")
    prep.add_argument("--seed", type=int)
    prep.add_argument("--mended", action="store_true", help="a second solution, written from the mended prompt")
    go = sub.add_parser("run", help="grade a solution folder (freezing it) or replay a frozen one")
    go.add_argument("task", choices=sorted(ENV_IDS))
    go.add_argument("folder", type=Path, nargs="?")
    go.add_argument("--frozen", type=int, metavar="TURN")
    go.add_argument("--label", default="before the mends")
    tab = sub.add_parser("table", help="write tasks/<task>/cleanroom/cleanroom.md")
    tab.add_argument("task", choices=sorted(ENV_IDS))
    args = parser.parse_args(argv)
    if args.command == "prepare":
        print(yaml.safe_dump(prepare(args.task, args.turn, args.out, args.paraphrase, args.seed, args.mended), sort_keys=False))
    elif args.command == "run":
        if (args.folder is None) == (args.frozen is None):
            parser.error("give a solution folder or --frozen TURN")
        result = run(args.task, args.folder, args.frozen, args.label)
        print(f"turn {result['turn']}: {result['passed']}/{result['total']} passed, {len(result['newly_broken'])} newly "
              f"broken, failure class {result['failure_class']}, reward {result['reward']}")  # fmt: skip
    else:
        text = table(args.task)
        (_store(args.task) / "cleanroom.md").write_text(text, encoding="utf-8")
        print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

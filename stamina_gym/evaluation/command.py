"""The ``stamina-gym eval`` subcommand."""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from pydantic import ValidationError

from stamina_gym.errors import ConfigError


def add_parser(sub: argparse._SubParsersAction) -> None:
    ev = sub.add_parser("eval", help="evaluate agents: N independent runs each, records, summary, HTML report",
                        description="Evaluate agents fairly: N independent runs each from a clean workspace, budgets "
                        "enforced from outside, records per step and turn, a summary table and an HTML report.")  # fmt: skip
    ev.add_argument("--agent", action="append", required=True, help="agent name (repeatable): oracle, null, command, openai")
    ev.add_argument("--agent-arg", action="append", default=[], metavar="[NAME:]KEY=VALUE",
                    help="agent constructor argument, e.g. openai:model=NAME (repeatable)")
    ev.add_argument("--env", default="StaminaTodo-v2")
    ev.add_argument("--runs", type=int, default=3, help="independent runs per agent (default 3)")
    ev.add_argument("--seeds", type=int, nargs="+", help="one seed per run (default 0..runs-1)")
    ev.add_argument("--turns", type=int, help="play only the first N turns")
    ev.add_argument("--out", help="evaluation folder (default runs/eval-<env>-<time>)")
    ev.add_argument("--resume", action="store_true", help="continue an interrupted evaluation in --out")
    ev.add_argument("--tasks", action="append", default=[], metavar="DIR", help="extra task folder (repeatable)")
    ev.add_argument("--max-reruns", type=int, default=2, help="reruns of a run whose sandbox broke (default 2)")
    ev.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    budgets = ev.add_argument_group("budgets (enforced by the env, the sandbox and the harness)")
    budgets.add_argument("--wall-clock", type=float, dest="wall_clock_s", help="seconds per episode (env default: 8 h)")
    budgets.add_argument("--max-steps-per-turn", type=int, dest="max_steps_per_turn")
    budgets.add_argument("--command-timeout", type=float, dest="command_timeout_s", help="seconds per command")
    budgets.add_argument("--memory-mb", type=int, dest="memory_mb")
    budgets.add_argument("--cpu-s", type=int, dest="cpu_s")
    budgets.add_argument("--max-model-calls", type=int, dest="max_model_calls", help="per episode")
    budgets.add_argument("--max-model-tokens", type=int, dest="max_model_tokens", help="per episode")
    ev.set_defaults(func=run_command)


def run_command(args: argparse.Namespace) -> int:
    import gymnasium as gym

    import stamina_gym
    from stamina_gym.config import format_validation_error
    from stamina_gym.evaluation.config import EvalConfig, parse_agent_args
    from stamina_gym.records import write_json
    from stamina_gym.evaluation.report import write_report
    from stamina_gym.evaluation.runner import Evaluation
    from stamina_gym.evaluation.summary import format_table, summarize
    from stamina_gym.evaluation.transcript import write_transcripts
    from stamina_gym.registry import unknown_name

    if args.tasks:
        os.environ["STAMINA_GYM_TASKS"] = os.pathsep.join([*args.tasks, os.environ.get("STAMINA_GYM_TASKS", "")])
        stamina_gym.register_envs()
    if args.env not in gym.registry:
        ours = [k for k, v in gym.registry.items() if v.entry_point == stamina_gym.ENTRY_POINT]
        raise ConfigError(unknown_name("env", args.env, ours))
    from stamina_gym.agents import AGENTS

    for name in args.agent:
        AGENTS.load(name)  # an unknown agent fails before anything is recorded
    budget_keys = ("wall_clock_s", "max_steps_per_turn", "command_timeout_s", "memory_mb", "cpu_s",
                   "max_model_calls", "max_model_tokens")  # fmt: skip
    try:
        config = EvalConfig(
            env=args.env,
            agents=parse_agent_args(args.agent, args.agent_arg),
            runs=args.runs,
            seeds=tuple(args.seeds or ()),
            turns=args.turns,
            budgets={k: getattr(args, k) for k in budget_keys if getattr(args, k) is not None},
            max_reruns=args.max_reruns,
        )
    except ValidationError as exc:
        raise ConfigError(f"stamina-gym eval: {format_validation_error(exc)}") from None
    if args.resume and not args.out:
        raise ConfigError("--resume needs --out, the folder of the evaluation to continue")
    out = Path(args.out or f"runs/eval-{args.env}-{time.strftime('%Y%m%d-%H%M%S')}")
    evaluation = Evaluation(config, out, resume=args.resume, progress=not args.no_progress)
    started = time.monotonic()
    evaluation.run()
    summary = summarize(out)
    write_json(out / "summary.json", summary)
    table = format_table(summary)
    (out / "summary.txt").write_text(table + "\n", encoding="utf-8")
    write_transcripts(out)
    write_report(summary, out / "report.html")
    print(table)
    print(f"records, summary.json and report.html in {out} ({time.monotonic() - started:.1f}s)")
    return 0

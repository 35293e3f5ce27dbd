"""``stamina-gym``: run an agent through an env, or validate a task."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from stamina_gym.errors import StaminaError


def _parse_agent_args(pairs: list[str]) -> dict[str, str]:
    kwargs = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"--agent-arg expects KEY=VALUE, got {pair!r}")
        kwargs[key] = value
    return kwargs


def cmd_run(args: argparse.Namespace) -> int:
    import gymnasium as gym

    import stamina_gym
    from stamina_gym.agents import make_agent
    from stamina_gym.harness import TABLE_HEADER, Recorder, format_turn_row, run_header, run_episode
    from stamina_gym.registry import unknown_name

    if args.tasks:
        os.environ["STAMINA_GYM_TASKS"] = os.pathsep.join([*args.tasks, os.environ.get("STAMINA_GYM_TASKS", "")])
        stamina_gym.register_envs()
    if args.env not in gym.registry:
        ours = [k for k, v in gym.registry.items() if v.entry_point == stamina_gym.ENTRY_POINT]
        raise StaminaError(unknown_name("env", args.env, ours))
    agent = make_agent(args.agent, **_parse_agent_args(args.agent_arg))
    overrides = {"max_turns": args.turns} if args.turns else {}
    if args.sandbox:
        overrides["sandbox"] = {"kind": args.sandbox}
    env = gym.make(args.env, **overrides)
    out = Path(args.out or f"runs/{args.env}-{args.agent}-seed{args.seed}-{time.strftime('%Y%m%d-%H%M%S')}")
    try:
        env.reset(seed=args.seed)  # lays the workspace so the header can name the sandbox
        recorder = Recorder(out, run_header(env, agent, args.seed))
        print(f"{args.env}  agent={args.agent}  seed={args.seed}  turns={len(env.unwrapped.turns)}  records={out}")
        print(TABLE_HEADER, flush=True)
        started = time.monotonic()
        result = run_episode(env, agent, seed=args.seed, recorder=recorder, on_turn=lambda t: print(format_turn_row(t), flush=True))
    finally:
        agent.close()
        env.close()
    solved = result.solved_turns
    print(f"solved {solved}/{len(result.turns)} turns, reward {result.total_reward:.3f}, "
          f"{result.steps} steps, {time.monotonic() - started:.1f}s" + (f"; {result.failure}" if result.failure else ""))
    if result.truncated:
        print("episode truncated: a budget ran out")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    import gymnasium as gym

    import stamina_gym
    from stamina_gym.config import SandboxConfig
    from stamina_gym.env import StaminaEnv
    from stamina_gym.sandbox.local import LocalSandbox
    from stamina_gym.task import load_task
    from stamina_gym.validate import validate_task

    if args.tasks:
        os.environ["STAMINA_GYM_TASKS"] = os.pathsep.join([*args.tasks, os.environ.get("STAMINA_GYM_TASKS", "")])
        stamina_gym.register_envs()
    name = args.target
    if name in gym.registry:
        kwargs = gym.registry[name].kwargs or {}
        name = StaminaEnv(kwargs["config"]).config.task
    task = load_task(name)
    print(f"validating task {task.id} v{task.meta.version}: {len(task.turns)} turns, "
          f"{sum(len(t.test_ids) for t in task.turns)} hidden tests", flush=True)
    sandbox = LocalSandbox(SandboxConfig(), hidden=[task.root])
    problems = validate_task(task, sandbox=sandbox, progress=lambda line: print(line, flush=True))
    for problem in problems:
        print(f"PROBLEM {problem}")
    print("valid" if not problems else f"INVALID: {len(problems)} problem(s)")
    return 0 if not problems else 1


def cmd_docker_clean(args: argparse.Namespace) -> int:
    from stamina_gym.sandbox.docker import clean

    removed = clean(stale_only=args.stale)
    for name in removed:
        print(f"removed {name}")
    print(f"{len(removed)} container(s) removed")
    return 0


def cmd_docker_build(args: argparse.Namespace) -> int:
    from stamina_gym.sandbox.image import build, image_tag

    if args.print_tag:
        print(image_tag())
        return 0
    print(build(mirror=args.mirror, force=args.force))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="stamina-gym", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run an agent through an env; prints a per-turn table, writes JSONL records")
    run.add_argument("--agent", default="oracle", help="oracle, null or command (default: oracle)")
    run.add_argument("--agent-arg", action="append", default=[], metavar="KEY=VALUE",
                     help="agent constructor argument, e.g. command='python my_agent.py'")
    run.add_argument("--env", default="StaminaTodo-v0")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--turns", type=int, help="play only the first N turns")
    run.add_argument("--out", help="records folder (default runs/<env>-<agent>-seed<N>-<time>)")
    run.add_argument("--tasks", action="append", default=[], metavar="DIR", help="extra task folder (repeatable)")
    run.add_argument("--sandbox", choices=["local", "docker"], help="sandbox backend (default: the env spec's)")
    run.set_defaults(func=cmd_run)
    val = sub.add_parser("validate", help="replay a task's reference patches and check every turn's tests")
    val.add_argument("target", help="task id, task folder or env id")
    val.add_argument("--tasks", action="append", default=[], metavar="DIR", help="extra task folder (repeatable)")
    val.set_defaults(func=cmd_validate)
    clean = sub.add_parser("docker-clean", help="remove the docker sandbox containers stamina-gym started")
    clean.add_argument("--stale", action="store_true", help="only those whose owning process has ended")
    clean.set_defaults(func=cmd_docker_clean)
    build = sub.add_parser("docker-build", help="build the docker sandbox image (skipped when its tag is present)")
    build.add_argument("--mirror", help="Debian mirror URI (default: this machine's apt sources)")
    build.add_argument("--force", action="store_true", help="rebuild even when the tag is present")
    build.add_argument("--print-tag", action="store_true", help="print the tag of the current recipe and exit")
    build.set_defaults(func=cmd_docker_build)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except StaminaError as exc:
        print(f"stamina-gym: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

"""``stamina-gym``: run an agent through an env, evaluate agents, or validate a task."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from stamina_gym.errors import StaminaError
from stamina_gym.sandbox.image import SUITES


def _parse_agent_args(pairs: list[str]) -> dict[str, str]:
    kwargs = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"--agent-arg expects KEY=VALUE, got {pair!r}")
        kwargs[key] = value
    return kwargs


def _make_kwargs(text: str) -> dict:
    """``--make-kwargs``: a JSON object of ``gym.make`` keyword arguments."""
    import json

    try:
        make_kwargs = json.loads(text)
    except json.JSONDecodeError as exc:
        raise StaminaError(f"--make-kwargs is not JSON: {exc}") from exc
    if not isinstance(make_kwargs, dict):
        raise StaminaError(f"--make-kwargs must be a JSON object of gym.make keyword arguments, not {text!r}")
    return make_kwargs


def _use_env(env_id: str, task_folders: list[str]) -> None:
    """Register the envs of the extra task folders, then check that ``env_id`` is one."""
    import gymnasium as gym

    import stamina_gym
    from stamina_gym.registry import unknown_name

    if task_folders:
        os.environ["STAMINA_GYM_TASKS"] = os.pathsep.join([*task_folders, os.environ.get("STAMINA_GYM_TASKS", "")])
        stamina_gym.register_envs()
    if env_id not in gym.registry:
        ours = [k for k, v in gym.registry.items() if v.entry_point == stamina_gym.ENTRY_POINT]
        raise StaminaError(unknown_name("env", env_id, ours))


def cmd_run(args: argparse.Namespace) -> int:
    import gymnasium as gym

    from stamina_gym.agents import make_agent
    from stamina_gym.harness import TABLE_HEADER, Recorder, format_turn_row, run_header, run_episode

    _use_env(args.env, args.tasks)
    agent = make_agent(args.agent, **_parse_agent_args(args.agent_arg))
    overrides = {"max_turns": args.turns} if args.turns else {}
    if args.user:
        overrides["user"] = {"kind": args.user}
    if args.sandbox:
        overrides["sandbox"] = {"kind": args.sandbox}
    env = gym.make(args.env, **overrides)
    out = Path(args.out or f"runs/{args.env}-{args.agent}-seed{args.seed}-{time.strftime('%Y%m%d-%H%M%S')}")
    try:
        env.reset(seed=args.seed)  # lays the workspace so the header can name the sandbox
        recorder = Recorder(out, run_header(env, agent, args.seed))
        print(f"{args.env}  agent={args.agent}  seed={args.seed}  turns={'-'.join(map(str, env.unwrapped.window))}  records={out}")
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
    scores = result.mean_scores()
    if any(scores[k] is not None for k in ("clarification", "planning")):
        print("dialogue scores (mean over the turns that have them): "
              + ", ".join(f"{k} {v:.3f}" for k, v in scores.items() if v is not None))  # fmt: skip
    return 0


def _store_reference_quality(task, config, seeds: list[int], variants: list) -> None:
    """Measure the reference's quality at every state of each variant into the folder the
    env reads it back from (``quality.reference_cache_dir``), with progress."""
    import tempfile

    from stamina_gym.quality.measure import QualityMeter, score
    from stamina_gym.quality.reference import measure_reference, reference_store

    store = reference_store(config.quality)
    if store is None:
        print("reference quality: not kept (quality.reference_cache_dir is empty or cannot be made)")
        return
    weights = config.quality.weights.model_dump()
    for seed, params in zip(seeds, variants):
        label = f"seed {seed}" if params is not None else "the task"
        start, before = time.monotonic(), store.hits
        with tempfile.TemporaryDirectory(prefix="stamina-reference-") as tmp:
            meter = QualityMeter(Path(tmp) / "meter", max_file_kb=config.quality.max_file_kb,
                                 exclude=(*config.quality.exclude, *task.meta.quality_exclude), persist=store)  # fmt: skip

            def progress(state: int, snapshot) -> None:
                if state % 10 == 0 or state == len(task.turns):
                    print(f"  reference quality ({label}): state {state}/{len(task.turns)}: "
                          f"{score(snapshot.components(), weights):.4f}", flush=True)  # fmt: skip

            scores = [score(s.components(), weights)
                      for s in measure_reference(task, params or {}, meter, Path(tmp) / "track", progress)]  # fmt: skip
        low = min(range(len(scores)), key=scores.__getitem__)
        print(f"reference quality ({label}): {scores[0]:.4f} at the seed, lowest {scores[low]:.4f} after turn {low}, "
              f"{scores[-1]:.4f} at the end; {sum(meter.analysed.values())} analyser runs, {store.hits - before} "
              f"read back, {time.monotonic() - start:.1f} s; kept in {store.directory}", flush=True)  # fmt: skip


def cmd_validate(args: argparse.Namespace) -> int:
    import gymnasium as gym

    import stamina_gym
    from stamina_gym.config import EnvConfig
    from stamina_gym.env import StaminaEnv
    from stamina_gym.task import load_task
    from stamina_gym.validate import check_interfaces, mutation_check, task_counts, validate_task

    if args.tasks:
        os.environ["STAMINA_GYM_TASKS"] = os.pathsep.join([*args.tasks, os.environ.get("STAMINA_GYM_TASKS", "")])
        stamina_gym.register_envs()
    name = args.target
    if name in gym.registry:
        kwargs = gym.registry[name].kwargs or {}
        config = StaminaEnv(kwargs["config"]).config
    else:
        config = EnvConfig(id="validate", task=name)
    task = load_task(config.task)
    print(f"validating task {task.id} v{task.meta.version}: {len(task.turns)} turns, "
          f"{sum(len(t.test_ids) for t in task.turns)} hidden tests", flush=True)
    for key, value in task_counts(task).items():
        print(f"  {key}: {value}")
    if args.exact_text:
        from stamina_gym import exact_text

        params = task.choose_params(lambda n: 0)
        missing = [(turn, piece) for turn in task.turns for piece in exact_text.check_turn(task, turn, params)]
        for turn, piece in missing:
            print(f"PROBLEM turn {turn.index}: {piece}: in no turn's every paraphrase up to this one, the seed or the support code")
        print("every piece of exact output text the tests demand was told" if not missing
              else f"INVALID: {len(missing)} piece(s) of exact output text never told")  # fmt: skip
        return 0 if not missing else 1
    if args.paraphrases:
        from stamina_gym import paraphrases

        params = task.choose_params(lambda n: 0)
        differences = [d for turn in task.turns for d in paraphrases.check_turn(task, turn, params)]
        for difference in differences:
            print(f"DIFFERS {difference}")
        turns = len({d.turn for d in differences})
        print(f"{len(differences)} fact(s) the tests hold that some paraphrase of a turn lacks, on {turns} turn(s) "
              "(a reviewer's report: most are restatements)")  # fmt: skip
        return 0
    if args.interfaces:
        found = check_interfaces(task, progress=lambda line: print(line, flush=True), contract=args.contract)
        for problem in found:
            print(f"PROBLEM {problem}")
        print("every interface the tests use is named" if not found else f"INVALID: {len(found)} unnamed interface(s)")
        return 0 if not found else 1
    variants = [None] if not task.meta.params else [_params_of_seed(config, seed) for seed in args.seeds]
    wheres = args.sandbox or ["local"]
    found_on: dict[str, set[str]] = {}
    versions: dict[str, str] = {}
    for where in wheres:
        sandbox = _validation_sandbox(where, task)
        try:
            versions[where] = sandbox.python_version()
            print(f"sandbox {where}: Python {versions[where]}", flush=True)
            found_on[where] = set()
            for seed, params in zip(args.seeds, variants):
                if params is not None:
                    print(f"seed {seed}: params {params}", flush=True)
                found = validate_task(task, sandbox=sandbox, params=params, first=args.first,
                                      progress=lambda line: print(line, flush=True))  # fmt: skip
                for problem in found:
                    line = f"{problem}" + (f" (seed {seed})" if params is not None else "")
                    found_on[where].add(line)
                    print(f"PROBLEM {line}" + (f" [{where}]" if len(wheres) > 1 else ""))
        finally:
            sandbox.close()
    if not task.meta.params:
        print("the task has no params: one variant validated")
    if args.quality:
        _store_reference_quality(task, config, args.seeds, variants)
    problems = set().union(*found_on.values())
    _report_python_versions(task, found_on, versions)
    print("valid" if not problems else f"INVALID: {len(problems)} problem(s)")
    if args.mutants and not problems:
        print(f"mutation check: up to {args.mutants} mutants of each reference patch's added lines", flush=True)
        sandbox = _validation_sandbox(wheres[0], task)
        try:
            kills = mutation_check(task, per_turn=args.mutants, sandbox=sandbox, params=variants[0], first=args.first,
                                   progress=lambda line: print(line, flush=True))  # fmt: skip
        finally:
            sandbox.close()
        for turn in kills:
            for survivor in turn.survivors:
                print(f"  survived (turn {turn.turn}): {survivor}")
        tried, killed = sum(k.tried for k in kills), sum(k.killed for k in kills)
        weak = [k.turn for k in kills if k.rate is not None and k.rate < 0.5]
        print(f"mutants killed: {killed}/{tried} ({killed / tried:.0%})" if tried else "no mutants")
        print(f"turns below 50%: {weak}" if weak else "no turn below 50%")
    return 0 if not problems else 1


def _validation_sandbox(where: str, task):
    """``local`` (the host's Python), ``docker`` or ``docker:<debian release>``."""
    from stamina_gym.config import SandboxConfig
    from stamina_gym.sandbox import SANDBOXES

    kind, _, debian = where.partition(":")
    if kind not in ("local", "docker") or (debian and kind != "docker"):
        raise StaminaError(f"--sandbox {where!r}: expected local, docker or docker:<debian release>")
    config = SandboxConfig(kind=kind, **({"docker_debian": debian} if debian else {}))
    return SANDBOXES.load(kind)(config, hidden=[task.root])


def _report_python_versions(task, found_on: dict[str, set[str]], versions: dict[str, str]) -> None:
    """Name the problems that some Pythons show and others do not, and the versions the
    reference passed on that ``task.yaml`` does not list (or lists but were not tried)."""
    if len(found_on) > 1:
        for line in sorted(set().union(*found_on.values()) - set.intersection(*found_on.values())):
            on = [f"{where} (Python {versions[where]})" for where in found_on if line in found_on[where]]
            print(f"DEPENDS ON THE PYTHON VERSION: {line}; found on {', '.join(on)} only")
    passed = sorted({".".join(versions[where].split(".")[:2]) for where, found in found_on.items() if not found})
    unlisted = [v for v in passed if v not in task.meta.python]
    if unlisted:
        print(f"the reference passes on Python {', '.join(unlisted)}, which task.yaml's python: does not list "
              f"({list(task.meta.python)}); add it so envs on it do not warn")  # fmt: skip


def _params_of_seed(config, seed: int) -> dict:
    """The params an episode of ``config`` reset with ``seed`` plays (read off a real reset)."""
    from stamina_gym.env import StaminaEnv

    env = StaminaEnv(config)
    try:
        return env.reset(seed=seed)[1]["params"]
    finally:
        env.close()


def default_grading_cache() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "stamina-gym", "grading")


def cmd_collect(args: argparse.Namespace) -> int:
    import hashlib
    import json

    from stamina_gym.rollout import RolloutSpec, collect
    from stamina_gym.rollout.datasets import Journal, write_parquet

    _use_env(args.env, args.tasks)
    backend = args.backend
    if backend == "auto":
        backend = "ray" if args.ray or args.workers > 1 else "inline"
    if args.ray and backend != "ray":
        raise StaminaError(f"--ray {args.ray} needs the ray backend, not --backend {backend}")
    cache = None if args.grading_cache.lower() == "none" else args.grading_cache
    spec = RolloutSpec(
        env_id=args.env,
        agent=args.agent,
        agent_kwargs=_parse_agent_args(args.agent_arg),
        env_kwargs={**_make_kwargs(args.make_kwargs), **({"max_turns": args.turns} if args.turns else {})},
        tasks=tuple(os.path.abspath(t) for t in args.tasks),
        grading_cache=cache,
        start_turn=None if not args.start_turn else (args.start_turn[0] if len(args.start_turn) == 1 else tuple(args.start_turn)),
    )
    tokenizer = None
    if args.tokenizer:  # loaded before anything is played: a bad path costs nothing
        from stamina_gym.rollout.tokens import load_tokenizer

        try:
            tokenizer = load_tokenizer(args.tokenizer)
        except (OSError, ValueError) as exc:
            raise StaminaError(f"--tokenizer {args.tokenizer}: {exc}") from None
    if args.resume and not args.out:
        raise StaminaError("--resume needs --out, the folder of the collection to continue")
    out = Path(args.out or f"runs/collect-{args.env}-{args.agent}-{time.strftime('%Y%m%d-%H%M%S')}")
    # The agent's arguments by digest only: they may hold an API key.
    agent_kwargs = hashlib.sha256(json.dumps(spec.agent_kwargs, sort_keys=True).encode()).hexdigest()[:16]
    journal = Journal(out, {"env_id": args.env, "agent": args.agent, "agent_kwargs": agent_kwargs,
                            "env_kwargs": spec.env_kwargs, "start_turn": spec.start_turn, "base_seed": args.seed,
                            "episodes": args.episodes, "tasks": list(spec.tasks)}, resume=args.resume)  # fmt: skip
    earlier = journal.records()
    where = f"ray {args.ray}" if args.ray else ("local ray" if backend == "ray" else backend)
    print(f"collecting {args.episodes} episode(s) of {args.env} with {args.agent}: {args.workers} worker(s), "
          f"{where}, base seed {args.seed}, grading cache {cache or 'off'}, out {out}"
          + (f"; resuming: {len(earlier)} episode(s) recorded" if args.resume else ""), flush=True)  # fmt: skip
    done = [r for r in earlier if r["failure_class"] != "infrastructure"]

    def progress(record: dict) -> None:
        journal.add(record)
        done.append(record)
        scores = record["scores"]
        verdict = record["failure_class"] or ("truncated" if record["truncated"] else "ok")
        print(f"  [{len(done)}/{args.episodes}] episode {record['episode']} seed {record['seed']}: {verdict}, "
              f"solved {scores['turns_solved']}/{scores['turns_graded']}, reward {scores['total_reward']:.3f}, "
              f"{record['num_steps']} steps, cache {record['cache_hits']} hit/{record['cache_misses']} miss, "
              f"{record['duration_s']:.1f}s" + (f", {record['attempts']} attempts" if record.get("attempts", 1) > 1 else ""),
              flush=True)  # fmt: skip

    result = collect(spec, episodes=args.episodes, workers=args.workers, base_seed=args.seed, backend=backend,
                     ray_address=args.ray, progress=progress, retries=args.retries, done=earlier,
                     note=lambda line: print(f"  {line}", flush=True))  # fmt: skip
    if tokenizer is not None:
        from stamina_gym.rollout.tokens import retokenise

        for record in result.records:
            if record["messages"]:
                record.update(retokenise(record["messages"], tokenizer, json.loads(record["tools"])))
        print(f"retokenised {len(result.records)} episode(s) with {args.tokenizer}", flush=True)
    steps_path, episodes_path = write_parquet(result.records, out)
    summary = {
        "env_id": args.env, "agent": args.agent, "backend": backend, "ray_address": args.ray, "workers": result.workers,
        "base_seed": args.seed, "seeds": [r["seed"] for r in result.records], "episodes": len(result.records),
        "failed": [{"episode": r["episode"], "failure_class": r["failure_class"], "attempts": r.get("attempts", 1)}
                   for r in result.failed], "resumed": result.resumed, "retries": args.retries,
        "wall_s": round(result.wall_s, 3), "episodes_per_hour": round(3600 * len(result.records) / result.wall_s, 1),
        "cache_hits": sum(r["cache_hits"] for r in result.records),
        "cache_misses": sum(r["cache_misses"] for r in result.records),
        "files": [steps_path.name, episodes_path.name],
    }  # fmt: skip
    if args.minari:
        import gymnasium as gym

        from stamina_gym.rollout.datasets import export_minari

        unset = "MINARI_DATASETS_PATH" not in os.environ
        if unset:  # under --out, unless the user named Minari's folder
            os.environ["MINARI_DATASETS_PATH"] = str((out / "minari").resolve())
        env = gym.make(args.env, **spec.env_kwargs)
        try:
            dataset = export_minari(result.records, args.minari, env)
        finally:
            env.close()
            if unset:
                del os.environ["MINARI_DATASETS_PATH"]
        summary["minari"] = args.minari
        summary["minari_path"] = str(Path(dataset.spec.data_path).parent)
    (out / "collect.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    steps = sum(len(r["steps"]) for r in result.records)
    print(f"{len(result.records)} episode(s) in {result.wall_s:.1f}s ({summary['episodes_per_hour']} episodes/hour), "
          f"{len(result.failed)} failed; wrote {steps_path} ({steps} rows), {episodes_path} ({len(result.records)} rows)"
          + (f", Minari dataset {args.minari} in {summary['minari_path']}" if args.minari else ""))
    if result.lost:
        print(f"{len(result.lost)} episode(s) failed as infrastructure after {args.retries + 1} attempt(s) each: "
              + "; ".join(f"episode {r['episode']}: {(r['failure'] or '').splitlines()[0][:200]}" for r in result.lost)
              + f". Run again with --resume --out {out} to play them once more.", file=sys.stderr)  # fmt: skip
        return 1
    return 0


def cmd_docker_clean(args: argparse.Namespace) -> int:
    from stamina_gym.sandbox.docker import clean

    removed = clean(stale_only=args.stale)
    for name in removed:
        print(f"removed {name}")
    print(f"{len(removed)} container(s) removed")
    return 0


def cmd_docker_build(args: argparse.Namespace) -> int:
    from stamina_gym.sandbox.image import build, image_tag, recipe

    if args.print_tag:
        print(image_tag(recipe(args.debian)))
        return 0
    print(build(suite=args.debian, mirror=args.mirror, force=args.force))
    return 0


def cmd_review(args: argparse.Namespace) -> int:
    from stamina_gym.evaluation.review import export_pack, import_scores

    if args.action == "export":
        if not args.source:
            raise StaminaError("review export needs --from EVAL_DIR, the evaluation whose turns to sample")
        source = Path(args.source)
        out = Path(args.out or f"{source.as_posix().rstrip('/')}-review")
        ids = export_pack(source, out, args.sample, args.seed)
        print(f"{len(ids)} items in {out}: open {out / 'index.html'}, fill in {out / 'scores.csv'}, "
              f"then: stamina-gym review import {out} {out / 'scores.csv'}")
        return 0
    if len(args.paths) != 2:
        raise StaminaError("review import needs two paths: the pack folder and the filled scores.csv")
    result = import_scores(Path(args.paths[0]), Path(args.paths[1]))
    for name, d in result["dimensions"].items():
        print(f"{name:>14}: {d['n']} pairs, Spearman {d['spearman']} {d['spearman_ci95']}, Kendall {d['kendall']} {d['kendall_ci95']}")
    print(f"written to {Path(args.paths[0]) / 'agreement.json'} (and the evaluation's summary.json and report.html when found)")
    return 0


def cmd_author(args: argparse.Namespace) -> int:
    from stamina_gym import authoring
    from stamina_gym.registry import unknown_name
    from stamina_gym.task import find_tasks

    folder = Path(args.task)
    if not (folder / "task.yaml").is_file():
        tasks = find_tasks()
        if args.task not in tasks:
            raise StaminaError(unknown_name("task", args.task, tasks))
        folder = tasks[args.task]
    if args.action == "checkout":
        given = dict(_key_value(item) for item in args.param)
        done = authoring.checkout(folder, Path(args.repo), given, upto=args.upto)
        print(f"{args.repo}: seed + {done['turns']} turn commit(s), params {done['params']}")
    else:
        written = authoring.export(folder, Path(args.repo))
        print(f"wrote reference.patch of {len(written)} turn(s): {' '.join(written) or '-'}")
    return 0


def cmd_costs(args: argparse.Namespace) -> int:
    import statistics

    from stamina_gym import costs
    from stamina_gym.task import load_task

    task = load_task(args.task)

    def progress(done: int, total: int) -> None:
        print(f"\rcosts: turn {done}/{total}", end="" if done < total else "\n", file=sys.stderr, flush=True)

    measured = costs.measure(task, progress)
    values = sorted(measured.values())
    print(f"{len(values)} tests of {task.meta.id} v{task.meta.version}: {sum(values) / 1000:.1f} s in all, "
          f"median {statistics.median(values):.1f} ms, slowest {values[-1]:.1f} ms")  # fmt: skip
    for tid, ms in sorted(measured.items(), key=lambda item: -item[1])[:5]:
        print(f"  {ms:9.1f} ms  {tid}")
    if args.write:
        print(f"wrote {costs.write(task, measured)}")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    """OpenEnv's server for ``args.env`` until interrupted (Ctrl-C or SIGTERM closes every session's env)."""
    import json

    _use_env(args.env, args.tasks)
    try:
        import uvicorn

        from stamina_gym.integrations.openenv import make_app
    except ImportError as exc:
        raise StaminaError(f"serve needs the serve extra: pip install 'stamina-gym[serve]' ({exc})") from exc
    make_kwargs = _make_kwargs(args.make_kwargs)
    make_kwargs["action_format"] = args.action_format
    if args.turns:
        make_kwargs["max_turns"] = args.turns
    if args.sandbox:
        make_kwargs["sandbox"] = {"kind": args.sandbox}
    try:
        app = make_app(args.env, max_sessions=args.max_sessions,
                       idle_timeout_s=None if args.idle_timeout <= 0 else args.idle_timeout, **make_kwargs)  # fmt: skip
    except ValueError as exc:
        raise StaminaError(str(exc)) from exc
    print(f"serving {args.env} over OpenEnv at http://{args.host}:{args.port} (WebSocket /ws): at most "
          f"{args.max_sessions} session(s), idle timeout {args.idle_timeout:g} s, action format {args.action_format}",
          flush=True)  # fmt: skip
    # uvicorn stops on SIGINT or SIGTERM and then ends the process with that signal.
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level)
    return 0


def _key_value(item: str) -> tuple[str, str]:
    key, sep, value = item.partition("=")
    if not sep or not key:
        raise StaminaError(f"--param {item!r}: expected NAME=VALUE")
    return key, value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="stamina-gym", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run an agent through an env; prints a per-turn table, writes JSONL records")
    run.add_argument("--agent", default="oracle", help="oracle, null, command or cpg (default: oracle)")
    run.add_argument("--agent-arg", action="append", default=[], metavar="KEY=VALUE",
                     help="agent constructor argument, e.g. command='python my_agent.py'")
    run.add_argument("--env", default="StaminaTodo-v2")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--turns", type=int, help="play only the first N turns")
    run.add_argument("--out", help="records folder (default runs/<env>-<agent>-seed<N>-<time>)")
    run.add_argument("--tasks", action="append", default=[], metavar="DIR", help="extra task folder (repeatable)")
    run.add_argument("--user", choices=["rule", "llm", "human"],
                     help="who answers the agent's questions: rule (the hidden spec), llm, or human (you, on this terminal)")
    run.add_argument("--sandbox", choices=["local", "docker"], help="sandbox backend (default: the env spec's)")
    run.set_defaults(func=cmd_run)
    val = sub.add_parser("validate", help="replay a task's reference patches and check every turn's tests")
    val.add_argument("target", help="task id, task folder or env id")
    val.add_argument("--tasks", action="append", default=[], metavar="DIR", help="extra task folder (repeatable)")
    val.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], metavar="SEED",
                     help="validate the procedural variant each seed picks (default: 0 1 2)")
    val.add_argument("--mutants", type=int, default=0, metavar="N",
                     help="also run the mutation check: up to N mutants per turn, kill rate per turn")
    val.add_argument("--from", dest="first", type=int, default=1, metavar="N",
                     help="check only the turns from N on (earlier ones are replayed); default 1")
    val.add_argument("--sandbox", action="append", metavar="WHERE",
                     help="run the reference in local (the host's Python), docker or docker:<debian release> "
                          "(docker:trixie has Python 3.13); repeat it to compare Pythons (default: local)")
    val.add_argument("--quality", action="store_true",
                     help="also measure the reference's code quality at every turn of each seed's variant and keep it "
                          "where envs read it back (quality.reference_cache_dir), so no process measures it again")
    val.add_argument("--interfaces", action="store_true",
                     help="only check that the tests use named interfaces (replays the patches, runs no test)")
    val.add_argument("--exact-text", action="store_true",
                     help="only check that exact output text the tests compare with was told (stamina_gym.exact_text; runs no test)")
    val.add_argument("--paraphrases", action="store_true",
                     help="only report facts the tests hold that some paraphrase of a turn states and another lacks "
                          "(stamina_gym.paraphrases; a reviewer's report, runs no test)")
    val.add_argument("--contract", action="store_true",
                     help="with --interfaces: list each name every turn's tests use and the turn that told it")
    val.set_defaults(func=cmd_validate)
    from stamina_gym.evaluation.command import add_parser as add_eval_parser
    from stamina_gym.mining.command import add_parser as add_mine_parser

    add_eval_parser(sub)
    add_mine_parser(sub)

    col = sub.add_parser("collect", help="play many episodes on parallel workers (local or Ray); writes Parquet")
    col.add_argument("--agent", default="oracle", help="oracle, null, command, or package.module:Class (default: oracle)")
    col.add_argument("--agent-arg", action="append", default=[], metavar="KEY=VALUE", help="agent constructor argument")
    col.add_argument("--env", default="StaminaTodo-v2")
    col.add_argument("--episodes", type=int, default=4)
    col.add_argument("--start-turn", type=int, nargs="+", metavar="TURN",
                     help="begin each episode at this turn on the reference state of the turns before; several: "
                          "each episode draws one (a curriculum over the project)")
    col.add_argument("--workers", type=int, default=1, help="parallel workers, each holding one env (default 1)")
    col.add_argument("--ray", metavar="ADDRESS", help="Ray cluster address (e.g. auto or ray://host:10001); "
                     "without it, more than one worker starts a local Ray")
    col.add_argument("--backend", choices=["auto", "inline", "processes", "ray"], default="auto",
                     help="auto: inline for one worker, ray otherwise; processes: a local process pool")
    col.add_argument("--seed", type=int, default=0, help="base seed; episode seeds are derived from it")
    col.add_argument("--turns", type=int, help="play at most N turns from the start (max_turns)")
    col.add_argument("--make-kwargs", default="{}", metavar="JSON",
                     help='more gym.make keyword arguments of every env, e.g. \'{"sandbox": {"timeout_s": 30}}\'')
    col.add_argument("--grading-cache", default=default_grading_cache(), metavar="PATH",
                     help="grading cache folder shared by the workers, or none (default: %(default)s)")
    col.add_argument("--minari", metavar="DATASET_ID", help="also export a Minari dataset (needs the minari extra)")
    col.add_argument("--out", help="output folder (default runs/collect-<env>-<agent>-<time>)")
    col.add_argument("--tokenizer", metavar="PATH",
                     help="a Hugging Face tokenizer folder (with a chat template): write each episode's token ids "
                          "and assistant loss mask into episodes.parquet, marked retokenised")
    col.add_argument("--retries", type=int, default=2, metavar="N",
                     help="play an episode that failed as infrastructure (a worker died) up to N more times (default 2)")
    col.add_argument("--resume", action="store_true",
                     help="continue the collection in --out from its records.jsonl: play only the episodes it lacks "
                          "or lost to infrastructure (same arguments as the first run)")
    col.add_argument("--tasks", action="append", default=[], metavar="DIR", help="extra task folder (repeatable)")
    col.set_defaults(func=cmd_collect)
    clean = sub.add_parser("docker-clean", help="remove the docker sandbox containers stamina-gym started")
    clean.add_argument("--stale", action="store_true", help="only those whose owning process has ended")
    clean.set_defaults(func=cmd_docker_clean)
    build = sub.add_parser("docker-build", help="build the docker sandbox image (skipped when its tag is present)")
    build.add_argument("--debian", choices=SUITES, default=SUITES[0],
                       help=f"Debian release of the image, which decides its Python (default {SUITES[0]}: 3.11; trixie: 3.13)")
    build.add_argument("--mirror", help="Debian mirror URI (default: this machine's apt sources)")
    build.add_argument("--force", action="store_true", help="rebuild even when the tag is present")
    build.add_argument("--print-tag", action="store_true", help="print the tag of the current recipe and exit")
    build.set_defaults(func=cmd_docker_build)
    review = sub.add_parser("review", help="blind human review of an evaluation's turns: export a pack, import the scores")
    review.add_argument("action", choices=["export", "import"])
    review.add_argument("paths", nargs="*", metavar="PATH", help="import: the pack folder and the filled scores.csv")
    review.add_argument("--from", dest="source", metavar="EVAL_DIR", help="export: the evaluation folder")
    review.add_argument("--sample", type=int, default=30, help="export: turns to sample (default 30)")
    review.add_argument("--seed", type=int, default=0, help="export: seed of the sample and its order")
    review.add_argument("--out", help="export: the pack folder (default EVAL_DIR-review)")
    review.set_defaults(func=cmd_review)
    author = sub.add_parser("author", help="a task's reference solution as a git repo (one commit per turn), and back")
    author.add_argument("action", choices=["checkout", "export"],
                        help="checkout: write the repo; export: write each changed commit as its turn's reference.patch")
    author.add_argument("task", help="task id or folder")
    author.add_argument("repo", help="the git repository (checkout: a new or empty folder)")
    author.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                        help="checkout: a param value (default: the first value the task lists)")
    author.add_argument("--upto", type=int, metavar="N", help="checkout: only the first N turns")
    author.set_defaults(func=cmd_author)
    cost = sub.add_parser("costs", help="measure what each hidden test of a task costs (sizes the regression sample)")
    cost.add_argument("task", help="task id or folder")
    cost.add_argument("--write", action="store_true", help="store the figures as the task's costs.json")
    cost.set_defaults(func=cmd_costs)
    serve = sub.add_parser("serve", help="serve an env over OpenEnv's HTTP/WebSocket protocol (needs the serve extra)")
    serve.add_argument("--env", default="StaminaTodo-v2")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--max-sessions", type=int, default=16, metavar="N",
                       help="sessions at once, each its own env and sandbox; one more is refused (default 16)")
    serve.add_argument("--idle-timeout", type=float, default=600.0, metavar="SECONDS",
                       help="close a session after this long without a message; 0: never (default 600)")
    serve.add_argument("--action-format", choices=["json", "tolerant"], default="tolerant",
                       help="how actions are read: json (strict) or tolerant (a model's raw output; default)")
    serve.add_argument("--turns", type=int, help="episodes of at most N turns from their start (max_turns)")
    serve.add_argument("--make-kwargs", default="{}", metavar="JSON",
                       help='more gym.make keyword arguments of every env, e.g. \'{"budgets": {"wall_clock_s": 7200}}\'')
    serve.add_argument("--sandbox", choices=["local", "docker"], help="sandbox backend (default: the env spec's)")
    serve.add_argument("--tasks", action="append", default=[], metavar="DIR", help="extra task folder (repeatable)")
    serve.add_argument("--log-level", default="warning", choices=["critical", "error", "warning", "info", "debug"])
    serve.set_defaults(func=cmd_serve)
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

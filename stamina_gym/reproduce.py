"""A turn's reproduction script, run in the sandbox on the agent's current code: the
output a bug report quotes (``user.templates`` renders it into the prompt; validation
checks that the script fails before the reference patch and passes after)."""

from __future__ import annotations

import secrets
import shutil
from pathlib import Path

from stamina_gym.sandbox import REPO_MOUNT, Mount, RunResult, Sandbox
from stamina_gym.task import Turn

REPRO_MOUNT = "/repro"


def run_repro_result(turn: Turn, tree: Path, sandbox: Sandbox, scratch: Path) -> RunResult:
    """Run the turn's reproduction script in the sandbox on the agent's current code
    (mounted read-only; the script sits in a mount of its own, copied from the task)."""
    repro = turn.spec.repro
    assert repro is not None
    stage = scratch / f"repro-{secrets.token_hex(4)}"
    stage.mkdir(parents=True)
    try:
        shutil.copyfile(turn.dir / repro.script, stage / "repro.py")
        mounts = [Mount(tree, REPO_MOUNT, writable=False), Mount(stage, REPRO_MOUNT)]
        return sandbox.run([sandbox.python, "-B", f"{REPRO_MOUNT}/repro.py"], mounts=mounts, timeout=repro.timeout_s,
                           env={"PYTHONPATH": REPO_MOUNT, "PYTHONDONTWRITEBYTECODE": "1"})  # fmt: skip
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def run_repro(turn: Turn, tree: Path, sandbox: Sandbox, scratch: Path) -> tuple[str, str]:
    """``(script text, output)`` for the prompt; the output keeps its end."""
    repro = turn.spec.repro
    assert repro is not None
    script = (turn.dir / repro.script).read_text(encoding="utf-8")
    result = run_repro_result(turn, tree, sandbox, scratch)
    output = result.output.rstrip()
    if result.timed_out:
        output += "\n(it hung; I stopped it)"
    if len(output) > repro.max_chars:
        output = "[...]\n" + output[-repro.max_chars :]
    return script.rstrip(), output or "(no output)"

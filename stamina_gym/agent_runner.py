"""The agent's ``run`` and ``run_tests`` calls on a warm process in the sandbox.

A cold call pays for the sandbox's start (bubblewrap's namespaces and mounts, or a docker
exec) and, for ``run_tests``, an interpreter start and a pytest import (about a quarter
of a second) before the first test runs; an agent makes such calls many times a turn. So
each sandbox keeps one long-lived process, the grading harness in its ``--serve-visible``
mode (``grading/harness.py``), that has imported pytest and its plugins and never
anything of the agent's. Each call forks a child of it, with the sandbox's view, user and
limits and its own CPU-time limit:

* ``run_tests``: the child runs pytest in ``/repo`` as ``python -m pytest`` would (the
  agent's configuration, conftest files and plugins count: they are its own);
* ``run``: the child execs the command as the sandbox starts one cold (a session of its
  own, an empty stdin, the sandbox's environment, default signal dispositions).

After each call every other process of the sandbox user is killed and ``/tmp`` is
emptied, so nothing of one call reaches the next except what it wrote to ``/repo``, as
with a cold run, where the sandbox's PID namespace and ``/tmp`` end with the command.

The process runs as ``python -s -B harness.py`` from a private folder holding only the
harness, mounted read-only: the script's folder, not ``/repo``, is first on its path, so
it cannot import a file of the agent's; the sandbox's fixed environment (a hash seed of
0, no bytecode written) holds for it as for a cold run.

Where the sandbox has no warm service (isolation by rlimits only, or
``sandbox.warm_grading`` off) ``run_tests`` and ``run_command`` return None and the
caller runs cold.
"""

from __future__ import annotations

import atexit
import base64
import json
import os
import secrets
import shutil
import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from stamina_gym.errors import SandboxError
from stamina_gym.grading import HARNESS_PROGRAM
from stamina_gym.grading.harness import MARKER
from stamina_gym.sandbox import PYTEST_ENVIRONMENT, REPO_MOUNT, Mount, RunResult, Sandbox
from stamina_gym.sandbox.output import HARD_OUTPUT_LIMIT, Capture
from stamina_gym.sandbox.service import LineService

HARNESS_MOUNT = "/harness"
#: Seconds the warm process may take beyond a call's own timeout before it is given up.
_GRACE_S = 15.0


@dataclass
class _Runner:
    service: LineService
    layout: tuple
    """The mounts and the identity of their host folders when it started: a folder replaced
    on the host is not what the running process sees, so it is started again."""


_RUNNERS: "weakref.WeakKeyDictionary[Sandbox, _Runner]" = weakref.WeakKeyDictionary()
_FOLDER: list[Path] = []


def _harness_folder() -> Path:
    """A folder of this process holding only the harness, readable by the sandbox user."""
    if not _FOLDER:
        folder = Path(tempfile.mkdtemp(prefix="stamina-gym-harness-"))
        shutil.copyfile(HARNESS_PROGRAM, folder / "harness.py")
        os.chmod(folder, 0o755)
        os.chmod(folder / "harness.py", 0o644)
        atexit.register(shutil.rmtree, folder, True)
        _FOLDER.append(folder)
    return _FOLDER[0]


def _layout(mounts: Sequence[Mount]) -> tuple:
    identity = []
    for mount in mounts:
        info = os.stat(mount.source)
        identity.append((str(mount.source), mount.target, mount.writable, info.st_dev, info.st_ino))
    return tuple(identity)


def _runner(sandbox: Sandbox, mounts: Sequence[Mount]) -> LineService | None:
    if not sandbox.config.warm_grading or sandbox.isolation not in ("bwrap", "docker"):
        return None
    layout = _layout(mounts)
    runner = _RUNNERS.get(sandbox)
    if runner is not None and runner.service.alive and runner.layout == layout:
        return runner.service
    if runner is not None:
        runner.service.close()
    folder = _harness_folder()
    argv = [sandbox.python, "-s", "-B", f"{HARNESS_MOUNT}/harness.py", "--serve-visible"]
    service = sandbox.serve(argv, mounts=[*mounts, Mount(folder, HARNESS_MOUNT)], prefix=MARKER,
                            env=PYTEST_ENVIRONMENT)
    _RUNNERS[sandbox] = _Runner(service, layout)
    return service


def run_tests(sandbox: Sandbox, mounts: Sequence[Mount], args: Sequence[str], timeout: float) -> RunResult | None:
    """``python -m pytest ARGS`` in ``/repo`` on the sandbox's warm runner, as the
    ``RunResult`` a cold run would give; None where there is no warm runner."""
    return _ask(sandbox, mounts, {"kind": "visible", "args": list(args)}, timeout)


def run_command(sandbox: Sandbox, mounts: Sequence[Mount], argv: Sequence[str], timeout: float) -> RunResult | None:
    """``argv`` in ``/repo`` on the sandbox's warm runner, as the ``RunResult`` of
    ``sandbox.run(argv, ...)`` with the sandbox's own environment; None where there is no
    warm runner."""
    return _ask(sandbox, mounts, {"kind": "command", "argv": list(argv), "cwd": REPO_MOUNT,
                                  "unset": sorted(PYTEST_ENVIRONMENT)}, timeout)  # fmt: skip


def _ask(sandbox: Sandbox, mounts: Sequence[Mount], call: dict, timeout: float) -> RunResult | None:
    service = _runner(sandbox, mounts)
    if service is None:
        return None
    job = {**call, "id": secrets.token_hex(8), "timeout_s": timeout, "cpu_s": sandbox.config.cpu_s,
           "max_bytes": sandbox.config.max_output_chars, "hard_bytes": HARD_OUTPUT_LIMIT}  # fmt: skip
    reply = service.ask(json.dumps(job), timeout + _GRACE_S)
    marker = reply.output.rfind(MARKER)
    try:
        answer = json.loads(reply.output[marker + len(MARKER) :].split("\n", 1)[0]) if marker >= 0 else None
        if answer is not None and answer.get("id") != job["id"]:
            raise ValueError(f"the reply is to job {answer.get('id')}, not {job['id']}")
    except ValueError as exc:
        service.close()
        raise SandboxError(f"the warm runner's reply does not parse ({exc}): {reply.output[-500:]}") from None
    if answer is None:  # the runner ended or missed its deadline: the tests' doing, it is started afresh
        service.close()
        note = "" if reply.timed_out or reply.limit else "\n[stamina-gym: the call ended the warm runner]"
        return RunResult(reply.exit_code or 1, reply.output + note, reply.output_bytes, timed_out=reply.timed_out,
                         limit=reply.limit, duration_s=reply.duration_s)  # fmt: skip
    capture = Capture(sandbox.config.max_output_chars)
    capture.head, capture.tail = bytearray(base64.b64decode(answer["head"])), bytearray(base64.b64decode(answer["tail"]))
    capture.total = int(answer["total"])
    code = int(answer["exit"])
    if code < 0 and answer["killed"] is None:  # a signal the call's own code sent: said as a cold sandbox says it
        code = 128 - code
    return capture.result(code, answer["killed"], reply.duration_s)

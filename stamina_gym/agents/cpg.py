"""Adapter for programs built for a clarify/plan/generate benchmark (``--agent cpg``).

The program is one executable with three subcommands, each started once per turn:

``PROGRAM clarify``
    stdin, first line: the request of the turn as a JSON string. The program then writes
    one question per line on stdout and reads the user's answer to it as one line (a JSON
    string) on stdin, as often as it likes. When it has no more questions it writes the
    end marker line ``END_OF_QUESTIONS``, then its requirement summary (a JSON object
    ``{requirement: value}``, or plain text) and exits.
``PROGRAM plan``
    stdin: ``{"request": ..., "summary": ...}`` (JSON). stdout: the plan as JSON, a list of
    steps or ``{"steps": [...]}``; a step is a string or ``{"description", "details",
    "depends_on"}``.
``PROGRAM generate``
    stdin: ``{"request", "summary", "plan", "repo"}`` (JSON); ``repo`` is the path of a
    copy of the repository, which is also the working directory. stdout: a unified diff
    against the repository (paths relative to its root, ``a/`` ``b/`` prefixes allowed).

The adapter turns this into env actions: one ``ask`` per question, ``summarize`` with the
summary, ``plan``, ``apply_patch`` with the diff (when not empty), ``submit``. A program
that exits with an error, breaks the format or stays silent past ``timeout`` seconds ends
the episode as a framework failure.
"""

from __future__ import annotations

import json
import queue
import shlex
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any, Sequence

from stamina_gym.agents import AgentError

END_MARKER = "END_OF_QUESTIONS"


class _Clarify:
    """A running ``clarify`` subcommand, its stdout read line by line by a thread."""

    def __init__(self, argv: list[str], request: str) -> None:
        try:
            self.proc = subprocess.Popen(argv + ["clarify"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         text=True, encoding="utf-8", bufsize=1)  # fmt: skip
        except OSError as exc:
            raise AgentError(f"could not start {argv!r} clarify: {exc}") from exc
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        self.send(request)

    def _pump(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def send(self, text: str) -> None:
        try:
            self.proc.stdin.write(json.dumps(text) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise AgentError(f"clarify exited (code {self.proc.poll()}) before reading its input") from exc

    def read_line(self, timeout: float) -> str | None:
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AgentError(f"clarify wrote nothing within {timeout}s") from None

    def rest(self, timeout: float) -> str:
        """Everything after the end marker, up to the end of output."""
        parts = []
        while (line := self.read_line(timeout)) is not None:
            parts.append(line)
        self.close(timeout)
        return "".join(parts).strip()

    def close(self, timeout: float = 5) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AgentError("clarify did not exit after its summary") from None
        if code != 0:
            raise AgentError(f"clarify exited with code {code}")


class ClarifyPlanGenerateAgent:
    name = "cpg"

    def __init__(self, command: str | Sequence[str], timeout: float = 600.0) -> None:
        if not command:
            raise ValueError("the cpg agent needs a program, e.g. --agent-arg command='python my_program.py'")
        self.argv = shlex.split(command) if isinstance(command, str) else list(command)
        self.timeout = float(timeout)
        self._view: Any = None
        self._turn: int | None = None
        self._clarify: _Clarify | None = None
        self._pending: list[dict[str, Any]] = []

    def reset(self, view: Any) -> None:
        self.close()
        self._view, self._turn, self._pending = view, None, []

    # -- the three subcommands ------------------------------------------------------------

    def _run(self, subcommand: str, payload: dict[str, Any], cwd: Path | None = None) -> str:
        try:
            done = subprocess.run(self.argv + [subcommand], input=json.dumps(payload), capture_output=True, text=True,
                                  encoding="utf-8", timeout=self.timeout, cwd=cwd, check=False)  # fmt: skip
        except subprocess.TimeoutExpired:
            raise AgentError(f"{subcommand} gave no answer within {self.timeout}s") from None
        except OSError as exc:
            raise AgentError(f"could not start {self.argv!r} {subcommand}: {exc}") from exc
        if done.returncode != 0:
            raise AgentError(f"{subcommand} exited with code {done.returncode}: {done.stderr.strip()[-500:]}")
        return done.stdout

    def _after_clarify(self, request: str, summary_text: str) -> list[dict[str, Any]]:
        try:
            summary: Any = json.loads(summary_text) if summary_text else None
        except json.JSONDecodeError:
            summary = summary_text
        actions: list[dict[str, Any]] = []
        if isinstance(summary, dict) and summary:
            actions.append({"tool": "summarize", "requirements": summary})
        elif summary:
            actions.append({"tool": "summarize", "requirements": {"summary": str(summary)}})
        plan_out = self._run("plan", {"request": request, "summary": summary})
        try:
            plan = json.loads(plan_out)
        except json.JSONDecodeError as exc:
            raise AgentError(f"plan did not print JSON: {exc}") from None
        steps = plan.get("steps") if isinstance(plan, dict) else plan
        actions.append({"tool": "plan", "steps": steps})
        with tempfile.TemporaryDirectory(prefix="stamina-cpg-") as tmp:
            repo = Path(tmp) / "repo"
            shutil.copytree(self._view.tree, repo, symlinks=True)
            patch = self._run("generate", {"request": request, "summary": summary, "plan": plan, "repo": str(repo)}, cwd=repo)
        if patch.strip():
            actions.append({"tool": "apply_patch", "patch": patch})
        actions.append({"tool": "submit"})
        return actions

    # -- the agent protocol -------------------------------------------------------------

    def act(self, observation: dict[str, Any]) -> dict[str, Any]:
        turn = int(observation["turn"])
        if self._turn != turn:
            self._turn, self._pending = turn, []
            self._request = observation["prompt"]
            self._clarify = _Clarify(self.argv, self._request)
        elif self._clarify is not None:
            self._clarify.send(observation["output"])  # the user's answer to the last question
        if self._clarify is not None:
            line = self._clarify.read_line(self.timeout)
            if line is None:
                self._clarify.close()
                raise AgentError(f"clarify ended without the end marker {END_MARKER}")
            if line.strip() != END_MARKER:
                return {"tool": "ask", "question": line.strip()}
            summary, self._clarify = self._clarify.rest(self.timeout), None
            self._pending = self._after_clarify(self._request, summary)
        return self._pending.pop(0)

    def close(self) -> None:
        clarify, self._clarify = self._clarify, None
        if clarify is not None and clarify.proc.poll() is None:
            clarify.proc.kill()
            clarify.proc.wait()

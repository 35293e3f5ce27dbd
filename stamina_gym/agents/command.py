"""Plug in an agent written in any language: a program that speaks JSON lines.

Protocol (one JSON object per line, UTF-8):

- env -> agent, on stdin: ``{"observation": {...}, "reward": float, "info": {...}}``
  after reset (reward 0) and after every step. ``info`` carries only ``turn``, ``tool``
  and ``ok`` (never grades or test names).
- agent -> env, on stdout: one line, the action: ``{"tool": "read_file", "path": "x"}``.
- At the end of the episode the env writes ``{"done": true}`` and closes stdin.

Anything the program writes to stderr goes to the env's stderr. A program that exits,
or stays silent past ``timeout`` seconds, ends the episode with a framework failure.
"""

from __future__ import annotations

import json
import selectors
import shlex
import subprocess
import time
from typing import Any, Sequence

from stamina_gym.agents import AgentError

_PUBLIC_INFO = ("turn", "tool", "ok")


class CommandAgent:
    name = "command"

    def __init__(self, command: str | Sequence[str], timeout: float = 600.0) -> None:
        if not command:
            raise ValueError("the command agent needs a command, e.g. --agent-arg command='python my_agent.py'")
        self.argv = shlex.split(command) if isinstance(command, str) else list(command)
        self.timeout = timeout
        self._proc: subprocess.Popen | None = None
        self._reward, self._info = 0.0, {}

    def reset(self, view: Any) -> None:
        self.close()
        try:
            self._proc = subprocess.Popen(
                self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, encoding="utf-8", bufsize=1
            )
        except OSError as exc:
            raise AgentError(f"could not start agent command {self.argv!r}: {exc}") from exc
        self._reward, self._info = 0.0, {}

    def observe(self, reward: float, info: dict[str, Any]) -> None:
        """Called by the harness after each step, before the next ``act``."""
        self._reward = float(reward)
        self._info = {k: info[k] for k in _PUBLIC_INFO if k in info}

    def act(self, observation: dict[str, Any]) -> str:
        proc = self._require()
        message = {"observation": {k: (int(v) if k == "turn" else v) for k, v in observation.items()},
                   "reward": self._reward, "info": self._info}  # fmt: skip
        try:
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise AgentError(f"agent command exited (code {proc.poll()}) before reading its observation") from exc
        return self._read_line(proc)

    def _read_line(self, proc: subprocess.Popen) -> str:
        deadline = time.monotonic() + self.timeout
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            while not sel.select(max(deadline - time.monotonic(), 0)):
                if time.monotonic() >= deadline:
                    raise AgentError(f"agent command gave no action within {self.timeout}s")
        line = proc.stdout.readline()
        if not line:
            raise AgentError(f"agent command closed its output (exit code {proc.wait()})")
        return line.strip()

    def _require(self) -> subprocess.Popen:
        if self._proc is None:
            raise AgentError("the command agent was not reset")
        return self._proc

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            if proc.poll() is None:
                proc.stdin.write(json.dumps({"done": True}) + "\n")
                proc.stdin.close()
                proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired, ValueError):
            proc.kill()
            proc.wait()

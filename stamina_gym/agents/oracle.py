"""Deterministic reference policies: ``oracle`` (replays the reference patches, so every
turn gets the maximum reward) and ``null`` (submits at once, so every turn's new tests
fail: the proof that the tests discriminate)."""

from __future__ import annotations

from typing import Any


class OracleAgent:
    """Applies the turn's reference patch, then submits. Reads the task: privileged."""

    name = "oracle"

    def __init__(self) -> None:
        self._env: Any = None
        self._patched: int | None = None

    def reset(self, env: Any) -> None:
        self._env, self._patched = env.unwrapped, None

    def act(self, observation: dict[str, Any]) -> dict[str, Any]:
        turn = int(observation["turn"])
        if self._patched != turn:
            self._patched = turn
            return {"tool": "apply_patch", "patch": self._env.turns[turn].reference_patch}
        return {"tool": "submit"}

    def close(self) -> None:
        self._env = None


class NullAgent:
    """Submits every turn without touching the repository."""

    name = "null"

    def reset(self, env: Any) -> None:
        pass

    def act(self, observation: dict[str, Any]) -> dict[str, Any]:
        return {"tool": "submit"}

    def close(self) -> None:
        pass

"""Deterministic reference policies: ``oracle`` (asks the key questions, submits the
reference plan and replays the reference patches, so every turn gets the maximum reward) and ``null`` (submits at once, so every turn's new tests
fail: the proof that the tests discriminate)."""

from __future__ import annotations

from typing import Any

from stamina_gym.agents.view import ReferenceView


class OracleAgent:
    """Plays every turn perfectly. Reads the reference solution (``ReferenceView``): privileged. On a turn with a hidden spec
    it first asks about each key point no earlier question touched (the point's first
    phrasing), then submits the first reference plan if the turn has one, then applies
    the reference patch and submits."""

    name = "oracle"
    privileged = True

    def __init__(self) -> None:
        self._view: ReferenceView | None = None
        self._turn: int | None = None
        self._queue: list[dict[str, Any]] = []

    def reset(self, view: ReferenceView) -> None:
        self._view, self._turn, self._queue = view, None, []

    def _next_question(self) -> dict[str, Any] | None:
        open_points = self._view.open_key_points()
        return {"tool": "ask", "question": open_points[0]} if open_points else None

    def turn_actions(self, turn: int) -> list[Any]:
        """What the turn's work is after the questions: the reference plan, if the turn has
        one, the reference patch and the submit. An entry may be a function that makes the
        action when its time comes (it reads the tree as the earlier actions left it)."""
        plan = self._view.reference_plan(turn)
        actions: list[Any] = [{"tool": "plan", "steps": plan}] if plan else []
        return actions + [{"tool": "apply_patch", "patch": self._view.reference_patch(turn)}, {"tool": "submit"}]

    def asks(self, turn: int) -> bool:
        """Whether the turn starts with the key questions."""
        return True

    def act(self, observation: dict[str, Any]) -> dict[str, Any]:
        turn = int(observation["turn"]) - 1  # the observation counts from 1, the reference's turns from 0
        if self._turn != turn:
            self._turn = turn
            self._queue = self.turn_actions(turn)
            self._asking = self.asks(turn)
        if self._asking:
            question = self._next_question()
            if question is not None:
                return question
            self._asking = False
        action = self._queue.pop(0)
        return action() if callable(action) else action

    def close(self) -> None:
        self._view = None


class NullAgent:
    """Submits every turn without touching the repository."""

    name = "null"

    def reset(self, view: Any) -> None:
        pass

    def act(self, observation: dict[str, Any]) -> dict[str, Any]:
        return {"tool": "submit"}

    def close(self) -> None:
        pass

"""What an agent may know beyond its observations, instead of the env.

Every agent's ``reset`` gets an ``AgentView``: the task's id, its number of turns and
phases, and the work tree its tools edit (a program-driven agent may copy it for its
program; nothing hidden lives there). A reference agent that declares ``privileged =
True`` (oracle, the ladder's rungs) gets a ``ReferenceView``, which adds the reference
solution: the reference patch and plan of any turn and the key points of the current
turn that no question has touched yet. Neither hands out the sandbox, the grader, the
hidden tests or the user.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stamina_gym.agents import hook


class AgentView:
    """The episode as any agent may see it."""

    def __init__(self, env: Any) -> None:
        self._env = env

    @property
    def task_id(self) -> str:
        return self._env.task.id

    @property
    def turns(self) -> int:
        """How many turns (requests) the episode plays."""
        first, last = self._env.window
        return last - first + 1

    def phase(self, turn: int) -> str:
        """The project phase of turn ``turn`` (1-based)."""
        return self._env.task.phase(turn)

    @property
    def tree(self) -> Path:
        """The work tree the agent's tools edit, on the host."""
        return self._env.workspace.path


class ReferenceView(AgentView):
    """The episode with its reference solution, for privileged reference agents only."""

    def reference_patch(self, turn: int) -> str:
        """The reference patch of turn ``turn`` (0-based) under this episode's params."""
        return self._env.reference_patch(turn)

    def reference_plan(self, turn: int) -> list[dict[str, Any]] | None:
        """The steps of the first reference plan of turn ``turn`` (0-based), if it has one."""
        plans = self._env.turns[turn].spec.reference_plans
        return [step.model_dump() for step in plans[0].steps] if plans else None

    def open_key_points(self) -> list[str]:
        """The first phrasing of each key point of the current turn's hidden spec that no
        question has touched yet (none on a turn without one)."""
        dialogue = self._env.dialogue
        spec = dialogue.turn.spec.spec if dialogue else None
        if spec is None:
            return []
        touched = {point for question in dialogue.questions for point in question.points}
        return [point.phrasings[0] for point in spec.key_points if point.id not in touched]


def view_for(agent: Any, env: Any) -> AgentView:
    """The view ``agent.reset`` gets on ``env`` (a wrapped env is unwrapped)."""
    inner = getattr(env, "unwrapped", env)
    return ReferenceView(inner) if hook(agent, "privileged", False) else AgentView(inner)

"""The rule-based user: answers straight from the hidden spec. Deterministic."""

from __future__ import annotations

from typing import Sequence

from stamina_gym.config import UserConfig
from stamina_gym.task import KeyPoint
from stamina_gym.user import Conversation


class RuleUser:
    name = "rule"

    def __init__(self, config: UserConfig) -> None:
        self.config = config

    def answer(self, question: str, matched: Sequence[KeyPoint], conversation: Conversation) -> str:
        if not matched:
            return conversation.neutral_answer
        return " ".join(point.answer.strip() for point in matched)

    def read_plan(self, plan_text: str, conversation: Conversation) -> str:
        steps = sum(1 for line in plan_text.splitlines() if line[:1].isdigit())
        return f"Thanks, I have read the plan ({steps} steps). Go ahead."

    def close(self) -> None:
        pass

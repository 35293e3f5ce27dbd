"""A person plays the user: the agent's questions and plans are printed on the terminal and
the answers are read from standard input, one line each (``stamina-gym run --user human``).
At the end of input the neutral answer is given."""

from __future__ import annotations

import sys
from typing import Sequence, TextIO

from stamina_gym.config import UserConfig
from stamina_gym.task import KeyPoint
from stamina_gym.user import Conversation


class HumanUser:
    name = "human"

    def __init__(self, config: UserConfig, stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
        self.config = config
        self._in = stdin or sys.stdin
        self._out = stdout or sys.stdout
        self._shown_request: str | None = None

    def _show_request(self, conversation: Conversation) -> None:
        if self._shown_request != conversation.turn_id:
            self._shown_request = conversation.turn_id
            self._print(f"\n--- request of turn {conversation.turn_id} (what the agent was told) ---\n{conversation.request}\n")

    def _print(self, text: str) -> None:
        print(text, file=self._out, flush=True)

    def _read(self, prompt: str) -> str:
        self._print(prompt)
        line = self._in.readline()
        if not line:
            self._print("(end of input: giving the neutral answer)")
            return ""
        return line.rstrip("\n")

    def answer(self, question: str, matched: Sequence[KeyPoint], conversation: Conversation) -> str:
        self._show_request(conversation)
        reply = self._read(f"The agent asks: {question}\nYour answer (one line):")
        return reply.strip() or conversation.neutral_answer

    def read_plan(self, plan_text: str, conversation: Conversation) -> str:
        self._show_request(conversation)
        reply = self._read(f"The agent's plan:\n{plan_text}\nYour reply (one line, empty to accept):")
        return reply.strip() or "The plan is fine, go ahead."

    def close(self) -> None:
        pass

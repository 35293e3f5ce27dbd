"""The simulated user: answers the agent's questions (``ask``), reads its plans (``plan``)
and its requirement summaries (``summarize``), and scores the dialogue of each turn.

- ``match``: which key points of a turn's hidden spec a question touches (lexical).
- ``dialogue``: one turn's conversation and its scores C, P, G (``scoring``).
- ``plan`` / ``adherence``: decisions a plan settles; whether the code follows it.
- ``templates``: template variables and reproduction output in the user's messages.
- Users (who writes the answers), by ``user.kind`` in the env spec: ``rule`` (the hidden
  spec's answers, deterministic), ``llm`` (an OpenAI-compatible model told the hidden
  spec, replies cached on disk) and ``human`` (a person at the terminal).

Scores never depend on who answers: coverage and relevance come from the lexical match.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence

from stamina_gym.config import UserConfig
from stamina_gym.errors import StaminaError
from stamina_gym.registry import Registry
from stamina_gym.task import HiddenSpec, KeyPoint


class UserUnavailable(StaminaError):
    """The user could not answer (an LLM endpoint down with no cached reply): an
    infrastructure fault, not the agent's."""


@dataclass
class Conversation:
    """What a user knows of the turn so far."""

    turn_id: str
    request: str
    """The message the agent was given."""
    spec: HiddenSpec | None
    neutral_answer: str
    history: list[tuple[str, str]] = field(default_factory=list)
    """(question, answer) pairs of this turn, oldest first."""


class User(Protocol):
    name: str

    def answer(self, question: str, matched: Sequence[KeyPoint], conversation: Conversation) -> str:
        """The reply to ``question``; ``matched`` are the key points it touches."""

    def read_plan(self, plan_text: str, conversation: Conversation) -> str:
        """The reply to a plan."""

    def close(self) -> None: ...


USERS = Registry(
    "user",
    {
        "rule": "stamina_gym.user.rule:RuleUser",
        "llm": "stamina_gym.user.llm:LLMUser",
        "human": "stamina_gym.user.human:HumanUser",
    },
)


def make_user(config: UserConfig) -> User:
    return USERS.load(config.kind)(config)

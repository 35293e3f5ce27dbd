"""Model-call budgets, counted and enforced by the harness, not by the agent.

The harness hands a model-driven agent a ``ModelMeter``. The agent must pass every model
call through it: ``before_call`` refuses once the episode's calls or tokens are spent
(the call that crosses the token limit is the last one), ``record`` adds a call's usage.
The harness also checks the meter after every action, so an agent that ignores a refusal
still has its episode truncated.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from stamina_gym.agents import AgentError


class BudgetExceeded(AgentError):
    """A model budget is spent; ``budget`` names which (``max_model_calls``/``max_model_tokens``)."""

    def __init__(self, budget: str, message: str) -> None:
        super().__init__(message)
        self.budget = budget


@dataclass
class ModelUsage:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    request_chars: int = 0
    response_chars: int = 0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def minus(self, other: "ModelUsage") -> dict[str, int]:
        return {k: v - getattr(other, k) for k, v in asdict(self).items()}


class ModelMeter:
    def __init__(self, max_calls: int | None = None, max_tokens: int | None = None, spent: ModelUsage | None = None) -> None:
        self.max_calls, self.max_tokens = max_calls, max_tokens
        self.usage = spent or ModelUsage()
        self.overrun: str | None = None
        """Set when a call was made although a budget was already spent."""

    def snapshot(self) -> ModelUsage:
        return ModelUsage(**asdict(self.usage))

    def exceeded(self) -> str | None:
        """The name of the spent budget, or None."""
        if self.max_calls is not None and self.usage.calls >= self.max_calls:
            return "max_model_calls"
        if self.max_tokens is not None and self.usage.tokens >= self.max_tokens:
            return "max_model_tokens"
        return None

    def before_call(self) -> None:
        spent = self.exceeded()
        if spent:
            limit = self.max_calls if spent == "max_model_calls" else self.max_tokens
            raise BudgetExceeded(spent, f"model budget spent: {spent}={limit} (used {self.usage.calls} calls, {self.usage.tokens} tokens)")

    def record(self, *, prompt_tokens: int, completion_tokens: int, request_chars: int, response_chars: int) -> None:
        self.overrun = self.overrun or self.exceeded()
        self.usage.calls += 1
        self.usage.prompt_tokens += prompt_tokens
        self.usage.completion_tokens += completion_tokens
        self.usage.request_chars += request_chars
        self.usage.response_chars += response_chars

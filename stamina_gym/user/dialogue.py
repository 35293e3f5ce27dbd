"""One turn's conversation between the agent and the user, and its scores.

The env opens a ``Dialogue`` when a turn begins, hands it to the ``ask``, ``plan`` and
``summarize`` tools, tells it when the repository first differs from the turn's start
(``note_change``) and asks it for the scores at ``submit``. A question counts toward
coverage only while the code is untouched and no requirement summary has closed the
clarification phase; a question is relevant when it touches a key point that no earlier
question of the turn touched.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Mapping

from stamina_gym.config import ScoreConfig, UserConfig
from stamina_gym.errors import ToolError
from stamina_gym.task import Plan, Turn
from stamina_gym.user import Conversation, User
from stamina_gym.user.adherence import adherence
from stamina_gym.user.match import KeyPointMatcher
from stamina_gym.user.plan import judge_decisions, parse_plan, plan_text, planning_f1
from stamina_gym.user.scoring import turn_scores
from stamina_gym.user.text import has_phrase, tokens

OUT_OF_QUESTIONS = "I have answered enough questions for this request; please go ahead with what you know."


@dataclass(frozen=True)
class Question:
    question: str
    answer: str
    points: tuple[str, ...]
    """Key points the question touched (best first)."""
    new_points: tuple[str, ...]
    """Of those, the ones no earlier question touched."""
    early: bool
    """Asked before the first code change and before any summary."""

    @property
    def relevant(self) -> bool:
        return bool(self.new_points)


class Dialogue:
    def __init__(self, turn: Turn, request: str, user: User, config: UserConfig) -> None:
        self.turn = turn
        self.user = user
        self.config = config
        spec = turn.spec.spec
        self.conversation = Conversation(turn.id, request, spec, config.neutral_answer)
        self.matcher = KeyPointMatcher(spec.key_points, turn.spec.prompts, config.match_threshold) if spec else None
        self.questions: list[Question] = []
        self.plan: Plan | None = None
        self.plan_early = False
        self.summary: dict[str, str] | None = None
        self.changed = False

    @property
    def watching(self) -> bool:
        """True while a code change would still matter: on a turn with a hidden spec or key
        decisions, before the first change (the env checks the repository only then)."""
        return not self.changed and bool(self.conversation.spec or self.turn.spec.decisions)

    def note_change(self) -> None:
        self.changed = True

    @property
    def _early(self) -> bool:
        return not self.changed and self.summary is None

    # -- tools --------------------------------------------------------------------------

    def ask(self, question: Any) -> str:
        if not isinstance(question, str) or not question.strip():
            raise ToolError("ask: question must be a non-empty string")
        if len(question) > self.config.max_question_chars:
            raise ToolError(f"ask: the question has {len(question)} characters; ask one thing at a time "
                            f"(at most {self.config.max_question_chars})")  # fmt: skip
        if len(self.questions) >= self.config.max_questions:
            self.questions.append(Question(question, OUT_OF_QUESTIONS, (), (), self._early))
            return OUT_OF_QUESTIONS
        matches = self.matcher.match(question)[: self.config.max_points_per_question] if self.matcher else []
        seen = {p for q in self.questions for p in q.points}
        points = tuple(m.point for m in matches)
        by_id = {p.id: p for p in self.conversation.spec.key_points} if self.conversation.spec else {}
        answer = self.user.answer(question, [by_id[p] for p in points], self.conversation)
        self.questions.append(Question(question, answer, points, tuple(p for p in points if p not in seen), self._early))
        self.conversation.history.append((question, answer))
        return answer

    def submit_plan(self, steps: Any) -> str:
        plan = parse_plan(steps)
        self.plan, self.plan_early = plan, not self.changed
        reply = self.user.read_plan(plan_text(plan), self.conversation)
        return f"Plan recorded ({len(plan.steps)} steps). The user says: {reply}"

    def summarize(self, requirements: Any) -> str:
        if not isinstance(requirements, dict) or not requirements:
            raise ToolError('summarize: requirements must be a non-empty object, e.g. {"max attempts": "5"}')
        self.summary = {str(k): _as_text(v) for k, v in requirements.items()}
        return f"Requirement summary recorded ({len(self.summary)} entries); the clarification phase is closed."

    # -- scores -------------------------------------------------------------------------

    def requirements_score(self) -> float | None:
        """Share of key points that the summary states with their value words."""
        spec = self.conversation.spec
        if spec is None or self.summary is None or self.matcher is None:
            return None
        entries = [f"{key}: {value}" for key, value in self.summary.items()]
        stated = 0
        for point in spec.key_points:
            for entry in entries:
                entry_words = tokens(entry)
                touches = any(m.point == point.id for m in self.matcher.match(entry))
                if touches and all(has_phrase(entry_words, v) for v in point.value):
                    stated += 1
                    break
        return stated / len(spec.key_points)

    def score(self, grade: Mapping[str, Any], sources: Mapping[str, str], weights: ScoreConfig) -> tuple[dict, dict]:
        """``(scores, record)``: ``info["scores"]`` and ``info["dialogue"]`` of the submit."""
        spec, decisions = self.conversation.spec, self.turn.spec.decisions
        coverage = relevance = planning = followed_share = None
        covered: set[str] = set()
        if spec is not None:
            covered = {p for q in self.questions if q.early for p in q.points}
            coverage = len(covered) / len(spec.key_points)
            relevance = sum(q.relevant for q in self.questions) / len(self.questions) if self.questions else 0.0
        verdicts, followed = [], {}
        if decisions:
            verdicts = judge_decisions(decisions, self.plan)
            planning = planning_f1(verdicts)
            followed_share, followed = adherence(decisions, verdicts, sources)
        scores = turn_scores(coverage=coverage, relevance=relevance, planning=planning, grade=grade,
                             adherence=followed_share, weights=weights)  # fmt: skip
        record = {
            "questions": [{**asdict(q), "points": list(q.points), "new_points": list(q.new_points), "relevant": q.relevant}
                          for q in self.questions],  # fmt: skip
            "questions_asked": len(self.questions),
            "key_points": len(spec.key_points) if spec else 0,
            "covered": sorted(covered),
            "missed": sorted({p.id for p in spec.key_points} - covered) if spec else [],
            "coverage": coverage,
            "relevance": relevance,
            "plan": self.plan.model_dump() if self.plan else None,
            "plan_before_code": self.plan_early if self.plan and (spec or decisions) else None,
            "decisions": {v.decision: {"verdict": v.verdict, "named": list(v.named)} for v in verdicts},
            "adherence": followed_share,
            "followed": followed,
            "summary": self.summary,
            "requirements_score": self.requirements_score(),
        }
        return scores, record


def _as_text(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(map(_as_text, value))
    return str(value)

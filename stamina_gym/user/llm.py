"""An LLM plays the user over any OpenAI-compatible chat endpoint (the ``openai`` client).

The model is told the request and the hidden spec in a system prompt
(``prompts/user_system.txt``); the agent's questions are its ``user`` messages and its
replies the answers. Every reply is stored on disk keyed by a hash of (model, the whole
conversation, seed, temperature, max_tokens): the same conversation with the same seed
replays the stored reply without calling the endpoint, so a rerun is identical even with
the endpoint down. Entries are JSON files, readable and shareable with a run's records.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from importlib import resources
from pathlib import Path
from typing import Any, Sequence

import jinja2

from stamina_gym.config import UserConfig
from stamina_gym.errors import ConfigError
from stamina_gym.task import KeyPoint
from stamina_gym.user import Conversation, UserUnavailable
from stamina_gym.user.rule import RuleUser

ENV_BASE_URL = "STAMINA_GYM_USER_BASE_URL"
ENV_MODEL = "STAMINA_GYM_USER_MODEL"
ENV_API_KEY = "STAMINA_GYM_USER_API_KEY"
ENV_CACHE = "STAMINA_GYM_USER_CACHE"


@functools.lru_cache(maxsize=1)
def _system_template() -> jinja2.Template:
    text = resources.files("stamina_gym").joinpath("prompts/user_system.txt").read_text(encoding="utf-8")
    return jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False).from_string(text)


def system_prompt(conversation: Conversation) -> str:
    points = conversation.spec.key_points if conversation.spec else ()
    return _system_template().render(request=conversation.request, points=points, neutral_answer=conversation.neutral_answer)


class ReplyCache:
    """One JSON file per reply under ``root/<first two hex digits>/<key>.json``."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @staticmethod
    def key(request: dict[str, Any]) -> str:
        return hashlib.sha256(json.dumps(request, sort_keys=True, ensure_ascii=True).encode()).hexdigest()

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> str | None:
        try:
            return json.loads(self._path(key).read_text(encoding="utf-8"))["reply"]
        except (OSError, ValueError, KeyError):
            return None

    def put(self, key: str, request: dict[str, Any], reply: str) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"request": request, "reply": reply}, indent=1) + "\n", encoding="utf-8")
        os.replace(tmp, path)


class LLMUser:
    name = "llm"

    def __init__(self, config: UserConfig) -> None:
        llm = config.llm
        self.model = llm.model or os.environ.get(ENV_MODEL)
        if not self.model:
            raise ConfigError(f"user.kind 'llm' needs a model: set user.llm.model in the env spec or {ENV_MODEL}")
        self.base_url = llm.base_url or os.environ.get(ENV_BASE_URL)
        key = llm.api_key.get_secret_value() if llm.api_key else None
        self.api_key = key or os.environ.get(ENV_API_KEY) or os.environ.get("OPENAI_API_KEY") or "none"
        cache = llm.cache_dir or os.environ.get(ENV_CACHE) or "~/.cache/stamina-gym/user"
        self.cache = ReplyCache(Path(cache).expanduser())
        self.settings = llm
        self._rules = RuleUser(config)
        self._client: Any = None
        self.calls = 0
        """Replies fetched from the endpoint (not from the cache) by this user."""

    def _request(self, question: str, conversation: Conversation) -> dict[str, Any]:
        messages = [{"role": "system", "content": system_prompt(conversation)}]
        for asked, answered in conversation.history:
            messages += [{"role": "user", "content": asked}, {"role": "assistant", "content": answered}]
        messages.append({"role": "user", "content": question})
        s = self.settings
        return {"model": self.model, "messages": messages, "seed": s.seed, "temperature": s.temperature, "max_tokens": s.max_tokens}

    def _complete(self, request: dict[str, Any]) -> str:
        try:
            import openai
        except ImportError as exc:
            raise ConfigError("user.kind 'llm' needs the openai package: pip install 'stamina-gym[llm]'") from exc
        if self._client is None:
            self._client = openai.OpenAI(base_url=self.base_url, api_key=self.api_key, timeout=self.settings.timeout_s, max_retries=1)
        try:
            response = self._client.chat.completions.create(**request)
        except openai.OpenAIError as exc:
            raise UserUnavailable(f"the LLM user at {self.base_url or 'the default endpoint'} did not answer and no reply is cached: {exc}") from exc
        content = response.choices[0].message.content if response.choices else None
        if not content or not content.strip():
            raise UserUnavailable(f"the LLM user ({self.model}) sent an empty reply")
        self.calls += 1
        return content.strip()

    def answer(self, question: str, matched: Sequence[KeyPoint], conversation: Conversation) -> str:
        request = self._request(question, conversation)
        key = self.cache.key(request)
        reply = self.cache.get(key)
        if reply is None:
            reply = self._complete(request)
            self.cache.put(key, request, reply)
        return reply

    def read_plan(self, plan_text: str, conversation: Conversation) -> str:
        return self._rules.read_plan(plan_text, conversation)

    def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            client.close()

"""Token ids and an assistant loss mask for an episode's conversation, written by a
Hugging Face tokenizer the trainer names (``collect --tokenizer PATH``): what an RL
trainer needs when the agent did not record the tokens it sampled.

The conversation (``episodes.parquet``'s ``messages``, with the tools offered) is rendered
once by the tokenizer's chat template and tokenised with offsets. The text of each
assistant message is where the template puts it: the rendering of the messages up to it
(with the generation prompt) is a prefix of the rendering with it, and that of the whole
conversation. A template that renders a message otherwise (one that rewrites earlier
turns, say) cannot say where a reply is, and is refused, naming the message. A token
counts for the loss (mask 1) when its characters overlap an assistant message's text.
The record is marked ``tokens_source: "retokenised"``: these are the tokens this
tokenizer gives the text, not necessarily the ones the policy sampled.

Cost: two template renders of a prefix per assistant message, so a long episode's cost
grows with its length times its number of replies; it runs after the collection, off the
workers.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

#: The keys a chat template is given of each message (the records' place fields stay out).
MESSAGE_KEYS = ("role", "content", "tool_calls", "tool_call_id")


def load_tokenizer(path: str) -> Any:
    """A fast Hugging Face tokenizer with a chat template, from a local folder."""
    try:
        from transformers import AutoTokenizer
    except ImportError:
        raise ImportError("retokenising needs transformers: pip install transformers") from None
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError(f"the tokenizer at {path} is not a fast tokenizer: the loss mask needs its character offsets")
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError(f"the tokenizer at {path} has no chat template (tokenizer_config.json's chat_template)")
    return tokenizer


def retokenise(messages: Sequence[dict[str, Any]], tokenizer: Any, tools: Sequence[dict] | None = None) -> dict[str, Any]:
    """``token_ids``, ``loss_mask`` (1 on assistant tokens) and ``tokens_source`` of one
    episode's conversation (see the module docstring)."""
    plain = [_plain(message) for message in messages]

    def render(upto: int, prompt: bool = False) -> str:
        return tokenizer.apply_chat_template(plain[:upto], tools=list(tools) if tools else None, tokenize=False,
                                             add_generation_prompt=prompt)  # fmt: skip

    text = render(len(plain))
    spans = []
    for index, message in enumerate(plain):
        if message["role"] != "assistant":
            continue
        before, after = render(index, prompt=True), render(index + 1)
        if not (after.startswith(before) and text.startswith(after)):
            raise ValueError(f"the chat template does not render message {index} (an assistant reply) as an "
                             "extension of the ones before it: no loss mask can say where the reply is")  # fmt: skip
        spans.append((len(before), len(after)))
    encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    mask, at = [], 0  # spans and offsets both run forwards: one sweep
    for start, end in encoded["offset_mapping"]:
        while at < len(spans) and spans[at][1] <= start:
            at += 1
        mask.append(int(at < len(spans) and start < spans[at][1] and end > spans[at][0]))
    return {"token_ids": list(encoded["input_ids"]), "loss_mask": mask, "tokens_source": "retokenised"}


def _plain(message: dict[str, Any]) -> dict[str, Any]:
    """A message as chat templates take it: the message keys only, a tool call's arguments
    as an object where they parse (templates write them out themselves)."""
    plain = {key: message[key] for key in MESSAGE_KEYS if message.get(key) is not None}
    calls = []
    for call in plain.get("tool_calls") or []:
        function = dict(call.get("function") or {})
        try:
            function["arguments"] = json.loads(function.get("arguments") or "{}")
        except (TypeError, json.JSONDecodeError):
            pass
        calls.append({**call, "function": function})
    if calls:
        plain["tool_calls"] = calls
    plain.setdefault("content", "")
    return plain

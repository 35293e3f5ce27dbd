"""Actions as chat models write them: the ``tolerant`` action format (``action_format``).

A model asked for one JSON tool call often wraps it: prose before and after, a fenced
````` ```json ````` block, a ``<think>...</think>`` preamble, or the ``<tool_call>...</tool_call>``
tags of the Hermes and Qwen chat templates (holding ``{"name": ..., "arguments": ...}``).
``extract_action`` finds the call in such text:

1. thinking is dropped: every ``<think>...</think>`` block, and everything before a
   ``</think>`` whose opening tag the template already put in the prompt;
2. the first ``<tool_call>`` block wins, if any;
3. else the last fenced code block that holds a JSON object;
4. else the last JSON object in the text.

An object is an action when it has ``tool`` (``{"tool": "read_file", "path": ...}``) or is
a function call, ``{"name": ..., "arguments": {...}}`` (arguments as an object or as the
JSON text of one, as the OpenAI wire format has them). What is not found is an error that
lists the accepted forms.
"""

from __future__ import annotations

import json
import re
from typing import Any

FORMATS = ("json", "tolerant")

_FENCE_INFO = re.compile(r"[A-Za-z0-9_-]*[ \t]*\n")
_DECODER = json.JSONDecoder()
#: Starts of objects that fail to decode, at most, before the text is given up on.
_MAX_MISSES = 2000

EXAMPLES = {
    "json": '{"tool": "read_file", "path": "README.md"}',
    "tolerant": 'a JSON object such as {"tool": "read_file", "path": "README.md"}, alone, in prose, in a ```json '
                'block or in <tool_call>{"name": "read_file", "arguments": {"path": "README.md"}}</tool_call> tags '
                '(<think> blocks are skipped)',
}  # fmt: skip


class NoAction(ValueError):
    """The text holds no tool call in any accepted form."""


def extract_action(text: str) -> dict[str, Any]:
    """The tool call ``text`` holds, as an action dict (``{"tool": NAME, ...}``)."""
    if "</think>" in text:
        text = _without_thinking(text)
    start = text.find("<tool_call>")
    if start >= 0:
        start += len("<tool_call>")
        end = text.find("</tool_call>", start)
        found = _last_object(text[start : end if end >= 0 else len(text)])
        if found is None:
            raise NoAction("the <tool_call> block holds no JSON object")
        return _as_action(found)
    for block in reversed(_fenced_blocks(text)):
        found = _last_object(block)
        if found is not None:
            return _as_action(found)
    found = _last_object(text)
    if found is None:
        raise NoAction("no JSON object found in the text")
    return _as_action(found)


# The scanners below find tags with str.find, one pass each: a regex such as
# ``<think>.*?</think>`` retries from every opening tag, quadratic on text of many of them.


def _without_thinking(text: str) -> str:
    """``text`` without its ``<think>...</think>`` blocks, and without everything before a
    last ``</think>`` whose opening tag the template already put in the prompt."""
    kept, position = [], 0
    while True:
        start = text.find("<think>", position)
        end = text.find("</think>", start) if start >= 0 else -1
        if end < 0:
            break
        kept.append(text[position:start])
        position = end + len("</think>")
    rest = "".join(kept) + text[position:]
    return rest.rsplit("</think>", 1)[1] if "</think>" in rest else rest


def _fenced_blocks(text: str) -> list[str]:
    """The contents of the fenced code blocks of ``text`` (an info string such as
    ``json`` after the opening fence is left out)."""
    blocks, position = [], 0
    while True:
        start = text.find("```", position)
        if start < 0:
            return blocks
        info = _FENCE_INFO.match(text, start + 3)
        if info is None:  # not an opening fence (no line break after it): look further on
            position = start + 3
            continue
        end = text.find("```", info.end())
        if end < 0:
            return blocks
        blocks.append(text[info.end() : end])
        position = end + 3


def _last_object(text: str) -> dict[str, Any] | None:
    """The last JSON object in ``text`` that is not inside another one. The decoder's work
    is bounded (a few times the text's length, and ``_MAX_MISSES`` starts that fail: each
    failure costs a pass over the text before it, where the decoder counts lines): text
    built so that every ``{`` starts an object that fails would otherwise cost quadratic
    time."""
    found, position, budget, misses = None, 0, 4 * len(text) + 100_000, 0
    while True:
        start = text.find("{", position)
        if start < 0:
            return found
        try:
            value, end = _DECODER.raw_decode(text, start)
        except RecursionError:
            raise NoAction("the text nests too deeply to be read as JSON") from None
        except json.JSONDecodeError as exc:
            budget -= exc.pos - start + 1
            misses += 1
            if budget < 0 or misses > _MAX_MISSES:
                raise NoAction("the text is too tangled to find a JSON object in") from None
            position = start + 1
            continue
        if isinstance(value, dict):
            found = value
        position = end


def _as_action(found: dict[str, Any]) -> dict[str, Any]:
    if "tool" in found:
        return found
    if isinstance(found.get("name"), str) and "arguments" in found:
        arguments = found["arguments"]
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments or "{}")
            except RecursionError:
                raise NoAction("the call's arguments nest too deeply to be read as JSON") from None
            except json.JSONDecodeError as exc:
                raise NoAction(f"the call's arguments are not valid JSON ({exc.msg})") from None
        if not isinstance(arguments, dict):
            raise NoAction("the call's arguments are not a JSON object")
        return {**arguments, "tool": found["name"]}
    raise NoAction('the JSON object has no "tool" (nor "name" and "arguments")')

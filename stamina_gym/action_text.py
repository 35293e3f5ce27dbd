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

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)
_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n(.*?)```", re.DOTALL)
_DECODER = json.JSONDecoder()

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
        text = _THINK.sub("", text)
        if "</think>" in text:  # the opening tag was in the prompt
            text = text.rsplit("</think>", 1)[1]
    tagged = _TOOL_CALL.search(text)
    if tagged:
        found = _last_object(tagged.group(1))
        if found is None:
            raise NoAction("the <tool_call> block holds no JSON object")
        return _as_action(found)
    for block in reversed(_FENCE.findall(text)):
        found = _last_object(block)
        if found is not None:
            return _as_action(found)
    found = _last_object(text)
    if found is None:
        raise NoAction("no JSON object found in the text")
    return _as_action(found)


def _last_object(text: str) -> dict[str, Any] | None:
    """The last JSON object in ``text`` that is not inside another one. The decoder's work
    is bounded (a few times the text's length): text built so that every ``{`` starts a
    long object that fails at its end would otherwise cost quadratic time."""
    found, position, budget = None, 0, 4 * len(text) + 100_000
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
            if budget < 0:
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

"""The one record writer: JSONL lines flushed and fsynced as they happen, JSON files
written atomically and durably, secrets redacted first. ``stamina-gym run`` (``harness``),
``collect`` (its Parquet export reads records built the same way) and ``eval`` write
through it.

Layout of an evaluation folder::

    eval.json                      config, frozen rules and their hash (written first)
    events.jsonl                   start, resume, rerun and finish events
    runs/<agent>/run-<k>/attempt-<a>/
        run.json                   seed, versions, agent level/version/config digest
        steps.jsonl                one line per step (tool call, exit status, duration, ...)
        turns.jsonl                one line per finished turn (grade, patch, peaks, ...)
        result.json                written last: the attempt is finished (valid or not)
    summary.json, summary.txt, report.html
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Iterable, Mapping

#: Names of environment variables and config keys whose values are secrets.
#: A name is secret when it ends in one of these words: OPENAI_API_KEY, HF_TOKEN, api_key.
SECRET_NAME = re.compile(r"(?:^|[_\-.])(?:key|token|secret|password|passwd|credentials?)$", re.I)
REDACTED = "[REDACTED]"
_MIN_SECRET_LEN = 8


class Redactor:
    """Replaces secret values (from the environment and from config) wherever they occur."""

    def __init__(self, secrets: Iterable[str] = (), environ: Mapping[str, str] | None = None) -> None:
        environ = os.environ if environ is None else environ
        found = {v for k, v in environ.items() if SECRET_NAME.search(k)}
        found |= set(secrets)
        self._secrets = sorted((s for s in found if s and len(s) >= _MIN_SECRET_LEN), key=len, reverse=True)

    @classmethod
    def for_config(cls, config: Any, environ: Mapping[str, str] | None = None) -> "Redactor":
        return cls(_secret_values(config), environ)

    def __call__(self, data: Any) -> Any:
        if isinstance(data, str):
            for secret in self._secrets:
                if secret in data:
                    data = data.replace(secret, REDACTED)
            return data
        if isinstance(data, Mapping):
            return {k: (REDACTED if _is_secret_key(k, v) else self(v)) for k, v in data.items()}
        if isinstance(data, (list, tuple)):
            return [self(v) for v in data]
        return data


#: A key that can name a setting: a config key or an environment variable, not a test id
#: (``tests/test_login.py::test_wrong_password``) or a path that merely ends like one.
_SETTING_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")


def _is_secret_key(key: Any, value: Any) -> bool:
    return (isinstance(key, str) and isinstance(value, str) and bool(value) and _SETTING_NAME.fullmatch(key) is not None
            and SECRET_NAME.search(key) is not None)  # fmt: skip


def _secret_values(data: Any) -> list[str]:
    if isinstance(data, Mapping):
        out = []
        for key, value in data.items():
            out += [value] if _is_secret_key(key, value) else _secret_values(value)
        return out
    if isinstance(data, (list, tuple)):
        return [s for item in data for s in _secret_values(item)]
    return []


class JsonLines:
    """An append-only JSONL file; every line is flushed and fsynced before ``append`` returns."""

    def __init__(self, path: Path, redact: Redactor) -> None:
        self.path = path
        self._redact = redact
        self._handle = open(path, "a", encoding="utf-8")

    def append(self, record: dict[str, Any]) -> None:
        self._handle.write(json.dumps(self._redact(record), default=str) + "\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def close(self) -> None:
        self._handle.close()


def read_lines(path: Path, *, repair: bool = False) -> list[dict[str, Any]]:
    """The complete lines of a JSONL file. A last line cut by a crash is dropped (and cut
    from the file when ``repair``); a broken line elsewhere is an error naming the file."""
    if not path.exists():
        return []
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    tail = lines.pop()  # after the last newline: empty, or a line the crash cut short
    records = []
    for number, line in enumerate(lines, 1):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{number}: not a JSON record ({exc.msg})") from None
    if tail and repair:
        with open(path, "r+b") as handle:
            handle.truncate(len(raw) - len(tail))
            os.fsync(handle.fileno())
    return records


def rewrite_lines(path: Path, records: list[dict[str, Any]]) -> None:
    """Replace a JSONL file atomically (already redacted records are written as they are)."""
    tmp = path.with_suffix(".rewrite")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(r, default=str) + "\n" for r in records)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def write_json(path: Path, data: Any, redact: Redactor | None = None) -> None:
    """Write a JSON file atomically and durably."""
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(redact(data) if redact else data, indent=2, default=str) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))

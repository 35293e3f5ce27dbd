"""Name -> dotted path registries with lazy import and "did you mean" errors."""

from __future__ import annotations

import difflib
import importlib
from typing import Any, Iterator

from stamina_gym.errors import ConfigError


class Registry:
    """Maps names to ``"package.module:Attribute"`` strings; imports on first lookup."""

    def __init__(self, kind: str, entries: dict[str, str]) -> None:
        self.kind = kind
        self._entries = dict(entries)

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._entries))

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def register(self, name: str, target: str) -> None:
        self._entries[name] = target

    def load(self, name: str) -> Any:
        try:
            target = self._entries[name]
        except KeyError:
            raise ConfigError(unknown_name(self.kind, name, self._entries)) from None
        module_name, _, attr = target.partition(":")
        return getattr(importlib.import_module(module_name), attr)


def unknown_name(kind: str, name: str, valid: Any) -> str:
    """``unknown agent 'oracel'; did you mean 'oracle'? valid: command, null, oracle``."""
    names = sorted(valid)
    close = difflib.get_close_matches(str(name), names, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown {kind} {name!r}{hint} valid: {', '.join(names)}"

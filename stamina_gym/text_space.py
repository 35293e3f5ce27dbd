"""The Text space of the env's observations and actions: any Unicode text, as it is.

Gymnasium's ``spaces.Text`` holds only the characters of its charset, so a file reading
``café`` or a command printing ``→`` would have to be escaped before the model sees it.
``UnicodeText`` holds any string of ``min_length`` to ``max_length`` code points that UTF-8
can encode; its charset (``string.printable``) is only what ``sample()`` draws from. The env
never escapes text, but for lone surrogates (a file name that is not UTF-8, read with
``surrogateescape``), which UTF-8 cannot carry: each becomes the six characters
``\\udcXX``.

Vector envs: Gymnasium's shared memory stores a Text as indices into its charset and
decodes it into strings once, when the ``AsyncVectorEnv`` (whose default is shared
memory) is built, so every observation would read back as that empty buffer. This module
registers ``UnicodeText``'s own shared memory with Gymnasium: per env, a length and the
code points, written with one UTF-32 copy and read when indexed (``TextBatch``), so
``gym.make_vec(ID, n, vectorization_mode="async")`` returns the text as it is.
"""

from __future__ import annotations

import multiprocessing
import re
import string
from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import shared_memory

_SURROGATE = re.compile("[\ud800-\udfff]")


def as_text(text: str) -> str:
    """``text`` with each lone surrogate written as ``\\uXXXX``: every other character stays."""
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) if _SURROGATE.search(text) else text


class UnicodeText(spaces.Text):
    """Any UTF-8-encodable string of ``min_length`` to ``max_length`` characters; ``sample()``
    draws from ``charset`` (printable ASCII)."""

    def __init__(self, max_length: int, *, min_length: int = 0, charset: str = string.printable, seed: Any = None):
        super().__init__(max_length, min_length=min_length, charset=charset, seed=seed)

    def contains(self, x: Any) -> bool:
        if not isinstance(x, str) or not self.min_length <= len(x) <= self.max_length:
            return False
        return _SURROGATE.search(x) is None

    def __repr__(self) -> str:
        return f"UnicodeText({self.min_length}, {self.max_length}, any character; samples {self.characters!r})"


@shared_memory.create_shared_memory.register(UnicodeText)
def _create(space: UnicodeText, n: int = 1, ctx: Any = multiprocessing) -> Any:
    return ctx.Array("I", n * (space.max_length + 1), lock=True)


def _slots(space: UnicodeText, memory: Any) -> np.ndarray:
    return np.frombuffer(memory.get_obj(), dtype=np.uint32).reshape(-1, space.max_length + 1)


@shared_memory.write_to_shared_memory.register(UnicodeText)
def _write(space: UnicodeText, index: int, value: str, memory: Any) -> None:
    codes = np.frombuffer(value.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    if len(codes) > space.max_length:
        raise ValueError(f"a text of {len(codes)} characters does not fit {space}")
    row = _slots(space, memory)[index]
    row[0] = len(codes)
    row[1 : 1 + len(codes)] = codes


class TextBatch(Sequence[str]):
    """The texts of ``n`` envs in shared memory, read when indexed: Gymnasium's
    ``AsyncVectorEnv`` reads its observation buffer once, when it is built, and hands out
    ``deepcopy`` of what it read (or the object itself with ``copy=False``), as it does
    with numpy views. A copy is a plain tuple of strings, as ``SyncVectorEnv`` returns."""

    def __init__(self, space: UnicodeText, memory: Any, n: int) -> None:
        self._rows = _slots(space, memory)[:n]

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        row = self._rows[index]
        return row[1 : 1 + int(row[0])].tobytes().decode("utf-32-le", "surrogatepass")

    def __deepcopy__(self, memo: dict) -> tuple[str, ...]:
        return tuple(self)

    def __eq__(self, other: object) -> bool:
        return tuple(self) == (tuple(other) if isinstance(other, (tuple, list, TextBatch)) else other)

    def __repr__(self) -> str:
        return repr(tuple(self))


@shared_memory.read_from_shared_memory.register(UnicodeText)
def _read(space: UnicodeText, memory: Any, n: int = 1) -> TextBatch:
    return TextBatch(space, memory, n)

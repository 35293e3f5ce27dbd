"""Words for lexical matching: lower-cased, stop words dropped, Snowball-stemmed.

Snowball's English stemmer (the ``snowballstemmer`` package) folds ``locked``, ``locking``
and ``locks`` to one stem, so a keyword written once matches the forms a question uses.
"""

from __future__ import annotations

import functools
import re

import snowballstemmer

_WORD = re.compile(r"[a-z0-9]+")
#: Function words that say nothing about which requirement a question is about.
STOP_WORDS = frozenset(
    """
    a about above after again all also am an and any are as at be been before being below
    between both but by can could did do does doing down during each either else few for
    from further had has have having he her here hers him his how i if in into is it its
    itself just let me more most must my no nor not now of off on once only or other our
    ours out over own please same shall she should so some such than that the their them
    then there these they this those through to too under until up us very want was we
    were what when where which while who whom why will with would you your yours
    """.split()
)


@functools.lru_cache(maxsize=1)
def _stemmer():
    return snowballstemmer.stemmer("english")


@functools.lru_cache(maxsize=4096)
def words(text: str) -> tuple[str, ...]:
    """The stems of ``text``'s content words, in order (repeats kept): what BM25 weighs."""
    return tuple(t for t in tokens(text) if t not in _STOP_STEMS)


@functools.lru_cache(maxsize=4096)
def tokens(text: str) -> tuple[str, ...]:
    """The stems of every word of ``text``, stop words included, in order."""
    return tuple(_stemmer().stemWords(_WORD.findall(text.lower())))


def has_phrase(text_tokens: tuple[str, ...], phrase: str) -> bool:
    """True when ``phrase`` occurs in ``text_tokens`` (from ``tokens``) word for word,
    each word stemmed: ``"locked out"`` matches "...gets locked out..." and "...lock out
    ...", not "out of ... locked". A phrase of stop words only never matches."""
    wanted = tokens(phrase)
    if not wanted or all(w in _STOP_STEMS for w in wanted):
        return False
    width = len(wanted)
    return any(text_tokens[i : i + width] == wanted for i in range(len(text_tokens) - width + 1))


_STOP_STEMS = frozenset(_stemmer().stemWords(sorted(STOP_WORDS))) | STOP_WORDS

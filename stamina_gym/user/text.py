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
    """The stems of ``text``'s content words, in order (repeats kept)."""
    tokens = [t for t in _WORD.findall(text.lower()) if t not in STOP_WORDS]
    return tuple(_stemmer().stemWords(tokens))


def has_phrase(text_words: tuple[str, ...] | frozenset[str], phrase: str) -> bool:
    """True when every content word of ``phrase`` occurs in ``text_words`` (any order).

    A phrase of stop words only (``"it"``) never matches: it names nothing."""
    wanted = words(phrase)
    present = set(text_words)
    return bool(wanted) and all(w in present for w in wanted)

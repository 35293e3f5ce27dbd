"""Which key points of a hidden spec a question touches. Lexical, deterministic, fast.

A question touches a key point when either

1. it holds every content word of one of the point's ``keywords`` (stemmed, any order), or
2. its BM25 similarity to one of the point's example ``phrasings`` reaches ``threshold``.

The BM25 part uses ``rank_bm25.BM25Okapi`` over a corpus of every phrasing of the turn
plus the turn's request paraphrases (so words that every point shares, such as the
feature's name, weigh little). Raw BM25 scores have no fixed scale, so each is divided by
the phrasing's score against itself (distinct words on both sides): the result is the
IDF-weighted share of the phrasing's words that the question contains, 1.0 for a question
that holds them all; it counts only when the two share at least two distinct content
words (``MIN_SHARED``). The default threshold 0.5 therefore reads "the question says at least
half of what one example phrasing says, by weight"; ``UserConfig.match_threshold`` sets it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from rank_bm25 import BM25Okapi

from stamina_gym.task import KeyPoint
from stamina_gym.user.text import has_phrase, tokens, words

DEFAULT_THRESHOLD = 0.5
#: A similarity counts only when the question shares at least this many distinct content
#: words with the phrasing (fewer when the phrasing has fewer): one common word such as
#: "use" is not a topic.
MIN_SHARED = 2
#: BM25Okapi gives words that occur in more than half of a tiny corpus a floor of
#: ``epsilon x mean idf``, which can be <= 0 when every word is common; this keeps each
#: word's weight positive so a shared word still counts a little.
_IDF_FLOOR = 0.05


@dataclass(frozen=True)
class Match:
    point: str
    """The key point's id."""
    score: float
    """The normalised BM25 similarity (0..1) of the question to the point's phrasings."""
    by: str
    """``keyword`` or ``similarity``."""


class KeyPointMatcher:
    """Matches questions to the key points of one turn's hidden spec."""

    def __init__(self, points: Sequence[KeyPoint], context: Sequence[str] = (), threshold: float = DEFAULT_THRESHOLD):
        self.points = tuple(points)
        self.threshold = threshold
        self._owners: list[int] = []
        docs: list[list[str]] = []
        for index, point in enumerate(self.points):
            for phrasing in point.phrasings:
                docs.append(list(words(phrasing)))
                self._owners.append(index)
        self._n_phrasings = len(docs)
        self._vocab = [frozenset(doc) for doc in docs]
        docs += [list(words(text)) for text in context]
        docs = [doc or ["_"] for doc in docs]  # BM25Okapi cannot average over empty documents
        self._bm25 = BM25Okapi(docs)
        for word, idf in self._bm25.idf.items():
            self._bm25.idf[word] = max(idf, _IDF_FLOOR)
        self._self_scores = [self._score(docs[i], [i])[0] for i in range(self._n_phrasings)]

    def _score(self, query: Sequence[str], doc_ids: list[int]) -> list[float]:
        return self._bm25.get_batch_scores(sorted(set(query)), doc_ids)

    def similarity(self, question: str) -> list[float]:
        """Per key point, the best normalised BM25 similarity of ``question`` to its phrasings."""
        best = [0.0] * len(self.points)
        query = words(question)
        if not query or not self._n_phrasings:
            return best
        raw = self._score(query, list(range(self._n_phrasings)))
        asked = frozenset(query)
        for i, score in enumerate(raw):
            if self._self_scores[i] > 0 and len(asked & self._vocab[i]) >= min(MIN_SHARED, len(self._vocab[i])):
                owner = self._owners[i]
                best[owner] = max(best[owner], min(score / self._self_scores[i], 1.0))
        return best

    def match(self, question: str) -> list[Match]:
        """Key points the question touches, best first: keyword hits before similarity
        hits, each group by similarity (ties keep the spec's order)."""
        question_tokens = tokens(question)
        ranked = []
        for index, (point, similarity) in enumerate(zip(self.points, self.similarity(question))):
            keyword = any(has_phrase(question_tokens, k) for k in point.keywords)
            if keyword or similarity >= self.threshold:
                found = Match(point.id, round(similarity, 4), "keyword" if keyword else "similarity")
                ranked.append(((not keyword, -similarity, index), found))
        return [found for _, found in sorted(ranked, key=lambda pair: pair[0])]

"""Okapi BM25 over stemmed tokens, with numpy posting lists that grow as items arrive."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from langchain_tiered_memory.language.text import tokenize

__all__ = ["LexicalIndex"]


# ----------------------------------------------------------------------------- growable


class Grow:
    """A 1-D numpy array with amortized O(1) appends."""

    def __init__(self, dtype: type | np.dtype, capacity: int = 64) -> None:
        self._buf = np.zeros(capacity, dtype=dtype)
        self.n = 0

    def extend(self, values: Sequence[float] | np.ndarray) -> None:
        m = len(values)
        if self.n + m > len(self._buf):
            new = np.zeros(max(2 * len(self._buf), self.n + m), dtype=self._buf.dtype)
            new[: self.n] = self._buf[: self.n]
            self._buf = new
        self._buf[self.n : self.n + m] = values
        self.n += m

    @property
    def view(self) -> np.ndarray:
        return self._buf[: self.n]


# ----------------------------------------------------------------------------- lexical


@dataclass
class _Posting:
    ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    tfs: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float32))
    pending_ids: list[int] = field(default_factory=list)
    pending_tfs: list[int] = field(default_factory=list)
    # BM25 term weights of ``ids`` (without IDF), valid while the collection has
    # ``weights_for`` documents (they depend on the average length).
    weights: np.ndarray | None = None
    weights_for: int = -1

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        if self.pending_ids:
            self.ids = np.concatenate([self.ids, np.asarray(self.pending_ids, dtype=np.int32)])
            self.tfs = np.concatenate([self.tfs, np.asarray(self.pending_tfs, dtype=np.float32)])
            self.pending_ids.clear()
            self.pending_tfs.clear()
        return self.ids, self.tfs


class LexicalIndex:
    """Okapi BM25 over a growing list of documents (positions 0, 1, ...).

    Adding documents updates posting lists, document frequencies and lengths in place;
    scores always equal those of an index built from scratch on the same documents.

    Example:
        >>> lex = LexicalIndex()
        >>> lex.add(["Alice adopted a cat", "Bob likes dogs"])
        >>> [round(float(s), 3) for s in lex.scores(tokenize("cat"))]
        [0.693, 0.0]

    """

    def __init__(self, *, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self._lengths = Grow(np.float32)
        self._total_length = 0
        self._postings: dict[str, _Posting] = {}

    def __len__(self) -> int:
        return self._lengths.n

    def add(self, texts: Iterable[str]) -> None:
        """Append documents."""
        lengths: list[int] = []
        for text in texts:
            doc = self._lengths.n + len(lengths)
            tokens = tokenize(text)
            lengths.append(len(tokens))
            counts: dict[str, int] = {}
            for token in tokens:
                counts[token] = counts.get(token, 0) + 1
            for token, tf in counts.items():
                posting = self._postings.get(token)
                if posting is None:
                    posting = self._postings[token] = _Posting()
                posting.pending_ids.append(doc)
                posting.pending_tfs.append(tf)
        self._lengths.extend(lengths)
        self._total_length += sum(lengths)

    def idf(self, term: str) -> float:
        """Lucene's BM25 IDF, ``log(1 + (N - df + 0.5) / (df + 0.5))``."""
        posting = self._postings.get(term)
        df = 0 if posting is None else len(posting.ids) + len(posting.pending_ids)
        n = len(self)
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def query_score(self, terms: Sequence[str]) -> float:
        """The score of a document of average length holding each term once: the sum of
        the terms' IDF (terms in no document count with the highest IDF).

        Example:
            >>> lex = LexicalIndex()
            >>> lex.add(["Alice adopted a cat", "Bob likes dogs"])
            >>> round(lex.query_score(tokenize("cat")), 3)
            0.693
        """
        return sum(self.idf(term) for term in dict.fromkeys(terms))

    def scores(self, terms: Sequence[str]) -> np.ndarray:
        """BM25 score of every document for the query ``terms`` (repeats count once)."""
        n = len(self)
        out = np.zeros(n, dtype=np.float32)
        if n == 0:
            return out
        for term in dict.fromkeys(terms):
            posting = self._postings.get(term)
            if posting is None:
                continue
            if posting.weights_for != n or posting.pending_ids:
                ids, tfs = posting.arrays()
                avg = self._total_length / n if self._total_length else 1.0
                norm = self.k1 * (1.0 - self.b + self.b * self._lengths.view[ids] / avg)
                posting.weights = (tfs * (self.k1 + 1.0) / (tfs + norm)).astype(np.float32)
                posting.weights_for = n
            assert posting.weights is not None
            out[posting.ids] += self.idf(term) * posting.weights
        return out

"""Ranking of recalled summary items: hybrid lexical + dense retrieval with time awareness.

One :class:`HybridIndex` holds one user's items in search-ready form and is maintained
incrementally as items are added:

- **dense**: the items' unit embeddings in FAISS. Below ``RetrievalConfig.exact_limit`` items
  every item is scored exactly; above it an inverted-file index (``IndexIVFFlat``, trained
  on the user's own vectors and retrained as the user grows) proposes candidates, which are
  then rescored exactly. The query is *centered*: a fraction of the mean of the user's item
  vectors is subtracted from it, which removes what all of a user's items share (their
  names, their usual topics) and stops "hub" items that resemble everything from crowding
  out specific ones.
- **lexical**: Okapi BM25 over stemmed, stop-word-free tokens, with numpy posting lists
  that grow as items arrive (an incremental index scores exactly as a rebuilt one). It
  catches what small embedding models miss: names, rare words, numbers, titles.
- **time**: a query naming a date ("on 8 May, 2023", "in June", "in 2022", "last week",
  "3 days ago") favours items created inside that window, decaying outside it.
- **diversity** (off by default): the top ``k`` are picked by maximal marginal relevance
  among the best ``max(4k, 20)``, so ``k`` results are not ``k`` restatements of one fact;
  related memories (a second failed driving test) are not restatements, and write-time
  de-duplication already keeps restatements out.

The score of an item (``metadata["score"]``) is a weighted mean in [-1, 1]::

    score = (wd * cos(q', x) + wl * lexical + wt * time) / (wd + wl + wt)

- ``cos(q', x)``: cosine of the item and the centered query ``q' = q - c * m`` (``m``: the
  mean of the user's item vectors, ``c``: ``centering`` shrunk for users with few items);
- ``lexical``: the item's BM25 score divided by that of an item of average length holding
  every query term once (the sum of the terms' IDF), capped at 1: the share of what the
  query says, weighted by rarity, that the item says too. Dividing by the best score
  instead made any match the perfect one: a query whose only match is a common character
  ("有" in "他有什么宠物？") gave that item the full lexical weight over the right one;
  measured on the dev splits, recall@5 0.836 -> 0.845 on LoCoMo and 0.948 -> 0.951 on
  XQuAD Chinese with multilingual-e5, 0.972 -> 0.967 on XQuAD English;
- ``time``: how well the item's ``created_at`` falls in the dates the query names, in [0, 1];
- ``wl``/``wt``: ``lexical_weight``/``time_weight``, each counted only when the query has
  that signal (words found in the user's items; a date), so a perfect match scores 1;
- ``wd``: how much of the query the embedding model can read: 1 for a multilingual model,
  and for a model that declares its scripts (``dense_scripts``, e.g. ``{"latin"}`` for the
  English-only all-MiniLM-L6-v2) the share of the query's letters in those scripts. A
  model's vectors of a script it was not trained on are near noise (MiniLM on the Chinese
  XQuAD questions: dense recall@5 0.54, BM25 0.91, the two fused with ``wd`` = 1: 0.86),
  so a Chinese query to an English model ranks by BM25 and time alone, and maximal
  marginal relevance, whose redundancy is measured by the same vectors, is scaled by
  ``wd`` too. With no lexical or time signal the dense one ranks alone, whatever ``wd``.

Higher is better; scores rank items for one query. Each hit also carries ``similarity``,
the plain cosine of query and item embeddings (what a bare vector store would report).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import faiss
import numpy as np

from langchain_tiered_memory.language.text import script_share, tokenize
from langchain_tiered_memory.retrieval.config import RetrievalConfig
from langchain_tiered_memory.retrieval.lexical import Grow, LexicalIndex
from langchain_tiered_memory.retrieval.time import TimeWindow, parse_time_windows

__all__ = ["Hit", "HybridIndex"]

# Centering subtracts ``n / (n + this)`` of the configured share of the mean: the mean of a
# handful of items is mostly those items themselves, not what a user's items have in common.
CENTERING_PRIOR_ITEMS = 10


@dataclass
class Hit:
    """One ranked item: its position in the index, its score and the score's parts."""

    position: int
    score: float
    similarity: float
    dense: float  # the cosine of the item and the centered query: the score's dense part
    lexical: float
    time: float


# Recalled items this similar say the same thing: the newer is the current one. On the
# relative scale of HybridIndex.relative_similarity (0: two typical items of the user, 1: the
# same vector), which is what 0.85 (the cosine this used before 0.2) is for all-MiniLM-L6-v2
# on the LoCoMo users (typical cosine 0.34-0.38); as a raw cosine it made nearly every pair
# of multilingual-e5 items "near-duplicates" (typical cosine 0.83), ordering recall by date.
NEAR_DUPLICATE = 0.75


def newer_first_order(epochs: Sequence[float], similar: np.ndarray) -> list[int]:
    """The positions ``0..n-1`` (a ranking) with every near-duplicate pair
    (``similar[i, j]``) ordered newer first and the rest kept in order: each goes before
    the first older near-duplicate already placed.

    Example:
        >>> similar = np.array([[1, 0, 1], [0, 1, 0], [1, 0, 1]], dtype=bool)
        >>> newer_first_order([2020.0, 2026.0, 2025.0], similar)
        [2, 0, 1]
    """
    order: list[int] = []
    for i in range(len(epochs)):
        at = next(
            (p for p, j in enumerate(order) if epochs[i] > epochs[j] and similar[i, j]),
            len(order),
        )
        order.insert(at, i)
    return order


class HybridIndex:
    """One user's items: FAISS (exact, or IVF when large) + BM25 + timestamps.

    Thread-safe: adds and searches may run from several threads.

    Example:
        >>> import numpy as np
        >>> idx = HybridIndex(dim=2)
        >>> idx.add(["likes tea", "likes coffee"], np.eye(2, dtype="float32"), [0.0, 0.0])
        >>> [h.position for h in idx.search("coffee", np.array([0.6, 0.8], "float32"), 1)]
        [1]

    """

    def __init__(
        self,
        dim: int,
        config: RetrievalConfig | None = None,
        *,
        dense_scripts: frozenset[str] | None = None,
    ) -> None:
        self.dim = dim
        self.config = config or RetrievalConfig()
        self.dense_scripts = dense_scripts
        self.lexical = LexicalIndex(k1=self.config.bm25_k1, b=self.config.bm25_b)
        self._flat: faiss.IndexFlatIP | None = faiss.IndexFlatIP(dim)
        self._ivf: faiss.IndexIVFFlat | None = None
        self._ivf_trained_on = 0
        self._sum = np.zeros(dim, dtype=np.float64)
        self._epochs = Grow(np.float64)
        self._times_sorted = True
        self._lock = threading.RLock()

    def __len__(self) -> int:
        return self._epochs.n

    # ----- writes -----

    def add(self, texts: Sequence[str], vectors: np.ndarray, epochs: Sequence[float]) -> None:
        """Append items: texts, unit vectors (rows) and creation times (epoch seconds)."""
        if not len(texts):
            return
        vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(texts), self.dim)
        with self._lock:
            if self._ivf is not None:
                self._ivf.add(vectors)
            else:
                assert self._flat is not None
                self._flat.add(vectors)
            self._sum += vectors.sum(axis=0, dtype=np.float64)
            # an unknown time never matches a window
            new = np.nan_to_num(np.asarray(epochs, dtype=np.float64), nan=-1e15)
            last = self._epochs.view[-1] if len(self) else -np.inf
            if len(new) and (new[0] < last or np.any(np.diff(new) < 0)):
                self._times_sorted = False  # items usually arrive in time order
            self._epochs.extend(new)
            self.lexical.add(texts)
            self._maybe_train()

    def _maybe_train(self) -> None:
        n = len(self)
        if n <= self.config.exact_limit:
            return
        if self._ivf is not None and n < 4 * self._ivf_trained_on:
            return
        vectors = self.vectors()
        nlist = max(16, int(2 * math.sqrt(n)))
        quantizer = faiss.IndexFlatIP(self.dim)
        ivf = faiss.IndexIVFFlat(quantizer, self.dim, nlist, faiss.METRIC_INNER_PRODUCT)
        ivf.cp.niter = 10
        ivf.cp.max_points_per_centroid = 32
        ivf.cp.seed = 1234
        ivf.train(vectors)
        ivf.add(vectors)
        ivf.set_direct_map_type(faiss.DirectMap.Array)  # type: ignore[attr-defined]
        ivf.nprobe = max(8, nlist // 16)
        self._ivf, self._flat, self._ivf_trained_on = ivf, None, n

    # ----- reads -----

    def vectors(self, positions: np.ndarray | None = None) -> np.ndarray:
        """Stored vectors (all, or the rows at ``positions``), a copy."""
        with self._lock:
            if self._flat is not None:
                all_rows = faiss.rev_swig_ptr(self._flat.get_xb(), len(self) * self.dim)
                matrix = np.asarray(all_rows).reshape(len(self), self.dim)
                return (matrix if positions is None else matrix[positions]).copy()
            assert self._ivf is not None
            if positions is None:
                return self._ivf.reconstruct_n(0, len(self))
            return self._ivf.reconstruct_batch(np.asarray(positions, dtype=np.int64))

    def nearest(self, vectors: np.ndarray, k: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` stored items most similar to each row: (cosines, positions), both of
        shape ``(len(vectors), k)``, best first; -1 where there are fewer items.
        """
        with self._lock:
            index = self._flat if self._flat is not None else self._ivf
            if index is None or len(self) == 0 or len(vectors) == 0:
                empty = np.full((len(vectors), k), -1)
                return empty.astype(np.float32), empty.astype(np.int64)
            scores, ids = index.search(np.ascontiguousarray(vectors, dtype=np.float32), k)
            return scores, ids

    def search(
        self,
        query: str,
        vector: np.ndarray,
        k: int,
        *,
        now: datetime | None = None,
        exclude: np.ndarray | None = None,
        dates_from: str | None = None,
    ) -> list[Hit]:
        """The ``k`` best items for the query text and its unit embedding, best first.

        ``exclude`` (a boolean mask over positions) hides items, e.g. superseded ones. The
        time windows come from the dates ``dates_from`` names, else ``query``.
        """
        n = len(self)
        if n == 0 or k <= 0:
            return []
        cfg = self.config
        q = np.asarray(vector, dtype=np.float32).reshape(self.dim)
        terms = tokenize(query) if cfg.lexical_weight else []
        dated = query if dates_from is None else dates_from
        windows = parse_time_windows(dated, now) if cfg.time_weight else []
        with self._lock:
            qc = q
            shrink = cfg.centering * n / (n + CENTERING_PRIOR_ITEMS)
            if shrink:
                qc = (q - shrink * (self._sum / n)).astype(np.float32)
                norm = float(np.linalg.norm(qc))
                qc = qc / norm if norm > 0 else q
            words = self._word_scores(terms)
            lex_all, best_lex = (None, 0.0) if words is None else words
            epochs = self._epochs.view
            if self._flat is not None:  # exact: every item is a candidate
                positions = None
                matrix = np.asarray(faiss.rev_swig_ptr(self._flat.get_xb(), n * self.dim)).reshape(
                    n, self.dim
                )
                lex = None if lex_all is None else lex_all / best_lex
            else:  # large: candidates from each signal, then exact scores for them only
                positions = self._candidates(qc, lex_all, windows, k)
                matrix = self.vectors(positions)
                lex = None if lex_all is None else lex_all[positions] / best_lex
                epochs = epochs[positions]
            tmatch = np.max([w.match(epochs) for w in windows], axis=0) if windows else None
            dense = matrix @ qc
            readable = self.dense_weight(query)
            if lex is None and tmatch is None:
                readable = 1.0  # nothing else to rank by
            score = readable * dense.astype(np.float32, copy=True)
            total = readable
            if lex is not None:
                score += cfg.lexical_weight * lex
                total += cfg.lexical_weight
            if tmatch is not None:
                score += cfg.time_weight * tmatch
                total += cfg.time_weight
            score /= total
            if exclude is not None:
                score[exclude if positions is None else exclude[positions]] = -np.inf
            order = _top(score, max(4 * k, 20))
            order = order[np.isfinite(score[order])]
            chosen = self._diverse(order, score, matrix, k, cfg.diversity * readable)
            raw = matrix[chosen] @ q
            hits = []
            for j, i in enumerate(chosen):
                pos = int(i) if positions is None else int(positions[i])
                hits.append(
                    Hit(
                        position=pos,
                        score=float(score[i]),
                        similarity=float(raw[j]),
                        dense=float(dense[i]),
                        lexical=float(lex[i]) if lex is not None else 0.0,
                        time=float(tmatch[i]) if tmatch is not None else 0.0,
                    )
                )
            return hits

    def search_words(
        self, query: str, k: int, *, exclude: np.ndarray | None = None
    ) -> list[tuple[int, float]]:
        """The ``k`` items sharing most of the query's words (BM25 alone), best first, as
        ``(position, score)``, the score relative to a match of the whole query (the
        lexical part of :meth:`search`); an item sharing none, or hidden by ``exclude``, is
        left out. No embedding.
        """
        if k <= 0:
            return []
        terms = tokenize(query)
        with self._lock:
            words = self._word_scores(terms, exclude)
        if words is None:
            return []
        scores, whole = words
        return [(int(i), float(scores[i]) / whole) for i in _top(scores, k) if scores[i] > 0]

    def _word_scores(
        self, terms: Sequence[str], exclude: np.ndarray | None = None
    ) -> tuple[np.ndarray, float] | None:
        """Each item's BM25 score for ``terms`` (0 where ``exclude``), and the divisor that
        makes them relative to a match of the whole query (see the module docstring);
        ``None`` when no item shares a word.
        """
        if not terms or len(self) == 0:
            return None
        scores = self.lexical.scores(terms)
        if exclude is not None:
            scores[exclude] = 0.0
        best = float(scores.max())
        if best <= 0:
            return None
        return scores, max(best, self.lexical.query_score(terms))

    def typical_similarity(self) -> float:
        """The mean cosine of two different items of this index, in [0, 0.99].

        Models differ in it (all-MiniLM-L6-v2: 0.08-0.38 for one user's items here;
        multilingual-e5: 0.76-0.85), so "similar" is measured against it
        (:meth:`relative_similarity`), never as a fixed cosine. From the vectors' sum:
        ``|sum|^2 = n + sum of the off-diagonal cosines``; shrunk toward 0 for a user with
        few items (as the query centering is), whose items are no sample of anything.
        """
        n = len(self)
        if n < 2:
            return 0.0
        mean = self._mean_pair_cosine()
        return min(max(mean * n / (n + CENTERING_PRIOR_ITEMS), 0.0), 0.99)

    def _mean_pair_cosine(self) -> float:
        """The mean cosine of two different items, unshrunk (two items at least)."""
        n = len(self)
        return (float(self._sum @ self._sum) - n) / (n * (n - 1))

    def relative_similarity(self, cosines: np.ndarray) -> np.ndarray:
        """Cosines rescaled so that this index's typical pair is 0 and identity 1."""
        base = self.typical_similarity()
        return (np.asarray(cosines, dtype=np.float32) - base) / (1.0 - base)

    def duplicate_similarity(self, cosines: np.ndarray) -> np.ndarray:
        """:meth:`relative_similarity` for telling near-duplicates: from three items on, the
        typical pair is the one observed among these items when that is higher than the
        shrunk estimate. Shrunk toward 0 alone, the few items of a user on a model whose
        cosines are all high (multilingual-e5, eight Chinese notes of one user: 0.80-0.88)
        were all "near-duplicates", and putting near-duplicates newer first sorted the whole
        recall by date (``bench/recall_associative.py``: the best item ranked last).
        """
        base = self.typical_similarity()
        if len(self) >= 3:
            base = min(max(base, self._mean_pair_cosine()), 0.99)
        return (np.asarray(cosines, dtype=np.float32) - base) / (1.0 - base)

    def newer_first(self, hits: list[Hit], query: str) -> list[Hit]:
        """``hits`` (a ranking) with near-duplicates recalled together ordered newer first
        (:func:`newer_first_order`): of two items saying the same thing, the newer is the
        current one. Told by the vectors, so not for a query the model cannot read.
        """
        if len(hits) < 2 or not self.config.newer_first or self.dense_weight(query) < 0.5:
            return hits
        positions = np.array([h.position for h in hits], dtype=np.int64)
        with self._lock:
            vectors = self.vectors(positions)
            epochs = self._epochs.view[positions]
        similar = self.duplicate_similarity(vectors @ vectors.T) >= NEAR_DUPLICATE
        return [hits[i] for i in newer_first_order(list(epochs), similar)]

    def dense_weight(self, query: str) -> float:
        """``wd``: the share of the query the embedding model can read (see the module)."""
        if self.dense_scripts is None:
            return 1.0
        return script_share(query, self.dense_scripts)

    def _candidates(
        self, qc: np.ndarray, lex: np.ndarray | None, windows: list[TimeWindow], k: int
    ) -> np.ndarray:
        """IVF mode: the best ``candidates`` by dense score (approximate), by BM25, and the
        items inside a named date window (when few enough to single out).
        """
        assert self._ivf is not None
        c = max(self.config.candidates, 4 * k)
        _, ids = self._ivf.search(qc.reshape(1, -1), c)
        parts = [ids[0][ids[0] >= 0]]
        if lex is not None:
            parts.append(_top(lex, c)[: int(np.count_nonzero(lex))])
        epochs = self._epochs.view
        for w in windows:
            if w.start is not None and w.end is not None and self._times_sorted:
                lo = int(np.searchsorted(epochs, w.start - w.scale, side="left"))
                hi = int(np.searchsorted(epochs, w.end + w.scale, side="right"))
                if hi - lo <= 4 * c:  # a broader window singles out nothing
                    parts.append(np.arange(lo, hi))
            else:
                match = w.match(epochs)
                top = _top(match, c)
                parts.append(top[match[top] >= 0.5])
        return np.unique(np.concatenate(parts).astype(np.int64))

    def _diverse(
        self, order: np.ndarray, score: np.ndarray, matrix: np.ndarray, k: int, weight: float
    ) -> list[int]:
        """Maximal marginal relevance over the best candidates (``order``, best first)."""
        if weight <= 0.0 or k <= 1:
            return [int(i) for i in order[:k]]
        vecs = matrix[order]
        # the raw cosine: on the relative scale (as near-duplicates are judged) the same weight
        # cost multilingual-e5 recall@5 0.845 -> 0.812 on the LoCoMo dev conversations
        penalty = weight * np.maximum(vecs @ vecs.T, 0.0)
        base = (1.0 - weight) * score[order]
        # value = (1 - weight) * score - weight * max(0, best similarity to a chosen item)
        value = base.copy()
        chosen: list[int] = []
        for _ in range(min(k, len(order))):
            j = int(np.argmax(value))
            chosen.append(int(order[j]))
            value = np.minimum(value, base - penalty[j])
            value[j] = -np.inf
        return chosen


def _top(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` largest scores, best first (ties: lower position first)."""
    k = min(k, len(scores))
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    part = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
    return part[np.lexsort((part, -scores[part]))]

"""How recall ranks items: the knobs of the hybrid index (:class:`RetrievalConfig`)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RetrievalConfig"]


@dataclass(frozen=True)
class RetrievalConfig:
    """How recall ranks a user's items. The defaults are general, not tuned to a data set.

    Attributes:
        lexical_weight: weight of the max-normalized BM25 score added to the cosine.
        centering: fraction of the user's mean item vector subtracted from the query
            (0 = plain cosine). Has no effect on the order of one or two items.
        time_weight: added for an item created inside a date window the query names.
        diversity: weight of redundancy in maximal marginal relevance: each next result
            maximizes ``(1 - diversity) * score - diversity * max cosine to those chosen``
            (0 = plain top-k, the default: on conversations that call for several
            related memories, two failed driving tests, MMR set one of them aside: recall@5
            0.071 [0.02, 0.13] lower with 0.2, and no better on single-event talks or
            LoCoMo; ``bench/README.md``, issue 57).
        exact_limit: score every item exactly up to this many items; above, an IVF index
            proposes candidates that are rescored exactly.
        candidates: how many candidates each retriever proposes in IVF mode (at least
            ``4 * k``).
        bm25_k1: BM25 term-frequency saturation.
        bm25_b: BM25 length normalization.
        newer_first: among near-duplicates recalled together, the newer first (of two
            items saying the same thing, the newer is the current one).

    Example:
        >>> RetrievalConfig.dense_only().lexical_weight
        0.0

    """

    lexical_weight: float = 0.25
    centering: float = 0.5
    time_weight: float = 0.1
    diversity: float = 0.0
    exact_limit: int = 8192
    candidates: int = 100
    bm25_k1: float = 1.2
    bm25_b: float = 0.75
    newer_first: bool = True

    @classmethod
    def dense_only(cls) -> RetrievalConfig:
        """Plain cosine top-k (the behaviour of a bare vector index), for comparison."""
        return cls(lexical_weight=0.0, centering=0.0, time_weight=0.0, diversity=0.0)

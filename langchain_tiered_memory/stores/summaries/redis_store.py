"""Long-term fuzzy memory: short summary items of old conversation, recalled by similarity.

Items live durably in Redis (text, ``created_at``, metadata, embedding as float32 bytes); the
search structure is a per-user FAISS index built from Redis and cached per process. A
version pair in the user's meta hash (``gen`` bumped by deletions, ``next_id`` by additions)
tells a process whether its cache is current, so several processes on one Redis agree: new
items are fetched incrementally, a deletion triggers a rebuild. No pickle anywhere.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from typing import Any

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from langchain_tiered_memory._steps import Plan, call, paired
from langchain_tiered_memory.backend.connection import RedisConnection, as_text
from langchain_tiered_memory.backend.keys import KeyBuilder
from langchain_tiered_memory.embeddings import embeddings_model_id
from langchain_tiered_memory.errors import (
    EmbeddingsMismatchError,
    InvalidSummaryError,
    WatermarkConflict,
)
from langchain_tiered_memory.retrieval import RetrievalConfig
from langchain_tiered_memory.stores.directory import activity_call
from langchain_tiered_memory.stores.summaries import scripts
from langchain_tiered_memory.stores.summaries.base import ItemMetadata, SummaryStore
from langchain_tiered_memory.stores.summaries.cache import IndexCache
from langchain_tiered_memory.stores.summaries.index import (
    DEDUP_THRESHOLD,
    DEFAULT_MAX_CACHE_BYTES,
    DEFAULT_MAX_CACHED_USERS,
    DEFAULT_MAX_ITEMS,
    ERASED_MEANWHILE,
    Record,
    UserIndex,
    VectorDtype,
    as_document,
    check_embeddings_model,
    dedup,
    edited_record,
    encode_vector,
    limit_error,
    parse_item_id,
    stored_int,
    superseded,
    superseded_of,
    superseding_json,
    unit_rows,
    validate_items,
)
from langchain_tiered_memory.stores.summaries.loading import IndexLoader
from langchain_tiered_memory.stores.summaries.reembed import Progress, reembed_plan
from langchain_tiered_memory.stores.summaries.sources import drop_thread_plan

__all__ = ["RedisSummaryStore"]


def _new_gen() -> str:
    """A random first ``gen`` for a user's items.

    ``forget_user`` deletes the meta hash, so counters restart; a random start keeps another
    process's cached index of the forgotten items from matching the new items' version.
    """
    return str(secrets.randbelow(1 << 52) + (1 << 20))


class RedisSummaryStore(SummaryStore):
    """Summary items in Redis hashes, searched through a per-process FAISS cache.

    Example:
        >>> conn = RedisConnection("redis://localhost")
        >>> store = RedisSummaryStore(conn, embeddings=emb)  # doctest: +SKIP
        >>> store.add("alice", ["Alice's birthday is on May 8."])  # doctest: +SKIP
        ['0']

    """

    def __init__(
        self,
        connection: RedisConnection,
        *,
        embeddings: Embeddings,
        keys: KeyBuilder | None = None,
        max_cached_users: int = DEFAULT_MAX_CACHED_USERS,
        max_cache_bytes: int = DEFAULT_MAX_CACHE_BYTES,
        max_items: int | None = DEFAULT_MAX_ITEMS,
        dedup_threshold: float = DEDUP_THRESHOLD,
        retrieval: RetrievalConfig | None = None,
        vector_dtype: VectorDtype = "int8",
    ) -> None:
        if vector_dtype not in ("float16", "float32", "int8"):
            raise ValueError(
                f"vector_dtype must be 'float16', 'float32' or 'int8', got {vector_dtype!r}."
            )
        # int8 with a scale per vector: a quarter of float32's bytes, and a ranking of unit
        # vectors barely moves (recall@5 against float32: XQuAD en/zh and LoCoMo equal, one
        # split -0.001; bench/recall_xquad.py --vector-dtype). Items stored in another form
        # (float16, 0.2's default; float32, 0.1's) still load, told apart by their length.
        self.vector_dtype = vector_dtype
        self.connection = connection
        self.max_items = max_items
        self.retrieval = retrieval
        self.embeddings = embeddings
        self.keys = keys or KeyBuilder()
        self.dedup_threshold = dedup_threshold
        # this process's search indexes of the users it served (bounded: ``index_cache.
        # max_users`` users, about ``index_cache.max_bytes`` bytes), and their reads
        self.index_cache = IndexCache(max_users=max_cached_users, max_bytes=max_cache_bytes)
        self.index_loader = IndexLoader(connection, self.keys, self.index_cache)

    def _k(self, user_id: str) -> tuple[str, str, str]:
        return self.index_loader.item_keys(user_id)

    def where(self, user_id: str) -> str:
        """How errors name the user's items: the user id and the Redis keys."""
        return self.index_loader.where(user_id)

    def version_command(self, user_id: str) -> tuple[str, ...]:
        """The ``HMGET`` of the index's version, for callers batching a pipeline."""
        return self.index_loader.version_command(user_id)

    @paired
    def index_for(
        self, user_id: str, version: Sequence[Any] | None = None
    ) -> Plan[UserIndex | None]:
        """The user's current search index (fetching what changed), or ``None`` if empty."""
        loader = self.index_loader
        return (
            yield call(
                loader.index_for,
                loader.aindex_for,
                user_id,
                self._embedder(),
                self.retrieval,
                version,
            )
        )

    aindex_for = index_for.aio

    def drop_cached(self, user_id: str) -> None:
        """Forget this process's index of the user (it is rebuilt on the next search)."""
        self.index_cache.drop(user_id)

    def reembed_keys(self, user_id: str) -> tuple[str, str, str, str]:
        """The user's items, vectors, meta and staged-vectors keys (one slot)."""
        return (*self._k(user_id), self.keys.key(user_id, "sum:revecs"))

    # ----- writes -----

    def _add_args(
        self,
        records: list[Record],
        vecs: np.ndarray,
        keep: list[int],
        watermark: tuple[int, int] | None,
        superseding: list[tuple[str, str]],
        fence: str | None = None,
    ) -> list[Any]:
        args: list[Any] = [
            "" if watermark is None else str(watermark[0]),
            "" if watermark is None else str(watermark[1]),
            str(vecs.shape[1]) if vecs.ndim == 2 and vecs.shape[1] else "0",
            _new_gen(),
            "" if self.max_items is None else str(self.max_items),
            len(superseding),
            embeddings_model_id(self._embedder()),
            "" if fence is None else f"f:{fence}",
        ]
        for stored_id, new_json in superseding:
            args += [stored_id, new_json]
        for i in keep:
            args += [records[i].to_json(), encode_vector(vecs[i], self.vector_dtype)]
        return args

    def _add_result(self, result: Sequence[Any], n: int) -> list[str]:
        first, info = int(result[0]), result[1]
        if first == -1:
            raise WatermarkConflict(
                f"summarization watermark moved to {stored_int(info)} meanwhile; "
                "nothing was stored."
            )
        if first == -2:
            raise EmbeddingsMismatchError(
                f"stored items have {stored_int(info)}-dimensional embeddings; these have a "
                "different size. Use the same embeddings model, or forget the user's "
                "summaries first."
            )
        if first == -5:
            raise WatermarkConflict(ERASED_MEANWHILE)
        if first == -4:
            check_embeddings_model(as_text(info), self._embedder(), "the stored summary items")
        if first == -3:
            raise limit_error(stored_int(info), n, self.max_items)
        return [str(first + i) for i in range(n)]

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
        """Embed, de-duplicate and store items (and mark what they supersede) in one
        atomic script.
        """
        keys = self._k(user_id)
        texts = validate_items(items)
        emb = self._embedder()
        vectors = (yield call(emb.embed_documents, emb.aembed_documents, texts)) if texts else []
        records, vecs = self._prepare(texts, vectors, created_at, metadata)
        existing = (yield call(self.index_for, self.aindex_for, user_id)) if texts else None
        keep = dedup(vecs, texts, existing, self.dedup_threshold) if texts else []
        if not keep and watermark is None:
            return []
        superseding = superseding_json(superseded(existing, records, keep, supersedes))
        args = self._add_args(records, vecs, keep, watermark, superseding, fence)
        conn = self.connection
        with conn.errors():  # a step's error is raised here, at its yield
            result = yield call(conn.eval, conn.aeval, scripts.ADD, 3, *keys, *args)
        # raises for a write the script refused (an erasure meanwhile: the fence), before
        # the directory hears of the user: nothing of an erased user is written after it
        ids = self._add_result(result, len(keep))
        if keep:  # the console directory's entry (an app may add items to a new user)
            with conn.errors():
                yield call(conn.run, conn.arun, activity_call(self.keys, user_id, time.time()))
        return ids

    aadd = add.aio

    # ----- reads -----

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
        index = yield call(self.index_for, self.aindex_for, user_id)
        if index is None or k <= 0:
            return []
        if vector is None:
            vector = yield call(self.embed_query, self.aembed_query, query)
        return index.search(
            vector, k, query=query, include_superseded=include_superseded, dates_from=dates_from
        )

    asearch = search.aio

    @paired
    def search_words(
        self, user_id: str, query: str, k: int = 1, *, include_superseded: bool = False
    ) -> Plan[list[Document]]:
        """Top-``k`` items by their words alone (see :meth:`SummaryStore.search_words`)."""
        index = yield call(self.index_for, self.aindex_for, user_id)
        return index.search_words(query, k, include_superseded=include_superseded) if index else []

    asearch_words = search_words.aio

    @paired
    def get_watermark(self, user_id: str) -> Plan[int]:
        """Summarization watermark."""
        c = self.connection
        raw = yield call(c.command, c.acommand, "HGET", self._k(user_id)[2], "watermark")
        return stored_int(raw, self.where(user_id))

    aget_watermark = get_watermark.aio

    @paired
    def get_fence(self, user_id: str) -> Plan[tuple[int, str]]:
        """The watermark and the erasure fence, in one script."""
        keys = self._k(user_id)[2], self.keys.key(user_id, "history")
        c = self.connection
        with c.errors():
            raw = yield call(c.eval, c.aeval, scripts.FENCE, 2, *keys, _new_gen())
        return stored_int(raw[0], self.where(user_id)), as_text(raw[1])

    aget_fence = get_fence.aio

    @paired
    def rotate_fence(self, user_id: str) -> Plan[None]:
        """Give the user a new era: every fence read before it no longer admits a write."""
        c = self.connection
        with c.errors():
            yield call(c.eval, c.aeval, scripts.ROTATE, 1, self._k(user_id)[2], _new_gen())

    arotate_fence = rotate_fence.aio

    @paired
    def get_all(self, user_id: str) -> Plan[list[Document]]:
        """Every item, oldest first."""
        c = self.connection
        raw = yield call(c.command, c.acommand, "HGETALL", self._k(user_id)[0])
        return _listing(raw, self.where(user_id))

    aget_all = get_all.aio

    @paired
    def get_all_count(self, user_id: str) -> Plan[int]:
        """How many items the user has (``HLEN``)."""
        c = self.connection
        return int((yield call(c.command, c.acommand, "HLEN", self._k(user_id)[0])))

    aget_all_count = get_all_count.aio

    @paired
    def superseded_texts(self, user_id: str) -> Plan[list[str]]:
        """The superseded items' texts, from the cached index (what changed is fetched)."""
        return superseded_of((yield call(self.index_for, self.aindex_for, user_id)))

    asuperseded_texts = superseded_texts.aio

    @paired
    def delete(self, user_id: str, ids: Sequence[str]) -> Plan[int]:
        """Delete items by id."""
        if not ids:
            return 0
        c = self.connection
        with c.errors():
            return int((yield call(c.eval, c.aeval, scripts.DELETE, 3, *self._k(user_id), *ids)))

    adelete = delete.aio

    @paired
    def update(self, user_id: str, item_id: str, text: str) -> Plan[bool]:
        """Replace one item's text in place (see :meth:`SummaryStore.update`)."""
        new_text = validate_items([text])[0]
        keys, conn = self._k(user_id), self.connection
        with conn.errors():
            raw = yield call(conn.eval, conn.aeval, scripts.GET_ITEM, 1, keys[0], str(item_id))
        if raw is None:
            raise InvalidSummaryError(f"no item {item_id!r} for this user; it may be deleted.")
        old = Record.from_json(str(item_id), raw, self.where(user_id))
        if old.text == new_text:
            return False
        emb = self._embedder()
        vector = unit_rows((yield call(emb.embed_documents, emb.aembed_documents, [new_text])))
        args = [
            str(item_id),
            raw,
            edited_record(old, new_text).to_json(),
            encode_vector(vector[0], self.vector_dtype),
            embeddings_model_id(emb),
        ]
        with conn.errors():
            done = yield call(conn.eval, conn.aeval, scripts.UPDATE, 3, *keys, *args)
        if done == -1:
            raise EmbeddingsMismatchError(
                f"{self.where(user_id)} were embedded by another model; convert them first "
                "(TieredMemory.reembed) and edit again."
            )
        if not done:
            raise InvalidSummaryError(
                f"item {item_id!r} changed or was deleted while it was being edited; "
                "nothing was written. Read it again and retry."
            )
        return True

    aupdate = update.aio

    @paired
    def drop_thread(self, user_id: str, thread_id: str) -> Plan[int]:
        """Remove ``thread_id`` from the items' sources (see :meth:`SummaryStore.drop_thread`)."""
        items, _vectors, meta = self._k(user_id)
        where = self.where(user_id)
        return (yield from drop_thread_plan(self.connection, items, meta, thread_id, where))

    adrop_thread = drop_thread.aio

    @paired
    def clear(self, user_id: str) -> Plan[int]:
        """Delete every item and the watermark; drop the cached index."""
        keys = self.reembed_keys(user_id)
        c = self.connection
        with c.errors():
            n = int((yield call(c.eval, c.aeval, scripts.CLEAR, 4, *keys, _new_gen())))
        self.drop_cached(user_id)
        return n

    aclear = clear.aio

    @paired
    def users(self) -> Plan[list[str]]:
        """Every user with summary items, found by SCAN (never KEYS) on every node."""
        c = self.connection
        keys = yield call(c.scan, c.ascan, self.keys.scan_pattern("sum:items"))
        return sorted({user for key in keys if (user := self.keys.user_from_key(key)) is not None})

    ausers = users.aio

    @paired
    def reembed(self, user_id: str, *, progress: Progress | None = None) -> Plan[int]:
        """Re-embed the user's items with this store's model, resumably
        (:mod:`~langchain_tiered_memory.stores.summaries.reembed`).

        Returns:
            How many items carry this model's vectors now (0: the user has none).

        Raises:
            ConcurrentReembedError: another run converts the user to another model.

        Example:
            >>> e5 = MultilingualE5Embeddings()  # doctest: +SKIP
            >>> new = RedisSummaryStore(conn, embeddings=e5)  # doctest: +SKIP
            >>> new.reembed("alice")  # doctest: +SKIP
            12
        """
        with self.connection.errors():
            return (yield from reembed_plan(self, user_id, progress=progress))

    areembed = reembed.aio


def _listing(raw: Mapping[Any, Any], where: str = "summary items") -> list[Document]:
    records = [Record.from_json(str(parse_item_id(k, where)), v, where) for k, v in raw.items()]
    return [as_document(r) for r in sorted(records, key=lambda r: int(r.id))]

"""A summary store's search index, kept current with Redis by a version pair.

:class:`IndexLoader` is the Redis summary store's collaborator for its reads: it owns the
keys of a user's items, the process's cache of indexes and the reads that keep them
current. Each process holds an index per user it served (:class:`~.cache.IndexCache`). The user's
meta hash holds ``gen`` (bumped by deletions), ``next_id`` (by additions), the vectors' size
and model; a read compares them with the cached index: equal, it is used as is; ``next_id``
moved, only the new items are fetched; ``gen`` moved, the index is rebuilt. The sync and
async reads share every step but the I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.embeddings import Embeddings

from langchain_tiered_memory._steps import Plan, call, paired
from langchain_tiered_memory.backend.connection import RedisConnection, as_text
from langchain_tiered_memory.backend.keys import KeyBuilder
from langchain_tiered_memory.embeddings import embeddings_scripts
from langchain_tiered_memory.retrieval import RetrievalConfig
from langchain_tiered_memory.stores.summaries.cache import IndexCache
from langchain_tiered_memory.stores.summaries.index import (
    UserIndex,
    check_embeddings_model,
    extend_index,
    parse_item_id,
    stored_int,
)

__all__ = ["LEGACY_DIM", "LEGACY_MODEL", "IndexLoader"]

# What 0.1 stores held when they recorded no model: the then default's name and size.
LEGACY_MODEL = "all-minilm-l6-v2"
LEGACY_DIM = 384


class IndexLoader:
    """Reads a user's search index from Redis into the process's cache, fetching only what
    changed (owned by :class:`~langchain_tiered_memory.stores.summaries.redis_store.
    RedisSummaryStore`, which passes its current embeddings and ranking to each read).

    Args:
        connection: the Redis connection.
        keys: the key builder.
        cache: this process's indexes.

    Example:
        >>> cache = IndexCache(max_users=100, max_bytes=1 << 26)
        >>> loader = IndexLoader(conn, KeyBuilder(), cache)  # doctest: +SKIP
        >>> index = loader.index_for("alice", emb, None)  # doctest: +SKIP
        >>> loader.index_for("alice", emb, None) is index  # doctest: +SKIP
        True
    """

    def __init__(self, connection: RedisConnection, keys: KeyBuilder, cache: IndexCache) -> None:
        self.connection = connection
        self.keys = keys
        self.cache = cache

    def item_keys(self, user_id: str) -> tuple[str, str, str]:
        """The user's items, vectors and meta keys (one slot)."""
        return (
            self.keys.key(user_id, "sum:items"),
            self.keys.key(user_id, "sum:vecs"),
            self.keys.key(user_id, "meta"),
        )

    def version_command(self, user_id: str) -> tuple[str, ...]:
        """The ``HMGET`` that reads the cache version (and the items' embedding model), for
        callers batching a pipeline.
        """
        return ("HMGET", self.item_keys(user_id)[2], "gen", "next_id", "dim", "model")

    def where(self, user_id: str) -> str:
        """How errors name the user's items: the user id and the Redis keys."""
        items, vecs, meta = self.item_keys(user_id)
        return f"the summary items of user {user_id!r} (keys {items}, {vecs}, {meta})"

    # ----- shared by the sync and async reads; only the Redis I/O differs -----

    def _version(self, user_id: str, version: Sequence[Any]) -> tuple[int, int, int]:
        where = self.where(user_id)
        return (
            stored_int(version[0], where),
            stored_int(version[1], where),
            stored_int(version[2], where),
        )

    def _after_fetch(
        self,
        user_id: str,
        version: Sequence[Any],
        cached: UserIndex | None,
        fetched: Any,
        embeddings: Embeddings,
        retrieval: RetrievalConfig | None,
    ) -> UserIndex | None:
        gen, next_id, dim = self._version(user_id, version)
        where = self.where(user_id)
        if cached is not None:  # delta: fetched = (items list, vecs list) for the new ids
            # the ids fetched end at next_id (another thread may have moved cached.next_id)
            ids = range(next_id - len(fetched[0]), next_id)
            items = {str(i).encode(): v for i, v in zip(ids, fetched[0]) if v is not None}
            vecs = {str(i).encode(): v for i, v in zip(ids, fetched[1]) if v is not None}
            # Extended in place under the index's lock (a concurrent search sees the batch
            # whole or not at all); only ids past those already loaded are appended, so
            # overlapping deltas fetched by racing threads never add an item twice.
            extend_index(cached, items, vecs, next_id=next_id, where=where)
            self.cache.evict()
            return cached.configure(retrieval)
        if not dim:
            self.cache.drop(user_id)
            return None
        index = UserIndex(
            dim=dim,
            gen=gen,
            next_id=next_id,
            config=retrieval,
            dense_scripts=embeddings_scripts(embeddings),
        )
        # Items added after the version was read belong to the next delta, not this build.
        current = {k: v for k, v in fetched[0].items() if parse_item_id(k, where) < next_id}
        extend_index(index, current, fetched[1], where=where)
        self.cache.put(user_id, index)
        return index

    def _prepare(
        self, user_id: str, version: Sequence[Any], embeddings: Embeddings
    ) -> tuple[UserIndex | None, list[tuple[Any, ...]]]:
        """The cached index and the commands that bring it up to ``version`` (none: current);
        refuses items embedded by another model than ``embeddings``.
        """
        stored = version[3] if len(version) > 3 else None
        if stored is None and stored_int(version[2]) == LEGACY_DIM:
            # Items from before 0.2 carry no model name. 384-dimensional ones came from the
            # 0.1 default, all-MiniLM-L6-v2, whose vectors the new default's (also 384)
            # must not be mixed with; other sizes are told apart by the size check.
            stored = LEGACY_MODEL
        if stored is not None:
            check_embeddings_model(as_text(stored), embeddings, self.where(user_id))
        cached, todo = self.cache.lookup(user_id, *self._version(user_id, version))
        if not todo:
            return cached, []
        items, vecs, _ = self.item_keys(user_id)
        if cached is not None:
            ids = [str(i) for i in range(cached.next_id, stored_int(version[1]))]
            return cached, [("HMGET", items, *ids), ("HMGET", vecs, *ids)]
        return None, [("HGETALL", items), ("HGETALL", vecs)]

    @paired
    def index_for(
        self,
        user_id: str,
        embeddings: Embeddings,
        retrieval: RetrievalConfig | None,
        version: Sequence[Any] | None = None,
    ) -> Plan[UserIndex | None]:
        """The user's current search index (fetching what changed), or ``None`` if empty."""
        conn = self.connection
        if version is None:
            version = yield call(conn.command, conn.acommand, *self.version_command(user_id))
        with conn.errors():
            cached, commands = self._prepare(user_id, version, embeddings)
        if not commands:
            return cached.configure(retrieval) if cached is not None else None
        fetched = yield call(conn.pipelined, conn.apipelined, commands)
        return self._after_fetch(user_id, version, cached, fetched, embeddings, retrieval)

    aindex_for = index_for.aio

"""A summary store's search index, kept current with Redis by a version pair.

Each process holds an index per user it served (:class:`~.cache.IndexCache`). The user's
meta hash holds ``gen`` (bumped by deletions), ``next_id`` (by additions), the vectors' size
and model; a read compares them with the cached index: equal, it is used as is; ``next_id``
moved, only the new items are fetched; ``gen`` moved, the index is rebuilt. The sync and
async reads share every step but the I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.embeddings import Embeddings

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

__all__ = ["LEGACY_DIM", "LEGACY_MODEL", "IndexLoading"]

# What 0.1 stores held when they recorded no model: the then default's name and size.
LEGACY_MODEL = "all-minilm-l6-v2"
LEGACY_DIM = 384


class IndexLoading:
    """The Redis summary store's reads of its search index (a mixin of
    :class:`~langchain_tiered_memory.stores.summaries.redis_store.RedisSummaryStore`).

    Example:
        >>> store = RedisSummaryStore(conn, embeddings=emb)  # doctest: +SKIP
        >>> store.index_for("alice") is store.index_for("alice")  # doctest: +SKIP
        True
    """

    connection: RedisConnection
    keys: KeyBuilder
    retrieval: RetrievalConfig | None
    index_cache: IndexCache

    if TYPE_CHECKING:  # the store's own (declared here for the type checker only)

        def _embedder(self) -> Embeddings: ...

        def _k(self, user_id: str) -> tuple[str, str, str]: ...

    @property
    def max_cached_users(self) -> int:
        """At most this many users' indexes are held by the process (least recent dropped)."""
        return self.index_cache.max_users

    @max_cached_users.setter
    def max_cached_users(self, value: int) -> None:
        self.index_cache.max_users = value

    @property
    def max_cache_bytes(self) -> int:
        """About this many bytes of indexes are held by the process (least recent dropped)."""
        return self.index_cache.max_bytes

    @max_cache_bytes.setter
    def max_cache_bytes(self, value: int) -> None:
        self.index_cache.max_bytes = value

    def drop_cached(self, user_id: str) -> None:
        """Forget this process's index of the user (it is rebuilt on the next search)."""
        self.index_cache.drop(user_id)

    # ----- cache: shared by the sync and async paths; only the Redis I/O differs -----

    def version_command(self, user_id: str) -> tuple[str, ...]:
        """The ``HMGET`` that reads the cache version (and the items' embedding model), for
        callers batching a pipeline.
        """
        return ("HMGET", self._k(user_id)[2], "gen", "next_id", "dim", "model")

    def where(self, user_id: str) -> str:
        """How errors name the user's items: the user id and the Redis keys."""
        items, vecs, meta = self._k(user_id)
        return f"the summary items of user {user_id!r} (keys {items}, {vecs}, {meta})"

    def _version(self, user_id: str, version: Sequence[Any]) -> tuple[int, int, int]:
        where = self.where(user_id)
        return (
            stored_int(version[0], where),
            stored_int(version[1], where),
            stored_int(version[2], where),
        )

    def _cached(self, user_id: str, version: Sequence[Any]) -> tuple[UserIndex | None, str]:
        """Return (index, what to fetch): '' if current, 'delta' or 'full'."""
        return self.index_cache.lookup(user_id, *self._version(user_id, version))

    def cached_bytes(self) -> int:
        """Estimated memory held by this process's cached indexes."""
        return self.index_cache.nbytes()

    def _build(
        self,
        gen: int,
        next_id: int,
        dim: int,
        items: Mapping[bytes, bytes],
        vecs: Mapping[bytes, bytes],
        where: str,
    ) -> UserIndex:
        index = UserIndex(
            dim=dim,
            gen=gen,
            next_id=next_id,
            config=self.retrieval,
            dense_scripts=embeddings_scripts(self._embedder()),
        )
        # Items added after the version was read belong to the next delta, not this build.
        current = {k: v for k, v in items.items() if parse_item_id(k, where) < next_id}
        extend_index(index, current, vecs, where=where)
        return index

    def _after_fetch(
        self, user_id: str, version: Sequence[Any], cached: UserIndex | None, fetched: Any
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
            self.index_cache.evict()
            return cached
        if not dim:
            self.index_cache.drop(user_id)
            return None
        index = self._build(gen, next_id, dim, fetched[0], fetched[1], where)
        self.index_cache.put(user_id, index)
        return index

    def _check_model(self, user_id: str, version: Sequence[Any]) -> None:
        """Refuse to search items embedded by another model than this store's."""
        stored = version[3] if len(version) > 3 else None
        if stored is None:
            # Items from before 0.2 carry no model name. 384-dimensional ones came from the
            # 0.1 default, all-MiniLM-L6-v2, whose vectors the new default's (also 384)
            # must not be mixed with; other sizes are told apart by the size check.
            if stored_int(version[2]) != LEGACY_DIM:
                return
            stored = LEGACY_MODEL
        check_embeddings_model(as_text(stored), self._embedder(), self.where(user_id))

    def _fetch_commands(
        self, user_id: str, version: Sequence[Any], cached: UserIndex | None
    ) -> list[tuple[Any, ...]]:
        items, vecs, _ = self._k(user_id)
        if cached is not None:
            ids = [str(i) for i in range(cached.next_id, stored_int(version[1]))]
            return [("HMGET", items, *ids), ("HMGET", vecs, *ids)]
        return [("HGETALL", items), ("HGETALL", vecs)]

    def index_for(self, user_id: str, version: Sequence[Any] | None = None) -> UserIndex | None:
        """The user's current search index (fetching what changed), or ``None`` if empty."""
        conn = self.connection
        with conn.errors():
            if version is None:
                version = conn.sync.execute_command(*self.version_command(user_id))
            self._check_model(user_id, version)
            cached, todo = self._cached(user_id, version)
            if not todo:
                return cached
            pipe = conn.sync.pipeline(transaction=False)
            for cmd in self._fetch_commands(user_id, version, cached):
                pipe.execute_command(*cmd)
            fetched = pipe.execute()
        return self._after_fetch(user_id, version, cached, fetched)

    async def aindex_for(
        self, user_id: str, version: Sequence[Any] | None = None
    ) -> UserIndex | None:
        """Async :meth:`index_for`."""
        conn = self.connection
        with conn.errors():
            if version is None:
                version = await (await conn.aclient()).execute_command(
                    *self.version_command(user_id)
                )
            self._check_model(user_id, version)
            cached, todo = self._cached(user_id, version)
            if not todo:
                return cached
            pipe = (await conn.aclient()).pipeline(transaction=False)
            for cmd in self._fetch_commands(user_id, version, cached):
                pipe.execute_command(*cmd)
            fetched = await pipe.execute()
        return self._after_fetch(user_id, version, cached, fetched)

    def cached_users(self) -> int:
        """How many users' indexes this process holds (bounded by ``max_cached_users``)."""
        return len(self.index_cache)

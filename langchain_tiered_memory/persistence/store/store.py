"""``RedisStore``: LangGraph's ``BaseStore`` on plain Redis, sync and async on one connection."""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import threading
from collections.abc import Iterable, Iterator
from typing import Any, Literal

from langgraph.store.base import IndexConfig, Op, Result, TTLConfig

from langchain_tiered_memory._steps import adrive, drive
from langchain_tiered_memory.backend.connection import ConnectionOwner, RedisConnection
from langchain_tiered_memory.backend.keys import DEFAULT_PREFIX
from langchain_tiered_memory.persistence.store.base import BaseRedisStore

__all__ = ["RedisStore"]

logger = logging.getLogger(__name__)


class RedisStore(BaseRedisStore, ConnectionOwner):
    """A LangGraph store (``BaseStore``) on Redis core commands, beside the memory.

    For LangGraph apps and LangMem: ``get``/``put``/``delete``/``search`` (metadata
    ``filter``, ``offset``/``limit``, and natural-language ``query`` when built with
    ``index={"dims", "embed", "fields"}``), ``list_namespaces`` (prefix, suffix,
    ``max_depth``) and per-item TTL. Every method has its async twin on the same
    connection. Each namespace is one Redis Cluster slot; a batch runs as a few pipelines
    (reads, then writes), never one command per item.

    Args:
        connection: the Redis to use; ``TieredMemory.store()`` passes the memory's own.
        key_prefix: the key prefix, shared with the memory (default ``"tm"``).
        index: semantic search: ``{"dims": 384, "embed": embeddings, "fields": ["text"]}``.
        ttl: LangGraph's ``TTLConfig`` (``default_ttl`` minutes, ``refresh_on_read``).

    Example:
        >>> from langchain_tiered_memory.persistence.store import RedisStore
        >>> with RedisStore.from_url("redis://localhost:6379/0") as store:  # doctest: +SKIP
        ...     store.put(("alice", "memories"), "m1", {"text": "likes tea"})
        ...     store.get(("alice", "memories"), "m1").value
        {'text': 'likes tea'}
    """

    @classmethod
    @contextlib.contextmanager
    def from_url(
        cls,
        url: str,
        *,
        key_prefix: str = DEFAULT_PREFIX,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        cluster: bool | None = None,
    ) -> Iterator[RedisStore]:
        """A store on a new connection to ``url``, closed on exit.

        Example:
            >>> with RedisStore.from_url("redis://localhost:6379/0") as store:  # doctest: +SKIP
            ...     store.setup()
        """
        store = cls(
            RedisConnection(url, cluster=cluster), key_prefix=key_prefix, index=index, ttl=ttl
        )
        store._owns_connection = True
        try:
            yield store
        finally:
            store.close()

    from_conn_string = from_url  # as LangGraph's PostgresStore opens

    def start_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> concurrent.futures.Future[None]:
        """Sweep expired items every ``sweep_interval_minutes`` (default: the TTL config's
        ``sweep_interval_minutes``, else 5) in a daemon thread, as ``PostgresStore`` does;
        :meth:`stop_ttl_sweeper` ends it. A failed sweep is logged and retried.

        Example:
            >>> store.start_ttl_sweeper(1)  # doctest: +SKIP
            >>> store.stop_ttl_sweeper()  # doctest: +SKIP
            True
        """
        if self._sweeper is not None and not self._sweeper[0].done():
            return self._sweeper[0]
        interval = self._sweep_interval(sweep_interval_minutes)
        done: concurrent.futures.Future[None] = concurrent.futures.Future()
        stop = threading.Event()

        def loop() -> None:
            while not stop.wait(interval):
                try:
                    self.sweep_ttl()
                except Exception:
                    logger.exception("the TTL sweep failed; retrying in %.0f s", interval)
            done.set_result(None)

        threading.Thread(target=loop, name="redis-store-ttl-sweeper", daemon=True).start()
        self._sweeper = (done, stop)
        return done

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; return whether it ended within ``timeout`` seconds."""
        if self._sweeper is None:
            return True
        done, stop = self._sweeper
        stop.set()
        try:
            done.result(timeout=timeout)
        except concurrent.futures.TimeoutError:
            return False
        self._sweeper = None
        return True

    def _sweep_interval(self, minutes: float | None) -> float:
        if minutes is None:
            minutes = (self.ttl_config or {}).get("sweep_interval_minutes") or 5
        if not minutes > 0:
            raise ValueError(f"sweep_interval_minutes must be positive, got {minutes!r}.")
        return float(minutes) * 60

    # ----- I/O: the plan's requests run here -----

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations: reads see the store as it was before the batch's writes."""
        return drive(self._plan(ops))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async :meth:`batch`."""
        return await adrive(self._plan(ops))

    def sweep_ttl(self) -> int:
        """Delete expired items (they are already invisible to reads); return how many.

        Example:
            >>> store.sweep_ttl()  # doctest: +SKIP
            3
        """
        return drive(self._sweep_plan())

    async def asweep_ttl(self) -> int:
        """Async :meth:`sweep_ttl`."""
        return await adrive(self._sweep_plan())

    def purge(self, prefix: tuple[str, ...]) -> int:
        """Delete every namespace under ``prefix`` (and its items, expired ones too) by
        key, without reading a value; return how many items were removed.

        The erasure of a user's namespaces (``TieredMemory.forget_user(store=...)`` calls
        it): O(the namespaces under the prefix) plus one SCAN of the keyspace for items an
        older version wrote before registering them.

        Example:
            >>> store.purge(("memories", "alice"))  # doctest: +SKIP
            12
        """
        return int(drive(self._purge_plan(tuple(prefix))))

    async def apurge(self, prefix: tuple[str, ...]) -> int:
        """Async :meth:`purge`."""
        return int(await adrive(self._purge_plan(tuple(prefix))))

    def _embed(self, texts: list[str], kind: Literal["documents", "queries"]) -> list[Any]:
        assert self.embeddings is not None  # the plan asks only when there is an index
        if kind == "documents":
            return self.embeddings.embed_documents(texts)
        return [self.embeddings.embed_query(text) for text in texts]

    async def _aembed(self, texts: list[str], kind: Literal["documents", "queries"]) -> list[Any]:
        assert self.embeddings is not None
        if kind == "documents":
            return await self.embeddings.aembed_documents(texts)
        return [await self.embeddings.aembed_query(text) for text in texts]

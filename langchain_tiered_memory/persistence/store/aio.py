"""``AsyncRedisStore``: :class:`RedisStore` opened and closed with ``async with``."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from langgraph.store.base import IndexConfig, TTLConfig

from langchain_tiered_memory.backend.connection import RedisConnection
from langchain_tiered_memory.backend.keys import DEFAULT_PREFIX
from langchain_tiered_memory.persistence.store.store import RedisStore

__all__ = ["AsyncRedisStore"]

logger = logging.getLogger(__name__)


class AsyncRedisStore(RedisStore):
    """The Redis store for asyncio apps: the same storage and methods as
    :class:`RedisStore`; :meth:`from_url` is an *async* context manager.

    Example:
        >>> from langchain_tiered_memory.persistence.store import AsyncRedisStore
        >>> async def main():  # doctest: +SKIP
        ...     async with AsyncRedisStore.from_url("redis://localhost:6379/0") as store:
        ...         await store.aput(("alice",), "m1", {"text": "likes tea"})
    """

    @classmethod
    @contextlib.asynccontextmanager
    async def from_url(  # type: ignore[override]
        cls,
        url: str,
        *,
        key_prefix: str = DEFAULT_PREFIX,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        cluster: bool | None = None,
    ) -> AsyncIterator[AsyncRedisStore]:
        """A store on a new connection to ``url``, closed on exit.

        Example:
            >>> async def main():  # doctest: +SKIP
            ...     async with AsyncRedisStore.from_url("redis://localhost:6379/0") as store:
            ...         await store.asetup()
        """
        store = cls(
            RedisConnection(url, cluster=cluster), key_prefix=key_prefix, index=index, ttl=ttl
        )
        store._owns_connection = True
        try:
            yield store
        finally:
            await store.aclose()

    from_conn_string = from_url  # type: ignore[assignment]  # as AsyncPostgresStore opens

    async def setup(self) -> None:  # type: ignore[override]
        """Check that the server answers (awaitable, as ``AsyncPostgresStore``'s is)."""
        await self.asetup()

    async def sweep_ttl(self) -> int:  # type: ignore[override]
        """Delete expired items; return how many (awaitable, as ``AsyncPostgresStore``'s)."""
        return await self.asweep_ttl()

    async def start_ttl_sweeper(  # type: ignore[override]
        self, sweep_interval_minutes: float | None = None
    ) -> asyncio.Task[None]:
        """Sweep expired items every ``sweep_interval_minutes`` (default: the TTL config's
        ``sweep_interval_minutes``, else 5) in a task on the running loop, as
        ``AsyncPostgresStore`` does; :meth:`stop_ttl_sweeper` ends it.

        Example:
            >>> task = await store.start_ttl_sweeper(1)  # doctest: +SKIP
            >>> await store.stop_ttl_sweeper()  # doctest: +SKIP
            True
        """
        if self._task is not None and not self._task.done():
            return self._task
        interval = self._sweep_interval(sweep_interval_minutes)

        async def loop() -> None:
            while True:
                await asyncio.sleep(interval)
                try:
                    await self.asweep_ttl()
                except Exception:
                    logger.exception("the TTL sweep failed; retrying in %.0f s", interval)

        self._task = asyncio.get_running_loop().create_task(loop())
        return self._task

    async def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:  # type: ignore[override]
        """Cancel the sweeper task; return whether it ended within ``timeout`` seconds."""
        task, self._task = self._task, None
        if task is None:
            return True
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=timeout)
        return bool(done)

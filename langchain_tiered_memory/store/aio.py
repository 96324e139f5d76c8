"""``AsyncRedisStore``: :class:`RedisStore` opened and closed with ``async with``."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from langgraph.store.base import IndexConfig, TTLConfig

from langchain_tiered_memory._keys import DEFAULT_PREFIX
from langchain_tiered_memory._redis import RedisConnection
from langchain_tiered_memory.store.store import RedisStore

__all__ = ["AsyncRedisStore"]


class AsyncRedisStore(RedisStore):
    """The Redis store for asyncio apps: the same storage and methods as
    :class:`RedisStore`; :meth:`from_url` is an *async* context manager.

    Example:
        >>> from langchain_tiered_memory.store import AsyncRedisStore
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

"""``AsyncRedisSaver``: :class:`RedisSaver` opened and closed with ``async with``."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from langgraph.checkpoint.base import SerializerProtocol

from langchain_tiered_memory.backend.connection import RedisConnection
from langchain_tiered_memory.backend.keys import DEFAULT_PREFIX
from langchain_tiered_memory.persistence.checkpoint.base import DECODE_CACHE_BYTES, CheckpointTTL
from langchain_tiered_memory.persistence.checkpoint.saver import RedisSaver

__all__ = ["AsyncRedisSaver"]


class AsyncRedisSaver(RedisSaver):
    """The Redis checkpointer for asyncio apps (``ainvoke``, ``astream``, LangGraph server).

    The same storage and methods as :class:`RedisSaver` (both serve sync and async calls
    natively: each has a sync and an asyncio client, so no method starts or borrows an
    event loop); :meth:`from_url` here is an *async* context manager that closes both.

    Example:
        >>> from langchain_tiered_memory.persistence.checkpoint import AsyncRedisSaver
        >>> async def main():  # doctest: +SKIP
        ...     async with AsyncRedisSaver.from_url("redis://localhost:6379/0") as saver:
        ...         graph = builder.compile(checkpointer=saver)
        ...         await graph.ainvoke({"messages": []}, {"configurable": {"thread_id": "1"}})
    """

    @classmethod
    @contextlib.asynccontextmanager
    async def from_url(  # type: ignore[override]
        cls,
        url: str,
        *,
        key_prefix: str = DEFAULT_PREFIX,
        ttl: CheckpointTTL | None = None,
        cluster: bool | None = None,
        serde: SerializerProtocol | None = None,
        decode_cache_bytes: int = DECODE_CACHE_BYTES,
    ) -> AsyncIterator[AsyncRedisSaver]:
        """A saver on a new connection to ``url``, closed on exit.

        Example:
            >>> async def main():  # doctest: +SKIP
            ...     async with AsyncRedisSaver.from_url("redis://localhost:6379/0") as saver:
            ...         await saver.asetup()
        """
        saver = cls(
            RedisConnection(url, cluster=cluster),
            key_prefix=key_prefix,
            ttl=ttl,
            serde=serde,
            decode_cache_bytes=decode_cache_bytes,
        )
        saver._owns_connection = True
        try:
            yield saver
        finally:
            await saver.aclose()

    from_conn_string = from_url  # type: ignore[assignment]  # as LangGraph's async savers open

    async def setup(self) -> None:  # type: ignore[override]
        """Check that the server answers (awaitable, as LangGraph's async savers' is).

        Example:
            >>> await AsyncRedisSaver(connection).setup()  # doctest: +SKIP
        """
        await self.asetup()

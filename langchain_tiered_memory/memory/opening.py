"""How a memory is opened on Redis: the connection, the stores on it, what shares it.

``TieredMemory.from_url`` and ``TieredMemory.embedded`` build their connection and stores
here, and ``memory.checkpointer()`` / ``memory.store()`` their LangGraph savers and stores,
so the facade itself knows the stores only by their interfaces and imports no part of the
Redis layer (``tests/unit_tests/test_layers.py`` holds it to that).

Example:
    >>> from langchain_tiered_memory.embeddings import HashingEmbeddings
    >>> connection = url_connection("redis://localhost:6379/0")
    >>> parts = redis_parts(connection, embeddings=HashingEmbeddings(), key_prefix="app")
    >>> sorted(parts)
    ['_connection', '_queue', 'history', 'redis_url', 'summaries', 'tags']
"""

from __future__ import annotations

import copy
import os
from typing import TYPE_CHECKING, Any

from langchain_core.embeddings import Embeddings
from pydantic import BaseModel

from langchain_tiered_memory import embeddings as _embeddings
from langchain_tiered_memory.backend.connection import (
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_POOL_TIMEOUT,
    RedisConnection,
)
from langchain_tiered_memory.backend.format import check_format
from langchain_tiered_memory.backend.keys import DEFAULT_PREFIX, KeyBuilder, keys_of
from langchain_tiered_memory.backend.server import EmbeddedRedis
from langchain_tiered_memory.persistence.checkpoint import (
    AsyncRedisSaver,
    BaseRedisSaver,
    CheckpointTTL,
    OwnedSaver,
    RedisSaver,
    is_guarded,
)
from langchain_tiered_memory.persistence.store import RedisStore
from langchain_tiered_memory.stores.history import HistoryStore, RedisHistoryStore, ThreadGuard
from langchain_tiered_memory.stores.queue import SummaryQueue
from langchain_tiered_memory.stores.summaries import RedisSummaryStore
from langchain_tiered_memory.stores.tags import DefaultTags, RedisTagStore

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.store.base import IndexConfig, TTLConfig

__all__ = [
    "is_guarded",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_POOL_TIMEOUT",
    "DEFAULT_PREFIX",
    "EmbeddedRedis",
    "RedisConnection",
    "async_saver",
    "embedded_connection",
    "keys_of",
    "langgraph_store",
    "redis_parts",
    "saver",
    "url_connection",
]


def url_connection(
    redis_url: str | None,
    *,
    cluster: bool | None = None,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    pool_timeout: float = DEFAULT_POOL_TIMEOUT,
) -> RedisConnection:
    """A (lazy) connection to ``redis_url`` or ``$REDIS_URL``."""
    url = redis_url or os.environ.get("REDIS_URL")
    if not url:
        raise ValueError("pass redis_url= or set REDIS_URL, or use TieredMemory.embedded().")
    return RedisConnection(
        url, cluster=cluster, max_connections=max_connections, pool_timeout=pool_timeout
    )


def embedded_connection(
    data_dir: str | os.PathLike[str] | None,
    *,
    appendfsync: str | None = None,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    pool_timeout: float = DEFAULT_POOL_TIMEOUT,
) -> tuple[RedisConnection, EmbeddedRedis]:
    """The embedded server of ``data_dir`` (started, or joined) and a connection to it."""
    server = EmbeddedRedis(data_dir, appendfsync=appendfsync).start()
    connection = RedisConnection(
        server.url,
        cluster=False,
        client_name=server.client_name,
        revive=server.revive,
        max_connections=max_connections,
        pool_timeout=pool_timeout,
    )
    return connection, server


def redis_parts(
    connection: RedisConnection,
    *,
    embeddings: Embeddings | None = None,
    tag_schema: type[BaseModel] | None = None,
    key_prefix: str = DEFAULT_PREFIX,
) -> dict[str, Any]:
    """``TieredMemory``'s arguments for the three Redis stores and the queue on ``connection``."""
    keys = KeyBuilder(key_prefix)
    # before the memory's first command: never data of a newer format (backend/format.py)
    connection.require(
        f"format {key_prefix}", lambda client: check_format(client, keys, connection.url)
    )
    return {
        "history": RedisHistoryStore(connection, keys=keys),
        "tags": RedisTagStore(connection, keys=keys, schema=tag_schema or DefaultTags),
        "summaries": RedisSummaryStore(
            connection, keys=keys, embeddings=embeddings or _embeddings.default_embeddings()
        ),
        "redis_url": connection.url,
        "_connection": connection,
        "_queue": SummaryQueue(connection, keys=keys),
    }


def saver(
    connection: RedisConnection, history: HistoryStore, ttl: CheckpointTTL | None
) -> RedisSaver:
    """A ``RedisSaver`` on the memory's connection and key prefix, refusing a run of one
    user on another user's thread before the run writes anything.
    """
    saver = RedisSaver(connection, key_prefix=keys_of(history).prefix, ttl=ttl)
    saver.thread_owners = ThreadGuard(history)
    return saver


def guarded(saver: BaseCheckpointSaver[Any], history: HistoryStore) -> BaseCheckpointSaver[Any]:
    """``saver`` checking thread owners in ``history`` at its reads (as is if it does)."""
    return saver if is_guarded(saver) else OwnedSaver(saver, ThreadGuard(history))


def shared(saver: BaseCheckpointSaver[Any]) -> BaseCheckpointSaver[Any]:
    """``saver`` without the owner check, for threads an app's users share on purpose:
    the wrapped saver of an :class:`OwnedSaver`, a copy of the memory's own saver with no
    thread owners, any other saver as it is (the turn records threads without owners).
    """
    if isinstance(saver, OwnedSaver):
        return saver.saver
    if isinstance(saver, BaseRedisSaver) and saver.thread_owners is not None:
        view = copy.copy(saver)
        view.thread_owners = None
        return view
    return saver


def async_saver(
    connection: RedisConnection, history: HistoryStore, ttl: CheckpointTTL | None
) -> AsyncRedisSaver:
    """An ``AsyncRedisSaver`` on the memory's connection and key prefix (as :func:`saver`)."""
    saver = AsyncRedisSaver(connection, key_prefix=keys_of(history).prefix, ttl=ttl)
    saver.thread_owners = ThreadGuard(history)
    return saver


def langgraph_store(
    connection: RedisConnection,
    history: HistoryStore,
    *,
    index: IndexConfig | None,
    ttl: TTLConfig | None,
) -> RedisStore:
    """A LangGraph ``RedisStore`` on the memory's connection and key prefix."""
    return RedisStore(connection, key_prefix=keys_of(history).prefix, index=index, ttl=ttl)

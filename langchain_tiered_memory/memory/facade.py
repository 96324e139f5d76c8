"""``TieredMemory``: one facade over the three memory tiers of every user.

Every public method has an ``a``-prefixed async twin with the same signature. The facade
knows the stores only through their interfaces, so any of them can be swapped; when all
three are the Redis stores on one connection, :meth:`TieredMemory.load` reads what a turn
needs in one pipelined round trip.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from langchain_core.embeddings import Embeddings
from pydantic import BaseModel

from langchain_tiered_memory import embeddings as _embeddings
from langchain_tiered_memory.memory import opening
from langchain_tiered_memory.memory.opening import (
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_POOL_TIMEOUT,
    DEFAULT_PREFIX,
)
from langchain_tiered_memory.stores.history import (
    HistoryStore,
    InMemoryHistoryStore,
)
from langchain_tiered_memory.stores.queue import SummaryQueue
from langchain_tiered_memory.stores.summaries import (
    InMemorySummaryStore,
    SummaryStore,
)
from langchain_tiered_memory.stores.tags import (
    DefaultTags,
    InMemoryTagStore,
    TagStore,
)
from langchain_tiered_memory.summarization.jobs import Summarization
from langchain_tiered_memory.tiers import Tiers

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.store.base import IndexConfig, TTLConfig

    from langchain_tiered_memory.persistence.checkpoint import (
        AsyncRedisSaver,
        CheckpointTTL,
        RedisSaver,
    )
    from langchain_tiered_memory.persistence.store import RedisStore

from langchain_tiered_memory.memory.job_methods import JobMethods
from langchain_tiered_memory.memory.privacy_methods import PrivacyMethods
from langchain_tiered_memory.memory.tier_methods import TierMethods

logger = logging.getLogger(__name__)

__all__ = ["TieredMemory"]


_V = TypeVar("_V")


class _OnTiers(Generic[_V]):
    """A facade attribute kept on its :class:`Tiers`: an app that swaps ``memory.history``
    (or sets ``memory.summarize_after``) changes what every service uses.
    """

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, objtype: type | None = None) -> _OnTiers[_V]: ...
    @overload
    def __get__(self, obj: TieredMemory, objtype: type | None = None) -> _V: ...
    def __get__(self, obj: TieredMemory | None, objtype: type | None = None) -> Any:
        return self if obj is None else getattr(obj.tiers, self.name)

    def __set__(self, obj: TieredMemory, value: _V) -> None:
        setattr(obj.tiers, self.name, value)


class TieredMemory(TierMethods, JobMethods, PrivacyMethods):
    """Short-term history, long-term tags and recalled summaries for many users.

    Example:
        >>> from langchain_tiered_memory import TieredMemory
        >>> from langchain_core.messages import HumanMessage, AIMessage
        >>> with TieredMemory.embedded("/tmp/tm-example") as memory:  # doctest: +SKIP
        ...     memory.add_session_log("alice", [HumanMessage("hi"), AIMessage("hello")])
        ...     memory.set_user_tags("alice", {"name": "Alice", "age": 30})
        ...     memory.add_summaries("alice", ["Alice's birthday is on May 8."])
        ...     memory.recall_summaries("alice", "when is her birthday?", n=1)

    """

    history = _OnTiers[HistoryStore]()
    tags = _OnTiers[TagStore]()
    summaries = _OnTiers[SummaryStore]()
    queue = _OnTiers[SummaryQueue | None]()
    user_ttl = _OnTiers[float | None]()
    history_retention = _OnTiers[int | None]()
    summarize_after = _OnTiers[int | None]()

    def __init__(
        self,
        *,
        history: HistoryStore,
        tags: TagStore,
        summaries: SummaryStore,
        history_retention: int | None = None,
        summarize_after: int | None = None,
        user_ttl: float | None = None,
        redis_url: str | None = None,
        _connection: opening.RedisConnection | None = None,
        _server: opening.EmbeddedRedis | None = None,
        _queue: SummaryQueue | None = None,
    ) -> None:
        """Wrap three stores.

        Args:
            history: the short-term history store.
            tags: the long-term exact tag store (its schema is the ``user_tag`` tool's).
            summaries: the long-term fuzzy store of summary items.
            history_retention: after each summarization keep at most this many messages
                of a user's history (never dropping unsummarized ones); ``None`` keeps all.
            summarize_after: on Redis, a turn that leaves a user with this many
                unsummarized messages puts the user on the summarization queue, for
                ``tiered-memory worker`` (``None``: no queue; the pending index is kept).
            user_ttl: data minimisation: seconds after a user's last write or load that
                all of the user's keys expire together (``None``: never). Unsummarized
                messages expire with the rest: pick it longer than the worker's lag.
            redis_url: the URL of the Redis in use, for a checkpointer or another process.

        """
        self.tiers = Tiers(
            history=history,
            tags=tags,
            summaries=summaries,
            queue=_queue,
            connection=_connection,
            user_ttl=user_ttl,
            history_retention=history_retention,
            summarize_after=summarize_after,
        )
        self.redis_url = redis_url
        self._connection = _connection
        self._server = _server
        if _connection is not None:
            # the memory's own checkpoints and store items on its Redis: every erasure and
            # export reaches them, whichever process or entry point calls it (views of the
            # keys; constructing them does no I/O)
            self.tiers.attach(
                checkpointer=opening.saver(_connection, history, None),
                store=opening.langgraph_store(_connection, history, index=None, ttl=None),
            )
        self.tiers.disk = _server  # the embedded server's files: rewritten after a delete
        # summarizing, the queue and the background jobs (see summarization/jobs.py)
        self.summarization = Summarization(self.tiers)

    # ----- construction -----

    @classmethod
    def from_url(
        cls,
        redis_url: str | None = None,
        *,
        embeddings: Embeddings | None = None,
        tag_schema: type[BaseModel] | None = None,
        key_prefix: str = DEFAULT_PREFIX,
        history_retention: int | None = None,
        cluster: bool | None = None,
        summarize_after: int | None = None,
        user_ttl: float | None = None,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        pool_timeout: float = DEFAULT_POOL_TIMEOUT,
    ) -> TieredMemory:
        """Memory on a Redis/Valkey server or Redis Cluster (``redis_url`` or ``$REDIS_URL``).

        No connection is made until the first call. Each of the sync and the async client
        holds up to ``max_connections`` (per node on a Cluster); past that a call waits up
        to ``pool_timeout`` seconds for one to come free, then fails with a
        :class:`MemoryBackendError` that says so (a Cluster client fails at once).

        Example:
            >>> memory = TieredMemory.from_url("redis://localhost:6379/0", key_prefix="app")

        """
        connection = opening.url_connection(
            redis_url, cluster=cluster, max_connections=max_connections, pool_timeout=pool_timeout
        )
        return cls(
            **opening.redis_parts(
                connection, embeddings=embeddings, tag_schema=tag_schema, key_prefix=key_prefix
            ),
            history_retention=history_retention,
            summarize_after=summarize_after,
            user_ttl=user_ttl,
        )

    @classmethod
    def embedded(
        cls,
        data_dir: str | os.PathLike[str] | None = None,
        *,
        embeddings: Embeddings | None = None,
        tag_schema: type[BaseModel] | None = None,
        key_prefix: str = DEFAULT_PREFIX,
        history_retention: int | None = None,
        appendfsync: str | None = None,
        summarize_after: int | None = None,
        user_ttl: float | None = None,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        pool_timeout: float = DEFAULT_POOL_TIMEOUT,
    ) -> TieredMemory:
        """Memory on an embedded real redis-server persisting under ``data_dir``.

        ``data_dir`` defaults to ``$TIERED_MEMORY_HOME`` or ``~/.local/share/
        langchain-tiered-memory``. Another process calling ``embedded()`` on the same
        directory shares the same server and data; the last one to close stops it, and a
        server that died is restarted by the next call (see :class:`EmbeddedRedis`).
        ``appendfsync`` (``"always"`` for a new server when not given, ``"everysec"``,
        ``"no"``) is applied to the server even if another process started it.

        Example:
            >>> with TieredMemory.embedded("/tmp/tm-doc") as memory:  # doctest: +SKIP
            ...     print(memory.redis_url)
            unix:///tmp/tm-doc/redis.sock

        """
        connection, server = opening.embedded_connection(
            data_dir,
            appendfsync=appendfsync,
            max_connections=max_connections,
            pool_timeout=pool_timeout,
        )
        return cls(
            **opening.redis_parts(
                connection, embeddings=embeddings, tag_schema=tag_schema, key_prefix=key_prefix
            ),
            history_retention=history_retention,
            summarize_after=summarize_after,
            user_ttl=user_ttl,
            _server=server,
        )

    @classmethod
    def in_memory(
        cls,
        *,
        embeddings: Embeddings | None = None,
        tag_schema: type[BaseModel] | None = None,
        history_retention: int | None = None,
    ) -> TieredMemory:
        """Process-local memory, for tests and prototypes: nothing persists.

        Example:
            >>> from langchain_tiered_memory.embeddings import HashingEmbeddings
            >>> memory = TieredMemory.in_memory(embeddings=HashingEmbeddings())
            >>> memory.set_user_tags("alice", {"age": 30})
            {'age': '30'}

        """
        return cls(
            history=InMemoryHistoryStore(),
            tags=InMemoryTagStore(schema=tag_schema or DefaultTags),
            summaries=InMemorySummaryStore(
                embeddings=embeddings or _embeddings.default_embeddings()
            ),
            history_retention=history_retention,
        )

    @property
    def data_dir(self) -> Path | None:
        """The embedded server's data directory, if this memory started or attached to one."""
        return self._server.data_dir if self._server else None

    # ----- lifecycle -----

    def close(self) -> None:
        """Wait for background summaries, close the connection, stop an embedded server
        this object started.
        """
        self.summarization.shutdown()
        if self._connection is not None:
            self._connection.close()
        if self._server is not None:
            self._server.stop()

    async def aclose(self) -> None:
        """Async :meth:`close` (also closes the asyncio client)."""
        self.summarization.shutdown()
        if self._connection is not None:
            await self._connection.aclose()
        if self._server is not None:
            self._server.stop()

    def __enter__(self) -> TieredMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> TieredMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ----- LangGraph checkpointers on the same Redis -----

    @overload
    def checkpointer(
        self, saver: None = None, *, ttl: CheckpointTTL | None = None
    ) -> RedisSaver: ...

    @overload
    def checkpointer(
        self,
        saver: BaseCheckpointSaver[Any],
        *,
        ttl: CheckpointTTL | None = None,
        attach: bool = True,
    ) -> BaseCheckpointSaver[Any]: ...

    def checkpointer(
        self,
        saver: BaseCheckpointSaver[Any] | None = None,
        *,
        ttl: CheckpointTTL | None = None,
        attach: bool = True,
    ) -> BaseCheckpointSaver[Any]:
        """A LangGraph checkpointer that refuses a run on another user's thread at its first
        read, before the run writes anything: the memory's own in its Redis (sharing its
        connection; with ``user_ttl`` and no ``ttl``, a thread expires with the user's
        keys), or ``saver`` wrapped in the same check and (``attach``) attached: erasure
        reaches it, so it must live as long as the memory (:meth:`attach`). Hand
        ``create_agent`` with the middleware, or an app graph holding the prebuilt one,
        this and not the bare saver.

        Raises:
            ValueError: no ``saver`` and this memory is not on Redis.

        Example:
            >>> agent = create_agent(model, middleware=[TieredMemoryMiddleware(memory)],
            ...     checkpointer=memory.checkpointer(InMemorySaver()))  # doctest: +SKIP
        """
        if saver is None:
            return opening.saver(self._redis("checkpointer"), self.history, self._thread_ttl(ttl))
        guarded = opening.guarded(saver, self.history)
        if attach:
            self.attach(checkpointer=guarded)
        return guarded

    def acheckpointer(self, *, ttl: CheckpointTTL | None = None) -> AsyncRedisSaver:
        """:meth:`checkpointer` as an ``AsyncRedisSaver`` (the same storage, for asyncio apps).

        Example:
            >>> saver = memory.acheckpointer()  # doctest: +SKIP
        """
        return opening.async_saver(
            self._redis("acheckpointer"), self.history, self._thread_ttl(ttl)
        )

    def _thread_ttl(self, ttl: CheckpointTTL | None) -> CheckpointTTL | None:
        if ttl is None and self.user_ttl is not None:
            return {"default_ttl": self.user_ttl / 60, "refresh_on_read": True}
        return ttl

    def store(
        self, *, index: IndexConfig | None = None, ttl: TTLConfig | None = None
    ) -> RedisStore:
        """A LangGraph ``BaseStore`` (for LangMem, ``create_react_agent(store=...)``, ...)
        in this memory's Redis, on its connection and key prefix.

        ``index`` turns on natural-language search: ``{"dims": 384, "fields": ["content"]}``;
        without ``"embed"`` it uses the memory's own embeddings.

        Raises:
            ValueError: this memory is not on Redis (``TieredMemory.in_memory()``).

        Example:
            >>> store = memory.store(index={"dims": 384, "fields": ["content"]})  # doctest: +SKIP
            >>> store.put(("memories", "alice"), "m1", {"content": "likes tea"})  # doctest: +SKIP
        """
        if index is not None and "embed" not in index:
            index = {**index, "embed": self.summaries.embeddings}
        return opening.langgraph_store(self._redis("store"), self.history, index=index, ttl=ttl)

    @property
    def connection(self) -> opening.RedisConnection | None:
        """The memory's Redis connection, read-only (``None`` off Redis).

        Example:
            >>> memory.connection.url  # doctest: +SKIP
        """
        return self._connection

    def _redis(self, what: str) -> opening.RedisConnection:
        if self._connection is None:
            raise ValueError(
                f"{what}() needs memory on Redis (from_url() or embedded()); with "
                "TieredMemory.in_memory() use LangGraph's InMemorySaver."
            )
        return self._connection

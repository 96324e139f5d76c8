"""``TieredMemory``: one facade over the three memory tiers of every user.

Every public method that does I/O has an ``a``-prefixed async twin with the same
signature: both are written once, as a plan (``_steps.paired``). The facade knows the
stores only through their interfaces, so any of them can be swapped; when all three are
the Redis stores on one connection, :meth:`TieredMemory.load` reads what a turn needs in
one pipelined round trip. The work is done by ``tiers.py`` (the tiers and a turn),
``summarization/jobs.py`` (summarizing, the queue) and ``privacy.py`` (erasure, export);
``opening.py`` opens the stores, saver and LangGraph store on one connection.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.store.base import BaseStore
from pydantic import BaseModel

from langchain_tiered_memory import embeddings as _embeddings
from langchain_tiered_memory import privacy
from langchain_tiered_memory._ids import validate_count, validate_user_id
from langchain_tiered_memory._steps import Plan, call, paired
from langchain_tiered_memory.capabilities import Capability
from langchain_tiered_memory.errors import UnsupportedOperationError
from langchain_tiered_memory.memory import opening
from langchain_tiered_memory.memory.opening import (
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_POOL_TIMEOUT,
    DEFAULT_PREFIX,
)
from langchain_tiered_memory.retrieval.conversation import (
    DEFAULT_CONTEXT_TURNS,
    recent_user_texts,
)
from langchain_tiered_memory.stores.history import (
    HistoryStore,
    InMemoryHistoryStore,
    OnInvalid,
)
from langchain_tiered_memory.stores.queue import SummaryQueue
from langchain_tiered_memory.stores.summaries import (
    InMemorySummaryStore,
    RedisSummaryStore,
    SummaryStore,
)
from langchain_tiered_memory.stores.summaries.reembed import UsersProgress, reembed_users_plan
from langchain_tiered_memory.stores.tags import (
    DefaultTags,
    InMemoryTagStore,
    TagChange,
    TagStore,
)
from langchain_tiered_memory.summarization.jobs import DEFAULT_SUMMARY_BATCH, Summarization
from langchain_tiered_memory.tiers import MemorySnapshot, Tiers

if TYPE_CHECKING:
    from langgraph.store.base import IndexConfig, TTLConfig

    from langchain_tiered_memory.persistence.checkpoint import (
        AsyncRedisSaver,
        CheckpointTTL,
        RedisSaver,
    )
    from langchain_tiered_memory.persistence.server_threads import LangGraphServerThreads
    from langchain_tiered_memory.persistence.store import RedisStore

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
        changed: dict[str, Any] = {self.name: value}
        dataclasses.replace(obj.tiers, **changed)  # checked as at construction
        setattr(obj.tiers, self.name, value)


class TieredMemory:
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
    capabilities = _OnTiers[frozenset[Capability]]()  # read only: what the stores can do

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
            summarize_after: a turn that leaves a user with this many unsummarized
                messages queues the user for ``tiered-memory worker`` (``Capability.QUEUE``).
            user_ttl: seconds after a user's last write or load that all of the user's
                keys expire together (``Capability.EXPIRY``; ``None``: never). Unsummarized
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

    @paired
    def close(self) -> Plan[None]:
        """Wait for background summaries; close what this object made (its connection and
        asyncio client, an embedded server it started), never stores or savers handed to it.
        """
        self.summarization.shutdown()
        if self._connection is not None:
            yield call(self._connection.close, self._connection.aclose)
        if self._server is not None:
            self._server.stop()

    aclose = close.aio

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
        self, saver: None = None, *, ttl: CheckpointTTL | None = None, shared_threads: bool = ...
    ) -> RedisSaver: ...

    @overload
    def checkpointer(
        self,
        saver: BaseCheckpointSaver[Any],
        *,
        ttl: CheckpointTTL | None = None,
        attach: bool = True,
        shared_threads: bool = False,
    ) -> BaseCheckpointSaver[Any]: ...

    def checkpointer(
        self,
        saver: BaseCheckpointSaver[Any] | None = None,
        *,
        ttl: CheckpointTTL | None = None,
        attach: bool = True,
        shared_threads: bool = False,
    ) -> BaseCheckpointSaver[Any]:
        """A LangGraph checkpointer that refuses a run on another user's thread at its first read,
        before the run writes anything: the memory's own in its Redis (sharing its connection; with
        ``user_ttl`` and no ``ttl``, a thread expires with the user's keys), or ``saver`` wrapped
        in the same check and (``attach``) attached: erasure reaches it, so it must live as long as
        the memory (:meth:`attach`). Hand ``create_agent`` with the middleware, or an app graph
        holding the prebuilt one, this and not the bare saver; a run naming no user is refused
        before it writes. ``shared_threads=True`` (users share threads on purpose): no owner check.

        Raises:
            ValueError: no ``saver`` and this memory is not on Redis.

        Example:
            >>> agent = create_agent(model, middleware=[TieredMemoryMiddleware(memory)],
            ...     checkpointer=memory.checkpointer(InMemorySaver()))  # doctest: +SKIP
        """
        if own := saver is None:  # the memory's own saver: nothing to attach
            saver = opening.saver(self._redis("checkpointer"), self.history, self._thread_ttl(ttl))
        checked = opening.shared(saver) if shared_threads else opening.guarded(saver, self.history)
        if attach and not own:
            self.attach(checkpointer=checked)
        return checked

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
            UnsupportedOperationError: this memory is not on Redis (``in_memory()``).

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

    @property
    def server(self) -> opening.EmbeddedRedis | None:
        """The embedded server this memory started or attached to, read-only (``None``
        for ``from_url()`` and ``in_memory()``).

        Example:
            >>> memory.server.data_dir  # doctest: +SKIP
        """
        return self._server

    def _redis(self, what: str) -> opening.RedisConnection:
        return self.tiers.require(Capability.SAVER, f"{what}()")

    # ----- short-term -----

    @paired
    def load_context(self, user_id: str, max: int = 20) -> Plan[list[BaseMessage]]:  # noqa: A002
        """The user's last ``max`` messages, newest last."""
        history = self.tiers.history
        return (yield call(history.tail, history.atail, user_id, validate_count(max, "max")))

    aload_context = load_context.aio

    @paired
    def add_session_log(
        self,
        user_id: str,
        messages: Sequence[BaseMessage],
        *,
        thread_id: str | None = None,
        thread_position: int | None = None,
        on_invalid: OnInvalid = "raise",
    ) -> Plan[None]:
        """Append a turn's messages to the user's history in one atomic write.

        ``thread_id`` (the graph passes its checkpointer thread) is recorded so that
        :meth:`forget_user` can delete the user's threads from a checkpointer too. With
        ``thread_position`` (where ``messages[0]`` stands in the thread) the write is
        idempotent: a retried save stores nothing twice. ``on_invalid="placeholder"``
        stores a short note in place of a message that cannot be stored (see
        :meth:`HistoryStore.append`) instead of refusing the whole turn.

        Raises:
            InvalidMessageError: a message cannot be stored (``on_invalid="raise"``);
                nothing was written.

        """
        yield from self.tiers.save(user_id, messages, thread_id, thread_position, on_invalid)

    aadd_session_log = add_session_log.aio

    # ----- long-term exact -----

    @paired
    def get_user_tag(self, user_id: str, tag: str) -> Plan[str | None]:
        """One tag's value, or ``None``."""
        tags = self.tiers.tags
        return (yield call(tags.get, tags.aget, user_id, tag))

    aget_user_tag = get_user_tag.aio

    @paired
    def get_user_tags(self, user_id: str) -> Plan[dict[str, str]]:
        """Every tag of the user."""
        tags = self.tiers.tags
        return (yield call(tags.get_all, tags.aget_all, user_id))

    aget_user_tags = get_user_tags.aio

    @paired
    def set_user_tags(
        self, user_id: str, mapping: Mapping[str, Any], *, thread_id: str | None = None
    ) -> Plan[dict[str, str]]:
        """Validate and write tags (all or nothing); return the stored string values.

        A value that changes is kept in the tag's history (:meth:`get_tag_history`) with
        the value it replaced, when, and ``thread_id``.

        Raises:
            InvalidTagError: unknown tag or invalid value; nothing was written.

        """
        tags = self.tiers.tags
        stored = yield call(tags.set, tags.aset, user_id, mapping, thread_id=thread_id)
        yield from self._touched(user_id)
        return stored  # type: ignore[no-any-return]

    aset_user_tags = set_user_tags.aio

    @paired
    def get_tag_history(self, user_id: str, tag: str) -> Plan[list[TagChange]]:
        """Every change of ``tag``, oldest first: ``value``, ``previous``, ``changed_at``,
        ``thread_id``.

        Example:
            >>> memory.set_user_tags("alice", {"age": 30})  # doctest: +SKIP
            >>> memory.set_user_tags("alice", {"age": 31}, thread_id="t2")  # doctest: +SKIP
            >>> [c["value"] for c in memory.get_tag_history("alice", "age")]  # doctest: +SKIP
            ['30', '31']

        """
        tags = self.tiers.tags
        return (yield call(tags.history, tags.ahistory, validate_user_id(user_id), tag))

    aget_tag_history = get_tag_history.aio

    # ----- long-term fuzzy -----

    @paired
    def add_summaries(
        self,
        user_id: str,
        items: Sequence[str],
        *,
        created_at: datetime | date | str | None = None,
        metadata: Mapping[str, Any] | None = None,
        supersedes: Mapping[int, Sequence[str]] | None = None,
    ) -> Plan[list[str]]:
        """Store summary items (near-duplicates of stored items are skipped); return ids.

        ``supersedes={i: [ids]}`` marks stored items that ``items[i]`` makes no longer true
        (see :meth:`SummaryStore.add`).
        """
        summaries = self.tiers.summaries
        ids = yield call(
            summaries.add,
            summaries.aadd,
            user_id,
            items,
            created_at=created_at,
            metadata=metadata,
            supersedes=supersedes,
        )
        yield from self._touched(user_id)
        return ids  # type: ignore[no-any-return]

    aadd_summaries = add_summaries.aio

    @paired
    def recall_summaries(
        self,
        user_id: str,
        query: str | None = None,
        n: int = 3,
        *,
        messages: Sequence[BaseMessage | str] = (),
        context_turns: int = DEFAULT_CONTEXT_TURNS,
        include_superseded: bool = False,
    ) -> Plan[list[Document]]:
        """The ``n`` items most relevant to ``query``, best first (``metadata["score"]``).

        With ``messages`` (a conversation, oldest first; strings are user messages) the
        query is its last ``context_turns`` user turns, ``query`` after them if given: what
        the graph recalls with, so a memory the conversation is about comes up though the
        last message does not name it
        (:mod:`~langchain_tiered_memory.retrieval.conversation`). Items that a newer one
        superseded (``metadata["superseded_by"]``, ``"valid_until"``) are left out unless
        ``include_superseded``.

        Example:
            >>> memory.recall_summaries("alice", messages=[
            ...     "There's a big test on Friday.", "I'm scared I'll fail again."
            ... ])  # doctest: +SKIP
            [Document(page_content='The user failed their driving test last spring.', ...)]
        """
        user_id = validate_user_id(user_id)  # whatever the store: an invalid id is an error
        n = validate_count(n, "n")
        texts = recent_user_texts([*messages, *([query] if query else [])], max(context_turns, 1))
        if not texts:
            return []
        summaries = self.tiers.summaries
        return (
            yield call(
                summaries.search_conversation,
                summaries.asearch_conversation,
                user_id,
                texts,
                n,
                include_superseded=include_superseded,
            )
        )

    arecall_summaries = recall_summaries.aio

    # ----- retention -----

    @paired
    def touch_user(self, user_id: str) -> Plan[None]:
        """Restart the clock of every key of the user (``user_ttl``): they expire together.
        Every write and load does it; a service that writes for the user calls it too.
        Nothing happens without ``user_ttl`` or off Redis.

        Example:
            >>> memory.touch_user("alice")  # doctest: +SKIP
        """
        yield call(self.tiers.touch_user, self.tiers.atouch_user, user_id)

    atouch_user = touch_user.aio

    def _touched(self, user_id: str) -> Plan[None]:
        """A write's :meth:`touch_user`, when keys expire (``user_ttl``)."""
        if self.tiers.user_ttl is not None:
            yield call(self.tiers.touch_user, self.tiers.atouch_user, user_id)

    # ----- one turn's read -----

    @paired
    def load(
        self,
        user_id: str,
        query: str | None,
        *,
        max_messages: int = 20,
        k: int = 3,
        context: Sequence[str] = (),
        thread_id: str | None = None,
        touch: bool = True,
        shared_thread: bool = False,
        unsaved: tuple[int, Sequence[BaseMessage], Sequence[BaseMessage]] | None = None,
    ) -> Plan[MemorySnapshot]:
        """Read a turn's memory: tags, the last ``max_messages`` messages, ``k`` items.

        ``context``: the conversation's earlier user messages (oldest first), recalled with
        ``query`` as one conversation query (see :meth:`recall_summaries`). ``thread_id``
        (the graph passes its checkpointer thread) is recorded as the user's at once, so
        :meth:`forget_user` finds a thread even if its first turn never reached the save;
        a thread another user's turns started is refused (:class:`ThreadOwnershipError`).
        ``shared_thread=True`` (users of the app share threads, said explicitly) records
        the thread without claiming it. ``touch=False``: an inspection, not the user's
        activity (the console's recall playground): the ``user_ttl`` clock is not restarted.
        ``unsaved=(thread position, messages, the saved ones before them)``, the graph's
        run: a fork or an edit there is saved first, so no branch the thread left is shown.

        On the Redis stores this is one pipelined round trip (plus a fetch of new summary
        items if another process added some) and one query embedding. A tier whose stored
        data is corrupt (:class:`CorruptMemoryError`) is logged as an error and comes back
        empty, so the other tiers still reach the model; the store's own methods raise it.
        """
        args = (query, max_messages, k, context, thread_id, touch, not shared_thread, unsaved)
        return (yield from self.tiers.load(user_id, *args))

    aload = load.aio

    # ----- summarization: langchain_tiered_memory.summarization.jobs does the work -----

    @paired
    def summarize_history(
        self,
        user_id: str,
        model: BaseChatModel,
        *,
        max_messages: int = DEFAULT_SUMMARY_BATCH,
        extractive_fallback: bool = False,
        grounded: bool = False,
        reconcile: bool = True,
    ) -> Plan[list[str]]:
        """Summarize the user's history after the watermark into stored items.

        Items and the new watermark are written together, only if no other summarizer
        moved the watermark meanwhile. Returns the ids stored (``[]`` if there was nothing
        new, or another summarizer got there first).

        ``extractive_fallback=True`` keeps the user's own first-person statements (quoted)
        when the model returns nothing usable, and ``grounded=True`` keeps only items whose
        content occurs in what the user said: both for small local models (see
        :func:`~langchain_tiered_memory.summarization.summarizer.summarize_messages`).

        ``reconcile=True`` (default) shows the model, in one more call, the stored items most
        like each new one: a new item that repeats a stored one is dropped, one that makes a
        stored one no longer true supersedes it (kept with ``superseded_by`` and
        ``valid_until``, out of default recall). An unusable answer stores the items as new.

        Raises:
            SummarizationError: the model failed or returned nothing usable; nothing was
                stored and the watermark did not move.

        """
        return (
            yield from self.summarization.summarize(
                user_id,
                model,
                max_messages=max_messages,
                extractive_fallback=extractive_fallback,
                grounded=grounded,
                reconcile=reconcile,
            )
        )

    asummarize_history = summarize_history.aio

    def summarize_in_background(
        self,
        user_id: str,
        model: BaseChatModel,
        *,
        min_messages: int = 1,
        extractive_fallback: bool = False,
        grounded: bool = False,
        reconcile: bool = True,
    ) -> Future[list[str]] | None:
        """Summarize the user's history in a worker thread if ``min_messages`` are pending.

        Returns at once (``None`` if a job for this user is already running). The check of
        how much is pending happens in the worker too, so the caller's turn pays nothing.
        Failures are logged; the history stays unsummarized for the next attempt.
        """
        return self.summarization.summarize_in_background(
            user_id,
            model,
            min_messages=min_messages,
            extractive_fallback=extractive_fallback,
            grounded=grounded,
            reconcile=reconcile,
        )

    def wait_for_background(self, timeout: float | None = None) -> None:
        """Block until the background summaries running now have finished."""
        self.summarization.wait_for_background(timeout)

    @paired
    def pending_users(self, min_messages: int = 20) -> Plan[list[str]]:
        """Users with at least ``min_messages`` unsummarized messages.

        On Redis, once :meth:`sweep_pending` has indexed every user (the worker does it at
        start), this reads the pending index: O(result), never touching idle users. Before
        that it SCANs every user. A user whose counters are unreadable
        (:class:`CorruptMemoryError`) is logged and left out, so one bad record cannot hide
        every other user's work.
        """
        return (yield from self.summarization.pending_users(min_messages))

    apending_users = pending_users.aio

    @paired
    def sweep_pending(self) -> Plan[int]:
        """Index every user's pending count (and queue the due ones) with one SCAN.

        Recovers what a crash between a turn's write and its queue note lost, and drops
        from the queue the users whose data is gone (expired by ``user_ttl``); after the
        first sweep :meth:`pending_users` reads the index. Returns the users swept.

        Example:
            >>> memory.sweep_pending()  # doctest: +SKIP
            1042
        """
        return (yield from self.summarization.sweep())

    asweep_pending = sweep_pending.aio

    @paired
    def summarize_pending(
        self,
        model: BaseChatModel,
        *,
        min_messages: int = 20,
        extractive_fallback: bool = False,
        grounded: bool = False,
    ) -> Plan[dict[str, list[str]]]:
        """The offline job: summarize every user with ``min_messages`` unsummarized messages
        (the async form: one user after another).

        A failure for one user (the model's, or that user's stored data) is logged and the
        others go on; that user's history stays unsummarized for the next run. Only an
        unreachable store (:class:`MemoryBackendError`) stops the job. Returns
        ``{user_id: stored ids}`` for the users that succeeded.

        Example:
            >>> memory.summarize_pending(ChatOpenAI(), min_messages=50)  # doctest: +SKIP
            {'alice': ['12', '13']}
        """
        return (
            yield from self.summarization.summarize_pending(
                model,
                min_messages=min_messages,
                extractive_fallback=extractive_fallback,
                grounded=grounded,
            )
        )

    asummarize_pending = summarize_pending.aio

    # ----- changing the embeddings model -----

    @paired
    def reembed(
        self, user_ids: Sequence[str] | None = None, *, progress: UsersProgress | None = None
    ) -> Plan[dict[str, int]]:
        """Re-embed stored summary items with this memory's embeddings model.

        For every user in ``user_ids`` (default: every user with items): stage the new
        vectors beside the old ones (resumable: a killed run continues where it stopped),
        then swap them in one script. Until its swap a user is served by processes on the
        old model; restart them with the new model when this returns. ``progress`` gets
        (user, items done, items in all) after each page. Returns items re-embedded per user.

        Raises:
            UnsupportedOperationError: not on Redis (in-process items need no conversion).
            ConcurrentReembedError: another run converts to another model.

        Example:
            >>> new = TieredMemory.from_url(url, embeddings=OpenAIEmbeddings())  # doctest: +SKIP
            >>> new.reembed()  # doctest: +SKIP
            {'alice': 12, 'bob': 3}
        """
        self.tiers.require(Capability.REEMBED, "reembed()")
        store = self.tiers.summaries
        if not isinstance(store, RedisSummaryStore):  # an app swapped in its own
            raise UnsupportedOperationError(
                f"reembed() converts summary vectors stored in Redis, not {type(store).__name__}."
            )
        with store.connection.errors():
            return (yield from reembed_users_plan(store, user_ids, progress=progress))

    areembed = reembed.aio

    # ----- privacy: langchain_tiered_memory.privacy does the work -----

    def attach(
        self,
        *,
        checkpointer: BaseCheckpointSaver | None = None,
        store: BaseStore | None = None,
        store_namespaces: Sequence[tuple[str, ...]] | None = None,
        server: LangGraphServerThreads | None = None,
    ) -> None:
        """Tell the memory of a checkpointer or store that holds its users' data, once:
        every erasure and export reaches it, from any entry point and (recorded beside the
        data) any process, which reports as ``unreached`` what it does not hold itself.
        The memory's own ``checkpointer()`` and ``store()`` need no attaching. A saver that
        closes before the memory (a per-request one) is dropped, and an erasure while none
        on its storage (its class and SQLite file or database) is open reports it as
        ``unreached``. ``store_namespaces``: the
        templates of a user's namespaces in ``store`` (default
        ``[("memories", "{user_id}")]``); without ``store``, of the memory's own. An
        async-only saver (``AsyncPostgresSaver``) is erased by ``aforget_user``.
        ``server``: a LangGraph server's threads (``LangGraphServerThreads``), erased and
        exported through its API; without one they are ``unreached``.

        Example:
            >>> memory.attach(checkpointer=PostgresSaver(conn))  # doctest: +SKIP
            >>> memory.forget_user("alice")  # its threads there too  # doctest: +SKIP
        """
        if store_namespaces is not None:
            privacy.check_namespaces(store_namespaces)
        self.tiers.attach(
            checkpointer=checkpointer, store=store, store_namespaces=store_namespaces, server=server
        )
        self.tiers.record_attachments()

    @paired
    def forget_user(
        self,
        user_id: str,
        *,
        checkpointer: BaseCheckpointSaver | None = None,
        store: BaseStore | None = None,
        store_namespaces: Sequence[tuple[str, ...]] | None = None,
    ) -> Plan[dict[str, int]]:
        """Erase every tier of the user; return how much of each was removed.

        Erases everything the memory knows of: the three tiers, the threads the user owns
        (a thread is its first user's: another user's thread is never touched) in every
        checkpointer the memory knows (on Redis its own, which ``checkpointer()`` hands
        out, and any given to :meth:`attach`), and the user's namespaces in every store it
        knows (its own ``store()`` and any attached). ``checkpointer`` and ``store`` add
        one more for this call only. A user's namespaces are those that start with one of
        the store's templates once ``"{user_id}"`` is replaced by the user id (default
        LangMem's ``("memories", "{user_id}")``; ``store_namespaces`` gives ``store``'s,
        e.g. ``[("{user_id}",)]`` for LangGraph's ``(user_id, ...)`` layout). The user id is
        matched at that position only, never as any label: a user called ``"memories"``
        erases ``("memories", "memories")``, not everyone's ``("memories", <id>)``. On the
        package's embedded server the server's files are rewritten before this returns, so
        the erased data is off disk too
        (:meth:`EmbeddedRedis.compact <langchain_tiered_memory.EmbeddedRedis.compact>`).

        Example:
            >>> memory.forget_user("alice", checkpointer=saver, store=store)  # doctest: +SKIP
            {'threads': 2, 'history': 12, 'tags': 2, 'summaries': 3, 'store_items': 4}
        """
        return (
            yield from privacy.forget_user(
                self.tiers,
                user_id,
                checkpointer=checkpointer,
                store=store,
                store_namespaces=store_namespaces,
            )
        )

    aforget_user = forget_user.aio

    @paired
    def delete_summaries(self, user_id: str, ids: Sequence[str]) -> Plan[int]:
        """Delete summary items by id; return how many existed. On the embedded server its
        files are rewritten before this returns, so the deleted text is off disk too.

        Example:
            >>> memory.delete_summaries("alice", ["3"])  # doctest: +SKIP
            1
        """
        return (yield from privacy.delete_items(self.tiers, user_id, ids))

    adelete_summaries = delete_summaries.aio

    @paired
    def update_summary(self, user_id: str, item_id: str, text: str) -> Plan[bool]:
        """Fix one summary item's text in place: same id, date, provenance and
        supersession, the earlier text kept on the item (``metadata["edits"]``); the old
        text is off the embedded server's files when this returns. Returns whether the
        text changed.

        Raises:
            InvalidSummaryError: no such item, or ``text`` is not a valid item.

        Example:
            >>> memory.update_summary("alice", "3", "Alice is 31.")  # doctest: +SKIP
            True
        """
        return (yield from privacy.edit_item(self.tiers, user_id, item_id, text))

    aupdate_summary = update_summary.aio

    @paired
    def delete_user_tags(self, user_id: str, names: Sequence[str]) -> Plan[int]:
        """Delete tags by name (logged in the tag history); return how many existed. The
        embedded server's files are rewritten before this returns.

        Example:
            >>> memory.delete_user_tags("alice", ["age"])  # doctest: +SKIP
            1
        """
        return (yield from privacy.delete_tags(self.tiers, user_id, names))

    adelete_user_tags = delete_user_tags.aio

    @paired
    def forget_thread(
        self, user_id: str, thread_id: str, *, checkpointer: BaseCheckpointSaver | None = None
    ) -> Plan[dict[str, int]]:
        """Erase one conversation thread of the user; return how much was removed.

        Deletes the thread's messages from the history, the summary items made only from
        that thread (those other threads said too stay, the thread no longer among their
        ``source_threads``), the thread's checkpoints in each checkpointer the memory knows
        (see :meth:`forget_user`; plus ``checkpointer``), but only for a thread this user
        owns (another user's thread id is left alone: 0 checkpoints). Tags stay: they are
        the user's, and their history says which thread set them.

        Example:
            >>> memory.forget_thread("alice", "t-2", checkpointer=saver)  # doctest: +SKIP
            {'messages': 4, 'summaries': 1, 'checkpoints': 3}

        """
        return (
            yield from privacy.forget_thread(
                self.tiers, user_id, thread_id, checkpointer=checkpointer
            )
        )

    aforget_thread = forget_thread.aio

    @paired
    def export_user(
        self,
        user_id: str,
        *,
        checkpointer: BaseCheckpointSaver | None = None,
        store: BaseStore | None = None,
        store_namespaces: Sequence[tuple[str, ...]] | None = None,
    ) -> Plan[dict[str, Any]]:
        """A JSON-serializable copy of every tier of the user.

        The latest state of each thread the user owns, from the checkpointers the memory
        knows (``"thread_states"``), and the items of the user's namespaces in the stores
        it knows (``"store"``): what :meth:`forget_user` would erase.

        Example:
            >>> memory.export_user("alice", checkpointer=saver)["thread_states"]  # doctest: +SKIP
            [{'thread_id': 't-1', 'checkpoint_id': '1f0...', 'values': {...}}]
        """
        return (
            yield from privacy.export_user(
                self.tiers,
                user_id,
                checkpointer=checkpointer,
                store=store,
                store_namespaces=store_namespaces,
            )
        )

    aexport_user = export_user.aio

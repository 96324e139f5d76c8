"""``Tiers``: the three stores of a memory and what works across them, for the services.

Summarization, erasure and export (``summarization/jobs.py``, ``privacy.py``) and the facade's
turn read and save work on this object, not on ``TieredMemory``: the facade composes them
and owns no store logic, and no service imports the facade. What lives here is what takes
more than one store: a turn's read (one pipelined round trip when all three are the Redis
stores), a turn's save with the queue note and the retention clock, and the clock itself.
"""

from __future__ import annotations

import inspect
import itertools
import logging
import os
import sqlite3
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from langchain_core.documents import Document
from langchain_core.messages import BaseMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from langchain_tiered_memory._ids import (
    validate_count,
    validate_run_thread_id,
    validate_thread_id,
    validate_user_id,
)
from langchain_tiered_memory._steps import Plan, Step, call
from langchain_tiered_memory.backend.connection import RedisConnection
from langchain_tiered_memory.backend.keys import keys_of
from langchain_tiered_memory.capabilities import Capability, lists_users, missing
from langchain_tiered_memory.errors import CorruptMemoryError, WatermarkConflict
from langchain_tiered_memory.language.text import unsaid
from langchain_tiered_memory.persistence.checkpoint.owned import aholds_thread, holds_thread
from langchain_tiered_memory.persistence.server_threads import SERVER_KIND, LangGraphServerThreads
from langchain_tiered_memory.stores import redis_turn
from langchain_tiered_memory.stores.attachments import (
    Attached,
    AttachmentRecord,
    Attachments,
    entries,
)
from langchain_tiered_memory.stores.history import Appended, HistoryStore, OnInvalid, ThreadGuard
from langchain_tiered_memory.stores.history.codec import load_messages
from langchain_tiered_memory.stores.history.rule import changes_thread
from langchain_tiered_memory.stores.queue import SummaryQueue
from langchain_tiered_memory.stores.redis_turn import RedisTurn
from langchain_tiered_memory.stores.summaries import SummaryStore
from langchain_tiered_memory.stores.tags import TagStore
from langchain_tiered_memory.stores.turn import ComposedTurn, Read, TurnStorage

__all__ = ["DEFAULT_STORE_NAMESPACES", "Disk", "MemorySnapshot", "Tiers"]

# LangMem's layout: create_manage_memory_tool(namespace=("memories", "{user_id}"))
DEFAULT_STORE_NAMESPACES: tuple[tuple[str, ...], ...] = (("memories", "{user_id}"),)

logger = logging.getLogger(__name__)

# reads of the summarization watermark an edit's or a fork's rewind makes (each compare-and-set)
_REWIND_TRIES = 3

_T = TypeVar("_T")


class Disk(Protocol):
    """Files a server keeps of the data (the embedded server's): rewritten after a delete
    so that what was deleted is off disk too.
    """

    def compact(self) -> None:
        """Rewrite the files, waiting until done."""

    async def acompact(self) -> None:
        """Async :meth:`compact`."""


Templates = tuple[tuple[str, ...], ...]


def _templates(namespaces: Sequence[tuple[str, ...]] | None) -> Templates | None:
    if not namespaces:
        return None
    if isinstance(namespaces, tuple) and isinstance(namespaces[0], str):
        return (namespaces,)  # type: ignore[return-value]  # one template given bare
    return tuple(tuple(n) for n in namespaces)


def _same_keys(a: object, b: object) -> bool:
    """Whether two savers (or two stores) are the same object, or views of the same keys
    (one Redis server and key prefix, whatever the connection: a ``RedisSaver`` and an
    ``AsyncRedisSaver`` of the memory are one, and so is one the app opened on the same
    URL); a saver wrapped for ownership is the saver it wraps.
    """
    a, b = getattr(a, "saver", a), getattr(b, "saver", b)
    if a is b:
        return True
    ours, theirs = getattr(a, "connection", None), getattr(b, "connection", None)
    prefix = getattr(getattr(a, "keys", None), "prefix", None)
    return (
        ours is not None
        and theirs is not None
        and (ours is theirs or getattr(ours, "url", None) == getattr(theirs, "url", ""))
        and getattr(getattr(b, "keys", None), "prefix", None) == prefix
    )


def _in_process(thing: object, identity: Attached) -> bool:
    """A saver or store whose data lives in this process only (LangGraph's in-memory
    ones, or one on an in-memory SQLite database): it dies with the process, so no other
    process's erasure has anything to miss.
    """
    return isinstance(thing, (InMemorySaver, InMemoryStore)) or identity.where == _IN_MEMORY


# what _where says of a SQLite database in memory (no file): it dies with its process
_IN_MEMORY = "\x00memory"
# a saver or store whose storage cannot be known: told apart by the instance, in this process
_instances = itertools.count(1)
_identities: weakref.WeakKeyDictionary[Any, Attached] = weakref.WeakKeyDictionary()


def _sqlite_file(name: str) -> str:
    """A SQLite database's file as one path (``_IN_MEMORY`` for none)."""
    if not name or name == ":memory:" or "mode=memory" in name:
        return _IN_MEMORY
    return name if name.startswith("file:") else os.path.realpath(name)


def _conninfo(text: str) -> str | None:
    """A PostgreSQL connection string without its password (``None``: not one)."""
    try:  # a saver on PostgreSQL comes with psycopg; without it there is none to describe
        from psycopg import Error
        from psycopg.conninfo import conninfo_to_dict, make_conninfo
    except ImportError:
        return None
    try:
        params = {k: v for k, v in conninfo_to_dict(text).items() if k != "password"}
    except Error:  # not a connection string libpq reads
        return None
    return make_conninfo(**{k: str(v) for k, v in sorted(params.items())})


def _where(thing: object) -> str | None:
    """Where a saver or store keeps its data, as far as its connection tells: a SQLite
    file's path (``_IN_MEMORY``: a database in memory), a PostgreSQL connection string
    without its password; ``None`` where it cannot be known (then erasure tells it by the
    instance). Read while the connection is open: a closed one tells nothing.
    """
    conn = getattr(thing, "conn", None)
    if isinstance(conn, sqlite3.Connection):
        try:
            rows = conn.execute("PRAGMA database_list").fetchall()
        except sqlite3.Error:  # closed, or created in another thread
            return None
        return next((_sqlite_file(str(f or "")) for _, name, f in rows if name == "main"), None)
    if type(conn).__module__.startswith("aiosqlite"):
        # aiosqlite opens its connection in its own thread from the path it was given,
        # which it keeps only in the opener's closure
        try:
            opener = getattr(conn, "_connector", None)
            given = inspect.getclosurevars(opener).nonlocals.get("database")  # type: ignore[arg-type]
        except TypeError:  # no opener, or not a function: another aiosqlite
            return None
        if isinstance(given, bytes):
            given = given.decode(errors="replace")
        return None if given is None else _sqlite_file(str(given))
    info = getattr(conn, "info", None)
    dsn = getattr(info, "dsn", None)  # psycopg's Connection (its dsn holds no password)
    if isinstance(dsn, str):
        return _conninfo(dsn)
    conninfo = getattr(conn, "conninfo", None)  # psycopg_pool's ConnectionPool
    if isinstance(conninfo, str):
        return _conninfo(conninfo)
    return None


def _identity(what: str, thing: object) -> Attached:
    """How erasure tells ``thing`` (a saver, ``what="checkpointer"``, or a store) from
    another: its class and where it keeps its data, or else this instance. Worked out once
    per object, while it is open (a closed one keeps the identity it had).
    """
    try:
        known = _identities.get(thing)
    except TypeError:  # not weakly referable or not hashable: worked out each time
        known = None
    if known is not None:
        return known
    kind = f"{what} {type(thing).__name__}"
    where = _where(thing)
    made = Attached(kind, where) if where is not None else Attached(kind, None, next(_instances))
    try:
        _identities[thing] = made
    except TypeError:
        made = Attached(kind, where, None if where is not None else id(thing))
    return made


def _closed(saver: object) -> bool:
    """Whether a saver's connection is closed (LangGraph's per-request ``async with
    AsyncSqliteSaver.from_conn_string(...)`` leaves one behind each request): erasure skips
    it and says its storage was not reached, instead of failing for every user.
    """
    conn = getattr(getattr(saver, "saver", saver), "conn", None)
    if isinstance(conn, sqlite3.Connection):
        try:
            conn.in_transaction  # noqa: B018  # raises on a closed connection, nothing else does
        except sqlite3.ProgrammingError:
            return True
        return False
    if type(conn).__module__.startswith("aiosqlite"):
        return getattr(conn, "_connection", True) is None  # aiosqlite has no public flag
    closed = getattr(conn, "closed", False)  # psycopg's Connection and ConnectionPool
    return closed if isinstance(closed, bool) else False


@dataclass
class MemorySnapshot:
    """What one turn needs from memory: tags, recent history and recalled items."""

    tags: dict[str, str] = field(default_factory=dict)
    history: list[BaseMessage] = field(default_factory=list)
    recalled: list[Document] = field(default_factory=list)
    # with history: the items a newer one superseded (what the history may say as current)
    superseded: list[str] = field(default_factory=list)


@dataclass
class Tiers:
    """A memory's stores and settings, as the services use them.

    The stores are plain attributes (an app may swap one on its ``TieredMemory``, which
    keeps them here); :attr:`turn` is chosen again when one is swapped, for that reason.

    Example:
        >>> from langchain_tiered_memory.stores import InMemoryHistoryStore, InMemoryTagStore
        >>> from langchain_tiered_memory.stores import InMemorySummaryStore
        >>> from langchain_tiered_memory.embeddings import HashingEmbeddings
        >>> tiers = Tiers(
        ...     history=InMemoryHistoryStore(),
        ...     tags=InMemoryTagStore(),
        ...     summaries=InMemorySummaryStore(embeddings=HashingEmbeddings()),
        ... )
        >>> tiers.turn.one_round_trip
        False
    """

    history: HistoryStore
    tags: TagStore
    summaries: SummaryStore
    queue: SummaryQueue | None = None
    connection: RedisConnection | None = None
    user_ttl: float | None = None
    history_retention: int | None = None
    summarize_after: int | None = None
    # What else holds the users' data, so that every erasure and export reaches it
    # whichever door it comes through (privacy.py reads these): LangGraph checkpointers
    # (the memory's own Redis saver first), LangGraph stores with the namespace templates
    # of a user's items, and the server's files.
    checkpointers: list[BaseCheckpointSaver[Any]] = field(default_factory=list)
    stores: list[tuple[BaseStore, Templates]] = field(default_factory=list)
    disk: Disk | None = None
    # what this process ever attached that another process cannot reach (each saver and
    # store by its class and storage, or instance): one that closed since is reported as
    # not reached unless one open on the same storage reaches it, as the record does
    # across processes
    attached: set[Attached] = field(default_factory=set)
    recorded_templates: set[tuple[str, ...]] = field(default_factory=set)
    # LangGraph servers' threads, reached through their API (attach(server=...))
    servers: list[LangGraphServerThreads] = field(default_factory=list)
    _turn: tuple[tuple[object, ...], TurnStorage] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def attach(
        self,
        *,
        checkpointer: BaseCheckpointSaver[Any] | None = None,
        store: BaseStore | None = None,
        store_namespaces: Sequence[tuple[str, ...]] | None = None,
        server: LangGraphServerThreads | None = None,
    ) -> None:
        """Add a checkpointer, a store and/or a LangGraph server's threads that hold the
        users' data (each once; a server by its URL).

        ``store_namespaces`` are the templates of a user's namespaces in ``store`` (default
        :data:`DEFAULT_STORE_NAMESPACES`); without ``store`` they are added to those of
        the memory's own store (the first one).
        """
        self.checkpointers, self.stores = self.reaching(
            checkpointer=checkpointer, store=store, store_namespaces=store_namespaces
        )
        if server is not None:
            self.servers = [s for s in self.servers if s.url != server.url] + [server]

    def served(self) -> Plan[None]:
        """The plan that notes that this process runs the memory graph for a LangGraph
        server (a run's metadata said so: ``persistence.server_threads.served_by``): the
        server keeps threads of the users that no saver of the memory's reaches. Recorded
        beside the data once a process, so an erasure from any process that holds no
        :class:`LangGraphServerThreads` reports them as ``unreached`` (every turn's write
        adds the entry again after an operator's clear).
        """
        served = Attached(SERVER_KIND)
        if served in self.attached:
            return
        self.attached.add(served)
        record = self.attachment_record()
        if record is not None and self.connection is not None:
            add = [record.add_call(entries([], [served]))]
            yield call(self.connection.run_all, self.connection.arun_all, add)

    def record_attachments(self) -> None:
        """Record what is attached beside the data (an app's ``attach``): every process's
        erasure and export then reaches the own store's namespaces, and says what else
        it cannot reach. What every process reads anyway (the default templates) or this
        one recorded already is not written again: building a graph contacts nothing for
        it (a record an operator cleared since is written again by the next turn's write,
        :meth:`save`). Off Redis, only this process's own note of what it attached.
        """
        others = self._others(self.checkpointers, self.stores) - self.attached
        if (record := self.attachment_record()) is not None:
            own = [t for t in self._own_templates() if t not in self.recorded_templates]
            record.add(own, others)
            self.recorded_templates.update(own)
        self.attached |= others

    def _own_templates(self) -> list[tuple[str, ...]]:
        """The own store's templates other processes must be told of (not the defaults)."""
        return [
            t
            for s, names in self.stores
            if self._own(s)
            for t in names
            if t not in DEFAULT_STORE_NAMESPACES
        ]

    def _held_entries(self) -> list[str]:
        """The record's entries of what this process holds open now (what a turn's write
        adds again, so that a record cleared since lists it).
        """
        if self.connection is None or not (self.attached or self.recorded_templates):
            return []  # nothing attached: a turn sends nothing for it
        savers = [c for c in self.checkpointers if not _closed(c)]
        served = {a for a in self.attached if a.kind == SERVER_KIND}
        return entries(self._own_templates(), self._others(savers, self.stores) | served)

    def attachment_record(self) -> AttachmentRecord | None:
        """Where the attachments of every process are recorded (``None`` off Redis)."""
        if self.connection is None:
            return None
        return AttachmentRecord(self.connection, keys_of(self.history))

    def _own(self, thing: object) -> bool:
        """Whether a saver or store is a view of the memory's own keys (any process has it)."""
        return self.connection is not None and _same_keys(thing, self.history)

    def _others(
        self, savers: Sequence[BaseCheckpointSaver[Any]], stores: Sequence[tuple[BaseStore, Any]]
    ) -> set[Attached]:
        # a guarded saver by the saver it wraps (OwnedSaver.saver); an in-process one is
        # not another process's to reach
        named = [("checkpointer", getattr(s, "saver", s)) for s in savers if not self._own(s)]
        named += [("store", s) for s, _ in stores if not self._own(s)]
        found = [(thing, _identity(what, thing)) for what, thing in named]
        return {identity for thing, identity in found if not _in_process(thing, identity)}

    def with_recorded(
        self,
        savers: Sequence[BaseCheckpointSaver[Any]],
        stores: list[tuple[BaseStore, Templates]],
        recorded: Attachments,
    ) -> tuple[list[tuple[BaseStore, Templates]], list[str]]:
        """``stores`` with the templates other processes recorded for the memory's own
        store, and what was attached (by any process, or this one before) that no saver or
        store given here reaches: each by its class and storage (a closed ``SqliteSaver``
        on ``a.db`` is not reached by an open one on ``b.db``), by its class alone where
        the record names no storage (an earlier version's entry).
        """
        merged = [
            (s, tuple(dict.fromkeys((*names, *recorded.own_store_namespaces))))
            if self._own(s)
            else (s, names)
            for s, names in stores
        ]
        held = self._others(savers, stores)
        held |= {Attached(SERVER_KIND, s.url) for s in self.servers}
        missed = {
            a for a in recorded.attached | self.attached if not any(a.reached_by(h) for h in held)
        }
        # this process's own saver of unknown storage, recorded by its class, is said once
        said = {a.kind for a in missed if not a.by_class}
        return merged, sorted(str(a) for a in missed if not (a.by_class and a.kind in said))

    def reaching(
        self,
        *,
        checkpointer: BaseCheckpointSaver[Any] | None = None,
        store: BaseStore | None = None,
        store_namespaces: Sequence[tuple[str, ...]] | None = None,
    ) -> tuple[list[BaseCheckpointSaver[Any]], list[tuple[BaseStore, Templates]]]:
        """The checkpointers and stores an erasure or export reaches: the attached ones and
        these, each once. A saver or store that is a view of the same keys as one already
        there (the same Redis connection and key prefix: ``memory.checkpointer()``,
        ``memory.store()``) is that one; a store's templates are merged. An attached saver
        that closed since is dropped (so per-request savers stay bounded by the open ones;
        its storage stays in :attr:`attached`, unreached until a saver on it is open).
        """
        savers = [c for c in self.checkpointers if not _closed(c)]
        if checkpointer is not None:
            # the object given stands for a view of the same keys (its caches go with it)
            savers = [c for c in savers if not _same_keys(c, checkpointer)] + [checkpointer]
        stores = list(self.stores)
        templates = _templates(store_namespaces)
        if store is None and templates and stores:
            store = stores[0][0]
        if store is not None:
            wanted = templates or DEFAULT_STORE_NAMESPACES
            have = [n for s, n in stores if _same_keys(s, store)]
            merged = tuple(dict.fromkeys((*(have[0] if have else ()), *wanted)))
            stores = [(s, n) for s, n in stores if not _same_keys(s, store)] + [(store, merged)]
        return savers, stores

    def __post_init__(self) -> None:
        after = self.summarize_after
        if after is not None and (not isinstance(after, int) or after < 1):
            raise ValueError(f"summarize_after must be a positive int, got {after!r}.")
        ttl = self.user_ttl
        if ttl is not None and not (isinstance(ttl, (int, float)) and ttl > 0):
            raise ValueError(f"user_ttl must be a positive number of seconds, got {ttl!r}.")
        # never accepted and then silently not applied
        if ttl is not None:
            self.require(Capability.EXPIRY, "user_ttl")
        if after is not None:
            self.require(Capability.QUEUE, "summarize_after")

    @property
    def capabilities(self) -> frozenset[Capability]:
        """What the stores can do beyond the contract (see ``capabilities``)."""
        have: set[Capability] = set()
        if self.connection is not None:
            have |= {Capability.EXPIRY, Capability.REEMBED, Capability.SAVER, Capability.UPGRADE}
            have.add(Capability.USER_DIRECTORY)  # the directory every turn writes
        elif lists_users(self.tags) and lists_users(self.summaries):
            have.add(Capability.USER_DIRECTORY)  # each store lists its own users
        if self.queue is not None:
            have.add(Capability.QUEUE)
        if self.turn.one_round_trip:
            have.add(Capability.ONE_ROUND_TRIP_TURN)
        return frozenset(have)

    def require(self, capability: Capability, what: str) -> RedisConnection:
        """The memory's Redis connection, for ``what``, which needs ``capability``.

        Raises:
            UnsupportedOperationError: the stores lack it; the message names them and
                what to do instead.
        """
        if capability not in self.capabilities or self.connection is None:
            raise missing(capability, what, (self.history, self.tags, self.summaries))
        return self.connection

    @property
    def turn(self) -> TurnStorage:
        """The storage every turn's read and write go through: one round trip each way
        when the three stores are the Redis ones on one connection, else composed of the
        stores' own methods. Chosen once for a set of stores.
        """
        stores = (self.history, self.tags, self.summaries)
        chosen = self._turn
        if chosen is None or any(a is not b for a, b in zip(chosen[0], stores, strict=True)):
            storage = RedisTurn.of(*stores) or ComposedTurn(*stores, clock=self._clock)
            chosen = self._turn = (stores, storage)
        return chosen[1]

    def _clock(self, user_id: str) -> Step:
        return call(self.touch_user, self.atouch_user, user_id)

    def ttl_ms(self) -> int | None:
        """``user_ttl`` in milliseconds, as the Redis scripts take it."""
        return int(self.user_ttl * 1000) if self.user_ttl is not None else None

    # ----- retention -----

    def touch_user(self, user_id: str) -> None:
        """Restart the clock of every key of the user (``user_ttl``): they expire together.
        Nothing happens without ``user_ttl`` or off Redis.
        """
        ttl_ms = self.ttl_ms()
        if self.connection is not None and ttl_ms is not None:
            redis_turn.touch_user(self.connection, keys_of(self.history), user_id, ttl_ms)

    async def atouch_user(self, user_id: str) -> None:
        """Async :meth:`touch_user`."""
        ttl_ms = self.ttl_ms()
        if self.connection is not None and ttl_ms is not None:
            await redis_turn.atouch_user(self.connection, keys_of(self.history), user_id, ttl_ms)

    # ----- one turn (plans: run them with _steps.drive or adrive) -----

    def save(
        self,
        user_id: str,
        messages: Sequence[BaseMessage],
        thread_id: str | None,
        thread_position: int | None,
        on_invalid: OnInvalid,
    ) -> Plan[None]:
        """The plan of ``TieredMemory.add_session_log``."""
        thread_id = validate_thread_id(thread_id)
        storage = self.turn
        # what this process holds attached, added again to the record beside the data: an
        # operator's ``attachments --clear`` removed it, and an erasure from another
        # process would otherwise report as complete one that misses this app's savers.
        # It rides in the Redis turn's one round trip; another storage's write sends it
        # in its own. Nothing for an app that attached nothing; re-adding changes nothing.
        found = self._held_entries()
        record = self.attachment_record() if found else None
        ride = [record.add_call(found)] if record is not None else []
        rides = storage.one_round_trip  # the write that is one round trip takes it
        appended = yield from storage.write(
            user_id,
            messages,
            thread_id=thread_id,
            thread_position=thread_position,
            on_invalid=on_invalid,
            queue=self.queue,
            threshold=self.summarize_after,
            ttl_ms=self.ttl_ms(),
            also=ride if rides else (),
        )
        if ride and not rides and self.connection is not None:
            yield call(self.connection.run_all, self.connection.arun_all, ride)
        yield from self._changed(user_id, appended, messages)

    def _changed(
        self, user_id: str, appended: Appended, messages: Sequence[BaseMessage]
    ) -> Plan[None]:
        """Follow an edit or a fork ``rule.thread_append`` found: what was made from the old
        messages is unmade; a tag the old words said and no new one does goes ("30" -> "31").
        """
        positions = [*appended.left, *(p for p, _ in appended.replaced)]
        if not positions:
            return
        yield from self._unmade(user_id, positions, compact=False)
        history, tags = self.history, self.tags
        gone = [m for _, m in appended.replaced]
        if appended.left:
            raws = yield call(history.read_at, history.aread_at, user_id, list(appended.left))
            gone += load_messages([r for r in raws if r is not None])
        # the user's words: a tool's report ("Recorded: age=30.") re-sent with an edit is not
        old = [str(m.text) for m in gone if m.type == "human"]
        held = yield call(tags.get_all, tags.aget_all, user_id)
        if stale := unsaid(held, old, [str(m.text) for m in messages if m.type == "human"]):
            yield call(tags.delete, tags.adelete, user_id, stale)
        if self.disk is not None:  # the replaced words and unmade items off disk
            yield call(self.disk.compact, self.disk.acompact)

    def _unmade(
        self, user_id: str, positions: Sequence[int], *, compact: bool = True
    ) -> Plan[None]:
        """Unmake what was made from the history's messages at ``positions`` (edited, or
        on a branch a fork left): the items made from them (by ``source_positions``) are
        deleted and the summarization watermark moves back to the first, so the items are
        made again from what the thread now says (marked messages are skipped).
        """
        if not positions:
            return
        summaries, wanted = self.summaries, set(positions)
        items = yield call(summaries.get_all, summaries.aget_all, user_id)
        made = [str(d.id) for d in items if wanted & set(d.metadata.get("source_positions") or ())]
        if made:
            yield call(summaries.delete, summaries.adelete, user_id, made)
        first = min(wanted)
        for _ in range(_REWIND_TRIES):  # a summarizer may move the watermark meanwhile
            mark = yield call(summaries.get_watermark, summaries.aget_watermark, user_id)
            if first >= mark:
                break
            try:
                yield call(summaries.add, summaries.aadd, user_id, [], watermark=(mark, first))
                break
            except WatermarkConflict:
                continue
        else:  # the turn is saved; what was unmade is made again from the next watermark on
            logger.warning("the summarization watermark of %r kept moving; not rewound", user_id)
        if made and compact and self.disk is not None:  # the deleted items off disk
            yield call(self.disk.compact, self.disk.acompact)

    def load(
        self,
        user_id: str,
        query: str | None,
        max_messages: int,
        k: int,
        context: Sequence[str],
        thread_id: str | None = None,
        touch: bool = True,
        claim_thread: bool = True,
        unsaved: tuple[int, Sequence[BaseMessage], Sequence[BaseMessage]] | None = None,
    ) -> Plan[MemorySnapshot]:
        """The plan of ``TieredMemory.load`` (which documents it)."""
        user_id = validate_user_id(user_id)
        if thread_id is not None:  # checked before any store sees it (issue 76 item 8)
            thread_id = validate_run_thread_id(thread_id)
        max_messages, k = validate_count(max_messages, "max_messages"), validate_count(k, "k")
        texts = [t for t in (*context, query) if t.strip()] if query else []
        storage = self.turn
        read = yield from storage.read(
            user_id,
            max_messages,
            thread_id=thread_id,
            touch_ms=self.ttl_ms() if touch else None,
        )
        if thread_id is not None and read.thread is not None:
            yield from self._admitted(user_id, thread_id, read.thread, claim_thread, touch)
        if thread_id is not None and unsaved and (now := changes_thread(read.mark, *unsaved)):
            # a run from an earlier checkpoint: followed now, not shown what its fork left
            yield from self.save(user_id, now[1], thread_id, now[0], "placeholder")
            args = (user_id, query, max_messages, k, context, thread_id, touch, claim_thread)
            return (yield from self.load(*args))
        tags = yield from _tier(user_id, "tags", {}, read.tags)
        history = yield from _tier(user_id, "history", [], read.history)
        recalled: list[Document] = []
        if texts and k > 0:
            recalled = yield from _tier(user_id, "summaries", [], read.recall(texts, k))
        superseded: list[str] = []
        if history:  # a thread's first turn: what the carried messages may say as current
            superseded = yield from _tier(user_id, "summaries", [], read.superseded())
        return MemorySnapshot(tags=tags, history=history, recalled=recalled, superseded=superseded)

    def _admitted(
        self,
        user_id: str,
        thread_id: str,
        record: tuple[str | None, bool],
        claim: bool,
        touch: bool,
    ) -> Plan[None]:
        """Who may use the thread: :class:`ThreadGuard`'s rule, the one every saver's
        guard applies, on the record the turn's read returned (a thread with no owner is
        claimed, unless an attached checkpointer holds state of it the user never
        recorded). The thread is recorded as the user's at once, so an erasure finds it
        even if the turn never reaches its save; ``claim=False`` (shared threads): recorded,
        neither judged nor claimed.
        """
        history = self.history
        owner, recorded = record
        if claim:
            savers = self.reaching()[0]
            has_state = call(holds_thread, aholds_thread, savers, thread_id)
            yield from ThreadGuard(history).admission(
                user_id, thread_id, has_state, claim=True, record=record
            )
        if recorded:
            return
        if not (claim and owner is None):  # else the admission's claim recorded it
            record_thread = history.record_thread, history.arecord_thread
            yield call(*record_thread, user_id, thread_id, claim=False)
        if touch and self.user_ttl is not None:  # the new record keeps the user's clock
            yield self._clock(user_id)


def _tier(user_id: str, tier: str, empty: _T, read: Read[_T]) -> Plan[_T]:
    """What ``read`` gives, or ``empty`` if the tier's stored data is corrupt (logged):
    the other tiers still reach the model.
    """
    try:
        return (yield from read.run())
    except CorruptMemoryError:
        logger.exception("the %s of user %r are unreadable; loading the other tiers", tier, user_id)
        return empty

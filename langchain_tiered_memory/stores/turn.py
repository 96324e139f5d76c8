"""What one turn reads and writes, as one interface: :class:`TurnStorage`.

A turn reads the user's tags, recent history, recalled items and the thread's owner record
and mark, and writes the turn's messages, the summary queue's note and the retention clock. Two
implementations: :class:`ComposedTurn` over any three stores (each tier's own methods), and
the Redis one, one pipelined round trip each way
(:class:`~langchain_tiered_memory.stores.redis_turn.RedisTurn`). The memory picks one for
its stores (``Tiers.turn``) and runs every turn through it: what a turn persists is
``Tiers.save`` over :meth:`TurnStorage.write`; who may use a thread is
:class:`~langchain_tiered_memory.stores.history.ThreadGuard`, judged on the record
:meth:`TurnStorage.read` returns.

A read hands back each tier's reader (a step to run, or a parse of replies already
fetched), so a tier whose stored data is corrupt can be served empty while the others still
reach the model.

Example:
    >>> from langchain_tiered_memory._steps import drive
    >>> from langchain_tiered_memory.embeddings import HashingEmbeddings
    >>> from langchain_tiered_memory.stores import InMemoryHistoryStore, InMemoryTagStore
    >>> from langchain_tiered_memory.stores import InMemorySummaryStore
    >>> storage = ComposedTurn(InMemoryHistoryStore(), InMemoryTagStore(),
    ...                        InMemorySummaryStore(embeddings=HashingEmbeddings()))
    >>> read = drive(storage.read("ann", 20, thread_id="t1"))
    >>> read.thread
    (None, False)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from langchain_core.documents import Document
from langchain_core.messages import BaseMessage

from langchain_tiered_memory._steps import Plan, Step, call
from langchain_tiered_memory.stores.history.base import Appended, HistoryStore, OnInvalid
from langchain_tiered_memory.stores.summaries import SummaryStore
from langchain_tiered_memory.stores.tags import TagStore

if TYPE_CHECKING:
    from langchain_tiered_memory.backend.connection import ScriptCall
    from langchain_tiered_memory.stores.queue import SummaryQueue

__all__ = ["ComposedTurn", "Read", "TurnRead", "TurnStorage"]

_T = TypeVar("_T")


@dataclass(frozen=True)
class Read(Generic[_T]):
    """How a read gets one tier: a step (a store's call) or a plan to run, or a parse
    of replies already fetched; run it with ``yield from read.run()``.
    """

    source: Step | Plan[_T] | Callable[[], _T]

    def run(self) -> Plan[_T]:
        """The plan that gives the tier (raises what the store or the parse raises)."""
        source = self.source
        if isinstance(source, Step):
            return (yield source)  # type: ignore[no-any-return]
        if callable(source):
            return source()
        return (yield from source)


@dataclass(frozen=True)
class TurnRead:
    """One turn's read: each tier's reader, and the thread's owner record
    (``(owner, recorded by this user)``; ``None`` without a thread).
    """

    tags: Read[dict[str, str]]
    history: Read[list[BaseMessage]]
    recall: Callable[[Sequence[str], int], Read[list[Document]]]
    superseded: Callable[[], Read[list[str]]]
    thread: tuple[str | None, bool] | None = None
    mark: tuple[int, tuple[str, ...]] | None = None
    """The thread's mark (``HistoryStore.thread_mark``): the rule's view of what it holds."""


class TurnStorage(Protocol):
    """A turn's storage: what it reads, and what it writes (plans: ``drive`` or ``adrive``
    runs them).
    """

    # whether read and write are one round trip each (Capability.ONE_ROUND_TRIP_TURN)
    one_round_trip: bool

    def read(
        self,
        user_id: str,
        max_messages: int,
        *,
        thread_id: str | None = None,
        touch_ms: int | None = None,
    ) -> Plan[TurnRead]:
        """The plan of the turn's read; ``touch_ms``: restart the user's clock too."""

    def write(
        self,
        user_id: str,
        messages: Sequence[BaseMessage],
        *,
        thread_id: str | None,
        thread_position: int | None,
        on_invalid: OnInvalid,
        queue: SummaryQueue | None,
        threshold: int | None,
        ttl_ms: int | None,
        also: Sequence[ScriptCall] = (),
    ) -> Plan[Appended]:
        """The plan that appends a turn (``HistoryStore.append_turn``), notes ``queue``
        (``threshold``: ``summarize_after``) and restarts the user's clock (``ttl_ms``);
        ``also``: script calls on the stores' connection that go in the write's round
        trip (a storage of one round trip takes them; the caller sends them otherwise).
        """

    def forget(self, user_id: str) -> Plan[None]:
        """The plan that deletes what the storage keeps of the user beyond the stores'
        own ``clear`` (erasure).
        """


@dataclass(frozen=True)
class ComposedTurn:
    """A turn over any three stores, each through its own methods.

    ``clock`` restarts the user's retention clock (``user_ttl``), when the stores have one.
    """

    history: HistoryStore
    tags: TagStore
    summaries: SummaryStore
    clock: Callable[[str], Step] | None = None
    one_round_trip = False

    def read(
        self,
        user_id: str,
        max_messages: int,
        *,
        thread_id: str | None = None,
        touch_ms: int | None = None,
    ) -> Plan[TurnRead]:
        """The plan of the turn's read (see :class:`TurnStorage`)."""
        history, summaries = self.history, self.summaries
        record = mark = None
        if thread_id is not None:
            record = yield call(history.thread_record, history.athread_record, user_id, thread_id)
            mark = yield call(history.thread_mark, history.athread_mark, user_id, thread_id)
        if touch_ms and self.clock is not None:
            yield self.clock(user_id)

        def recall(texts: Sequence[str], k: int) -> Read[list[Document]]:
            search = summaries.search_conversation, summaries.asearch_conversation
            return Read(call(*search, user_id, texts, k))

        def superseded() -> Read[list[str]]:
            return Read(call(summaries.superseded_texts, summaries.asuperseded_texts, user_id))

        return TurnRead(
            tags=Read(call(self.tags.get_all, self.tags.aget_all, user_id)),
            history=Read(call(history.tail, history.atail, user_id, max_messages)),
            recall=recall,
            superseded=superseded,
            thread=record,
            mark=mark,
        )

    def write(
        self,
        user_id: str,
        messages: Sequence[BaseMessage],
        *,
        thread_id: str | None,
        thread_position: int | None,
        on_invalid: OnInvalid,
        queue: SummaryQueue | None,
        threshold: int | None,
        ttl_ms: int | None,
        also: Sequence[ScriptCall] = (),
    ) -> Plan[Appended]:
        """The plan of the turn's write (see :class:`TurnStorage`); ``also`` is not taken
        (stores of their own have no one round trip): the caller sends it.
        """
        history = self.history
        appended: Appended = yield call(
            history.append_turn,
            history.aappend_turn,
            user_id,
            messages,
            thread_id=thread_id,
            thread_position=thread_position,
            on_invalid=on_invalid,
        )
        if queue is not None and messages:
            note = queue.note, queue.anote
            yield call(*note, user_id, added=len(messages), threshold=threshold, ttl_ms=ttl_ms)
        if ttl_ms and self.clock is not None:
            yield self.clock(user_id)
        return appended

    def forget(self, user_id: str) -> Plan[None]:
        """Nothing beyond the stores' own ``clear``."""
        return
        yield  # a plan with no step

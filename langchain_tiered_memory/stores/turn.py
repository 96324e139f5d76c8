"""One turn's read of all three Redis tiers, and its save, each one pipelined round trip.

The Redis stores each own their commands; this module owns the one place where several of
them are sent together: a turn needs the user's tags, the summary index version and the
recent history, and on one connection those are one round trip instead of three; saving it
appends to the history, restarts the user's retention clock and notes the summary queue,
one round trip instead of three. The facade asks :meth:`RedisTiers.of` whether its stores
allow it and never sends a Redis command itself.

Each tier is parsed on its own (:meth:`RedisTiers.tags`, :meth:`RedisTiers.history`,
:meth:`RedisTiers.recall`), so a tier whose stored data is corrupt can be served empty while
the others still reach the model.

Example:
    >>> tiers = RedisTiers.of(memory.history, memory.tags, memory.summaries)  # doctest: +SKIP
    >>> replies = tiers.fetch("alice", max_messages=20)  # doctest: +SKIP
    >>> tiers.tags("alice", replies)  # doctest: +SKIP
    {'name': 'Alice'}
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import redis
from langchain_core.documents import Document
from langchain_core.messages import BaseMessage

from langchain_tiered_memory._steps import Plan, Step, call, paired
from langchain_tiered_memory.backend.connection import RedisConnection, ScriptCall, response_error
from langchain_tiered_memory.backend.keys import KeyBuilder
from langchain_tiered_memory.errors import CorruptMemoryError
from langchain_tiered_memory.retrieval.conversation import recall
from langchain_tiered_memory.stores.directory import activity_call
from langchain_tiered_memory.stores.history import HistoryStore, OnInvalid, RedisHistoryStore
from langchain_tiered_memory.stores.history.base import Appended, owned_elsewhere
from langchain_tiered_memory.stores.summaries import RedisSummaryStore, SummaryStore
from langchain_tiered_memory.stores.summaries.index import superseded_of
from langchain_tiered_memory.stores.tags import RedisTagStore, TagStore

if TYPE_CHECKING:
    from langchain_tiered_memory.stores.queue import SummaryQueue

__all__ = ["RedisTiers", "TurnReplies", "atouch_user", "touch_call", "touch_user"]

# Restart the expiry of every key of a user (ARGV[1] ms): they expire together.
_TOUCH = """
for i = 1, #KEYS do redis.call('PEXPIRE', KEYS[i], ARGV[1]) end
return #KEYS
"""


def touch_call(keys: KeyBuilder, user_id: str, ttl_ms: int) -> ScriptCall:
    """Restart the expiry of every key of the user (``user_ttl``): they expire together."""
    names = keys.all_keys(user_id)
    return ScriptCall(_TOUCH, len(names), (*names, ttl_ms))


def touch_user(connection: RedisConnection, keys: KeyBuilder, user_id: str, ttl_ms: int) -> None:
    """Send :func:`touch_call` on its own (a turn's save sends it with the append), with
    the directory's entry, which follows the user's clock.
    """
    with connection.errors():
        connection.run_all([touch_call(keys, user_id, ttl_ms), _active(keys, user_id, ttl_ms)])


async def atouch_user(
    connection: RedisConnection, keys: KeyBuilder, user_id: str, ttl_ms: int
) -> None:
    """Async :func:`touch_user`."""
    calls = [touch_call(keys, user_id, ttl_ms), _active(keys, user_id, ttl_ms)]
    with connection.errors():
        await connection.arun_all(calls)


def _active(keys: KeyBuilder, user_id: str, ttl_ms: int) -> ScriptCall:
    """The user's directory entry, now; users whose keys have all expired leave it."""
    now = time.time()
    return activity_call(keys, user_id, now, expired_before=now - ttl_ms / 1000)


def _raise_stored(reply: Any) -> None:
    if isinstance(reply, CorruptMemoryError):
        raise reply


@dataclass(frozen=True)
class TurnReplies:
    """The raw replies of one turn's round trip (parse them with :class:`RedisTiers`)."""

    tags: Any
    version: Any
    history: Any  # None when no history was asked for
    claim: Any = None  # the thread's owner before this turn (None: none, or no thread)


@dataclass(frozen=True)
class RedisTiers:
    """The three Redis stores of one memory, read together."""

    history: RedisHistoryStore
    tags_store: RedisTagStore
    summaries: RedisSummaryStore

    @classmethod
    def of(
        cls, history: HistoryStore, tags: TagStore, summaries: SummaryStore
    ) -> RedisTiers | None:
        """The reader for these stores, or ``None`` unless all three are Redis on one connection."""
        if (
            isinstance(history, RedisHistoryStore)
            and isinstance(tags, RedisTagStore)
            and isinstance(summaries, RedisSummaryStore)
            and history.connection is tags.connection is summaries.connection
        ):
            return cls(history, tags, summaries)
        return None

    def _commands(
        self,
        user_id: str,
        max_messages: int,
        touch_ms: int | None,
        thread_id: str | None,
        claim: bool,
    ) -> list[tuple[Any, ...]]:
        commands: list[tuple[Any, ...]] = [
            ("HGETALL", self.tags_store.key(user_id)),
            self.summaries.version_command(user_id),
        ]
        if max_messages > 0:
            commands.append(self.history.tail_command(user_id, max_messages))
        if thread_id is not None:  # before the touch: the new set gets the user's expiry too
            commands += self.history.record_thread_commands(
                user_id, thread_id, touch_ms, claim=claim
            )
        if touch_ms:  # the user's retention clock, in the same round trip (same slot)
            keys = self.history.keys
            commands += [("PEXPIRE", k, touch_ms) for k in keys.all_keys(user_id)]
            # the directory's entry follows the clock: a sweep drops it when the keys expire
            active = _active(keys, user_id, touch_ms)
            commands.append(("EVAL", active.script, active.numkeys, *active.args))
        return commands

    def _replies(self, raw: list[Any], max_messages: int, claiming: bool) -> TurnReplies:
        # Executed with raise_on_error=False: a reply that is an error stays in its place.
        # A key of another type (WRONGTYPE) is that tier's corrupt data, raised when the
        # tier is parsed, so the other tiers still load; any other error fails the turn.
        url = self.summaries.connection.url
        checked = []
        for reply in raw:
            if isinstance(reply, redis.exceptions.ResponseError):
                error = response_error(url, reply)
                if not isinstance(error, CorruptMemoryError):
                    raise error from reply
                reply = error
            elif isinstance(reply, Exception):
                raise reply
            checked.append(reply)
        # the owner's GET follows the claim's SET NX
        claim = checked[4 if max_messages > 0 else 3] if claiming else None
        if isinstance(claim, Exception):
            raise claim  # an owner record of another type: no turn on an unknown owner
        return TurnReplies(
            tags=checked[0],
            version=checked[1],
            history=checked[2] if max_messages > 0 else None,
            claim=claim,
        )

    def _refused(self, user_id: str, thread_id: str, replies: TurnReplies) -> bool:
        return not self.history.claimed(user_id, thread_id, replies.claim)

    @paired
    def fetch(
        self,
        user_id: str,
        max_messages: int,
        *,
        touch_ms: int | None = None,
        thread_id: str | None = None,
        claim: bool = True,
    ) -> Plan[TurnReplies]:
        """Send the turn's commands in one pipeline (no transaction) and return the replies;
        with ``touch_ms``, restart the expiry of every key of the user in it too; with
        ``thread_id``, record the thread as the user's (``claim``: and claim it).

        Raises:
            MemoryBackendError: Redis is unreachable or refused a command.
        """
        connection = self.summaries.connection
        claiming = thread_id is not None and claim
        commands = list(self._commands(user_id, max_messages, touch_ms, thread_id, claim))
        raw = yield call(
            connection.pipelined, connection.apipelined, commands, raise_on_error=False
        )
        replies = self._replies(raw, max_messages, claiming)
        if thread_id is not None and claiming and self._refused(user_id, thread_id, replies):
            # the SADD went with the claim: undone, so that the user's export and erasure
            # never list the other user's thread
            undo = self.history.unrecord_command(user_id, thread_id)
            yield call(connection.command, connection.acommand, *undo)
            raise owned_elsewhere(thread_id)
        return replies

    afetch = fetch.aio

    def tags(self, user_id: str, replies: TurnReplies) -> dict[str, str]:
        """The user's tags from the replies (raises ``CorruptMemoryError`` on bad data)."""
        _raise_stored(replies.tags)
        return RedisTagStore.parse_all(replies.tags, self.tags_store.where(user_id))

    def messages(self, user_id: str, replies: TurnReplies) -> list[BaseMessage]:
        """The recent history from the replies (raises ``CorruptMemoryError`` on bad data)."""
        if replies.history is None:
            return []
        _raise_stored(replies.history)
        return RedisHistoryStore.parse_tail(replies.history, self.history.where(user_id))

    def recall(
        self, user_id: str, replies: TurnReplies, texts: Sequence[str], k: int
    ) -> Plan[list[Document]]:
        """The plan of the ``k`` items for a conversation's ``texts`` (oldest first, the
        query last; :func:`~langchain_tiered_memory.retrieval.conversation.recall`), on the
        index version the round trip saw.
        """
        _raise_stored(replies.version)
        summaries = self.summaries
        index = yield call(summaries.index_for, summaries.aindex_for, user_id, replies.version)
        if index is None:
            return []

        def search(
            query: str, depth: int, vector: np.ndarray | None, dates_from: str | None
        ) -> Plan[list[Document]]:
            if vector is None:
                vector = yield call(summaries.embed_query, summaries.aembed_query, query)
            return index.search(vector, depth, query=query, dates_from=dates_from)

        def embed(conversation: Sequence[str]) -> Step:
            return call(summaries.embed_conversation, summaries.aembed_conversation, conversation)

        return (yield from recall(search, embed, texts, k))

    def superseded(self, user_id: str, replies: TurnReplies) -> Plan[list[str]]:
        """The texts of the user's superseded items, on the index version the round trip
        saw (the index recall just read: no round trip of its own).
        """
        _raise_stored(replies.version)
        summaries = self.summaries
        index = yield call(summaries.index_for, summaries.aindex_for, user_id, replies.version)
        return superseded_of(index)

    # ----- a turn's save -----

    def _save_calls(
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
    ) -> list[ScriptCall]:
        calls = [
            self.history.append_call(
                user_id,
                messages,
                thread_id=thread_id,
                thread_position=thread_position,
                on_invalid=on_invalid,
            ),
            # the console directory's entry (stores/directory.py)
            _active(self.history.keys, user_id, ttl_ms)
            if ttl_ms
            else activity_call(self.history.keys, user_id, time.time()),
        ]
        if ttl_ms:  # after the append, so the keys it created expire too
            calls.append(touch_call(self.history.keys, user_id, ttl_ms))
        if queue is not None:
            calls.append(
                queue.note_call(user_id, added=len(messages), threshold=threshold, ttl_ms=ttl_ms)
            )
        return calls

    def saves_with(self, queue: SummaryQueue | None) -> bool:
        """Whether :meth:`save` can send the queue's note in its round trip (one connection)."""
        return queue is None or queue.connection is self.history.connection

    @paired
    def save(
        self,
        user_id: str,
        messages: Sequence[BaseMessage],
        *,
        thread_id: str | None = None,
        thread_position: int | None = None,
        on_invalid: OnInvalid = "raise",
        queue: SummaryQueue | None = None,
        threshold: int | None = None,
        ttl_ms: int | None = None,
    ) -> Plan[Appended]:
        """Append a turn, restart the user's clock (``ttl_ms``) and note ``queue``, in one
        pipelined round trip; returns what the append did (``HistoryStore.append_turn``).

        Raises:
            InvalidMessageError: a message cannot be stored; nothing was sent.
            MemoryBackendError: Redis is unreachable or refused a command.
        """
        calls = self._save_calls(
            user_id,
            messages,
            thread_id=thread_id,
            thread_position=thread_position,
            on_invalid=on_invalid,
            queue=queue,
            threshold=threshold,
            ttl_ms=ttl_ms,
        )
        connection = self.history.connection
        with connection.errors():
            replies = yield call(connection.run_all, connection.arun_all, calls)
            return (yield from self.history.after_append(user_id, thread_id, replies[0]))

    asave = save.aio

    @paired
    def purge(self, user_id: str) -> Plan[None]:
        """Delete every key of the user left after the stores' own ``clear``."""
        connection = self.history.connection
        keys = self.history.keys.all_keys(user_id)
        yield call(connection.command, connection.acommand, "DEL", *keys)

    apurge = purge.aio

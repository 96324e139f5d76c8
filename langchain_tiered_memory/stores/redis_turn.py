"""A turn on the Redis stores: its read and its write, one pipelined round trip each.

:class:`RedisTurn` is the :class:`~langchain_tiered_memory.stores.turn.TurnStorage` of three
Redis stores on one connection. The stores each own their commands; this module owns the one
place where several of them are sent together: a turn needs the user's tags, the summary
index version, the recent history and the thread's owner record, one round trip instead of
four; saving it appends to the history, restarts the user's retention clock and notes the
summary queue, one round trip instead of three.

Each tier is parsed on its own, so a tier whose stored data is corrupt can be served empty
while the others still reach the model.

Example:
    >>> storage = RedisTurn.of(memory.history, memory.tags, memory.summaries)  # doctest: +SKIP
    >>> read = drive(storage.read("alice", 20))  # doctest: +SKIP
    >>> drive(read.tags.run())  # doctest: +SKIP
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

from langchain_tiered_memory._steps import Plan, Step, call
from langchain_tiered_memory.backend.connection import RedisConnection, ScriptCall, response_error
from langchain_tiered_memory.backend.keys import KeyBuilder
from langchain_tiered_memory.errors import CorruptMemoryError
from langchain_tiered_memory.retrieval.conversation import recall
from langchain_tiered_memory.stores.directory import activity_call
from langchain_tiered_memory.stores.history import HistoryStore, OnInvalid, RedisHistoryStore
from langchain_tiered_memory.stores.history.base import Appended
from langchain_tiered_memory.stores.history.rule import parse_mark
from langchain_tiered_memory.stores.summaries import RedisSummaryStore, SummaryStore
from langchain_tiered_memory.stores.summaries.index import superseded_of
from langchain_tiered_memory.stores.tags import RedisTagStore, TagStore
from langchain_tiered_memory.stores.turn import Read, TurnRead

if TYPE_CHECKING:
    from langchain_tiered_memory.stores.queue import SummaryQueue

__all__ = ["RedisTurn", "atouch_user", "touch_call", "touch_user"]

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


def _command(script: ScriptCall) -> tuple[Any, ...]:
    return ("EVAL", script.script, script.numkeys, *script.args)


def _stored(reply: Any) -> Any:
    if isinstance(reply, CorruptMemoryError):
        raise reply
    return reply


@dataclass(frozen=True)
class RedisTurn:
    """The turn storage of three Redis stores on one connection: one round trip each way."""

    history: RedisHistoryStore
    tags: RedisTagStore
    summaries: RedisSummaryStore
    one_round_trip = True

    @classmethod
    def of(cls, history: HistoryStore, tags: TagStore, summaries: SummaryStore) -> RedisTurn | None:
        """The storage of these stores; ``None`` unless all three are Redis on one connection."""
        if (
            isinstance(history, RedisHistoryStore)
            and isinstance(tags, RedisTagStore)
            and isinstance(summaries, RedisSummaryStore)
            and history.connection is tags.connection is summaries.connection
        ):
            return cls(history, tags, summaries)
        return None

    def _commands(
        self, user_id: str, max_messages: int, thread_id: str | None, touch_ms: int | None
    ) -> dict[str, tuple[Any, ...]]:
        commands: dict[str, tuple[Any, ...]] = {
            "tags": ("HGETALL", self.tags.key(user_id)),
            "version": self.summaries.version_command(user_id),
        }
        if max_messages > 0:
            commands["history"] = self.history.tail_command(user_id, max_messages)
        if thread_id is not None:
            owner, recorded = self.history.thread_record_calls(user_id, thread_id, touch_ms)
            commands["owner"], commands["recorded"] = _command(owner), _command(recorded)
            commands["mark"] = self.history.mark_command(user_id, thread_id)
        if touch_ms:  # the user's retention clock, in the same round trip (same slot)
            keys = self.history.keys
            commands["touch"] = _command(touch_call(keys, user_id, touch_ms))
            # the directory's entry follows the clock: a sweep drops it when the keys expire
            commands["active"] = _command(_active(keys, user_id, touch_ms))
        return commands

    def _replies(self, names: Sequence[str], raw: Sequence[Any]) -> dict[str, Any]:
        # Sent with raise_on_error=False: a reply that is an error stays in its place. A
        # key of another type (WRONGTYPE) is that tier's corrupt data, raised when the tier
        # is parsed, so the other tiers still load; any other error fails the turn.
        url = self.summaries.connection.url
        replies: dict[str, Any] = {}
        for name, reply in zip(names, raw, strict=True):
            if isinstance(reply, redis.exceptions.ResponseError):
                error = response_error(url, reply)
                if not isinstance(error, CorruptMemoryError):
                    raise error from reply
                reply = error
            elif isinstance(reply, Exception):
                raise reply
            replies[name] = reply
        return replies

    def read(
        self,
        user_id: str,
        max_messages: int,
        *,
        thread_id: str | None = None,
        touch_ms: int | None = None,
    ) -> Plan[TurnRead]:
        """The turn's read (``TurnStorage.read``) in one pipelined round trip (no
        transaction); with ``touch_ms`` the expiry of every key of the user restarts in it.

        Raises:
            MemoryBackendError: Redis is unreachable or refused a command.
            CorruptMemoryError: the thread's owner record is not one this package writes
                (no turn on an unknown owner).
        """
        connection = self.summaries.connection
        commands = self._commands(user_id, max_messages, thread_id, touch_ms)
        raw = yield call(
            connection.pipelined,
            connection.apipelined,
            list(commands.values()),
            raise_on_error=False,
        )
        replies = self._replies(list(commands), raw)
        record = mark = None
        if thread_id is not None:
            record = self.history.parse_record(
                thread_id, [_stored(replies["owner"]), _stored(replies["recorded"])]
            )
            mark = parse_mark(_stored(replies["mark"]))
        tags_where, history_where = self.tags.where(user_id), self.history.where(user_id)
        history = replies.get("history")
        summaries, version = self.summaries, replies["version"]

        def recall_plan(texts: Sequence[str], k: int) -> Plan[list[Document]]:
            index = yield call(summaries.index_for, summaries.aindex_for, user_id, _stored(version))
            if index is None:
                return []

            def search(
                query: str, depth: int, vector: np.ndarray | None, dates_from: str | None
            ) -> Plan[list[Document]]:
                if vector is None:
                    vector = yield call(summaries.embed_query, summaries.aembed_query, query)
                return index.search(vector, depth, query=query, dates_from=dates_from)

            def words(query: str) -> Plan[list[Document]]:
                return index.search_words(query, 1)  # the index read: no round trip
                yield  # a plan with no step

            def embed(conversation: Sequence[str]) -> Step:
                embed = summaries.embed_conversation, summaries.aembed_conversation
                return call(*embed, conversation)

            return (yield from recall(search, words, embed, texts, k))

        def superseded_plan() -> Plan[list[str]]:
            # the index recall read, on the version the round trip saw: no round trip
            index = yield call(summaries.index_for, summaries.aindex_for, user_id, _stored(version))
            return superseded_of(index)

        return TurnRead(
            tags=Read(lambda: RedisTagStore.parse_all(_stored(replies["tags"]), tags_where)),
            history=Read(
                lambda: (
                    []
                    if history is None
                    else RedisHistoryStore.parse_tail(_stored(history), history_where)
                )
            ),
            recall=lambda texts, k: Read(recall_plan(texts, k)),
            superseded=lambda: Read(superseded_plan()),
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
        """The turn's write (``TurnStorage.write``) in one pipelined round trip (a queue
        on another connection: its note in a second), ``also`` at its end.

        Raises:
            InvalidMessageError: a message cannot be stored; nothing was sent.
            MemoryBackendError: Redis is unreachable or refused a command.
        """
        connection, keys = self.history.connection, self.history.keys
        append = self.history.append_call(
            user_id,
            messages,
            thread_id=thread_id,
            thread_position=thread_position,
            on_invalid=on_invalid,
        )
        calls = [
            append,
            # the console directory's entry (stores/directory.py)
            _active(keys, user_id, ttl_ms) if ttl_ms else activity_call(keys, user_id, time.time()),
        ]
        if ttl_ms:  # after the append, so the keys it created expire too
            calls.append(touch_call(keys, user_id, ttl_ms))
            if thread_id is not None:  # the owner record a claim just made, if the user's
                calls.append(self.history.thread_record_calls(user_id, thread_id, ttl_ms)[0])
        apart = queue is not None and queue.connection is not connection
        if queue is not None and messages and not apart:
            calls.append(
                queue.note_call(user_id, added=len(messages), threshold=threshold, ttl_ms=ttl_ms)
            )
        calls += also
        with connection.errors():
            replies = yield call(connection.run_all, connection.arun_all, calls)
            after = self.history.after_append(user_id, thread_id, replies[0], append, messages)
            appended = yield from after
        if apart and queue is not None and messages:
            note = queue.note, queue.anote
            yield call(*note, user_id, added=len(messages), threshold=threshold, ttl_ms=ttl_ms)
        return appended

    def forget(self, user_id: str) -> Plan[None]:
        """Delete every key of the user left after the stores' own ``clear``."""
        connection = self.history.connection
        keys = self.history.keys.all_keys(user_id)
        yield call(connection.command, connection.acommand, "DEL", *keys)

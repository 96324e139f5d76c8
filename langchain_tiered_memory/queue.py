"""The offline summarization job's work queue, on Redis Streams.

A user with at least ``summarize_after`` unsummarized messages is put on a stream once
(while pending); workers read with a consumer group (``XREADGROUP``), acknowledge after the
items and the watermark are written, and claim the entries of dead workers
(``XAUTOCLAIM`` after an idle timeout). The summary store's watermark compare-and-set
keeps two workers from summarizing the same messages even when they race.

Per shard (a fixed number, default 16; each shard is one Redis Cluster slot, so no slot
carries all the traffic), in one hash tag ``{wq:<shard>}``:

- ``wq:stream``: the queue (entries ``user=<id>``);
- ``wq:queued``: users with an entry not yet acknowledged (at most one entry each);
- ``wq:pending``: sorted set, user -> unsummarized messages (``pending_users`` reads it:
  O(log n + result), never touching idle users);
- ``wq:wm``: sorted set, user -> the watermark as of its last summarization (a copy of the
  user's own, so a turn can count its pending messages in the shard's slot).

The copy of the watermark can only lag (a crash between a summarization and its ack): the
user then looks more pending than it is, is summarized (nothing new), and the ack fixes it.
An enqueue lost to a crash between a turn's write and its note is recovered by
:meth:`SummaryQueue.sweep`, which the worker runs at start (a SCAN over the users).
"""

from __future__ import annotations

import logging
import time
import zlib
from dataclasses import dataclass
from typing import Any

from langchain_tiered_memory._keys import KeyBuilder
from langchain_tiered_memory._redis import RedisConnection, as_text

logger = logging.getLogger(__name__)

__all__ = ["DEFAULT_SHARDS", "QueueEntry", "SummaryQueue"]

DEFAULT_SHARDS = 16
GROUP = "summarizers"

# KEYS: stream, queued, pending, wm. ARGV: user, history length, threshold (0: index only).
_NOTE = r"""
local wm = tonumber(redis.call('ZSCORE', KEYS[4], ARGV[1]) or '0')
local pending = tonumber(ARGV[2]) - wm
if pending > 0 then
  redis.call('ZADD', KEYS[3], pending, ARGV[1])
else
  redis.call('ZREM', KEYS[3], ARGV[1])
end
local threshold = tonumber(ARGV[3])
if threshold > 0 and pending >= threshold and redis.call('SADD', KEYS[2], ARGV[1]) == 1 then
  redis.call('XADD', KEYS[1], '*', 'user', ARGV[1])
  return 1
end
return 0
"""

# KEYS: stream, queued, pending, wm. ARGV: entry id ('' = none), user, watermark, history
# length, threshold (0: do not queue). Acknowledges the entry, records the watermark, and
# queues the user again if still due (messages arrived meanwhile, or more than one batch
# was pending) and not queued already. A forgotten user (length 0) leaves the index.
_SETTLE = r"""
if ARGV[1] ~= '' then
  redis.call('XACK', KEYS[1], 'summarizers', ARGV[1])
  redis.call('XDEL', KEYS[1], ARGV[1])
  redis.call('SREM', KEYS[2], ARGV[2])
end
local wm = tonumber(ARGV[3])
redis.call('ZADD', KEYS[4], wm, ARGV[2])
local pending = tonumber(ARGV[4]) - wm
if pending > 0 then
  redis.call('ZADD', KEYS[3], pending, ARGV[2])
else
  redis.call('ZREM', KEYS[3], ARGV[2])
  if tonumber(ARGV[4]) == 0 then redis.call('ZREM', KEYS[4], ARGV[2]) end
end
local threshold = tonumber(ARGV[5])
if threshold > 0 and pending >= threshold and redis.call('SADD', KEYS[2], ARGV[2]) == 1 then
  redis.call('XADD', KEYS[1], '*', 'user', ARGV[2])
  return 1
end
return 0
"""


# Dead-letter entries kept per shard (older ones are trimmed).
DEAD_LETTERS = 1000


@dataclass(frozen=True)
class QueueEntry:
    """One queued user: its shard, stream entry id and how often it was delivered."""

    shard: int
    entry_id: str
    user_id: str


class SummaryQueue:
    """The Redis Streams work queue and pending index of the summarization job.

    ``TieredMemory`` owns one when it is on Redis; the worker
    (:class:`~langchain_tiered_memory.worker.SummaryWorker`) reads it.

    Example:
        >>> queue = SummaryQueue(RedisConnection("redis://localhost:6379/0"))  # doctest: +SKIP
        >>> queue.note("alice", length=42, threshold=20)  # doctest: +SKIP
        True
    """

    def __init__(
        self,
        connection: RedisConnection,
        *,
        keys: KeyBuilder | None = None,
        shards: int = DEFAULT_SHARDS,
    ) -> None:
        if not isinstance(shards, int) or shards < 1:
            raise ValueError(f"shards must be a positive int, got {shards!r}.")
        self.connection = connection
        self.keys = keys or KeyBuilder()
        self.shards = shards
        self._groups: set[int] = set()

    # ----- keys -----

    def shard_of(self, user_id: str) -> int:
        """The shard a user's entries go to (stable across processes: CRC-32)."""
        return zlib.crc32(user_id.encode("utf-8")) % self.shards

    def _shard_keys(self, shard: int) -> list[str]:
        return [self.keys.queue_key(shard, k) for k in ("stream", "queued", "pending", "wm")]

    # ----- the write side: a turn, a summarization -----

    def note(self, user_id: str, *, length: int, threshold: int | None) -> bool:
        """Record the user's history length after a turn; enqueue if ``threshold`` is met.

        Returns whether the user was enqueued (``False`` if already queued or not due).
        """
        keys = self._shard_keys(self.shard_of(user_id))
        with self.connection.errors():
            return bool(self.connection.eval(_NOTE, 4, *keys, user_id, length, threshold or 0))

    async def anote(self, user_id: str, *, length: int, threshold: int | None) -> bool:
        """Async :meth:`note`."""
        keys = self._shard_keys(self.shard_of(user_id))
        with self.connection.errors():
            return bool(
                await self.connection.aeval(_NOTE, 4, *keys, user_id, length, threshold or 0)
            )

    def settle(
        self,
        user_id: str,
        *,
        watermark: int,
        length: int,
        threshold: int | None,
        entry: QueueEntry | None = None,
    ) -> bool:
        """After a summarization: ack ``entry``, record the watermark, re-enqueue if due."""
        keys = self._shard_keys(self.shard_of(user_id))
        args = [entry.entry_id if entry else "", user_id, watermark, length, threshold or 0]
        with self.connection.errors():
            return bool(self.connection.eval(_SETTLE, 4, *keys, *args))

    async def asettle(
        self,
        user_id: str,
        *,
        watermark: int,
        length: int,
        threshold: int | None,
        entry: QueueEntry | None = None,
    ) -> bool:
        """Async :meth:`settle`."""
        keys = self._shard_keys(self.shard_of(user_id))
        args = [entry.entry_id if entry else "", user_id, watermark, length, threshold or 0]
        with self.connection.errors():
            return bool(await self.connection.aeval(_SETTLE, 4, *keys, *args))

    # ----- the read side: workers -----

    async def _agroup(self, shard: int) -> None:
        if shard in self._groups:
            return
        client = await self.connection.aclient()
        try:
            with self.connection.errors():
                await client.xgroup_create(
                    self.keys.queue_key(shard, "stream"), GROUP, id="0", mkstream=True
                )
        except Exception as exc:  # BUSYGROUP: another worker created it first
            if "BUSYGROUP" not in str(exc):
                raise
        self._groups.add(shard)

    async def aread(self, shard: int, consumer: str, count: int) -> list[QueueEntry]:
        """Up to ``count`` new entries of one shard for ``consumer`` (no waiting)."""
        await self._agroup(shard)
        client = await self.connection.aclient()
        stream = self.keys.queue_key(shard, "stream")
        with self.connection.errors():
            reply = await client.xreadgroup(GROUP, consumer, {stream: ">"}, count=count)
        return self._entries(shard, reply)

    async def adead_letter(self, entry: QueueEntry, reason: str) -> None:
        """Acknowledge an entry no worker can ever process (an invalid user id) and record
        it in the shard's dead-letter stream (the last ``DEAD_LETTERS`` kept), so that it
        neither fails every claim forever nor vanishes unseen.
        """
        client = await self.connection.aclient()
        stream = self.keys.queue_key(entry.shard, "stream")
        with self.connection.errors():
            pipe = client.pipeline(transaction=False)
            pipe.xack(stream, GROUP, entry.entry_id)
            pipe.xdel(stream, entry.entry_id)
            pipe.xadd(
                self.keys.queue_key(entry.shard, "dead"),
                {"user": entry.user_id[:300], "entry": entry.entry_id, "reason": reason[:300]},
                maxlen=DEAD_LETTERS,
                approximate=True,
            )
            await pipe.execute()

    async def aclaim(
        self, shard: int, consumer: str, *, min_idle_ms: int, count: int
    ) -> list[QueueEntry]:
        """Entries of one shard delivered to a consumer that has been silent for
        ``min_idle_ms`` (a dead worker's), now ``consumer``'s.
        """
        await self._agroup(shard)
        client = await self.connection.aclient()
        stream = self.keys.queue_key(shard, "stream")
        with self.connection.errors():
            reply = await client.xautoclaim(
                stream, GROUP, consumer, min_idle_time=min_idle_ms, start_id="0-0", count=count
            )
        messages = reply[1] if reply else []
        return [
            QueueEntry(shard, as_text(entry_id), as_text(fields.get(b"user", fields.get("user"))))
            for entry_id, fields in messages
            if fields  # an entry deleted meanwhile comes back empty
        ]

    @staticmethod
    def _entries(shard: int, reply: Any) -> list[QueueEntry]:
        out = []
        for _stream, messages in reply or []:
            for entry_id, fields in messages:
                user = fields.get(b"user", fields.get("user"))
                if user is not None:
                    out.append(QueueEntry(shard, as_text(entry_id), as_text(user)))
        return out

    # ----- what is pending -----

    def pending_users(self, min_messages: int) -> list[str]:
        """Users with at least ``min_messages`` unsummarized messages, from the index."""
        with self.connection.errors():
            pipe = self.connection.sync.pipeline(transaction=False)
            for shard in range(self.shards):
                pipe.zrangebyscore(self.keys.queue_key(shard, "pending"), min_messages, "+inf")
            replies = pipe.execute()
        return sorted(as_text(u) for reply in replies for u in reply)

    async def apending_users(self, min_messages: int) -> list[str]:
        """Async :meth:`pending_users`."""
        client = await self.connection.aclient()
        with self.connection.errors():
            pipe = client.pipeline(transaction=False)
            for shard in range(self.shards):
                pipe.zrangebyscore(self.keys.queue_key(shard, "pending"), min_messages, "+inf")
            replies = await pipe.execute()
        return sorted(as_text(u) for reply in replies for u in reply)

    def indexed(self) -> bool:
        """Whether the pending index covers every user (a sweep has run on this Redis)."""
        with self.connection.errors():
            return bool(self.connection.sync.exists(self.keys.queue_marker_key()))

    async def aindexed(self) -> bool:
        """Async :meth:`indexed`."""
        client = await self.connection.aclient()
        with self.connection.errors():
            return bool(await client.exists(self.keys.queue_marker_key()))

    def mark_indexed(self) -> None:
        """Record that a sweep has indexed every user."""
        with self.connection.errors():
            self.connection.sync.set(self.keys.queue_marker_key(), "1")

    async def amark_indexed(self) -> None:
        """Async :meth:`mark_indexed`."""
        client = await self.connection.aclient()
        with self.connection.errors():
            await client.set(self.keys.queue_marker_key(), "1")

    async def astats(self, *, lag: bool = False) -> dict[str, int]:
        """Queued users, delivered but unacknowledged entries, users pending at all, and
        with ``lag`` the age in seconds of the oldest queued entry (``lag_s``).
        """
        client = await self.connection.aclient()
        queued = unacked = pending = 0
        oldest: int | None = None
        for shard in range(self.shards):
            await self._agroup(shard)
            keys = self._shard_keys(shard)
            with self.connection.errors():
                queued += int(await client.scard(keys[1]))
                pending += int(await client.zcard(keys[2]))
                summary = await client.xpending(keys[0], GROUP)
                unacked += int(summary.get("pending", 0) if summary else 0)
                if lag:
                    first = await client.xrange(keys[0], "-", "+", count=1)
                    if first:
                        ms = int(as_text(first[0][0]).split("-")[0])
                        oldest = ms if oldest is None else min(oldest, ms)
        stats = {"queued": queued, "unacked": unacked, "pending_users": pending}
        if lag:
            stats["lag_s"] = 0 if oldest is None else max(0, int(time.time() - oldest / 1000))
        return stats

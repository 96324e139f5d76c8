"""The offline summarization job's work queue, on Redis Streams.

A user with at least ``summarize_after`` unsummarized messages is put on a stream once
(while pending); workers read with a consumer group (``XREADGROUP``), acknowledge after the
items and the watermark are written, and claim the entries of dead workers
(``XAUTOCLAIM`` after an idle timeout). The summary store's watermark compare-and-set
keeps two workers from summarizing the same messages even when they race.

Per shard (a fixed number, default 16; each shard is one Redis Cluster slot, so no slot
carries all the traffic), in one hash tag ``{wq:<shard>}``:

- ``wq:stream``: the queue. Its entries hold no user data (one field ``e``): a stream
  keeps the bytes of a deleted entry until its whole node is gone, and erasure must leave
  none of a user's id behind;
- ``wq:owners`` (hash): entry id -> user; ``wq:entries`` (hash): user -> its entry id
  (at most one entry per user while not acknowledged);
- ``wq:pending``: sorted set, user -> unsummarized messages (``pending_users`` reads it:
  O(log n + result), never touching idle users);
- ``wq:wm``: sorted set, user -> the watermark as of its last summarization (a copy of the
  user's own, so a turn can count its pending messages in the shard's slot);
- ``wq:expiry``: sorted set, user -> when its data expires (ms since the epoch), with the
  memory's ``user_ttl`` only: set by each turn's note, it takes the user's id out of the
  shard when the user's keys expire (the next note of the shard, or the worker, which
  purges every few seconds), so an expired user leaves no id behind.

Entries written before 0.2 (field ``user``, membership in the set ``wq:queued``) are still
read and acknowledged.

The copy of the watermark can only lag (a crash between a summarization and its ack): the
user then looks more pending than it is, is summarized (nothing new), and the ack fixes it.
An enqueue lost to a crash between a turn's write and its note is recovered by
:meth:`TieredMemory.sweep_pending <langchain_tiered_memory.TieredMemory.sweep_pending>`
(``Summarization.sweep_pending``), which the worker runs at start (a SCAN over the users).
"""

from __future__ import annotations

import logging
import time
import zlib
from dataclasses import dataclass
from typing import Any

from langchain_tiered_memory._steps import Plan, call, paired
from langchain_tiered_memory.backend.connection import RedisConnection, ScriptCall, as_text
from langchain_tiered_memory.backend.keys import KeyBuilder, QueueKeyKind

logger = logging.getLogger(__name__)

__all__ = ["DEFAULT_SHARDS", "QueueEntry", "SummaryQueue"]

DEFAULT_SHARDS = 16
GROUP = "summarizers"

# Every script takes a shard's keys: stream, entries, owners, pending, wm, legacy queued,
# expiry. _PURGE (a prelude): take users whose data expired by ``now`` out of the shard.
_PURGE = r"""
local function erase(user)
  local own = redis.call('HGET', KEYS[2], user)
  if own then
    redis.call('XACK', KEYS[1], 'summarizers', own)
    redis.call('XDEL', KEYS[1], own)
    redis.call('HDEL', KEYS[3], own)
  end
  redis.call('HDEL', KEYS[2], user)
  redis.call('SREM', KEYS[6], user)
  redis.call('ZREM', KEYS[4], user)
  redis.call('ZREM', KEYS[5], user)
  redis.call('ZREM', KEYS[7], user)
end
local function purge(now, limit)
  local gone = redis.call('ZRANGEBYSCORE', KEYS[7], '-inf', now, 'LIMIT', 0, limit)
  for _, user in ipairs(gone) do erase(user) end
  return #gone
end
"""

# _ENQUEUE (a prelude): queue ARGV[1] unless it has an entry already.
_ENQUEUE = r"""
local function enqueue(user)
  if redis.call('HEXISTS', KEYS[2], user) == 1 or redis.call('SISMEMBER', KEYS[6], user) == 1 then
    return 0
  end
  local id = redis.call('XADD', KEYS[1], '*', 'e', '1')
  redis.call('HSET', KEYS[2], user, id)
  redis.call('HSET', KEYS[3], id, user)
  return 1
end
"""

# ARGV: user, messages added, threshold (0: index only), when the user's data expires and
# now (ms; '' without a user_ttl). The pending count goes up by what the turn added (sent
# in the same round trip as the append, so the new length is not known yet); a
# summarization's settle sets it from the history's length again.
_NOTE = (
    _PURGE
    + _ENQUEUE
    + r"""
if ARGV[4] ~= '' then
  purge(ARGV[5], 16)
  redis.call('ZADD', KEYS[7], ARGV[4], ARGV[1])
end
local pending = tonumber(redis.call('ZINCRBY', KEYS[4], ARGV[2], ARGV[1]))
local threshold = tonumber(ARGV[3])
if threshold > 0 and pending >= threshold then return enqueue(ARGV[1]) end
return 0
"""
)

# ARGV: entry id ('' = none), user, watermark, history length, threshold (0: do not
# queue). Acknowledges the entry, records the watermark, and queues the user again if
# still due (messages arrived meanwhile, or more than one batch was pending). A forgotten
# user (length 0) leaves the index.
_SETTLE = (
    _ENQUEUE
    + r"""
if ARGV[1] ~= '' then
  redis.call('XACK', KEYS[1], 'summarizers', ARGV[1])
  redis.call('XDEL', KEYS[1], ARGV[1])
  redis.call('HDEL', KEYS[3], ARGV[1])
  if redis.call('HGET', KEYS[2], ARGV[2]) == ARGV[1] then redis.call('HDEL', KEYS[2], ARGV[2]) end
  redis.call('SREM', KEYS[6], ARGV[2])
end
local wm = tonumber(ARGV[3])
redis.call('ZADD', KEYS[5], wm, ARGV[2])
local pending = tonumber(ARGV[4]) - wm
if pending > 0 then
  redis.call('ZADD', KEYS[4], pending, ARGV[2])
else
  redis.call('ZREM', KEYS[4], ARGV[2])
  if tonumber(ARGV[4]) == 0 then
    redis.call('ZREM', KEYS[5], ARGV[2])
    redis.call('ZREM', KEYS[7], ARGV[2])
  end
end
local threshold = tonumber(ARGV[5])
if threshold > 0 and pending >= threshold then return enqueue(ARGV[2]) end
return 0
"""
)

# ARGV: user, then entry ids to drop besides its own (pre-0.2 entries naming it). Erases
# the user from the shard: its entry (acknowledged and deleted), the index, the watermark.
_FORGET = (
    _PURGE
    + r"""
local removed = 0
for i = 2, #ARGV do  -- pre-0.2 entries naming the user
  redis.call('XACK', KEYS[1], 'summarizers', ARGV[i])
  removed = removed + redis.call('XDEL', KEYS[1], ARGV[i])
  redis.call('HDEL', KEYS[3], ARGV[i])
end
local own = redis.call('HGET', KEYS[2], ARGV[1])
if own then removed = removed + redis.call('XDEL', KEYS[1], own) end
erase(ARGV[1])
return removed
"""
)

# ARGV: now (ms), how many at most. Erase the users whose data expired.
_PURGE_EXPIRED = _PURGE + "return purge(ARGV[1], tonumber(ARGV[2]))"

# ARGV: user. Queue it unless queued.
_QUEUE = _ENQUEUE + "return enqueue(ARGV[1])"

# ARGV: entry ids whose owner is gone (erased meanwhile): acknowledge and delete them.
_DROP = r"""
for i = 1, #ARGV do
  redis.call('XACK', KEYS[1], 'summarizers', ARGV[i])
  redis.call('XDEL', KEYS[1], ARGV[i])
end
return #ARGV
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
    (:class:`~langchain_tiered_memory.summarization.worker.SummaryWorker`) reads it.

    Example:
        >>> queue = SummaryQueue(RedisConnection("redis://localhost:6379/0"))  # doctest: +SKIP
        >>> queue.note("alice", added=2, threshold=20)  # doctest: +SKIP
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
        kinds: tuple[QueueKeyKind, ...] = (
            "stream",
            "entries",
            "owners",
            "pending",
            "wm",
            "queued",
            "expiry",
        )
        return [self.keys.queue_key(shard, k) for k in kinds]

    # ----- the write side: a turn, a summarization -----

    def note_call(
        self, user_id: str, *, added: int, threshold: int | None, ttl_ms: int | None = None
    ) -> ScriptCall:
        """The script call of :meth:`note`, for a caller that sends it with others."""
        keys = self._shard_keys(self.shard_of(user_id))
        now = int(time.time() * 1000)
        expiry = ("", "") if not ttl_ms else (now + ttl_ms, now)
        return ScriptCall(_NOTE, len(keys), (*keys, user_id, added, threshold or 0, *expiry))

    @paired
    def note(
        self, user_id: str, *, added: int, threshold: int | None, ttl_ms: int | None = None
    ) -> Plan[bool]:
        """Count ``added`` new messages of the user as waiting to be summarized; enqueue
        the user if ``threshold`` of them are. With ``ttl_ms`` (the memory's ``user_ttl``),
        the user's id leaves the queue that long after this note unless a later one
        extends it, as the user's own keys expire.

        Returns whether the user was enqueued (``False`` if already queued or not due).
        """
        script = self.note_call(user_id, added=added, threshold=threshold, ttl_ms=ttl_ms)
        c = self.connection
        with c.errors():
            return bool((yield call(c.run, c.arun, script)))

    anote = note.aio

    @paired
    def settle(
        self,
        user_id: str,
        *,
        watermark: int,
        length: int,
        threshold: int | None,
        entry: QueueEntry | None = None,
    ) -> Plan[bool]:
        """After a summarization: ack ``entry``, record the watermark, re-enqueue if due."""
        keys = self._shard_keys(self.shard_of(user_id))
        args = [entry.entry_id if entry else "", user_id, watermark, length, threshold or 0]
        c = self.connection
        with c.errors():
            return bool((yield call(c.eval, c.aeval, _SETTLE, len(keys), *keys, *args)))

    asettle = settle.aio

    @paired
    def forget(self, user_id: str) -> Plan[int]:
        """Erase the user from its shard: its entry (acknowledged and deleted, even if a
        worker holds it), the pending index and the watermark copy. Returns the number
        of stream entries deleted.
        """
        keys = self._shard_keys(self.shard_of(user_id))
        c = self.connection
        legacy: list[str] = []
        if (yield call(c.command, c.acommand, "SISMEMBER", keys[5], user_id)):
            entries = yield call(c.command, c.acommand, "XRANGE", keys[0], "-", "+")
            legacy = _legacy_ids(entries, user_id)
        with c.errors():
            return int((yield call(c.eval, c.aeval, _FORGET, len(keys), *keys, user_id, *legacy)))

    aforget = forget.aio

    @paired
    def purge_expired(self) -> Plan[int]:
        """Take every user whose data expired (``user_ttl``) out of every shard; return how
        many. The worker runs it every few seconds; each turn's note purges a few too.
        """
        now = int(time.time() * 1000)
        total, c = 0, self.connection
        with c.errors():
            for shard in range(self.shards):
                keys = self._shard_keys(shard)
                while n := int(
                    (yield call(c.eval, c.aeval, _PURGE_EXPIRED, len(keys), *keys, now, 500))
                ):
                    total += n
        return total

    apurge_expired = purge_expired.aio

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
            reply: Any = await client.xreadgroup(GROUP, consumer, {stream: ">"}, count=count)
        return await self._aowned(shard, [m for _stream, ms in reply or [] for m in ms])

    async def adead_letter(self, entry: QueueEntry, reason: str) -> None:
        """Acknowledge an entry no worker can ever process (an invalid user id) and record
        it in the shard's dead-letter stream (the last ``DEAD_LETTERS`` kept), so that it
        neither fails every claim forever nor vanishes unseen.
        """
        stream = self.keys.queue_key(entry.shard, "stream")
        dead = self.keys.queue_key(entry.shard, "dead")
        record = ("user", entry.user_id[:300], "entry", entry.entry_id, "reason", reason[:300])
        await self.connection.apipelined(
            [
                ("XACK", stream, GROUP, entry.entry_id),
                ("XDEL", stream, entry.entry_id),
                ("HDEL", self.keys.queue_key(entry.shard, "owners"), entry.entry_id),
                ("HDEL", self.keys.queue_key(entry.shard, "entries"), entry.user_id),
                ("XADD", dead, "MAXLEN", "~", DEAD_LETTERS, "*", *record),
            ]
        )

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
        # an entry deleted meanwhile comes back without fields
        return await self._aowned(shard, [m for m in (reply[1] if reply else []) if m[1]])

    async def _aowned(self, shard: int, messages: list[Any]) -> list[QueueEntry]:
        """The entries with their users (from ``owners``; a pre-0.2 entry names its own).
        Entries whose user was erased meanwhile are acknowledged and dropped.
        """
        if not messages:
            return []
        keys = self._shard_keys(shard)
        ids = [as_text(entry_id) for entry_id, _fields in messages]
        client = await self.connection.aclient()
        with self.connection.errors():
            owners = await client.hmget(keys[2], ids)  # type: ignore[misc]
        out, orphans = [], []
        for entry_id, (_id, fields), owner in zip(ids, messages, owners, strict=True):
            user = owner if owner is not None else fields.get(b"user", fields.get("user"))
            if user is None:
                orphans.append(entry_id)
            else:
                out.append(QueueEntry(shard, entry_id, as_text(user)))
        if orphans:
            with self.connection.errors():
                await self.connection.aeval(_DROP, 1, keys[0], *orphans)
        return out

    # ----- what is pending -----

    @paired
    def pending_users(self, min_messages: int) -> Plan[list[str]]:
        """Users with at least ``min_messages`` unsummarized messages, from the index."""
        c = self.connection
        replies = yield call(c.pipelined, c.apipelined, self._pending_reads(min_messages))
        return sorted(as_text(u) for reply in replies for u in reply)

    apending_users = pending_users.aio

    @paired
    def indexed_users(self) -> Plan[set[str]]:
        """Every user the queue names (pending, watermark copy, entry), over all shards."""
        c = self.connection
        return _index_members((yield call(c.pipelined, c.apipelined, self._index_reads())))

    aindexed_users = indexed_users.aio

    def _pending_reads(self, min_messages: int) -> list[tuple[Any, ...]]:
        return [
            ("ZRANGEBYSCORE", self.keys.queue_key(shard, "pending"), min_messages, "+inf")
            for shard in range(self.shards)
        ]

    def _index_reads(self) -> list[tuple[Any, ...]]:
        """What names users in each shard: pending, watermark copies, entries, queued."""
        return [
            command
            for keys in map(self._shard_keys, range(self.shards))
            for command in (
                ("ZRANGE", keys[3], 0, -1),
                ("ZRANGE", keys[4], 0, -1),
                ("HKEYS", keys[1]),
                ("SMEMBERS", keys[5]),
            )
        ]

    @paired
    def enqueue_due(self, threshold: int) -> Plan[int]:
        """Queue every indexed user with at least ``threshold`` pending messages that is
        not queued yet (a worker started with a lower threshold than the app's); return
        how many were queued.
        """
        n, c = 0, self.connection
        for shard in range(self.shards):
            keys = self._shard_keys(shard)
            due = yield call(c.command, c.acommand, "ZRANGEBYSCORE", keys[3], threshold, "+inf")
            for user in due:
                with c.errors():
                    n += int((yield call(c.eval, c.aeval, _QUEUE, len(keys), *keys, as_text(user))))
        return n

    aenqueue_due = enqueue_due.aio

    @paired
    def indexed(self) -> Plan[bool]:
        """Whether the pending index covers every user (a sweep has run on this Redis)."""
        c = self.connection
        return bool((yield call(c.command, c.acommand, "EXISTS", self.keys.queue_marker_key())))

    aindexed = indexed.aio

    @paired
    def mark_indexed(self) -> Plan[None]:
        """Record that a sweep has indexed every user."""
        c = self.connection
        yield call(c.command, c.acommand, "SET", self.keys.queue_marker_key(), "1")

    amark_indexed = mark_indexed.aio

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
                queued += int(await client.hlen(keys[1]))  # type: ignore[misc]
                queued += int(await client.scard(keys[5]))  # type: ignore[misc]
                pending += int(await client.zcard(keys[3]))
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


def _legacy_ids(entries: Any, user_id: str) -> list[str]:
    """The ids of pre-0.2 stream entries that name ``user_id`` in their ``user`` field."""
    return [
        as_text(entry_id)
        for entry_id, fields in entries
        if as_text(fields.get(b"user", fields.get("user", b""))) == user_id
    ]


def _index_members(replies: list[Any]) -> set[str]:
    return {as_text(member) for reply in replies for member in reply}

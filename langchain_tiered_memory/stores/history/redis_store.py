"""Chat history in Redis: a list per user, each turn appended by one Lua script, with the
per-thread records (threads, replay marks, spans) beside it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import (
    BaseMessage,
)

from langchain_tiered_memory._steps import Plan, call, paired
from langchain_tiered_memory.backend.connection import RedisConnection, ScriptCall
from langchain_tiered_memory.backend.keys import KeyBuilder, validate_user_id
from langchain_tiered_memory.stores.directory import activity_call
from langchain_tiered_memory.stores.history import revisions, rule
from langchain_tiered_memory.stores.history.base import (
    Appended,
    HistoryStore,
    decoded_members,
    limit_arg,
    owned_elsewhere,
    owned_threads,
    owner_text,
    position_arg,
    thread_arg,
)
from langchain_tiered_memory.stores.history.codec import (
    BASE_FIELD,
    DEFAULT_MAX_MESSAGE_BYTES,
    TOMBSTONE,
    OnInvalid,
    parse_tail,
    positioned,
    thread_spans,
)
from langchain_tiered_memory.stores.history.retraction import READ_AT, SWAP_AT
from langchain_tiered_memory.stores.history.rule import message_ids, parse_mark

# Erasure releases a thread only if the record still names the user; a record of another
# type (not one this package writes) goes too: it names no one, and only the user's own
# claim put the thread in their set.
RELEASE_LUA = """
local kind = redis.call('TYPE', KEYS[1]).ok
if kind == 'none' then return 0 end
if kind ~= 'string' or redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""

# A thread's owner record as stored, or ``{type}`` for a key of another type (which a GET
# would fail on): read, it raises CorruptMemoryError naming the key, and blocks no erasure.
# A turn's read passes its user and ``user_ttl`` (ARGV): the record restarts its clock if it
# names that user (it names them: it expires with their data), never another user's.
OWNER_LUA = """
local kind = redis.call('TYPE', KEYS[1]).ok
if kind == 'string' then
  local owner = redis.call('GET', KEYS[1])
  if owner == ARGV[1] and tonumber(ARGV[2]) > 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
  return owner
end
if kind == 'none' then return false end
return {kind}
"""

RECORDED_LUA = "return redis.call('SISMEMBER', KEYS[1], ARGV[1])"

# Reads the base offset and a range in one atomic step, so trimming in between cannot
# shift positions under the reader.
_SINCE_LUA = """
local base = tonumber(redis.call('HGET', KEYS[2], ARGV[3]) or '0')
local start = tonumber(ARGV[1]) - base
if start < 0 then start = 0 end
local stop = -1
if ARGV[2] ~= 'all' then
  if tonumber(ARGV[2]) <= 0 then return {base + start, {}} end
  stop = start + tonumber(ARGV[2]) - 1
end
return {base + start, redis.call('LRANGE', KEYS[1], start, stop)}
"""

_TRIM_LUA = """
local base = tonumber(redis.call('HGET', KEYS[2], ARGV[3]) or '0')
local len = redis.call('LLEN', KEYS[1])
local drop = math.min(len - tonumber(ARGV[1]), tonumber(ARGV[2]) - base)
if drop <= 0 then return 0 end
redis.call('LTRIM', KEYS[1], drop, -1)
redis.call('HINCRBY', KEYS[2], ARGV[3], drop)
return drop
"""

# Clearing keeps positions counting: the summarizer's watermark (an absolute position)
# stays meaningful, so messages added after a clear are summarized, not skipped. An
# erasure (ARGV[3] = 'erase') deletes the history's fields of the meta hash instead (its
# position base and last write; the hash is shared with the summary store's fields):
# positions start again. Returns the messages deleted: forgotten ones (tombstones) are
# not counted again.
_CLEAR_LUA = """
local n = redis.call('LLEN', KEYS[1])
local kept = n
if n > 0 then
  for _, entry in ipairs(redis.call('LRANGE', KEYS[1], 0, -1)) do
    if entry == ARGV[2] then kept = kept - 1 end
  end
  if ARGV[3] ~= 'erase' then redis.call('HINCRBY', KEYS[2], ARGV[1], n) end
  redis.call('DEL', KEYS[1])
end
if ARGV[3] == 'erase' then redis.call('HDEL', KEYS[2], ARGV[1], 'last_at') end
redis.call('DEL', KEYS[3], KEYS[4], KEYS[5])
return kept
"""

# Forget one thread: its messages become tombstones (positions stay, so the watermark and
# the other threads' spans keep their meaning), its records go. KEYS: history, meta,
# threads, turns, spans. ARGV: thread id, tombstone.
_FORGET_THREAD_LUA = """
local base = tonumber(redis.call('HGET', KEYS[2], 'hist_base') or '0')
local len = redis.call('LLEN', KEYS[1])
local removed = 0
local spans = redis.call('LRANGE', KEYS[5], 0, -1)
for _, span in ipairs(spans) do
  local a = string.find(span, ':', 1, true)
  local b = string.find(span, ':', a + 1, true)
  if string.sub(span, b + 1) == ARGV[1] then
    local first = tonumber(string.sub(span, 1, a - 1))
    local last = tonumber(string.sub(span, a + 1, b - 1))
    for p = math.max(first, base), last - 1 do
      if p - base < len and redis.call('LINDEX', KEYS[1], p - base) ~= ARGV[2] then
        redis.call('LSET', KEYS[1], p - base, ARGV[2])
        removed = removed + 1
      end
    end
    redis.call('LREM', KEYS[5], 0, span)
  end
end
redis.call('SREM', KEYS[3], ARGV[1])
-- the recent-id list an earlier version kept beside the mark goes too
redis.call('HDEL', KEYS[4], ARGV[1], ARGV[1] .. '\0recent')
return removed
"""


class RedisHistoryStore(HistoryStore):
    """Chat history in a Redis list per user: ``RPUSH`` whole turns, ``LRANGE`` the tail.

    Reading the last N messages costs O(N) whatever the history length.

    Example:
        >>> store = RedisHistoryStore(RedisConnection("redis://localhost:6379"))  # no I/O yet

    """

    def __init__(
        self,
        connection: RedisConnection,
        *,
        keys: KeyBuilder | None = None,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        self.connection = connection
        self.keys = keys or KeyBuilder()
        self.max_message_bytes = max_message_bytes

    def _k(self, user_id: str) -> tuple[str, str]:
        return self.keys.key(user_id, "history"), self.keys.key(user_id, "meta")

    def tail_command(self, user_id: str, n: int) -> tuple[str, str, int, int]:
        """The ``LRANGE`` of :meth:`tail`, for callers batching it into a pipeline."""
        if n <= 0:
            return ("LRANGE", self._k(user_id)[0], 0, -1)  # never executed, see tail()
        return ("LRANGE", self._k(user_id)[0], -n, -1)

    parse_tail = staticmethod(parse_tail)  # the reply of tail_command as messages

    def _records(self, user_id: str) -> list[str]:
        # the per-thread records beside the list: thread ids, replay marks, spans
        k = self.keys.key
        return [k(user_id, "threads"), k(user_id, "turns"), k(user_id, "spans")]

    def where(self, user_id: str) -> str:
        """How errors name the user's history: the user id and the Redis key."""
        return f"the history of user {user_id!r} (key {self._k(user_id)[0]})"

    def append_call(
        self,
        user_id: str,
        messages: Sequence[BaseMessage],
        *,
        thread_id: str | None = None,
        thread_position: int | None = None,
        on_invalid: OnInvalid = "raise",
    ) -> ScriptCall:
        """The script call of :meth:`append` (its reply: :meth:`after_append`), for a
        caller that sends it with others. Validates and serializes the messages first.
        """
        hist, meta = self._k(user_id)
        thread = thread_arg(thread_id)
        position = position_arg(thread_id, thread_position)
        payload = self._dump_all(messages, on_invalid)
        keys = (hist, meta, *self._records(user_id))
        ids = message_ids(messages)
        args = (thread, position, len(payload), *ids, *payload, int(time.time()))
        return ScriptCall(rule.APPEND, len(keys), (*keys, *args))

    def after_append(
        self,
        user_id: str,
        thread_id: str | None,
        reply: Any,
        script: ScriptCall,
        messages: Sequence[BaseMessage],
    ) -> Plan[Appended]:
        """What an append's reply (of ``script``, :meth:`append_call` of ``messages``)
        asks for after it: the edits it found stored in place, a fork's left branch marked.
        """
        done = rule.append_reply(reply, script.args[script.numkeys :], messages)
        if thread_id is None or (done.fork is None and not done.edits):
            return Appended(done.length)
        fork, edits, known = done.fork, done.edits, done.known
        changes = yield from revisions.thread_changes(
            self, user_id, thread_id, fork, edits, known=known
        )
        return Appended(done.length, changes.left, changes.replaced)

    @paired
    def append(
        self,
        user_id: str,
        messages: Sequence[BaseMessage],
        *,
        thread_id: str | None = None,
        thread_position: int | None = None,
        on_invalid: OnInvalid = "raise",
    ) -> Plan[int]:
        """Append a turn (:meth:`append_turn`); return the history's length."""
        appended = yield call(
            self.append_turn,
            self.aappend_turn,
            user_id,
            messages,
            thread_id=thread_id,
            thread_position=thread_position,
            on_invalid=on_invalid,
        )
        return int(appended.length)

    aappend = append.aio

    @paired
    def append_turn(
        self,
        user_id: str,
        messages: Sequence[BaseMessage],
        *,
        thread_id: str | None = None,
        thread_position: int | None = None,
        on_invalid: OnInvalid = "raise",
    ) -> Plan[Appended]:
        """Append a turn in one script: atomic, contiguous, in order, by the thread's rule
        (``thread_append``); tell what it changed (``HistoryStore.append_turn``).
        """
        script = self.append_call(
            user_id,
            messages,
            thread_id=thread_id,
            thread_position=thread_position,
            on_invalid=on_invalid,
        )
        if not messages:
            return Appended((yield call(self.length, self.alength, user_id)))
        c = self.connection
        with c.errors():
            # the append and the console directory's entry, in one round trip
            active = activity_call(self.keys, user_id, time.time())
            replies = yield call(c.run_all, c.arun_all, [script, active])
            return (yield from self.after_append(user_id, thread_id, replies[0], script, messages))

    aappend_turn = append_turn.aio

    # ----- the user's threads: each owned by the user of its first turn -----

    def _claims(self, user_id: str, thread_id: str, *, claim: bool) -> list[tuple[Any, ...]]:
        # the claim (SET NX, then the GET whose reply goes to _claimed: no one else can
        # change an owner record but its owner's erasure) and the SADD; else the SADD alone
        mine = ("SADD", self.keys.key(user_id, "threads"), thread_id)
        if not claim:
            return [mine]
        owner = self.keys.thread_owner_key(thread_arg(thread_id))
        return [("SET", owner, validate_user_id(user_id), "NX"), ("GET", owner), mine]

    def _claimed(self, user_id: str, thread_id: str, reply: Any) -> bool:
        # whether the claim's GET lets the user use the thread (no owner before, or them)
        key = self.keys.thread_owner_key(thread_arg(thread_id))
        return owner_text(reply, key) in (None, user_id)

    def thread_record_calls(
        self, user_id: str, thread_id: str, ttl_ms: int | None = None
    ) -> list[ScriptCall]:
        """The calls of :meth:`thread_record` (their replies: :meth:`parse_record`), for a
        caller that sends them with others (a turn's read). With ``ttl_ms``, an owner record
        that names the user restarts its clock.
        """
        owner = self.keys.thread_owner_key(thread_arg(thread_id))
        mine = self.keys.key(validate_user_id(user_id), "threads")
        return [
            ScriptCall(OWNER_LUA, 1, (owner, user_id, ttl_ms or 0)),
            ScriptCall(RECORDED_LUA, 1, (mine, thread_id)),
        ]

    def parse_record(self, thread_id: str, replies: Sequence[Any]) -> tuple[str | None, bool]:
        """``(owner, recorded)`` from the replies of :meth:`thread_record_calls`.

        Raises:
            CorruptMemoryError: the owner record is not one this package writes.
        """
        key = self.keys.thread_owner_key(thread_arg(thread_id))
        return owner_text(replies[0], key), bool(replies[1])

    @paired
    def thread_record(self, user_id: str, thread_id: str) -> Plan[tuple[str | None, bool]]:
        """The owner and whether the user recorded the thread (one round trip)."""
        c = self.connection
        with c.errors():
            calls = self.thread_record_calls(user_id, thread_id)
            replies = yield call(c.run_all, c.arun_all, calls)
        return self.parse_record(thread_id, replies)

    athread_record = thread_record.aio

    def mark_command(self, user_id: str, thread_id: str) -> tuple[str, ...]:
        """The command of :meth:`thread_mark` (its reply: ``parse_mark``), for a turn's read."""
        return ("HGET", self._records(validate_user_id(user_id))[1], thread_arg(thread_id))

    @paired
    def thread_mark(self, user_id: str, thread_id: str) -> Plan[tuple[int, tuple[str, ...]] | None]:
        """The thread's mark (``HistoryStore.thread_mark``), one round trip."""
        c = self.connection
        with c.errors():
            return parse_mark(
                (yield call(c.command, c.acommand, *self.mark_command(user_id, thread_id)))
            )

    athread_mark = thread_mark.aio

    @paired
    def record_thread(self, user_id: str, thread_id: str, *, claim: bool = True) -> Plan[None]:
        """Claim the thread for the user (first turn) and add it to the user's threads.

        Raises:
            ThreadOwnershipError: another user's turns started the thread.
        """
        c = self.connection
        commands = self._claims(user_id, thread_id, claim=claim)
        replies = yield call(c.pipelined, c.apipelined, commands)
        if claim and not self._claimed(user_id, thread_id, replies[1]):
            # the SADD went with the claim: undone, so that the user's export and erasure
            # never list the other user's thread
            undo = ("SREM", self.keys.key(user_id, "threads"), thread_id)
            yield call(c.command, c.acommand, *undo)
            raise owned_elsewhere(thread_id)

    arecord_thread = record_thread.aio

    def _owner_keys(self, members: Sequence[str]) -> list[str]:
        return [self.keys.thread_owner_key(m) for m in members]

    def _owner_calls(self, members: Sequence[str]) -> list[ScriptCall]:
        return [ScriptCall(OWNER_LUA, 1, (key, "", 0)) for key in self._owner_keys(members)]

    @paired
    def threads(self, user_id: str) -> Plan[list[str]]:
        """The threads recorded for the user that no other user owns (sorted)."""
        c = self.connection
        raw = yield call(c.command, c.acommand, "SMEMBERS", self.keys.key(user_id, "threads"))
        members = decoded_members(raw, self.where(user_id))
        with c.errors():
            owners = yield call(c.run_all, c.arun_all, self._owner_calls(members))
        return owned_threads(user_id, members, owners, self.where(user_id))

    athreads = threads.aio

    def _release_calls(self, user_id: str, thread_ids: Sequence[str]) -> list[ScriptCall]:
        user = validate_user_id(user_id)
        return [ScriptCall(RELEASE_LUA, 1, (key, user)) for key in self._owner_keys(thread_ids)]

    @paired
    def release_threads(self, user_id: str, thread_ids: Sequence[str]) -> Plan[None]:
        """Delete the owner records of these threads that name the user (erasure), in one
        pipelined round trip (one call each on a Cluster).
        """
        c = self.connection
        with c.errors():
            yield call(c.run_all, c.arun_all, self._release_calls(user_id, thread_ids))

    arelease_threads = release_threads.aio

    @paired
    def spans(self, user_id: str) -> Plan[list[tuple[int, int, str]]]:
        """The thread spans, oldest first."""
        c = self.connection
        raw = yield call(c.command, c.acommand, "LRANGE", self.keys.key(user_id, "spans"), 0, -1)
        return thread_spans(raw)

    aspans = spans.aio

    def _forget_args(self, user_id: str, thread_id: str) -> list[Any]:
        hist, meta = self._k(user_id)
        records = self._records(user_id)
        return [_FORGET_THREAD_LUA, 5, hist, meta, *records, thread_arg(thread_id), TOMBSTONE]

    @paired
    def forget_thread(self, user_id: str, thread_id: str) -> Plan[int]:
        """Tombstone the thread's messages in one script."""
        args = self._forget_args(user_id, thread_id)
        c = self.connection
        with c.errors():
            return int((yield call(c.eval, c.aeval, *args)))

    aforget_thread = forget_thread.aio

    @paired
    def read_at(self, user_id: str, positions: Sequence[int], reach: int = 1) -> Plan[list[Any]]:
        """The stored entries from each absolute position on, ``reach`` each (one script)."""
        hist, meta = self._k(user_id)
        c = self.connection
        with c.errors():
            raw = yield call(c.eval, c.aeval, READ_AT, 2, hist, meta, reach, *positions)
        return [e or None for e in raw]

    aread_at = read_at.aio

    @paired
    def swap_at(self, user_id: str, swaps: Sequence[tuple[int, Any, str]]) -> Plan[int]:
        """Replace each entry that still holds what was read (one script)."""
        hist, meta = self._k(user_id)
        flat = [part for swap in swaps for part in swap]
        c = self.connection
        with c.errors():
            return int((yield call(c.eval, c.aeval, SWAP_AT, 2, hist, meta, *flat)))

    aswap_at = swap_at.aio

    @paired
    def tail(self, user_id: str, n: int) -> Plan[list[BaseMessage]]:
        """Last ``n`` messages (``LRANGE -n -1``)."""
        if n <= 0:
            return []
        _, key, start, stop = self.tail_command(user_id, n)
        c = self.connection
        raw = yield call(c.command, c.acommand, "LRANGE", key, start, stop)
        return self.parse_tail(raw, self.where(user_id))

    atail = tail.aio

    def _window_args(self, user_id: str, start: int, limit: int | None) -> list[Any]:
        hist, meta = self._k(user_id)
        return [_SINCE_LUA, 2, hist, meta, max(start, 0), limit_arg(limit), BASE_FIELD]

    @paired
    def window_positions(
        self, user_id: str, start: int, limit: int | None = None
    ) -> Plan[tuple[int, int, list[tuple[int, BaseMessage]]]]:
        """:meth:`window` with each message's absolute position."""
        c = self.connection
        with c.errors():
            first, raw = yield call(c.eval, c.aeval, *self._window_args(user_id, start, limit))
        found = positioned(int(first), raw, where=self.where(user_id))
        return int(first), int(first) + len(raw), found

    awindow_positions = window_positions.aio

    @paired
    def length(self, user_id: str) -> Plan[int]:
        """Absolute length."""
        hist, meta = self._k(user_id)
        c = self.connection
        commands = [("LLEN", hist), ("HGET", meta, BASE_FIELD)]
        n, base = yield call(c.pipelined, c.apipelined, commands)
        return int(n) + int(base or 0)

    alength = length.aio

    @paired
    def trim(self, user_id: str, *, keep_last: int, not_after: int) -> Plan[int]:
        """Retention: drop old, already-summarized messages."""
        hist, meta = self._k(user_id)
        args: list[Any] = [
            _TRIM_LUA,
            2,
            hist,
            meta,
            max(keep_last, 0),
            max(not_after, 0),
            BASE_FIELD,
        ]
        c = self.connection
        with c.errors():
            return int((yield call(c.eval, c.aeval, *args)))

    atrim = trim.aio

    @paired
    def users(self) -> Plan[list[str]]:
        """Users with a history, found by SCAN (never KEYS) on every node."""
        c = self.connection
        keys = yield call(c.scan, c.ascan, self.keys.scan_pattern("history"))
        return sorted({user for key in keys if (user := self.keys.user_from_key(key)) is not None})

    ausers = users.aio

    @paired
    def clear(self, user_id: str) -> Plan[int]:
        """Delete the list; positions keep counting (:meth:`length` is unchanged)."""
        return (yield from self._cleared(user_id, "clear"))

    aclear = clear.aio

    @paired
    def erase(self, user_id: str) -> Plan[int]:
        """One script: the list, the thread records and the position counter (see
        :meth:`HistoryStore.erase`).
        """
        return (yield from self._cleared(user_id, "erase"))

    aerase = erase.aio

    def _cleared(self, user_id: str, how: str) -> Plan[int]:
        hist, meta = self._k(user_id)
        args: list[Any] = [
            _CLEAR_LUA,
            5,
            hist,
            meta,
            *self._records(user_id),
            BASE_FIELD,
            TOMBSTONE,
            how,
        ]
        c = self.connection
        with c.errors():
            return int((yield call(c.eval, c.aeval, *args)))

"""The one rule of what a thread's history holds, in one place: its Python form
(:func:`thread_append`, which the in-memory store and an app's own store run) and its
Lua form (:data:`APPEND`, the Redis store's append script), twins.

A message's identity in a thread is its key (:func:`message_key`: its id and a digest of
its text). A store keeps per thread a mark: the saved thread position and its last saved
messages, each its key and where it is stored. A batch saved at a thread position is
compared with what the thread holds from there: the same key is held already (a replayed
save, a concurrent run carrying it), the same id with another text is an edit (stored in
place: ``revisions.thread_changes``), and at the first other id the thread forked: what
it held from there on is a branch it left (marked, kept), and the rest is stored.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any, NamedTuple

from langchain_core.messages import BaseMessage

from langchain_tiered_memory.errors import CorruptMemoryError

__all__ = [
    "APPEND",
    "AppendReply",
    "KEY_SEP",
    "MARK_IDS",
    "POS_SEP",
    "ThreadAppend",
    "append_reply",
    "changes_thread",
    "message_ids",
    "message_key",
    "parse_mark",
    "replayed",
    "replayed_prefix",
    "thread_append",
    "thread_edits",
]


# A thread's mark keeps this many of its last saved messages (key and stored position).
MARK_IDS = 32
# What separates a message's id from the digest of its text in its key (``message_ids``).
KEY_SEP = "\x1f"


def message_key(message: BaseMessage) -> str:
    """A message's identity in a thread: its id, then 6 hex digits of the SHA-1 of its
    text (``""``: no id, no identity). The same id with another text is an edit of that
    message; another id is another message.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> message_key(HumanMessage("I am 30.", id="h1"))
        'h1\\x1f0a08bf'
    """
    msg_id = getattr(message, "id", None)
    if not isinstance(msg_id, str) or not msg_id:
        return ""
    text = message.text.encode("utf-8", "surrogatepass")
    return msg_id + KEY_SEP + hashlib.sha1(text).hexdigest()[:6]


def message_ids(messages: Sequence[BaseMessage]) -> list[str]:
    """Each message's key (:func:`message_key`): what a thread's mark holds and the append
    compares. A mark an earlier version wrote holds bare ids: those compare by id alone.
    """
    return [message_key(m) for m in messages]


class ThreadAppend(NamedTuple):
    """What an append of a thread's batch stores (:func:`thread_append`)."""

    stored: list[int]
    """Indexes of the batch's messages to store, in order."""
    recent: list[str]
    """Always empty: no list of recent ids is kept any more (a store written for 0.2.0
    that stores it keeps an empty one)."""
    mark: tuple[int, tuple[str, ...]] | None
    """The thread's new mark, ``None``: keep the one it has."""
    fork: tuple[int, int] | None
    """Thread positions ``[start, end)`` the batch left: a fork (``revisions.thread_changes``)."""
    revised: tuple[int, ...] = ()
    """Indexes of the batch's messages that are a new text of the message the thread holds
    at their position (the same id): an edit, stored in its place (``revisions.thread_changes``)."""
    known: tuple[tuple[int, int], ...] = ()
    """``(thread position, absolute position)`` of the fork's and the edits' messages, as
    the mark knew them when the append ran (none for a mark without positions)."""


def thread_append(
    mark: tuple[int, Sequence[str]] | None,
    recent: Sequence[str],
    position: int,
    ids: Sequence[str],
    *,
    at: int | None = None,
) -> ThreadAppend:
    """The one rule of a thread's history, for a store that keeps per thread its mark
    (``(saved position, the last saved messages)``, each as its key and where it is
    stored): the batch ``ids`` (keys, :func:`message_ids`) at thread position ``position``
    is compared with what the thread holds from there, message by message. The same key
    is held already (a replayed save, a concurrent run carrying it); the same id with
    another text is an edit, stored in place of the held one (``revised``); at the first
    other id the thread forked: what it holds from there on is a branch it left
    (``fork``), and the rest of the batch is stored. ``at``: the absolute position the
    stored messages get (the mark keeps it, so a fork's and an edit's messages are known
    without a read). ``recent`` is not read (kept for stores written for 0.2.0).

    Example:
        >>> thread_append((2, ("h1", "a1")), (), 2, ["h2", "a2"]).stored
        [0, 1]
        >>> saved = ("h1", "a1", "h2", "a2")
        >>> thread_append((4, saved), (), 2, ["h3", "a3"]).fork  # a run from position 2
        (2, 4)
    """
    held = [_split(entry) for entry in (mark[1] if mark is not None else ())]
    saved = mark[0] if mark is not None else position
    first = saved - len(held)

    def where(q: int) -> int:  # the absolute position of thread position q, -1: unknown
        return held[q - first][1] if mark is not None and first <= q < saved else -1

    keys = tuple(key for key, _ in held)
    skip, revised = replayed((saved, keys) if mark is not None else None, position, ids)
    fork = None
    if mark is not None and skip < len(ids) and position + skip < saved:
        fork = (position + skip, saved)
    stored = list(range(skip, len(ids)))
    if not stored and not revised:
        return ThreadAppend([], [], None, fork)
    # the new mark ends with the batch, or where the old one did if the batch (held and
    # edited only) ends before it: a replayed or edited prefix leaves what follows held
    end = position + len(ids) if stored or mark is None else max(position + len(ids), saved)
    entries: list[str] = []
    for q in range(max(end - MARK_IDS, 0), end):
        i = q - position
        if 0 <= i < len(ids):
            stored_at = where(q) if i < skip else (-1 if at is None else at + i - skip)
            entries.append(_entry(ids[i], stored_at))
        elif mark is not None and first <= q < saved:  # as the mark had it
            entries.append(mark[1][q - first])
        else:  # unknown: the window starts after it
            entries = []
    wanted = [*(range(*fork) if fork else ()), *(position + i for i in revised)]
    known = tuple((q, where(q)) for q in wanted if where(q) >= 0)
    return ThreadAppend(stored, [], (end, tuple(entries)), fork, tuple(revised), known)


def parse_mark(raw: bytes | str | None) -> tuple[int, tuple[str, ...]] | None:
    """A mark as a store keeps it in one string (``"<saved>:" + NUL-joined entries``).

    Example:
        >>> parse_mark(b"2:h1\\x00a1")
        (2, ('h1', 'a1'))
    """
    if raw is None:
        return None
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    saved, _, rest = text.partition(":")
    if not saved.isdigit():
        raise CorruptMemoryError(f"a thread mark is not one this package writes: {text[:40]!r}")
    return int(saved), tuple(rest.split("\x00")) if rest else ()


# What separates a mark's key from where its message is stored (``thread_append``).
POS_SEP = "\x1e"


def _entry(key: str, stored_at: int) -> str:
    return key if stored_at < 0 else f"{key}{POS_SEP}{stored_at}"


def _split(entry: str) -> tuple[str, int]:
    """A mark's entry as (key, absolute position; -1: not kept, as by an earlier version)."""
    key, sep, stored_at = entry.rpartition(POS_SEP)
    if sep and stored_at.isdigit():
        return key, int(stored_at)
    return entry, -1


def _same_id(held: str, key: str) -> bool:
    """Whether a held key (or a bare id an earlier version kept) names ``key``'s message."""
    return key.rsplit(KEY_SEP, 1)[0] == held.rsplit(KEY_SEP, 1)[0]


def replayed(
    mark: tuple[int, Sequence[str]] | None, start: int, ids: Sequence[str]
) -> tuple[int, list[int]]:
    """How many leading messages of a batch at thread position ``start`` the thread holds
    (by id), and which of those are edits (another text), given its mark (the in-memory
    twin of the check in the append script). A batch that starts before the mark's keys
    is held up to the saved position only if it reaches it through them all.

    Example:
        >>> replayed((2, ("h1\\x1fa", "a1\\x1fb")), 0, ["h1\\x1fc", "a1-regen\\x1fd", "h2\\x1fe"])
        (1, [0])
    """
    if mark is None:
        return 0, []
    saved, held = mark
    first = saved - len(held)
    skip, revised = 0, []
    while skip < len(ids) and start + skip < saved:
        q, key = start + skip, ids[skip]
        if q >= first:
            kept = held[q - first]
            if not kept or not key or not _same_id(kept, key):
                break
            if KEY_SEP in kept and kept != key:
                revised.append(skip)
        skip += 1
    if start < first and start + skip < saved:  # not seen through to the saved position
        return 0, []
    return skip, revised


def replayed_prefix(mark: tuple[int, Sequence[str]] | None, start: int, ids: Sequence[str]) -> int:
    """How many leading messages of a batch at thread position ``start`` the thread holds
    already (:func:`replayed`'s first part).

    Example:
        >>> replayed_prefix((2, ("h1", "a1")), 0, ["h1", "a1-regenerated", "h2"])
        1
    """
    return replayed(mark, start, ids)[0]


def changes_thread(
    mark: tuple[int, Sequence[str]] | None,
    position: int,
    messages: Sequence[BaseMessage],
    context: Sequence[BaseMessage] = (),
) -> tuple[int, list[BaseMessage]] | None:
    """What to save before a turn's model runs (``(position, messages)``), or ``None``:
    ``messages`` at thread ``position``, with the saved messages before them as the run's
    branch has them (``context``, those the mark still holds), when by the rule they fork
    the thread or edit what it holds (a run from an earlier checkpoint, time travel).

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> changes_thread((1, ("h1",)), 0, [HumanMessage("hi", id="h2")])[0]
        0
    """
    if mark is None or not messages:
        return None
    seen = max(0, min(len(context), position - (mark[0] - len(mark[1]))))
    batch = [*context[len(context) - seen :], *messages]
    plan = thread_append(mark, (), position - seen, message_ids(batch))
    return (position - seen, batch) if plan.fork is not None or plan.revised else None


# One script: the whole turn lands or none of it. RPUSH per element because unpack() of a
# large ARGV overflows Lua's C stack (about 8000 values).
# ARGV: thread id ('' = none), thread position of the first message ('' = none), n, then n
# message keys (message_ids: id, KEY_SEP, a digest of the text), then n payloads, then the
# time (Unix seconds). KEYS[4] maps a thread to its mark: "<saved position>:" then its last
# saved messages (up to MARK_IDS, NUL-separated; the thread positions just before the saved
# one), each its key, POS_SEP and its absolute position (a mark an earlier version wrote
# has bare ids). The one rule of a thread (thread_append is its twin, which documents it):
# the batch is compared with what the thread holds from its position on; the same key is
# held, the same id with another text is an edit, and at the first other id the thread
# forked. Returns {length, held, fork start, saved (-1, -1: no fork), {edited batch
# indexes}, {thread position, absolute position, ...} of the fork's and edits' messages}.
APPEND = (
    """
local MARK_IDS = @MARK_IDS@
local SEP, AT = '@KEY_SEP@', '@POS_SEP@'
local function split(entry)
  local key, at = string.match(entry, '^(.*)' .. AT .. '(%d+)$')
  if key then return key, tonumber(at) end
  return entry, -1
end
local function id_of(key)
  return string.match(key, '^(.*)' .. SEP .. '%x+$') or key
end
local n = tonumber(ARGV[3])
local start = tonumber(ARGV[2]) or 0
local tracked = ARGV[1] ~= '' and ARGV[2] ~= ''
local skip, saved, first = 0, -1, start
local entries, keys, where, revised = {}, {}, {}, {}
if tracked then
  local mark = redis.call('HGET', KEYS[4], ARGV[1])
  if mark then
    local sep = string.find(mark, ':', 1, true)
    saved = tonumber(string.sub(mark, 1, sep - 1))
    local rest, at = string.sub(mark, sep + 1), 1
    while rest ~= '' do
      local nul = string.find(rest, '\0', at, true)
      entries[#entries + 1] = string.sub(rest, at, (nul or 0) - 1)
      if not nul then break end
      at = nul + 1
    end
    for i, entry in ipairs(entries) do keys[i], where[i] = split(entry) end
    first = saved - #entries
    while skip < n and start + skip < saved do
      local q, key = start + skip, ARGV[4 + skip]
      if q >= first then
        local held = keys[q - first + 1]
        if held == '' or key == '' or id_of(held) ~= id_of(key) then break end
        if held ~= key and string.find(held, SEP, 1, true) then revised[#revised + 1] = skip end
      end
      skip = skip + 1
    end
    if start < first and start + skip < saved then skip = 0; revised = {} end
  end
end
local function stored_at(q)  -- the absolute position the mark knows for thread position q
  if saved < 0 or q < first or q >= saved then return -1 end
  return where[q - first + 1]
end
-- a batch that is not held whole, below what the thread saved: the thread was forked (a
-- run from an earlier checkpoint); its positions [from, saved) are a branch it left
local from = start + skip
local forked = tracked and saved >= 0 and skip < n and from < saved
local base = tonumber(redis.call('HGET', KEYS[2], 'hist_base') or '0')
local before = redis.call('LLEN', KEYS[1])
local len = before
for i = 1 + skip, n do len = redis.call('RPUSH', KEYS[1], ARGV[3 + n + i]) end
local pushed = n - skip
if pushed > 0 and ARGV[1] ~= '' then
  redis.call('SADD', KEYS[3], ARGV[1])
  redis.call('RPUSH', KEYS[5], (base + before) .. ':' .. (base + len) .. ':' .. ARGV[1])
end
if pushed > 0 then
  -- last activity, for the console's user list. The client's clock, not TIME: the
  -- guide's ACL rule (data commands only) does not grant TIME.
  redis.call('HSET', KEYS[2], 'last_at', ARGV[4 + 2 * n])
end
if tracked and (pushed > 0 or #revised > 0) then
  -- the new mark ends with the batch, or where the old one did if the batch (held and
  -- edited only) ends before it: a replayed or edited prefix leaves what follows held
  local kept, stop = {}, start + n
  if pushed == 0 and saved > stop then stop = saved end
  for q = math.max(0, stop - MARK_IDS), stop - 1 do
    local i = q - start
    if i >= 0 and i < n then
      local at = stored_at(q)
      if i >= skip then at = base + before + i - skip end
      local entry = ARGV[4 + i]
      if at >= 0 then entry = entry .. AT .. at end
      kept[#kept + 1] = entry
    elseif saved >= 0 and q >= first and q < saved then
      kept[#kept + 1] = entries[q - first + 1]
    else
      kept = {}
    end
  end
  redis.call('HSET', KEYS[4], ARGV[1], stop .. ':' .. table.concat(kept, '\0'))
end
local known = {}
if forked then
  for q = from, saved - 1 do
    if stored_at(q) >= 0 then known[#known + 1] = q; known[#known + 1] = stored_at(q) end
  end
end
for _, i in ipairs(revised) do
  if stored_at(start + i) >= 0 then
    known[#known + 1] = start + i; known[#known + 1] = stored_at(start + i)
  end
end
return {len + base, skip, forked and from or -1, forked and saved or -1, revised, known}
""".replace("@MARK_IDS@", str(MARK_IDS))
    .replace("@KEY_SEP@", KEY_SEP)
    .replace("@POS_SEP@", POS_SEP)
)


class AppendReply(NamedTuple):
    """The append script's reply, read (:func:`append_reply`)."""

    length: int
    fork: tuple[int, int] | None
    edits: list[tuple[int, BaseMessage, str]]
    """``(thread position, message, its stored form)`` of each edit the rule found."""
    known: dict[int, int]
    """Thread positions -> absolute ones of the fork's and the edits' messages."""


def append_reply(
    reply: Sequence[Any], argv: Sequence[Any], messages: Sequence[BaseMessage]
) -> AppendReply:
    """The reply of :data:`APPEND` (its arguments after the keys, ``argv``, sent for
    ``messages``), read: what ``revisions.thread_changes`` then follows.
    """
    start, saved = int(reply[2]), int(reply[3])
    position, n = int(argv[1] or 0), int(argv[2])
    payloads = argv[3 + n : 3 + 2 * n]  # thread, position, n, n keys, n payloads, time
    edits = thread_edits(position, [int(i) for i in reply[4]], messages, payloads)
    pairs = [int(v) for v in reply[5]]
    known = dict(zip(pairs[::2], pairs[1::2], strict=True))
    return AppendReply(int(reply[0]), (start, saved) if start >= 0 else None, edits, known)


def thread_edits(
    position: int, revised: Sequence[int], messages: Sequence[BaseMessage], payloads: Sequence[Any]
) -> list[tuple[int, BaseMessage, str]]:
    """The edits a batch at thread ``position`` made (``revised``: ``ThreadAppend.revised``,
    indexes into ``messages`` and their stored forms ``payloads``), as
    ``revisions.thread_changes`` takes them.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> thread_edits(4, [1], [HumanMessage("a"), HumanMessage("b")], [b"A", b"B"])[0][::2]
        (5, 'B')
    """
    return [(position + i, messages[i], _text(payloads[i])) for i in revised]


def _text(payload: Any) -> str:
    """A stored form as ``swap_at`` takes it."""
    return payload.decode() if isinstance(payload, bytes) else str(payload)

"""Short-term exact memory: each user's chat history, newest last.

Two stores share one interface (:class:`HistoryStore`): :class:`RedisHistoryStore`, a Redis
list per user, and :class:`InMemoryHistoryStore`. Both hand out a LangChain
``BaseChatMessageHistory`` bound to one user through :meth:`HistoryStore.session`, so they
plug into ``RunnableWithMessageHistory`` as ``get_session_history=store.session``.

Messages get absolute positions (0 = the first message the user ever sent) that survive
retention trimming; the summarizer's watermark is such a position.
"""

from __future__ import annotations

import json
import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
    message_to_dict,
)
from langchain_core.messages import messages_from_dict as _messages_from_dict

from langchain_tiered_memory._keys import KeyBuilder, validate_user_id
from langchain_tiered_memory._redis import RedisConnection, ScriptCall
from langchain_tiered_memory.errors import CorruptMemoryError, InvalidMessageError

__all__ = [
    "HistoryStore",
    "RedisHistoryStore",
    "InMemoryHistoryStore",
    "UserChatMessageHistory",
    "DEFAULT_MAX_MESSAGE_BYTES",
]

logger = logging.getLogger(__name__)

OnInvalid = Literal["raise", "placeholder"]
DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024
_BASE_FIELD = "hist_base"  # in the user's meta hash: absolute position of list index 0


# What JSON and the checkpointers' msgpack both carry: 64-bit integers, finite floats,
# bounded nesting. A value outside that stored in the history would break every later
# thread that loads it (msgpack refuses integers past 64 bits).
MIN_INT, MAX_INT = -(2**63), 2**64 - 1
MAX_NESTING = 64


def check_portable(value: Any, what: str = "value") -> None:
    """Raise ``InvalidMessageError`` unless ``value`` is plain JSON data every checkpointer
    can serialize: str keys, 64-bit ints, finite floats, at most ``MAX_NESTING`` levels.
    """
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_NESTING:
            raise InvalidMessageError(
                f"{what} is nested more than {MAX_NESTING} levels deep; flatten it."
            )
        if isinstance(item, bool) or item is None or isinstance(item, str):
            continue
        if isinstance(item, int):
            if not MIN_INT <= item <= MAX_INT:
                raise InvalidMessageError(
                    f"{what} holds the integer {str(item)[:20]}... ({item.bit_length()} bits); "
                    "numbers must fit in 64 bits. Send it as a string."
                )
        elif isinstance(item, float):
            if item != item or item in (float("inf"), float("-inf")):
                raise InvalidMessageError(f"{what} holds {item!r}; only finite numbers are stored.")
        elif isinstance(item, dict):
            for key, sub in item.items():
                if not isinstance(key, str):
                    raise InvalidMessageError(f"{what} has a non-string key {key!r}.")
                stack.append((sub, depth + 1))
        elif isinstance(item, (list, tuple)):
            stack.extend((sub, depth + 1) for sub in item)
        else:
            raise InvalidMessageError(
                f"{what} holds a {type(item).__name__}, which is not JSON data."
            )


# Fields a message holds at their default value, left out of the stored entry (the loader
# gives them back): for a short message they were half of its bytes.
_DEFAULTS: dict[str, Any] = {
    "additional_kwargs": {},
    "response_metadata": {},
    "name": None,
    "id": None,
    "example": False,
    "tool_calls": [],
    "invalid_tool_calls": [],
    "usage_metadata": None,
    "artifact": None,
    "status": "success",
}


def _compact(data: dict[str, Any]) -> dict[str, Any]:
    """LangChain's message dict without the fields that hold their defaults."""
    body = {
        k: v
        for k, v in data["data"].items()
        if not (k in _DEFAULTS and type(v) is type(_DEFAULTS[k]) and v == _DEFAULTS[k])
        and not (k == "type" and v == data["type"])
    }
    return {"type": data["type"], "data": body}


def dump_message(message: BaseMessage, max_bytes: int) -> bytes:
    """Serialize one message as JSON bytes (LangChain's dict format without the fields at
    their defaults), enforcing the size cap.

    Raises:
        InvalidMessageError: not a message, not portable JSON data (see
            :func:`check_portable`), or over ``max_bytes`` serialized.

    """
    if not isinstance(message, BaseMessage):
        raise InvalidMessageError(
            f"expected a langchain BaseMessage, got {type(message).__name__}; wrap text in "
            "HumanMessage/AIMessage."
        )
    try:
        data = _compact(message_to_dict(message))
        check_portable(data, f"a {message.type} message")
        raw = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode(
            "utf-8"
        )
    except InvalidMessageError:
        raise
    except (TypeError, ValueError, UnicodeEncodeError, RecursionError) as exc:
        raise InvalidMessageError(
            f"message cannot be stored as JSON ({type(exc).__name__}: {str(exc)[:200]}); keep "
            "contents to text, JSON-able content blocks and JSON-able additional_kwargs."
        ) from exc
    if len(raw) > max_bytes:
        raise InvalidMessageError(
            f"message is {len(raw)} bytes serialized; the limit is {max_bytes}. Store large "
            "payloads elsewhere and keep a reference in the message, or raise max_message_bytes."
        )
    return raw


def placeholder_for(message: Any, reason: str) -> BaseMessage:
    """A small stand-in for a message the history refused, keeping the conversation's shape.

    Tool results keep their ``tool_call_id`` and tool calls their ids, so the stored turn
    stays one a chat model accepts.
    """
    note = f"[not stored: {reason[:300]}]"
    msg_id = getattr(message, "id", None)
    msg_id = msg_id if isinstance(msg_id, str) and len(msg_id) <= 200 else None
    try:
        if isinstance(message, ToolMessage):
            return ToolMessage(
                content=note,
                tool_call_id=str(message.tool_call_id)[:200],
                id=msg_id,
                status="error",
            )
        if isinstance(message, AIMessage):
            calls = [
                {"id": str(c.get("id") or "")[:200], "name": str(c.get("name"))[:200], "args": {}}
                for c in message.tool_calls
            ]
            return AIMessage(content=note, tool_calls=calls, id=msg_id)
        if isinstance(message, HumanMessage):
            return HumanMessage(content=note, id=msg_id)
    except (TypeError, ValueError):
        pass
    return AIMessage(content=note)


# What a forgotten thread's messages become (positions are kept; readers skip them).
TOMBSTONE = '{"forgotten": true}'
_TOMBSTONES = frozenset({TOMBSTONE, TOMBSTONE.encode()})


def thread_spans(raw: Sequence[bytes | str]) -> list[tuple[int, int, str]]:
    """Parse stored ``"start:end:thread"`` records."""
    out = []
    for entry in raw:
        text = entry.decode() if isinstance(entry, bytes) else entry
        start, end, thread = text.split(":", 2)
        out.append((int(start), int(end), thread))
    return out


def threads_between(spans: Sequence[tuple[int, int, str]], start: int, end: int) -> list[str]:
    """Threads with a message in positions ``[start, end)``, in order of first appearance."""
    out: list[str] = []
    for first, last, thread in spans:
        if first < end and start < last and thread not in out:
            out.append(thread)
    return out


def load_messages(raw: Sequence[bytes | str], *, where: str = "a history") -> list[BaseMessage]:
    """Inverse of :func:`dump_message` for a batch.

    Raises:
        CorruptMemoryError: an entry is not what this package writes (another writer, a
            bug, a migration); ``where`` names the user and key in the message.

    """
    try:
        return _messages_from_dict([json.loads(r) for r in raw if r not in _TOMBSTONES])
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        # JSONDecodeError and UnicodeDecodeError are ValueErrors; a dict of the wrong shape
        # raises KeyError/TypeError/ValueError in messages_from_dict.
        raise CorruptMemoryError(
            f"{where} holds an entry that is not a stored chat message "
            f"({type(exc).__name__}: {str(exc)[:200]}). Export the user's other tiers with "
            "export_user, then forget_user or delete the key to recover."
        ) from exc


def drop_orphan_tool_messages(messages: list[BaseMessage]) -> list[BaseMessage]:
    """Cut a history window so it starts at a message a chat model accepts first.

    A window cut from the middle can start with ``ToolMessage``\\s whose ``AIMessage`` (with
    the ``tool_calls``) was cut off; providers reject those, so they are dropped.
    """
    start = 0
    while start < len(messages) and isinstance(messages[start], ToolMessage):
        start += 1
    return messages[start:]


def drop_unanswered_tool_calls(messages: list[BaseMessage]) -> list[BaseMessage]:
    """Drop a trailing ``AIMessage`` whose tool calls are not all answered (cut turn).

    The ``ToolMessage``\\s that follow it are dropped with it: providers reject an
    assistant message with ``tool_calls`` unless every call id has a tool result.
    """
    end = len(messages)
    answered: set[str | None] = set()
    while end > 0 and isinstance(last := messages[end - 1], ToolMessage):
        answered.add(last.tool_call_id)
        end -= 1
    if (
        end > 0
        and isinstance(ai := messages[end - 1], AIMessage)
        and not {call.get("id") for call in ai.tool_calls} <= answered
    ):
        return messages[: end - 1]
    return messages


class HistoryStore(ABC):
    """Per-user append-only chat history with absolute message positions.

    Sync and async methods form pairs with the same signature.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> store = InMemoryHistoryStore()
        >>> store.append("alice", [HumanMessage("Hi, I'm Alice."), AIMessage("Hello!")])
        2
        >>> [m.text for m in store.tail("alice", 1)]
        ['Hello!']
    """

    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES

    @abstractmethod
    def append(
        self,
        user_id: str,
        messages: Sequence[BaseMessage],
        *,
        thread_id: str | None = None,
        thread_position: int | None = None,
        on_invalid: OnInvalid = "raise",
    ) -> int:
        """Append ``messages`` atomically (all or nothing); return the new absolute length.

        Args:
            user_id: whose history.
            messages: the turn's messages, oldest first.
            thread_id: the conversation thread the turn came from, recorded so that
                forgetting the user can also delete those threads from a checkpointer.
            thread_position: with ``thread_id``, the position of ``messages[0]`` in the
                thread. The append is then idempotent: messages of the thread that are
                already stored (the same position and message id, e.g. from a save that
                timed out after it was applied) are skipped.
            on_invalid: ``"raise"`` (nothing is written if one message is refused) or
                ``"placeholder"`` (a refused message is stored as a short note that keeps
                its type and tool-call ids, and a warning is logged).

        Raises:
            InvalidMessageError: with ``on_invalid="raise"``, a message cannot be stored.

        """

    @abstractmethod
    async def aappend(
        self,
        user_id: str,
        messages: Sequence[BaseMessage],
        *,
        thread_id: str | None = None,
        thread_position: int | None = None,
        on_invalid: OnInvalid = "raise",
    ) -> int:
        """Async :meth:`append`."""

    @abstractmethod
    def record_thread(self, user_id: str, thread_id: str) -> None:
        """Record ``thread_id`` as the user's before anything of it is saved (a turn's
        start), so that erasing the user also finds a thread whose first turn failed.
        """

    @abstractmethod
    async def arecord_thread(self, user_id: str, thread_id: str) -> None:
        """Async :meth:`record_thread`."""

    @abstractmethod
    def threads(self, user_id: str) -> list[str]:
        """Thread ids the user's turns were appended from (sorted)."""

    @abstractmethod
    async def athreads(self, user_id: str) -> list[str]:
        """Async :meth:`threads`."""

    @abstractmethod
    def spans(self, user_id: str) -> list[tuple[int, int, str]]:
        """``(start, end, thread_id)`` of every turn appended with a thread, oldest first:
        which thread each absolute position came from (provenance of summary items).
        """

    @abstractmethod
    async def aspans(self, user_id: str) -> list[tuple[int, int, str]]:
        """Async :meth:`spans`."""

    @abstractmethod
    def forget_thread(self, user_id: str, thread_id: str) -> int:
        """Delete the messages that came from ``thread_id`` and its records; return how
        many messages. Positions stay (the messages become tombstones readers skip).
        """

    @abstractmethod
    async def aforget_thread(self, user_id: str, thread_id: str) -> int:
        """Async :meth:`forget_thread`."""

    @abstractmethod
    def tail(self, user_id: str, n: int) -> list[BaseMessage]:
        """The last ``n`` messages, oldest first, never starting with an orphan tool result."""

    @abstractmethod
    async def atail(self, user_id: str, n: int) -> list[BaseMessage]:
        """Async :meth:`tail`."""

    @abstractmethod
    def window(
        self, user_id: str, start: int, limit: int | None = None
    ) -> tuple[int, int, list[BaseMessage]]:
        """Up to ``limit`` (default: all) positions from absolute position ``start``.

        If ``start`` was trimmed away, reading begins at the oldest kept message. Messages
        of a forgotten thread are skipped, so there may be fewer messages than positions.

        Returns ``(first position read, position after the last one read, messages)``.
        """

    @abstractmethod
    async def awindow(
        self, user_id: str, start: int, limit: int | None = None
    ) -> tuple[int, int, list[BaseMessage]]:
        """Async :meth:`window`."""

    def since(
        self, user_id: str, start: int, limit: int | None = None
    ) -> tuple[int, list[BaseMessage]]:
        """``(first position, messages)`` of :meth:`window`."""
        first, _, messages = self.window(user_id, start, limit)
        return first, messages

    async def asince(
        self, user_id: str, start: int, limit: int | None = None
    ) -> tuple[int, list[BaseMessage]]:
        """Async :meth:`since`."""
        first, _, messages = await self.awindow(user_id, start, limit)
        return first, messages

    @abstractmethod
    def length(self, user_id: str) -> int:
        """Absolute length: messages ever appended, trimmed ones included."""

    @abstractmethod
    async def alength(self, user_id: str) -> int:
        """Async :meth:`length`."""

    @abstractmethod
    def trim(self, user_id: str, *, keep_last: int, not_after: int) -> int:
        """Drop the oldest messages, keeping ``keep_last``, never dropping a position >=
        ``not_after`` (the summarizer's watermark). Returns how many were dropped.
        """

    @abstractmethod
    async def atrim(self, user_id: str, *, keep_last: int, not_after: int) -> int:
        """Async :meth:`trim`."""

    @abstractmethod
    def users(self) -> list[str]:
        """Every user with a history (for offline jobs; a SCAN on Redis)."""

    @abstractmethod
    async def ausers(self) -> list[str]:
        """Async :meth:`users`."""

    @abstractmethod
    def clear(self, user_id: str) -> int:
        """Delete the user's kept messages and thread records; return how many messages
        (those already forgotten with their thread are not counted again).

        Positions keep counting (:meth:`length` is unchanged), so the summarizer's
        watermark stays valid for messages appended afterwards.
        """

    @abstractmethod
    async def aclear(self, user_id: str) -> int:
        """Async :meth:`clear`."""

    def session(self, user_id: str) -> UserChatMessageHistory:
        """A ``BaseChatMessageHistory`` view of one user's history.

        Example:
            >>> store = InMemoryHistoryStore()
            >>> store.session("alice").add_user_message("hi")
            >>> [m.content for m in store.session("alice").messages]
            ['hi']

        """
        return UserChatMessageHistory(self, user_id)

    def _dump_all(
        self, messages: Sequence[BaseMessage], on_invalid: OnInvalid = "raise"
    ) -> list[bytes]:
        out = []
        for i, message in enumerate(messages):
            try:
                out.append(dump_message(message, self.max_message_bytes))
            except InvalidMessageError as exc:
                if on_invalid != "placeholder":
                    raise
                logger.warning("message %d of a turn was not stored: %s", i, exc)
                out.append(dump_message(placeholder_for(message, str(exc)), 2**20))
        return out


class UserChatMessageHistory(BaseChatMessageHistory):
    """LangChain chat history of one user, backed by any :class:`HistoryStore`.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> history = UserChatMessageHistory(InMemoryHistoryStore(), "alice")
        >>> history.add_messages([HumanMessage("I like tea.")])
        >>> [m.text for m in history.messages]
        ['I like tea.']
    """

    def __init__(self, store: HistoryStore, user_id: str) -> None:
        self.store = store
        self.user_id = user_id

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """Every kept message of the user (use ``store.tail`` for the last N)."""
        return self.store.since(self.user_id, 0)[1]

    async def aget_messages(self) -> list[BaseMessage]:
        """Async :attr:`messages`."""
        return (await self.store.asince(self.user_id, 0))[1]

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Append messages in one atomic write."""
        self.store.append(self.user_id, messages)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Async :meth:`add_messages`."""
        await self.store.aappend(self.user_id, messages)

    def clear(self) -> None:
        """Delete this user's history."""
        self.store.clear(self.user_id)

    async def aclear(self) -> None:
        """Async :meth:`clear`."""
        await self.store.aclear(self.user_id)


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
# stays meaningful, so messages added after a clear are summarized, not skipped.
# Returns the messages deleted: forgotten ones (tombstones) are not counted again.
_CLEAR_LUA = """
local n = redis.call('LLEN', KEYS[1])
local kept = n
if n > 0 then
  for _, entry in ipairs(redis.call('LRANGE', KEYS[1], 0, -1)) do
    if entry == ARGV[2] then kept = kept - 1 end
  end
  redis.call('HINCRBY', KEYS[2], ARGV[1], n)
  redis.call('DEL', KEYS[1])
end
redis.call('DEL', KEYS[3], KEYS[4], KEYS[5])
return kept
"""

# A thread's replay mark keeps the ids of this many last saved messages (a turn's worth).
MARK_IDS = 32

# One script: the whole turn lands or none of it. RPUSH per element because unpack() of a
# large ARGV overflows Lua's C stack (about 8000 values).
# ARGV: thread id ('' = none), thread position of the first message ('' = none), n, then
# n message ids, then n payloads. KEYS[4] maps a thread to its mark: "<saved position>:"
# then the ids of the last saved messages (up to MARK_IDS, NUL-separated; the thread
# positions just before the saved one). A batch is a replay of what is stored (a save
# that timed out after it was applied, or a save applied while the step's checkpoint was
# lost) when it reaches the saved position with the id stored there, or starts with ids
# stored at its positions: that prefix is skipped. A batch from a fork of the thread (time
# travel) has other ids there and is stored whole. See replayed_prefix, its twin.
_APPEND_LUA = """
local MARK_IDS = @MARK_IDS@
local n = tonumber(ARGV[3])
local skip = 0
local tracked = ARGV[1] ~= '' and ARGV[2] ~= ''
if tracked then
  local mark = redis.call('HGET', KEYS[4], ARGV[1])
  if mark then
    local sep = string.find(mark, ':', 1, true)
    local saved = tonumber(string.sub(mark, 1, sep - 1))
    local ids, at = {}, sep + 1
    while true do
      local nul = string.find(mark, '\0', at, true)
      if not nul then ids[#ids + 1] = string.sub(mark, at); break end
      ids[#ids + 1] = string.sub(mark, at, nul - 1)
      at = nul + 1
    end
    local start = tonumber(ARGV[2])
    local k = saved - start
    if k > 0 and k <= n and ids[#ids] ~= '' and ARGV[3 + k] == ids[#ids] then
      skip = k
    else
      local first = saved - #ids
      while skip < n do
        local q = start + skip
        if q < first or q >= saved then break end
        local stored = ids[q - first + 1]
        if stored == '' or ARGV[4 + skip] ~= stored then break end
        skip = skip + 1
      end
    end
  end
end
local base = tonumber(redis.call('HGET', KEYS[2], 'hist_base') or '0')
local before = redis.call('LLEN', KEYS[1])
local len = before
for i = 1 + skip, n do len = redis.call('RPUSH', KEYS[1], ARGV[3 + n + i]) end
if n > skip and ARGV[1] ~= '' then
  redis.call('SADD', KEYS[3], ARGV[1])
  redis.call('RPUSH', KEYS[5], (base + before) .. ':' .. (base + len) .. ':' .. ARGV[1])
end
if n > skip then
  -- last activity, for the console's user list (server time: one clock for every client)
  redis.call('HSET', KEYS[2], 'last_at', redis.call('TIME')[1])
end
if tracked and n > skip then
  local kept = {}
  for i = math.max(1, n - MARK_IDS + 1), n do kept[#kept + 1] = ARGV[3 + i] end
  redis.call('HSET', KEYS[4], ARGV[1], (tonumber(ARGV[2]) + n) .. ':' .. table.concat(kept, '\0'))
end
return {len + base, skip}
""".replace("@MARK_IDS@", str(MARK_IDS))

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
redis.call('HDEL', KEYS[4], ARGV[1])
return removed
"""


def _message_ids(messages: Sequence[BaseMessage]) -> list[str]:
    ids = []
    for message in messages:
        msg_id = getattr(message, "id", None)
        ids.append(msg_id if isinstance(msg_id, str) else "")
    return ids


def _position_arg(thread_id: str | None, thread_position: int | None) -> str:
    if thread_position is None:
        return ""
    if isinstance(thread_position, bool) or not isinstance(thread_position, int):
        raise InvalidMessageError(f"thread_position must be an int, got {thread_position!r}.")
    if thread_position < 0:
        raise InvalidMessageError(f"thread_position must be >= 0, got {thread_position}.")
    return "" if thread_id is None else str(thread_position)


def replayed_prefix(mark: tuple[int, Sequence[str]] | None, start: int, ids: Sequence[str]) -> int:
    """How many leading messages of a batch at thread position ``start`` are already
    stored, given the thread's mark: ``(saved position, ids of the last saved messages)``
    (the in-memory twin of the check in the append script).

    Either the batch reaches the saved position with the id stored there (a replay of
    everything saved), or its leading ids are those stored at its positions (a save
    applied while the step's checkpoint was lost: the next turn starts with the same
    human message, then a new reply).

    Example:
        >>> replayed_prefix((2, ("h1", "a1")), 0, ["h1", "a1-regenerated", "h2"])
        1
    """
    if mark is None:
        return 0
    saved, stored = mark
    k = saved - start
    if 0 < k <= len(ids) and stored and stored[-1] and ids[k - 1] == stored[-1]:
        return k
    first, skip = saved - len(stored), 0
    while skip < len(ids) and first <= start + skip < saved:
        expected = stored[start + skip - first]
        if not expected or ids[skip] != expected:
            break
        skip += 1
    return skip


def _thread_arg(thread_id: str | None) -> str:
    if thread_id is None:
        return ""
    if not isinstance(thread_id, str) or not thread_id:
        raise InvalidMessageError(f"thread_id must be a non-empty str, got {thread_id!r}.")
    return thread_id


def _limit_arg(limit: int | None) -> str | int:
    return "all" if limit is None else max(limit, 0)


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

    @staticmethod
    def parse_tail(raw: Sequence[bytes | str], where: str = "a history") -> list[BaseMessage]:
        """Turn the reply of :meth:`tail_command` into messages.

        Raises:
            CorruptMemoryError: an entry is not a stored message (``where`` names it).

        """
        return drop_unanswered_tool_calls(
            drop_orphan_tool_messages(load_messages(raw, where=where))
        )

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
        """The script call of :meth:`append` (its reply: :meth:`appended_length`), for a
        caller that sends it with others. Validates and serializes the messages first.
        """
        hist, meta = self._k(user_id)
        thread = _thread_arg(thread_id)
        position = _position_arg(thread_id, thread_position)
        payload = self._dump_all(messages, on_invalid)
        keys = (hist, meta, *self._records(user_id))
        args = (thread, position, len(payload), *_message_ids(messages), *payload)
        return ScriptCall(_APPEND_LUA, len(keys), (*keys, *args))

    @staticmethod
    def appended_length(reply: Any) -> int:
        """The history's length after an append, from the append script's reply."""
        return int(reply[0])

    def append(
        self,
        user_id: str,
        messages: Sequence[BaseMessage],
        *,
        thread_id: str | None = None,
        thread_position: int | None = None,
        on_invalid: OnInvalid = "raise",
    ) -> int:
        """Append a turn in one script: atomic, contiguous, in order, idempotent per
        thread position.
        """
        call = self.append_call(
            user_id,
            messages,
            thread_id=thread_id,
            thread_position=thread_position,
            on_invalid=on_invalid,
        )
        if not messages:
            return self.length(user_id)
        with self.connection.errors():
            return self.appended_length(self.connection.run(call))

    async def aappend(
        self,
        user_id: str,
        messages: Sequence[BaseMessage],
        *,
        thread_id: str | None = None,
        thread_position: int | None = None,
        on_invalid: OnInvalid = "raise",
    ) -> int:
        """Async :meth:`append`."""
        call = self.append_call(
            user_id,
            messages,
            thread_id=thread_id,
            thread_position=thread_position,
            on_invalid=on_invalid,
        )
        if not messages:
            return await self.alength(user_id)
        with self.connection.errors():
            return self.appended_length(await self.connection.arun(call))

    def record_thread_command(self, user_id: str, thread_id: str) -> tuple[str, str, str]:
        """The ``SADD`` of :meth:`record_thread`, for callers batching a pipeline."""
        return ("SADD", self.keys.key(user_id, "threads"), _thread_arg(thread_id))

    def record_thread(self, user_id: str, thread_id: str) -> None:
        """Add the thread to the user's set of threads (``SADD``)."""
        command = self.record_thread_command(user_id, thread_id)
        with self.connection.errors():
            self.connection.sync.execute_command(*command)

    async def arecord_thread(self, user_id: str, thread_id: str) -> None:
        """Async :meth:`record_thread`."""
        command = self.record_thread_command(user_id, thread_id)
        with self.connection.errors():
            await (await self.connection.aclient()).execute_command(*command)

    def threads(self, user_id: str) -> list[str]:
        """Thread ids recorded for the user."""
        with self.connection.errors():
            raw = self.connection.sync.smembers(self.keys.key(user_id, "threads"))
        return sorted(r.decode() if isinstance(r, bytes) else r for r in raw)

    async def athreads(self, user_id: str) -> list[str]:
        """Async :meth:`threads`."""
        with self.connection.errors():
            raw = await (await self.connection.aclient()).smembers(
                self.keys.key(user_id, "threads")
            )
        return sorted(r.decode() if isinstance(r, bytes) else r for r in raw)

    def spans(self, user_id: str) -> list[tuple[int, int, str]]:
        """The thread spans, oldest first."""
        with self.connection.errors():
            raw = self.connection.sync.lrange(self.keys.key(user_id, "spans"), 0, -1)
        return thread_spans(raw)

    async def aspans(self, user_id: str) -> list[tuple[int, int, str]]:
        """Async :meth:`spans`."""
        with self.connection.errors():
            raw = await (await self.connection.aclient()).lrange(
                self.keys.key(user_id, "spans"), 0, -1
            )
        return thread_spans(raw)

    def _forget_args(self, user_id: str, thread_id: str) -> list[Any]:
        hist, meta = self._k(user_id)
        records = self._records(user_id)
        return [_FORGET_THREAD_LUA, 5, hist, meta, *records, _thread_arg(thread_id), TOMBSTONE]

    def forget_thread(self, user_id: str, thread_id: str) -> int:
        """Tombstone the thread's messages in one script."""
        args = self._forget_args(user_id, thread_id)
        with self.connection.errors():
            return int(self.connection.eval(*args))

    async def aforget_thread(self, user_id: str, thread_id: str) -> int:
        """Async :meth:`forget_thread`."""
        args = self._forget_args(user_id, thread_id)
        with self.connection.errors():
            return int(await self.connection.aeval(*args))

    def tail(self, user_id: str, n: int) -> list[BaseMessage]:
        """Last ``n`` messages (``LRANGE -n -1``)."""
        if n <= 0:
            return []
        _, key, start, stop = self.tail_command(user_id, n)
        with self.connection.errors():
            raw = self.connection.sync.lrange(key, start, stop)
        return self.parse_tail(raw, self.where(user_id))

    async def atail(self, user_id: str, n: int) -> list[BaseMessage]:
        """Async :meth:`tail`."""
        if n <= 0:
            return []
        _, key, start, stop = self.tail_command(user_id, n)
        with self.connection.errors():
            raw = await (await self.connection.aclient()).lrange(key, start, stop)
        return self.parse_tail(raw, self.where(user_id))

    def window(
        self, user_id: str, start: int, limit: int | None = None
    ) -> tuple[int, int, list[BaseMessage]]:
        """Positions from absolute position ``start`` (one script: trimming in between
        cannot shift them).
        """
        hist, meta = self._k(user_id)
        with self.connection.errors():
            first, raw = self.connection.eval(
                _SINCE_LUA, 2, hist, meta, max(start, 0), _limit_arg(limit), _BASE_FIELD
            )
        return int(first), int(first) + len(raw), load_messages(raw, where=self.where(user_id))

    async def awindow(
        self, user_id: str, start: int, limit: int | None = None
    ) -> tuple[int, int, list[BaseMessage]]:
        """Async :meth:`window`."""
        hist, meta = self._k(user_id)
        with self.connection.errors():
            first, raw = await self.connection.aeval(
                _SINCE_LUA, 2, hist, meta, max(start, 0), _limit_arg(limit), _BASE_FIELD
            )
        return int(first), int(first) + len(raw), load_messages(raw, where=self.where(user_id))

    def length(self, user_id: str) -> int:
        """Absolute length."""
        hist, meta = self._k(user_id)
        with self.connection.errors():
            pipe = self.connection.sync.pipeline(transaction=False)
            pipe.llen(hist)
            pipe.hget(meta, _BASE_FIELD)
            n, base = pipe.execute()
        return int(n) + int(base or 0)

    async def alength(self, user_id: str) -> int:
        """Async :meth:`length`."""
        hist, meta = self._k(user_id)
        with self.connection.errors():
            pipe = (await self.connection.aclient()).pipeline(transaction=False)
            pipe.llen(hist)
            pipe.hget(meta, _BASE_FIELD)
            n, base = await pipe.execute()
        return int(n) + int(base or 0)

    def trim(self, user_id: str, *, keep_last: int, not_after: int) -> int:
        """Retention: drop old, already-summarized messages."""
        hist, meta = self._k(user_id)
        with self.connection.errors():
            return int(
                self.connection.eval(
                    _TRIM_LUA, 2, hist, meta, max(keep_last, 0), max(not_after, 0), _BASE_FIELD
                )
            )

    async def atrim(self, user_id: str, *, keep_last: int, not_after: int) -> int:
        """Async :meth:`trim`."""
        hist, meta = self._k(user_id)
        with self.connection.errors():
            return int(
                await self.connection.aeval(
                    _TRIM_LUA, 2, hist, meta, max(keep_last, 0), max(not_after, 0), _BASE_FIELD
                )
            )

    def users(self) -> list[str]:
        """Users with a history, found by SCAN (never KEYS) on every node."""
        pattern = self.keys.scan_pattern("history")
        found: set[str] = set()
        with self.connection.errors():
            for key in self.connection.sync.scan_iter(match=pattern, count=1000):
                user = self.keys.user_from_key(key)
                if user is not None:
                    found.add(user)
        return sorted(found)

    async def ausers(self) -> list[str]:
        """Async :meth:`users`."""
        pattern = self.keys.scan_pattern("history")
        found: set[str] = set()
        with self.connection.errors():
            async for key in (await self.connection.aclient()).scan_iter(match=pattern, count=1000):
                user = self.keys.user_from_key(key)
                if user is not None:
                    found.add(user)
        return sorted(found)

    def clear(self, user_id: str) -> int:
        """Delete the list; positions keep counting (:meth:`length` is unchanged)."""
        hist, meta = self._k(user_id)
        with self.connection.errors():
            return int(
                self.connection.eval(
                    _CLEAR_LUA, 5, hist, meta, *self._records(user_id), _BASE_FIELD, TOMBSTONE
                )
            )

    async def aclear(self, user_id: str) -> int:
        """Async :meth:`clear`."""
        hist, meta = self._k(user_id)
        with self.connection.errors():
            return int(
                await self.connection.aeval(
                    _CLEAR_LUA, 5, hist, meta, *self._records(user_id), _BASE_FIELD, TOMBSTONE
                )
            )


class InMemoryHistoryStore(HistoryStore):
    """Process-local history for tests and prototypes; same semantics as Redis.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> InMemoryHistoryStore().append("bob", [HumanMessage("hi")])
        1
    """

    def __init__(self, *, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> None:
        self.max_message_bytes = max_message_bytes
        self._data: dict[str, list[bytes]] = {}
        self._base: dict[str, int] = {}
        self._threads: dict[str, set[str]] = {}
        # user -> thread -> (saved thread position, id of the last saved message)
        self._marks: dict[str, dict[str, tuple[int, tuple[str, ...]]]] = {}
        self._spans: dict[str, list[tuple[int, int, str]]] = {}
        self._lock = threading.Lock()

    def append(
        self,
        user_id: str,
        messages: Sequence[BaseMessage],
        *,
        thread_id: str | None = None,
        thread_position: int | None = None,
        on_invalid: OnInvalid = "raise",
    ) -> int:
        """Append atomically, idempotent per thread position (as on Redis)."""
        user_id = validate_user_id(user_id)
        thread = _thread_arg(thread_id)
        position = _position_arg(thread_id, thread_position)
        payload = self._dump_all(messages, on_invalid)
        ids = _message_ids(messages)
        with self._lock:
            marks = self._marks.setdefault(user_id, {})
            skip = replayed_prefix(marks.get(thread), int(position), ids) if position else 0
            if len(payload) > skip:
                data = self._data.setdefault(user_id, [])
                start = len(data) + self._base.get(user_id, 0)
                data.extend(payload[skip:])
                if thread:
                    self._threads.setdefault(user_id, set()).add(thread)
                    end = start + len(payload) - skip
                    self._spans.setdefault(user_id, []).append((start, end, thread))
                if position:
                    marks[thread] = (int(position) + len(payload), tuple(ids[-MARK_IDS:]))
            return len(self._data.get(user_id, [])) + self._base.get(user_id, 0)

    async def aappend(
        self,
        user_id: str,
        messages: Sequence[BaseMessage],
        *,
        thread_id: str | None = None,
        thread_position: int | None = None,
        on_invalid: OnInvalid = "raise",
    ) -> int:
        """Async :meth:`append`."""
        return self.append(
            user_id,
            messages,
            thread_id=thread_id,
            thread_position=thread_position,
            on_invalid=on_invalid,
        )

    def record_thread(self, user_id: str, thread_id: str) -> None:
        """Add the thread to the user's threads."""
        user_id, thread = validate_user_id(user_id), _thread_arg(thread_id)
        with self._lock:
            self._threads.setdefault(user_id, set()).add(thread)

    async def arecord_thread(self, user_id: str, thread_id: str) -> None:
        """Async :meth:`record_thread`."""
        self.record_thread(user_id, thread_id)

    def threads(self, user_id: str) -> list[str]:
        """Thread ids recorded for the user."""
        user_id = validate_user_id(user_id)
        with self._lock:
            return sorted(self._threads.get(user_id, ()))

    async def athreads(self, user_id: str) -> list[str]:
        """Async :meth:`threads`."""
        return self.threads(user_id)

    def spans(self, user_id: str) -> list[tuple[int, int, str]]:
        """The thread spans, oldest first."""
        user_id = validate_user_id(user_id)
        with self._lock:
            return list(self._spans.get(user_id, []))

    async def aspans(self, user_id: str) -> list[tuple[int, int, str]]:
        """Async :meth:`spans`."""
        return self.spans(user_id)

    def forget_thread(self, user_id: str, thread_id: str) -> int:
        """Tombstone the thread's messages."""
        user_id = validate_user_id(user_id)
        thread = _thread_arg(thread_id)
        tomb = TOMBSTONE.encode()
        removed = 0
        with self._lock:
            data, base = self._data.get(user_id, []), self._base.get(user_id, 0)
            kept = []
            for first, last, owner in self._spans.get(user_id, []):
                if owner != thread:
                    kept.append((first, last, owner))
                    continue
                for p in range(max(first, base), last):
                    if p - base < len(data) and data[p - base] != tomb:
                        data[p - base] = tomb
                        removed += 1
            self._spans[user_id] = kept
            self._threads.get(user_id, set()).discard(thread)
            self._marks.get(user_id, {}).pop(thread, None)
        return removed

    async def aforget_thread(self, user_id: str, thread_id: str) -> int:
        """Async :meth:`forget_thread`."""
        return self.forget_thread(user_id, thread_id)

    def tail(self, user_id: str, n: int) -> list[BaseMessage]:
        """Last ``n`` messages."""
        user_id = validate_user_id(user_id)
        if n <= 0:
            return []
        with self._lock:
            raw = list(self._data.get(user_id, [])[-n:])
        return RedisHistoryStore.parse_tail(raw)

    async def atail(self, user_id: str, n: int) -> list[BaseMessage]:
        """Async :meth:`tail`."""
        return self.tail(user_id, n)

    def window(
        self, user_id: str, start: int, limit: int | None = None
    ) -> tuple[int, int, list[BaseMessage]]:
        """Positions from absolute position ``start``."""
        user_id = validate_user_id(user_id)
        with self._lock:
            base = self._base.get(user_id, 0)
            offset = max(start - base, 0)
            end = None if limit is None else offset + max(limit, 0)
            raw = list(self._data.get(user_id, [])[offset:end])
        return base + offset, base + offset + len(raw), load_messages(raw)

    async def awindow(
        self, user_id: str, start: int, limit: int | None = None
    ) -> tuple[int, int, list[BaseMessage]]:
        """Async :meth:`window`."""
        return self.window(user_id, start, limit)

    def length(self, user_id: str) -> int:
        """Absolute length."""
        user_id = validate_user_id(user_id)
        with self._lock:
            return len(self._data.get(user_id, [])) + self._base.get(user_id, 0)

    async def alength(self, user_id: str) -> int:
        """Async :meth:`length`."""
        return self.length(user_id)

    def trim(self, user_id: str, *, keep_last: int, not_after: int) -> int:
        """Retention: drop old, already-summarized messages."""
        user_id = validate_user_id(user_id)
        with self._lock:
            data = self._data.get(user_id, [])
            base = self._base.get(user_id, 0)
            drop = min(len(data) - max(keep_last, 0), max(not_after, 0) - base)
            if drop <= 0:
                return 0
            del data[:drop]
            self._base[user_id] = base + drop
            return drop

    async def atrim(self, user_id: str, *, keep_last: int, not_after: int) -> int:
        """Async :meth:`trim`."""
        return self.trim(user_id, keep_last=keep_last, not_after=not_after)

    def clear(self, user_id: str) -> int:
        """Delete the user's history; positions keep counting, as on Redis."""
        user_id = validate_user_id(user_id)
        with self._lock:
            self._threads.pop(user_id, None)
            self._marks.pop(user_id, None)
            self._spans.pop(user_id, None)
            data = self._data.pop(user_id, [])
            if data:
                self._base[user_id] = self._base.get(user_id, 0) + len(data)
            return sum(1 for raw in data if raw not in _TOMBSTONES)

    async def aclear(self, user_id: str) -> int:
        """Async :meth:`clear`."""
        return self.clear(user_id)

    def users(self) -> list[str]:
        """Users with a history (the in-memory answer to a SCAN)."""
        with self._lock:
            return sorted(self._data)

    async def ausers(self) -> list[str]:
        """Async :meth:`users`."""
        return self.users()

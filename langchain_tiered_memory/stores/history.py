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
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage, message_to_dict
from langchain_core.messages import messages_from_dict as _messages_from_dict

from langchain_tiered_memory._keys import KeyBuilder, validate_user_id
from langchain_tiered_memory._redis import RedisConnection
from langchain_tiered_memory.errors import InvalidMessageError

__all__ = [
    "HistoryStore",
    "RedisHistoryStore",
    "InMemoryHistoryStore",
    "UserChatMessageHistory",
    "DEFAULT_MAX_MESSAGE_BYTES",
]

DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024
_BASE_FIELD = "hist_base"  # in the user's meta hash: absolute position of list index 0


def dump_message(message: BaseMessage, max_bytes: int) -> bytes:
    """Serialize one message as JSON bytes (LangChain's dict format), enforcing the size cap."""
    if not isinstance(message, BaseMessage):
        raise InvalidMessageError(
            f"expected a langchain BaseMessage, got {type(message).__name__}; wrap text in "
            "HumanMessage/AIMessage."
        )
    try:
        data = json.dumps(message_to_dict(message), ensure_ascii=False).encode("utf-8")
    except (TypeError, ValueError, UnicodeEncodeError) as exc:
        raise InvalidMessageError(
            f"message cannot be stored as JSON ({exc}); keep contents to text, JSON-able "
            "content blocks and JSON-able additional_kwargs."
        ) from exc
    if len(data) > max_bytes:
        raise InvalidMessageError(
            f"message is {len(data)} bytes serialized; the limit is {max_bytes}. Store large "
            "payloads elsewhere and keep a reference in the message, or raise max_message_bytes."
        )
    return data


def load_messages(raw: Sequence[bytes | str]) -> list[BaseMessage]:
    """Inverse of :func:`dump_message` for a batch."""
    return _messages_from_dict([json.loads(r) for r in raw])


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
    """

    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES

    @abstractmethod
    def append(
        self, user_id: str, messages: Sequence[BaseMessage], *, thread_id: str | None = None
    ) -> int:
        """Append ``messages`` atomically (all or nothing); return the new absolute length.

        ``thread_id`` records which conversation thread the turn came from, so that
        forgetting the user can also delete those threads from a checkpointer.
        """

    @abstractmethod
    async def aappend(
        self, user_id: str, messages: Sequence[BaseMessage], *, thread_id: str | None = None
    ) -> int:
        """Async :meth:`append`."""

    @abstractmethod
    def threads(self, user_id: str) -> list[str]:
        """Thread ids the user's turns were appended from (sorted)."""

    @abstractmethod
    async def athreads(self, user_id: str) -> list[str]:
        """Async :meth:`threads`."""

    @abstractmethod
    def tail(self, user_id: str, n: int) -> list[BaseMessage]:
        """The last ``n`` messages, oldest first, never starting with an orphan tool result."""

    @abstractmethod
    async def atail(self, user_id: str, n: int) -> list[BaseMessage]:
        """Async :meth:`tail`."""

    @abstractmethod
    def since(
        self, user_id: str, start: int, limit: int | None = None
    ) -> tuple[int, list[BaseMessage]]:
        """Up to ``limit`` (default: all) messages from absolute position ``start``.

        If ``start`` was trimmed away, reading begins at the oldest kept message.

        Returns ``(position of the first message returned, messages)``.
        """

    @abstractmethod
    async def asince(
        self, user_id: str, start: int, limit: int | None = None
    ) -> tuple[int, list[BaseMessage]]:
        """Async :meth:`since`."""

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
        """Delete the user's kept messages and thread records; return how many messages.

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

    def _dump_all(self, messages: Sequence[BaseMessage]) -> list[bytes]:
        return [dump_message(m, self.max_message_bytes) for m in messages]


class UserChatMessageHistory(BaseChatMessageHistory):
    """LangChain chat history of one user, backed by any :class:`HistoryStore`."""

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
_CLEAR_LUA = """
local n = redis.call('LLEN', KEYS[1])
if n > 0 then
  redis.call('HINCRBY', KEYS[2], ARGV[1], n)
  redis.call('DEL', KEYS[1])
end
redis.call('DEL', KEYS[3])
return n
"""

# One script: the whole turn lands or none of it. RPUSH per element because unpack() of a
# large ARGV overflows Lua's C stack (about 8000 values).
_APPEND_LUA = """
local n = 0
for i = 2, #ARGV do n = redis.call('RPUSH', KEYS[1], ARGV[i]) end
if ARGV[1] ~= '' then redis.call('SADD', KEYS[3], ARGV[1]) end
return n + tonumber(redis.call('HGET', KEYS[2], 'hist_base') or '0')
"""


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
    def parse_tail(raw: Sequence[bytes | str]) -> list[BaseMessage]:
        """Turn the reply of :meth:`tail_command` into messages."""
        return drop_unanswered_tool_calls(drop_orphan_tool_messages(load_messages(raw)))

    def _append_args(
        self, user_id: str, messages: Sequence[BaseMessage], thread_id: str | None
    ) -> list[Any]:
        hist, meta = self._k(user_id)
        payload = self._dump_all(messages)
        return [
            _APPEND_LUA,
            3,
            hist,
            meta,
            self.keys.key(user_id, "threads"),
            _thread_arg(thread_id),
            *payload,
        ]

    def append(
        self, user_id: str, messages: Sequence[BaseMessage], *, thread_id: str | None = None
    ) -> int:
        """Append a turn in one script: atomic, contiguous, in order."""
        args = self._append_args(user_id, messages, thread_id)
        if len(args) == 6:
            return self.length(user_id)
        with self.connection.errors():
            return int(self.connection.sync.eval(*args))

    async def aappend(
        self, user_id: str, messages: Sequence[BaseMessage], *, thread_id: str | None = None
    ) -> int:
        """Async :meth:`append`."""
        args = self._append_args(user_id, messages, thread_id)
        if len(args) == 6:
            return await self.alength(user_id)
        with self.connection.errors():
            return int(await self.connection.aio.eval(*args))

    def threads(self, user_id: str) -> list[str]:
        """Thread ids recorded for the user."""
        with self.connection.errors():
            raw = self.connection.sync.smembers(self.keys.key(user_id, "threads"))
        return sorted(r.decode() if isinstance(r, bytes) else r for r in raw)

    async def athreads(self, user_id: str) -> list[str]:
        """Async :meth:`threads`."""
        with self.connection.errors():
            raw = await self.connection.aio.smembers(self.keys.key(user_id, "threads"))
        return sorted(r.decode() if isinstance(r, bytes) else r for r in raw)

    def tail(self, user_id: str, n: int) -> list[BaseMessage]:
        """Last ``n`` messages (``LRANGE -n -1``)."""
        if n <= 0:
            return []
        _, key, start, stop = self.tail_command(user_id, n)
        with self.connection.errors():
            raw = self.connection.sync.lrange(key, start, stop)
        return self.parse_tail(raw)

    async def atail(self, user_id: str, n: int) -> list[BaseMessage]:
        """Async :meth:`tail`."""
        if n <= 0:
            return []
        _, key, start, stop = self.tail_command(user_id, n)
        with self.connection.errors():
            raw = await self.connection.aio.lrange(key, start, stop)
        return self.parse_tail(raw)

    def since(
        self, user_id: str, start: int, limit: int | None = None
    ) -> tuple[int, list[BaseMessage]]:
        """Messages from absolute position ``start``."""
        hist, meta = self._k(user_id)
        with self.connection.errors():
            first, raw = self.connection.sync.eval(
                _SINCE_LUA, 2, hist, meta, max(start, 0), _limit_arg(limit), _BASE_FIELD
            )
        return int(first), load_messages(raw)

    async def asince(
        self, user_id: str, start: int, limit: int | None = None
    ) -> tuple[int, list[BaseMessage]]:
        """Async :meth:`since`."""
        hist, meta = self._k(user_id)
        with self.connection.errors():
            first, raw = await self.connection.aio.eval(
                _SINCE_LUA, 2, hist, meta, max(start, 0), _limit_arg(limit), _BASE_FIELD
            )
        return int(first), load_messages(raw)

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
            pipe = self.connection.aio.pipeline(transaction=False)
            pipe.llen(hist)
            pipe.hget(meta, _BASE_FIELD)
            n, base = await pipe.execute()
        return int(n) + int(base or 0)

    def trim(self, user_id: str, *, keep_last: int, not_after: int) -> int:
        """Retention: drop old, already-summarized messages."""
        hist, meta = self._k(user_id)
        with self.connection.errors():
            return int(
                self.connection.sync.eval(
                    _TRIM_LUA, 2, hist, meta, max(keep_last, 0), max(not_after, 0), _BASE_FIELD
                )
            )

    async def atrim(self, user_id: str, *, keep_last: int, not_after: int) -> int:
        """Async :meth:`trim`."""
        hist, meta = self._k(user_id)
        with self.connection.errors():
            return int(
                await self.connection.aio.eval(
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
            async for key in self.connection.aio.scan_iter(match=pattern, count=1000):
                user = self.keys.user_from_key(key)
                if user is not None:
                    found.add(user)
        return sorted(found)

    def clear(self, user_id: str) -> int:
        """Delete the list; positions keep counting (:meth:`length` is unchanged)."""
        hist, meta = self._k(user_id)
        with self.connection.errors():
            return int(
                self.connection.sync.eval(
                    _CLEAR_LUA, 3, hist, meta, self.keys.key(user_id, "threads"), _BASE_FIELD
                )
            )

    async def aclear(self, user_id: str) -> int:
        """Async :meth:`clear`."""
        hist, meta = self._k(user_id)
        with self.connection.errors():
            return int(
                await self.connection.aio.eval(
                    _CLEAR_LUA, 3, hist, meta, self.keys.key(user_id, "threads"), _BASE_FIELD
                )
            )


class InMemoryHistoryStore(HistoryStore):
    """Process-local history for tests and prototypes; same semantics as Redis."""

    def __init__(self, *, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> None:
        self.max_message_bytes = max_message_bytes
        self._data: dict[str, list[bytes]] = {}
        self._base: dict[str, int] = {}
        self._threads: dict[str, set[str]] = {}
        self._lock = threading.Lock()

    def append(
        self, user_id: str, messages: Sequence[BaseMessage], *, thread_id: str | None = None
    ) -> int:
        """Append atomically."""
        validate_user_id(user_id)
        thread = _thread_arg(thread_id)
        payload = self._dump_all(messages)
        with self._lock:
            if payload:
                self._data.setdefault(user_id, []).extend(payload)
                if thread:
                    self._threads.setdefault(user_id, set()).add(thread)
            return len(self._data.get(user_id, [])) + self._base.get(user_id, 0)

    async def aappend(
        self, user_id: str, messages: Sequence[BaseMessage], *, thread_id: str | None = None
    ) -> int:
        """Async :meth:`append`."""
        return self.append(user_id, messages, thread_id=thread_id)

    def threads(self, user_id: str) -> list[str]:
        """Thread ids recorded for the user."""
        validate_user_id(user_id)
        with self._lock:
            return sorted(self._threads.get(user_id, ()))

    async def athreads(self, user_id: str) -> list[str]:
        """Async :meth:`threads`."""
        return self.threads(user_id)

    def tail(self, user_id: str, n: int) -> list[BaseMessage]:
        """Last ``n`` messages."""
        validate_user_id(user_id)
        if n <= 0:
            return []
        with self._lock:
            raw = list(self._data.get(user_id, [])[-n:])
        return RedisHistoryStore.parse_tail(raw)

    async def atail(self, user_id: str, n: int) -> list[BaseMessage]:
        """Async :meth:`tail`."""
        return self.tail(user_id, n)

    def since(
        self, user_id: str, start: int, limit: int | None = None
    ) -> tuple[int, list[BaseMessage]]:
        """Messages from absolute position ``start``."""
        validate_user_id(user_id)
        with self._lock:
            base = self._base.get(user_id, 0)
            offset = max(start - base, 0)
            end = None if limit is None else offset + max(limit, 0)
            raw = list(self._data.get(user_id, [])[offset:end])
        return base + offset, load_messages(raw)

    async def asince(
        self, user_id: str, start: int, limit: int | None = None
    ) -> tuple[int, list[BaseMessage]]:
        """Async :meth:`since`."""
        return self.since(user_id, start, limit)

    def length(self, user_id: str) -> int:
        """Absolute length."""
        validate_user_id(user_id)
        with self._lock:
            return len(self._data.get(user_id, [])) + self._base.get(user_id, 0)

    async def alength(self, user_id: str) -> int:
        """Async :meth:`length`."""
        return self.length(user_id)

    def trim(self, user_id: str, *, keep_last: int, not_after: int) -> int:
        """Retention: drop old, already-summarized messages."""
        validate_user_id(user_id)
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
        validate_user_id(user_id)
        with self._lock:
            self._threads.pop(user_id, None)
            n = len(self._data.pop(user_id, []))
            if n:
                self._base[user_id] = self._base.get(user_id, 0) + n
            return n

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

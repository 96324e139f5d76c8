"""Process-local chat history with the Redis store's semantics, for tests and prototypes."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import (
    BaseMessage,
)

from langchain_tiered_memory._steps import twin
from langchain_tiered_memory.backend.keys import validate_user_id
from langchain_tiered_memory.stores.history import revisions
from langchain_tiered_memory.stores.history.base import (
    Appended,
    HistoryStore,
    owned_elsewhere,
    owned_threads,
    position_arg,
    thread_arg,
)
from langchain_tiered_memory.stores.history.codec import (
    DEFAULT_MAX_MESSAGE_BYTES,
    TOMBSTONE,
    TOMBSTONES,
    OnInvalid,
    parse_tail,
    positioned,
)
from langchain_tiered_memory.stores.history.rule import message_ids, thread_append, thread_edits


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
        self._owners: dict[str, str] = {}  # thread -> the user of its first turn
        # user -> thread -> (saved thread position, keys of the last saved messages)
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
        return self.append_turn(
            user_id,
            messages,
            thread_id=thread_id,
            thread_position=thread_position,
            on_invalid=on_invalid,
        ).length

    aappend = twin(append)

    def append_turn(
        self,
        user_id: str,
        messages: Sequence[BaseMessage],
        *,
        thread_id: str | None = None,
        thread_position: int | None = None,
        on_invalid: OnInvalid = "raise",
    ) -> Appended:
        """:meth:`append`, telling the branch a fork left (``HistoryStore.append_turn``)."""
        user_id = validate_user_id(user_id)
        thread = thread_arg(thread_id)
        position = position_arg(thread_id, thread_position)
        payload = self._dump_all(messages, on_invalid)
        ids = message_ids(messages)
        with self._lock:
            marks = self._marks.setdefault(user_id, {})
            mark = marks.get(thread) if position else None  # no position: nothing replays
            data = self._data.setdefault(user_id, [])
            start = len(data) + self._base.get(user_id, 0)
            plan = thread_append(mark, (), int(position or 0), ids, at=start)
            if plan.stored:
                data.extend(payload[i] for i in plan.stored)
                if thread:
                    self._threads.setdefault(user_id, set()).add(thread)
                    end = start + len(plan.stored)
                    self._spans.setdefault(user_id, []).append((start, end, thread))
            if position and plan.mark is not None:
                marks[thread] = plan.mark
            length = len(self._data.get(user_id, [])) + self._base.get(user_id, 0)
        if not thread or (plan.fork is None and not plan.revised):
            return Appended(length)
        edits = thread_edits(int(position or 0), plan.revised, messages, payload)
        changes = revisions.apply_thread_changes(
            self, user_id, thread, plan.fork, edits, known=dict(plan.known)
        )
        return Appended(length, changes.left, changes.replaced)

    aappend_turn = twin(append_turn)

    def record_thread(self, user_id: str, thread_id: str, *, claim: bool = True) -> None:
        """Claim the thread for the user (first turn) and add it to the user's threads.

        Raises:
            ThreadOwnershipError: another user's turns started the thread.
        """
        user_id, thread = validate_user_id(user_id), thread_arg(thread_id)
        with self._lock:
            if claim and self._owners.setdefault(thread, user_id) != user_id:
                raise owned_elsewhere(thread)
            self._threads.setdefault(user_id, set()).add(thread)

    arecord_thread = twin(record_thread)

    def thread_record(self, user_id: str, thread_id: str) -> tuple[str | None, bool]:
        """The owner and whether the user recorded the thread."""
        user_id, thread = validate_user_id(user_id), thread_arg(thread_id)
        with self._lock:
            return self._owners.get(thread), thread in self._threads.get(user_id, ())

    athread_record = twin(thread_record)

    def thread_mark(self, user_id: str, thread_id: str) -> tuple[int, tuple[str, ...]] | None:
        """The thread's mark (``HistoryStore.thread_mark``)."""
        user_id, thread = validate_user_id(user_id), thread_arg(thread_id)
        with self._lock:
            return self._marks.get(user_id, {}).get(thread)

    athread_mark = twin(thread_mark)

    def threads(self, user_id: str) -> list[str]:
        """The threads recorded for the user that no other user owns (sorted)."""
        user_id = validate_user_id(user_id)
        with self._lock:
            members = list(self._threads.get(user_id, ()))
            owners = [self._owners.get(m) for m in members]
        return owned_threads(user_id, members, owners, f"the history of user {user_id!r}")

    athreads = twin(threads)

    def release_threads(self, user_id: str, thread_ids: Sequence[str]) -> None:
        """Drop the user's ownership of these threads."""
        user_id = validate_user_id(user_id)
        with self._lock:
            for thread in thread_ids:
                if self._owners.get(thread) == user_id:
                    del self._owners[thread]

    arelease_threads = twin(release_threads)

    def spans(self, user_id: str) -> list[tuple[int, int, str]]:
        """The thread spans, oldest first."""
        user_id = validate_user_id(user_id)
        with self._lock:
            return list(self._spans.get(user_id, []))

    aspans = twin(spans)

    def forget_thread(self, user_id: str, thread_id: str) -> int:
        """Tombstone the thread's messages."""
        user_id = validate_user_id(user_id)
        thread = thread_arg(thread_id)
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

    aforget_thread = twin(forget_thread)

    def read_at(self, user_id: str, positions: Sequence[int], reach: int = 1) -> list[Any]:
        """The stored entries from each absolute position on, ``reach`` each."""
        user_id = validate_user_id(user_id)
        with self._lock:
            data, base = self._data.get(user_id, []), self._base.get(user_id, 0)
            return [
                data[p + j - base] if 0 <= p + j - base < len(data) else None
                for p in positions
                for j in range(reach)
            ]

    aread_at = twin(read_at)

    def swap_at(self, user_id: str, swaps: Sequence[tuple[int, Any, str]]) -> int:
        """Replace each entry that still holds what was read."""
        user_id = validate_user_id(user_id)
        swapped = 0
        with self._lock:
            data, base = self._data.get(user_id, []), self._base.get(user_id, 0)
            for position, expected, new in swaps:
                i = position - base
                if 0 <= i < len(data) and data[i] == expected:
                    data[i] = new.encode()
                    swapped += 1
        return swapped

    aswap_at = twin(swap_at)

    def tail(self, user_id: str, n: int) -> list[BaseMessage]:
        """Last ``n`` messages."""
        user_id = validate_user_id(user_id)
        if n <= 0:
            return []
        with self._lock:
            raw = list(self._data.get(user_id, [])[-n:])
        return parse_tail(raw)

    atail = twin(tail)

    def window_positions(
        self, user_id: str, start: int, limit: int | None = None
    ) -> tuple[int, int, list[tuple[int, BaseMessage]]]:
        """:meth:`window` with each message's absolute position."""
        user_id = validate_user_id(user_id)
        with self._lock:
            base = self._base.get(user_id, 0)
            offset = max(start - base, 0)
            end = None if limit is None else offset + max(limit, 0)
            raw = list(self._data.get(user_id, [])[offset:end])
        return base + offset, base + offset + len(raw), positioned(base + offset, raw)

    awindow_positions = twin(window_positions)

    def length(self, user_id: str) -> int:
        """Absolute length."""
        user_id = validate_user_id(user_id)
        with self._lock:
            return len(self._data.get(user_id, [])) + self._base.get(user_id, 0)

    alength = twin(length)

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

    atrim = twin(trim)

    def clear(self, user_id: str) -> int:
        """Delete the user's history; positions keep counting, as on Redis."""
        return self._cleared(user_id, erase=False)

    aclear = twin(clear)

    def erase(self, user_id: str) -> int:
        """Delete everything of the user, the position counter too (see
        :meth:`HistoryStore.erase`).
        """
        return self._cleared(user_id, erase=True)

    def _cleared(self, user_id: str, *, erase: bool) -> int:
        user_id = validate_user_id(user_id)
        with self._lock:
            self._threads.pop(user_id, None)
            self._marks.pop(user_id, None)
            self._spans.pop(user_id, None)
            data = self._data.pop(user_id, [])
            base = self._base.pop(user_id, 0)
            if not erase and (base or data):
                self._base[user_id] = base + len(data)
            return sum(1 for raw in data if raw not in TOMBSTONES)

    aerase = twin(erase)

    def users(self) -> list[str]:
        """Users with a history (the in-memory answer to a SCAN)."""
        with self._lock:
            return sorted(self._data)

    ausers = twin(users)

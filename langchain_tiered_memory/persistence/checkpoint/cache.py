"""Decoded channel values, kept by their stored bytes, so a long thread's turn is flat.

A ``DeltaChannel`` (the prebuilt graph's messages) stores the whole list only in a snapshot,
every 100 updates; every turn starts by reading that snapshot again, and decoding it
(LangGraph's serializer builds and validates each message) was most of a 600-turn thread's
turn: 46 ms for 1,200 messages, growing with the thread; the up to 100 writes since the
snapshot, replayed on it, took 4 ms more. The bytes of a snapshot and of a write do not
change between turns, so the values decoded from them can be reused. What a delta walk read
of each ancestor (its parent and its writes) is kept too, by thread and checkpoint; the next
walk checks it against Redis with one digest per ancestor (``scripts.DIGEST``: the record's and its
refs' SHA-1 and the number of its writes) and loads only what is new or changed, so a turn
no longer reads the up to 250 ancestors since the last snapshot again.

The cache is keyed by the bytes themselves, not by the blob's field: a field can name other
bytes after its thread is deleted and written again (by any process), and a key of the bytes
can never return a value they do not decode to. A hit still reads the bytes from Redis (they
are what is compared); what it saves is the decode.

``delete_thread`` (and so ``forget_user``) empties the cache: an erased thread's messages
do not stay in the process's memory either. It is per saver, never shared between them.

What a hit returns is a fresh container (list, dict, set, a snapshot around a fresh
container) of the same elements, so a reducer that extends its list in place does not change
the cached value. The elements (messages) are shared, as LangGraph already shares them
between the steps of a run: state is updated by returning values, not by mutating messages.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

from langgraph.checkpoint.serde.types import _DeltaSnapshot

__all__ = ["DecodedValues", "fresh"]

# Below this many bytes a value decodes in a few microseconds (a number, a short string):
# caching it would cost about what it saves. One message (about 300 bytes) takes 40 us.
MIN_BYTES = 128


def fresh(value: Any) -> Any:
    """The same elements in a new container (see the module docstring)."""
    if isinstance(value, _DeltaSnapshot):
        return _DeltaSnapshot(fresh(value.value))
    if isinstance(value, (list, dict, set)):
        return type(value)(value)
    return value


class DecodedValues:
    """A bounded LRU of decoded channel values by their stored bytes (:meth:`get`), and of
    what a delta walk read of each ancestor by its thread and checkpoint (:meth:`keep`).

    Args:
        max_bytes: the stored bytes the cache may hold (the decoded values take more, about
            3x for messages); ``0`` turns it off.

    Example:
        >>> cache = DecodedValues(max_bytes=1 << 20)
        >>> blob = b"x" * 10_000
        >>> first = cache.get(blob, lambda b: [len(b)])
        >>> again = cache.get(blob, lambda b: 1 / 0)  # not decoded again
        >>> again == first and again is not first
        True
    """

    def __init__(self, *, max_bytes: int) -> None:
        if max_bytes < 0:
            raise ValueError(f"max_bytes must be 0 (off) or more: {max_bytes!r}")
        self.max_bytes = max_bytes
        self._values: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._held = 0
        # a sync saver is shared by threads; every section is short and never waits on I/O
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._values)

    def get(self, blob: bytes, decode: Callable[[bytes], Any]) -> Any:
        """The value ``blob`` decodes to, decoded only if it is not held."""
        size = len(blob)
        if size < MIN_BYTES or size > self.max_bytes:
            return decode(blob)
        with self._lock:
            kept = self._values.get(blob)
            if kept is not None:
                self._values.move_to_end(blob)
                return fresh(kept[0])
        value = decode(blob)  # outside the lock: two threads may decode the same bytes once
        with self._lock:
            if blob not in self._values:
                self._store(blob, value, size)
        return fresh(value)

    def peek(self, key: Hashable) -> Any:
        """The value kept for ``key`` as it is (no new containers), or ``None``."""
        with self._lock:
            kept = self._values.get(key)
            if kept is None:
                return None
            self._values.move_to_end(key)
            return kept[0]

    def keep(self, key: Hashable, value: Any, size: int) -> None:
        """Keep ``value`` for ``key`` (``size``: the stored bytes it stands for)."""
        if size > self.max_bytes:
            return
        with self._lock:
            self._store(key, value, size)

    def _store(self, key: Hashable, value: Any, size: int) -> None:
        """Hold ``value``, replacing what ``key`` held, then drop the least recent entries
        past the bound (the caller holds the lock).
        """
        old = self._values.pop(key, None)
        if old is not None:
            self._held -= old[1]
        self._values[key] = (value, size)
        self._held += size
        while self._held > self.max_bytes:
            _, (_, dropped) = self._values.popitem(last=False)
            self._held -= dropped

    def clear(self) -> None:
        """Drop every value."""
        with self._lock:
            self._values.clear()
            self._held = 0

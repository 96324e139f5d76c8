"""This process's search indexes of the users it served: an LRU bounded by users and bytes.

``RedisSummaryStore`` keeps one :class:`~langchain_tiered_memory.stores.summaries.index.
UserIndex` per user it searched, with the version (``gen``, ``next_id``) it was built at; a
turn reads the version in its round trip and this cache says whether the index is current,
needs the items added since (``"delta"``) or must be built again (``"full"``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from langchain_tiered_memory.stores.summaries.index import UserIndex

__all__ = ["IndexCache"]


class IndexCache:
    """Indexes by user, least recently used dropped first; safe across threads.

    Args:
        max_users: at most this many users' indexes.
        max_bytes: at most about this many bytes of indexes (the most recent one stays,
            whatever its size: it is being searched).

    Example:
        >>> cache = IndexCache(max_users=2, max_bytes=1 << 20)
        >>> cache.lookup("alice", gen=0, next_id=3, dim=4)
        (None, 'full')
        >>> len(cache)
        0
    """

    def __init__(self, *, max_users: int, max_bytes: int) -> None:
        self.max_users = max_users
        self.max_bytes = max_bytes
        self._indexes: OrderedDict[str, UserIndex] = OrderedDict()
        self._lock = threading.Lock()

    def lookup(
        self, user_id: str, gen: int, next_id: int, dim: int
    ) -> tuple[UserIndex | None, str]:
        """The user's index and what to fetch for the stored version: ``""`` (current, or
        nothing stored), ``"delta"`` (the items after the index's last) or ``"full"``.
        """
        with self._lock:
            if not next_id and not gen:  # nothing stored (e.g. forgotten): drop a stale index
                self._indexes.pop(user_id, None)
                return None, ""
            cached = self._indexes.get(user_id)
            if cached is not None:
                self._indexes.move_to_end(user_id)
                if cached.gen == gen and cached.next_id == next_id:
                    return cached, ""
                if cached.gen == gen and cached.next_id < next_id and cached.dim == dim:
                    return cached, "delta"
        return None, "full"

    def put(self, user_id: str, index: UserIndex) -> None:
        """Keep ``index`` as the user's most recent one, then evict past the bounds."""
        with self._lock:
            self._indexes[user_id] = index
            self._indexes.move_to_end(user_id)
        self.evict()

    def evict(self) -> None:
        """Drop least recently used indexes past ``max_users`` or ``max_bytes``."""
        with self._lock:
            total = sum(index.nbytes for index in self._indexes.values())
            while len(self._indexes) > 1 and (
                len(self._indexes) > self.max_users or total > self.max_bytes
            ):
                _, dropped = self._indexes.popitem(last=False)
                total -= dropped.nbytes

    def drop(self, user_id: str) -> None:
        """Forget the user's index (it is built again on the next search)."""
        with self._lock:
            self._indexes.pop(user_id, None)

    def clear(self) -> None:
        """Forget every index."""
        with self._lock:
            self._indexes.clear()

    def users(self) -> list[str]:
        """The users held, least recently used first."""
        with self._lock:
            return list(self._indexes)

    def nbytes(self) -> int:
        """Estimated memory the held indexes take."""
        with self._lock:
            return sum(index.nbytes for index in self._indexes.values())

    def __len__(self) -> int:
        with self._lock:
            return len(self._indexes)

"""A forgotten thread removed from the sources of the items other threads said too.

``forget_thread`` deletes the items made only from the thread; an item also said in
another thread stays, and its ``source_threads`` (``threads`` on older items) must stop
naming the forgotten one. :func:`without_thread` decides an item's new metadata for both
store families; :func:`drop_thread_plan` rewrites a Redis user's items with it.
"""

from __future__ import annotations

from typing import Any

from langchain_tiered_memory._steps import Plan, call
from langchain_tiered_memory.backend.connection import RedisConnection, as_text
from langchain_tiered_memory.errors import ConcurrentEditError
from langchain_tiered_memory.stores.summaries import scripts
from langchain_tiered_memory.stores.summaries.index import Record

__all__ = ["REWRITE_ROUNDS", "drop_thread_plan", "metadata_without_thread", "without_thread"]

# rounds of read-and-rewrite before giving up on items that keep changing meanwhile
REWRITE_ROUNDS = 5


def metadata_without_thread(metadata: dict[str, Any], thread_id: str) -> dict[str, Any] | None:
    """An item's ``metadata`` with ``thread_id`` gone from its threads (``source_threads``,
    or ``threads`` on older items), or ``None`` when it names none: the rule of
    ``SummaryStore.drop_thread``, for every store.

    Example:
        >>> metadata_without_thread({"source_threads": ["a", "b"]}, "a")
        {'source_threads': ['b']}
    """
    new = dict(metadata)
    for key in ("source_threads", "threads"):
        threads = new.get(key)
        if isinstance(threads, list) and thread_id in threads:
            new[key] = [t for t in threads if t != thread_id]
        elif threads == thread_id:
            new[key] = []
    return None if new == metadata else new


def without_thread(record: Record, thread_id: str) -> Record | None:
    """``record`` with ``thread_id`` gone from its threads, or ``None`` when it names none.

    Example:
        >>> r = Record("1", "The user likes tea.", "2026-01-01", {"source_threads": ["a", "b"]})
        >>> without_thread(r, "a").metadata
        {'source_threads': ['b']}
    """
    metadata = metadata_without_thread(record.metadata, thread_id)
    return None if metadata is None else Record(record.id, record.text, record.created_at, metadata)


def drop_thread_plan(
    connection: RedisConnection, items: str, meta: str, thread_id: str, where: str
) -> Plan[int]:
    """Rewrite the items (in hash ``items``; ``meta``: the user's meta hash) that name
    ``thread_id``; return how many changed. ``where`` names them in an error.

    Each item is rewritten only if it is still as read (``scripts.REWRITE``, which moves
    the index generation); one changed meanwhile (an edit, a supersession) is read again.

    Raises:
        ConcurrentEditError: the items kept changing for ``REWRITE_ROUNDS`` rounds.
    """
    c, changed = connection, 0
    for _ in range(REWRITE_ROUNDS):
        raw = yield call(c.command, c.acommand, "HGETALL", items)
        args: list[Any] = []
        for key, value in raw.items():
            record = Record.from_json(as_text(key), value, where)
            if (kept := without_thread(record, thread_id)) is not None:
                args += [key, value, kept.to_json()]
        if not args:
            return changed
        with c.errors():
            done = int((yield call(c.eval, c.aeval, scripts.REWRITE, 2, items, meta, *args)))
        changed += done
        if done == len(args) // 3:
            return changed
    raise ConcurrentEditError(
        f"{where} kept changing while thread {thread_id!r} was being removed "
        "from their sources; run forget_thread again."
    )

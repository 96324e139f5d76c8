"""What changes a stored message after it was appended, on any history store: the plans
built on its two primitives, ``read_at`` (entries by absolute position, as stored) and
``swap_at`` (replace those still holding what was read), so that both families, and an
app's own store, do each the same way.

- :func:`retract`: messages no longer current (their item was deleted or edited, or a
  fork left their branch), marked, never carried or summarized again;
- :func:`left_branch`: a thread's positions a fork left, marked ``abandoned``;
- :func:`replace`: a message edited in place (``update_state`` with the same id).

The primitives came after 0.2.0, so they are the ``history_revisions`` capability: a
store written for the contract before them constructs and runs (its own ``retract`` kept,
an edit in place logged and not followed, :func:`revisable` false) and the defaults of
the two raise :func:`unsupported`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any, Protocol

from langchain_core.messages import BaseMessage

from langchain_tiered_memory._steps import Plan, adrive, call, drive
from langchain_tiered_memory.stores.history.codec import (
    ABANDONED,
    REPLY_REACH,
    RETRACTED,
    load_messages,
    retractions,
    stored_id,
)

__all__ = [
    "HISTORY_REVISIONS",
    "HistoryStore",
    "aretract",
    "left_branch",
    "mark_left_branch",
    "not_followed",
    "replace",
    "retract",
    "revisable",
    "unsupported",
]

logger = logging.getLogger(__name__)

HISTORY_REVISIONS = "history_revisions"
"""The capability of a history store whose class implements ``read_at`` and ``swap_at``."""


def _own(store: object, method: str) -> bool:
    """Whether ``store``'s class implements ``method`` (not the contract's default, which
    base.py's ``HistoryStore`` defines: named, as base.py imports this module).
    """
    owner = next((c for c in type(store).__mro__ if method in vars(c)), None)
    return owner is not None and (owner.__name__, owner.__module__) != (
        "HistoryStore",
        "langchain_tiered_memory.stores.history.base",
    )


def revisable(store: object) -> bool:
    """Whether ``store`` has :data:`HISTORY_REVISIONS` (a store written for 0.2.0 has not).

    Example:
        >>> from langchain_tiered_memory.stores.history import InMemoryHistoryStore
        >>> revisable(InMemoryHistoryStore())
        True
    """
    return _own(store, "read_at") and _own(store, "swap_at")


def unsupported(store: object, method: str) -> NotImplementedError:
    """The error of ``read_at``/``swap_at`` left at the contract's default."""
    return NotImplementedError(
        f"{type(store).__name__}.{method} is not implemented: the {HISTORY_REVISIONS!r} "
        "capability (marking a deleted item's source messages, following an edit in place, "
        "marking a fork's left branch) needs read_at and swap_at; implement both as "
        "HistoryStore's docstrings say (testing.conformance checks them), or implement "
        "retract() on the store itself."
    )


def not_followed(store: object, thread_id: str, message: BaseMessage) -> None:
    """What ``replace`` does on a store without :data:`HISTORY_REVISIONS`: logs that the
    edit is not followed (as before the capability), so the turn still runs.
    """
    logger.warning(
        "%s has no %r capability (read_at, swap_at): the edit of message %r in thread %r "
        "is not followed in the history; implement read_at and swap_at",
        type(store).__name__,
        HISTORY_REVISIONS,
        message.id,
        thread_id,
    )


async def aretract(store: Any, user_id: str, positions: Sequence[int], reason: str) -> int:
    """``HistoryStore.aretract``: a store's own sync ``retract`` (the contract before the
    primitives) in a worker thread, as the contract's other sync methods run; else the plan.
    """
    if _own(store, "retract"):
        return int(await asyncio.to_thread(store.retract, user_id, positions, reason))
    return int(await adrive(retract(store, user_id, positions, reason)))


class HistoryStore(Protocol):
    """What the plans here use of a ``HistoryStore`` (each with its ``a``-twin)."""

    def read_at(self, user_id: str, positions: Sequence[int], reach: int = 1) -> Any:
        """The entries from each absolute position on, ``reach`` each, as stored."""

    async def aread_at(self, user_id: str, positions: Sequence[int], reach: int = 1) -> Any:
        """Async :meth:`read_at`."""

    def swap_at(self, user_id: str, swaps: Sequence[tuple[int, Any, str]]) -> Any:
        """Replace each entry that still holds what was read."""

    async def aswap_at(self, user_id: str, swaps: Sequence[tuple[int, Any, str]]) -> Any:
        """Async :meth:`swap_at`."""

    def spans(self, user_id: str) -> Any:
        """``(start, end, thread)`` of every turn appended with a thread."""

    async def aspans(self, user_id: str) -> Any:
        """Async :meth:`spans`."""

    def window_positions(self, user_id: str, start: int, limit: int | None = None) -> Any:
        """``(first, end, [(position, message)])`` from ``start``."""

    async def awindow_positions(self, user_id: str, start: int, limit: int | None = None) -> Any:
        """Async :meth:`window_positions`."""


def retract(store: HistoryStore, user_id: str, positions: Sequence[int], reason: str) -> Plan[int]:
    """The plan of ``HistoryStore.retract``: the entries and the replies after each, then
    one swap of those to mark.
    """
    wanted = sorted({int(p) for p in positions if isinstance(p, int) and p >= 0})
    if not wanted:
        return 0
    reach = 1 + REPLY_REACH
    raw = yield call(store.read_at, store.aread_at, user_id, wanted, reach)
    swaps: list[tuple[int, Any, str]] = []
    for k, position in enumerate(wanted):
        entries = raw[k * reach : (k + 1) * reach]
        for j, new in enumerate(retractions(entries, 1, reason)):
            if new is not None:
                swaps.append((position + j, entries[j], new))
    if not swaps:
        return 0
    return int((yield call(store.swap_at, store.aswap_at, user_id, swaps)))


def _owned(spans: Sequence[tuple[int, int, str]], thread_id: str) -> list[int]:
    return [p for s, e, t in spans if t == thread_id for p in range(s, e)]


def left_branch(
    store: HistoryStore, user_id: str, thread_id: str, start: int, end: int
) -> Plan[tuple[int, ...]]:
    """Mark the thread's messages at thread positions ``[start, end)`` as a branch the
    thread left (a run from an earlier checkpoint: LangGraph's fork, an edit as a new
    message): the append found a batch below what the thread saved that is not a replay.
    Messages of earlier left branches do not count. Returns their absolute positions.
    """
    owned = _owned((yield call(store.spans, store.aspans, user_id)), thread_id)
    if not owned:
        return ()
    _, _, found = yield call(
        store.window_positions,
        store.awindow_positions,
        user_id,
        owned[0],
        owned[-1] - owned[0] + 1,
    )
    live = {p for p, m in found if m.response_metadata.get(RETRACTED) != ABANDONED}
    left = tuple([p for p in owned if p in live][start:end])
    if left:
        yield from retract(store, user_id, left, ABANDONED)
    return left


def mark_left_branch(
    store: HistoryStore, user_id: str, thread_id: str, start: int, end: int
) -> tuple[int, ...]:
    """:func:`left_branch` run with the store's sync methods: what an app's store calls
    after an append whose ``thread_append`` found a fork (outside the append's write).
    """
    return drive(left_branch(store, user_id, thread_id, start, end))


def replace(
    store: HistoryStore, user_id: str, thread_id: str, message: BaseMessage, new: str
) -> Plan[tuple[int, BaseMessage] | None]:
    """Store ``new`` (``message`` as stored) in place of the thread's stored message with
    its id; return the position and the message it replaced, or ``None`` when the thread
    holds none with that id (or it changed meanwhile, or the store is not
    :func:`revisable`: logged, and the turn still runs).
    """
    if not revisable(store):
        not_followed(store, thread_id, message)
        return None
    if message.id is None:
        return None
    owned = _owned((yield call(store.spans, store.aspans, user_id)), thread_id)
    raws = (yield call(store.read_at, store.aread_at, user_id, owned)) if owned else []
    for position, raw in zip(reversed(owned), reversed(raws), strict=True):
        if stored_id(raw) == message.id:
            old = load_messages([raw])[0]
            done = yield call(store.swap_at, store.aswap_at, user_id, [(position, raw, new)])
            return (position, old) if done else None
    return None

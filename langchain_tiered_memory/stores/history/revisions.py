"""What changes a stored message after it was appended, on any history store: the plans
built on its two primitives, ``read_at`` (entries by absolute position, as stored) and
``swap_at`` (replace those still holding what was read), so that both families, and an
app's own store, do each the same way.

- :func:`retract`: messages no longer current (their item was deleted or edited, or a
  fork left their branch), marked, never carried or summarized again;
- :func:`thread_changes`: what a thread's append found (``thread_append``, the one rule
  of a thread's history): a message edited (the same id, another text: in place, or by
  time travel) stored in place of the one held, and the positions a fork left marked
  ``abandoned``.

The primitives came after 0.2.0, so they are the ``history_revisions`` capability: a
store written for the contract before them constructs and runs (its own ``retract`` kept,
an edit in place logged and not followed, :func:`revisable` false) and the defaults of
the two raise :func:`unsupported`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, Protocol

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
    "Changes",
    "apply_thread_changes",
    "aretract",
    "not_followed",
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
    """What :func:`thread_changes` does on a store without :data:`HISTORY_REVISIONS`: logs
    that the edit is not followed (as before the capability), so the turn still runs.
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


def retract(
    store: HistoryStore,
    user_id: str,
    positions: Sequence[int],
    reason: str,
    *,
    replies: bool = True,
) -> Plan[int]:
    """The plan of ``HistoryStore.retract``: the entries and (``replies``) the replies
    after each, then one swap of those to mark. A fork's left branch is exact: the reply
    after it may be the new branch's.
    """
    wanted = sorted({int(p) for p in positions if isinstance(p, int) and p >= 0})
    if not wanted:
        return 0
    reach = 1 + REPLY_REACH if replies else 1
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


class Changes(NamedTuple):
    """What an append's rule changed in what a thread held (:func:`thread_changes`)."""

    left: tuple[int, ...] = ()
    """Absolute positions of the branch a fork left, now marked ``abandoned``."""
    replaced: tuple[tuple[int, BaseMessage], ...] = ()
    """``(absolute position, the message as it was)`` of each message an edit replaced."""


def thread_changes(
    store: HistoryStore,
    user_id: str,
    thread_id: str,
    fork: tuple[int, int] | None,
    edits: Sequence[tuple[int, BaseMessage, str]] = (),
    *,
    known: Mapping[int, int] | None = None,
) -> Plan[Changes]:
    """Apply what a thread's append found (``thread_append``), outside the append's write:
    each edit ``(thread position, message, its stored form)`` is stored in place of the
    message the thread holds there (if it still has that id), and the thread positions
    ``[start, end)`` of ``fork`` are marked as a branch the thread left (a run from an
    earlier checkpoint: LangGraph's fork or time travel, an edit as a new message).

    ``known`` maps thread positions to absolute ones as the append's atomic write found
    them in the thread's mark: so concurrent appends to the thread cannot shift what is
    marked. A position it lacks (beyond the mark, or a mark an earlier version wrote) is
    counted over the thread's messages no earlier fork left. A store without
    :data:`HISTORY_REVISIONS` follows neither (logged).
    """
    if fork is None and not edits:
        return Changes()
    if not revisable(store):
        for _, message, _ in edits:
            not_followed(store, thread_id, message)
        if fork is not None:
            logger.warning(
                "%s has no %r capability: the branch thread %r left is not marked",
                type(store).__name__,
                HISTORY_REVISIONS,
                thread_id,
            )
        return Changes()
    where = dict(known or {})
    wanted = [*(range(*fork) if fork else ()), *(q for q, _, _ in edits)]
    if any(q not in where for q in wanted):
        where = {**dict(enumerate((yield from _live(store, user_id, thread_id)))), **where}
    replaced: list[tuple[int, BaseMessage]] = []
    at = [(where[q], message, new) for q, message, new in edits if q in where]
    if at:
        raws = yield call(store.read_at, store.aread_at, user_id, [p for p, _, _ in at])
        swaps = [
            (p, raw, new)
            for (p, message, new), raw in zip(at, raws, strict=True)
            if raw is not None and stored_id(raw) == message.id
        ]
        if swaps and (yield call(store.swap_at, store.aswap_at, user_id, swaps)):
            replaced = [(p, load_messages([raw])[0]) for p, raw, _ in swaps]
    left = tuple(where[q] for q in (range(*fork) if fork else ()) if q in where)
    if left:
        yield from retract(store, user_id, left, ABANDONED, replies=False)
    return Changes(left, tuple(replaced))


def _live(store: HistoryStore, user_id: str, thread_id: str) -> Plan[list[int]]:
    """The absolute positions of the thread's messages no fork left, in order (its thread
    positions, for a mark that did not keep them).
    """
    owned = _owned((yield call(store.spans, store.aspans, user_id)), thread_id)
    if not owned:
        return []
    _, _, found = yield call(
        store.window_positions,
        store.awindow_positions,
        user_id,
        owned[0],
        owned[-1] - owned[0] + 1,
    )
    abandoned = {p for p, m in found if m.response_metadata.get(RETRACTED) == ABANDONED}
    return [p for p in owned if p not in abandoned]


def apply_thread_changes(
    store: HistoryStore,
    user_id: str,
    thread_id: str,
    fork: tuple[int, int] | None,
    edits: Sequence[tuple[int, BaseMessage, str]] = (),
    *,
    known: Mapping[int, int] | None = None,
) -> Changes:
    """:func:`thread_changes` run with the store's sync methods: what an app's store
    calls after an append whose ``thread_append`` found a fork or edits (``plan.fork``,
    ``rule.thread_edits(position, plan.revised, messages, payloads)`` and
    ``dict(plan.known)``).
    """
    return drive(thread_changes(store, user_id, thread_id, fork, edits, known=known))

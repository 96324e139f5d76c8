"""Who may use a thread: the one rule every checkpointer's guard applies.

A thread belongs to the user of its first turn. :class:`ThreadGuard` admits a run of a user
to a thread, claiming a thread nobody owns, before LangGraph reads or writes it
(:mod:`~langchain_tiered_memory.persistence.checkpoint.owned` calls it from a saver's
reads); the history store keeps the records (:meth:`HistoryStore.thread_record`).
"""

from __future__ import annotations

from dataclasses import dataclass

from langchain_tiered_memory._ids import validate_run_thread_id, validate_user_id
from langchain_tiered_memory._steps import Plan, Step, call
from langchain_tiered_memory.errors import ThreadOwnershipError
from langchain_tiered_memory.stores.history.base import HistoryStore, owned_elsewhere

__all__ = ["ThreadGuard"]


def _admitted(owner: str | None, user_id: str, recorded: bool) -> bool | None:
    """``True``: the user's own thread; ``False``: another's (refuse); ``None``: nobody's,
    unless a saver holds state of it that the user never recorded (ask the saver).
    """
    if owner == user_id:
        return True
    if owner is not None:
        return False
    return True if recorded else None


def _no_owner(thread_id: str) -> ThreadOwnershipError:
    return ThreadOwnershipError(
        f"thread {thread_id!r:.80} has stored state but no owner record (it was kept before "
        "owner records existed, or its record was lost), and this user never recorded it: "
        "it is not theirs to take over. Start a new thread id for this user; its "
        "recorder's next turn claims it back."
    )


@dataclass(frozen=True)
class ThreadGuard:
    """Admits a user's run to a thread, or refuses it.

    The owner's run passes. Another user's is refused. A thread with no owner record is
    claimed for the user (``claim=False``: only checked), unless a saver holds state of it
    (the ``has_state`` step, taken only then) that the user never recorded: a thread kept
    before owner records existed, or whose record was lost or expired before its
    checkpoints, is nobody's to take over; its recorder's run claims it back.

    Example:
        >>> from langchain_tiered_memory._steps import call, drive
        >>> from langchain_tiered_memory.stores.history import InMemoryHistoryStore
        >>> def none(thread: str) -> bool: return False
        >>> async def anone(thread: str) -> bool: return False
        >>> guard = ThreadGuard(InMemoryHistoryStore())
        >>> drive(guard.admission("ann", "t1", call(none, anone, "t1")))  # claimed for ann
        >>> guard.history.thread_record("ann", "t1")
        ('ann', True)
    """

    history: HistoryStore

    def admission(
        self,
        user_id: str,
        thread_id: str,
        has_state: Step,
        *,
        claim: bool = True,
        record: tuple[str | None, bool] | None = None,
    ) -> Plan[None]:
        """The plan that lets the run go on, claiming the thread if nobody owns it, or
        raises :class:`ThreadOwnershipError` (``CorruptMemoryError`` for an unreadable
        record); ``drive`` or ``adrive`` runs it. ``record``: the thread's record
        (``HistoryStore.thread_record``) as a turn's read already fetched it.

        Raises:
            InvalidUserIdError: a user id no door accepts (checked before the store sees it:
                a saver's read names its user in a config the app built).
            InvalidArgumentError: a thread id no door accepts (a NUL, too long, ...).
        """
        user_id, thread_id = validate_user_id(user_id), validate_run_thread_id(thread_id)
        history = self.history
        if record is None:
            record = yield call(history.thread_record, history.athread_record, user_id, thread_id)
        owner, recorded = record
        verdict = _admitted(owner, user_id, recorded)
        if verdict is None and (yield has_state):
            # a guarded run claims before it writes: state seen now whose writer claimed
            # after the read above (the user's own first runs, at once) has a record now
            owner, recorded = yield call(
                history.thread_record, history.athread_record, user_id, thread_id
            )
            if (verdict := _admitted(owner, user_id, recorded)) is None:
                raise _no_owner(thread_id)
        if verdict is False:
            raise owned_elsewhere(thread_id)
        if owner is None and claim:
            yield call(history.record_thread, history.arecord_thread, user_id, thread_id)

    def copied(self, source_id: str, target_id: str) -> Plan[None]:
        """The plan that makes a copy of a thread its source's owner's, before the copy is
        written (LangGraph's ``copy_thread``, the server's ``threads.copy``): the copy
        holds the owner's conversation, so their reads reach it and their erasure finds
        it. A target another user owns is refused; a source with no owner (shared
        threads) leaves the copy with none.

        Raises:
            InvalidArgumentError: either id is one no door accepts (checked before the
                store sees either).
        """
        source_id = validate_run_thread_id(source_id)
        target_id = validate_run_thread_id(target_id)
        history = self.history
        owner = yield call(history.thread_owner, history.athread_owner, source_id)
        if owner is not None:
            yield call(history.record_thread, history.arecord_thread, owner, target_id)

    def check_thread(self, user_id: str, thread_id: str) -> None:
        """Raise :class:`ThreadOwnershipError` if another user owns the thread (a read);
        ids no door accepts raise as :meth:`admission`'s do, before the store sees them.
        """
        user_id, thread_id = validate_user_id(user_id), validate_run_thread_id(thread_id)
        owner, _ = self.history.thread_record(user_id, thread_id)
        if owner not in (None, user_id):
            raise owned_elsewhere(thread_id)

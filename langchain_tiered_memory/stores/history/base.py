"""The history tier's interface (:class:`HistoryStore`), its LangChain
``BaseChatMessageHistory`` view of one user, and the argument checks and the replay check
both stores share.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import (
    BaseMessage,
)

from langchain_tiered_memory._ids import validate_thread_id
from langchain_tiered_memory._steps import Plan, call, paired, threaded
from langchain_tiered_memory.errors import (
    CorruptMemoryError,
    InvalidMessageError,
    ThreadOwnershipError,
)
from langchain_tiered_memory.stores.history import revisions
from langchain_tiered_memory.stores.history.codec import (
    CHANGED,
    DEFAULT_MAX_MESSAGE_BYTES,
    OnInvalid,
    dump_message,
    placeholder_for,
)

logger = logging.getLogger(__name__)

# the user thread_record is asked about when only its owner part is wanted (that part is
# the same whoever asks): a valid id, so a store is never handed one the doors refuse
# (PostgreSQL text rejects the NUL the earlier "\x00owner-lookup" held: issue 76 item 8)
_NOBODY = "tiered-memory-owner-lookup"


class Appended(NamedTuple):
    """What :meth:`HistoryStore.append_turn` did: the history's new length, the absolute
    positions of the branch a fork left (marked ``abandoned``), if the turn was a fork,
    and the messages an edit replaced (``(absolute position, the message as it was)``).
    """

    length: int
    left: tuple[int, ...] = ()
    replaced: tuple[tuple[int, BaseMessage], ...] = ()


class HistoryStore(ABC):
    """Per-user append-only chat history with absolute message positions.

    Sync and async methods form pairs with the same signature. A backend implements the
    abstract (sync) methods; each async twin defaults to running its sync method in a
    worker thread, and a backend with async I/O overrides it. So sync methods run
    concurrently, from several threads, and to their end even when the awaiting caller is
    cancelled: a backend locks what needs it and keeps each write atomic.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> from langchain_tiered_memory.stores.history import InMemoryHistoryStore
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

    aappend = threaded(append)

    def append_turn(
        self,
        user_id: str,
        messages: Sequence[BaseMessage],
        *,
        thread_id: str | None = None,
        thread_position: int | None = None,
        on_invalid: OnInvalid = "raise",
    ) -> Appended:
        """:meth:`append`, telling what the thread's rule changed (the memory unmakes what
        was made from it). This default tells nothing: a store that follows the rule
        (``rule.thread_append``, ``revisions.thread_changes``) overrides it.
        """
        return Appended(
            self.append(
                user_id,
                messages,
                thread_id=thread_id,
                thread_position=thread_position,
                on_invalid=on_invalid,
            )
        )

    aappend_turn = threaded(append_turn)

    @abstractmethod
    def record_thread(self, user_id: str, thread_id: str, *, claim: bool = True) -> None:
        """Record ``thread_id`` as the user's before anything of it is saved (a turn's
        start), so that erasing the user also finds a thread whose first turn failed.

        A thread belongs to the user of its first turn: it holds that user's conversation.
        ``claim=False`` (an app whose users share threads, said explicitly) records it
        without claiming it: such a thread has no owner, and any of its users' erasure
        deletes it.

        Raises:
            ThreadOwnershipError: another user's turns started the thread.
        """

    arecord_thread = threaded(record_thread)

    @abstractmethod
    def thread_record(self, user_id: str, thread_id: str) -> tuple[str | None, bool]:
        """The thread's owner (``None``: no owner record) and whether the thread is in the
        user's own threads, in one read.

        Raises:
            CorruptMemoryError: the owner record is not one this package writes.
        """

    athread_record = threaded(thread_record)

    def thread_mark(self, user_id: str, thread_id: str) -> tuple[int, tuple[str, ...]] | None:
        """The thread's mark (``rule.thread_append``), read with a turn so a fork is followed
        before the model runs; this default knows none (then it is followed at the save).
        """
        return None

    athread_mark = threaded(thread_mark)

    def thread_owner(self, thread_id: str) -> str | None:
        """The thread's owner, ``None`` for none (a default from :meth:`thread_record`:
        a backend need not write it).
        """
        return self.thread_record(_NOBODY, thread_id)[0]

    athread_owner = threaded(thread_owner)

    @abstractmethod
    def threads(self, user_id: str) -> list[str]:
        """Thread ids recorded for the user that no other user owns (sorted): what
        export and erasure may touch.
        """

    athreads = threaded(threads)

    @abstractmethod
    def release_threads(self, user_id: str, thread_ids: Sequence[str]) -> None:
        """Drop the user's ownership of these threads (their erasure): the records of
        threads owned by another user are left alone.
        """

    arelease_threads = threaded(release_threads)

    @abstractmethod
    def spans(self, user_id: str) -> list[tuple[int, int, str]]:
        """``(start, end, thread_id)`` of every turn appended with a thread, oldest first:
        which thread each absolute position came from (provenance of summary items).
        """

    aspans = threaded(spans)

    @abstractmethod
    def forget_thread(self, user_id: str, thread_id: str) -> int:
        """Delete the messages that came from ``thread_id`` and its records; return how
        many messages. Positions stay (the messages become tombstones readers skip).
        """

    aforget_thread = threaded(forget_thread)

    def read_at(self, user_id: str, positions: Sequence[int], reach: int = 1) -> list[Any]:
        """Entries as stored from each absolute position on, ``reach`` each (``None``: none)."""
        raise revisions.unsupported(self, "read_at")

    aread_at = threaded(read_at)

    def swap_at(self, user_id: str, swaps: Sequence[tuple[int, Any, str]]) -> int:
        """Swap each ``(position, entry read, new)`` still as read, atomically; return how many."""
        raise revisions.unsupported(self, "swap_at")

    aswap_at = threaded(swap_at)

    @paired
    def retract(self, user_id: str, positions: Sequence[int], reason: str = CHANGED) -> Plan[int]:
        """Mark the messages at these absolute positions, and the assistant's replies to
        them, as no longer current (``reason``: their memory item was deleted or edited,
        or a fork left their branch): kept, never carried into a new thread or summarized
        again. Returns how many were marked (one trimmed or forgotten is skipped).
        """
        return (yield from revisions.retract(self, user_id, positions, reason))

    async def aretract(self, user_id: str, positions: Sequence[int], reason: str = CHANGED) -> int:
        """Async :meth:`retract` (a store's own sync one in a worker thread)."""
        return await revisions.aretract(self, user_id, positions, reason)

    @abstractmethod
    def tail(self, user_id: str, n: int) -> list[BaseMessage]:
        """The last ``n`` messages, oldest first, never starting with an orphan tool result."""

    atail = threaded(tail)

    @paired
    def window(
        self, user_id: str, start: int, limit: int | None = None
    ) -> Plan[tuple[int, int, list[BaseMessage]]]:
        """Up to ``limit`` (default: all) positions from absolute position ``start``.

        If ``start`` was trimmed away, reading begins at the oldest kept message. Messages
        of a forgotten thread are skipped, so there may be fewer messages than positions.

        Returns ``(first position read, position after the last one read, messages)``.
        """
        first, end, found = yield call(
            self.window_positions, self.awindow_positions, user_id, start, limit
        )
        return first, end, [m for _, m in found]

    awindow = window.aio

    @abstractmethod
    def window_positions(
        self, user_id: str, start: int, limit: int | None = None
    ) -> tuple[int, int, list[tuple[int, BaseMessage]]]:
        """:meth:`window` with each message's absolute position, ``(position, message)``:
        which thread each message came from, with :meth:`spans`.
        """

    awindow_positions = threaded(window_positions)

    @paired
    def since(
        self, user_id: str, start: int, limit: int | None = None
    ) -> Plan[tuple[int, list[BaseMessage]]]:
        """``(first position, messages)`` of :meth:`window`."""
        first, _, messages = yield call(self.window, self.awindow, user_id, start, limit)
        return first, messages

    asince = since.aio

    @abstractmethod
    def length(self, user_id: str) -> int:
        """Absolute length: messages ever appended, trimmed ones included."""

    alength = threaded(length)

    @abstractmethod
    def trim(self, user_id: str, *, keep_last: int, not_after: int) -> int:
        """Drop the oldest messages, keeping ``keep_last``, never dropping a position >=
        ``not_after`` (the summarizer's watermark). Returns how many were dropped.
        """

    atrim = threaded(trim)

    @abstractmethod
    def users(self) -> list[str]:
        """Every user with a history (for offline jobs; a SCAN on Redis)."""

    ausers = threaded(users)

    @abstractmethod
    def clear(self, user_id: str) -> int:
        """Delete the user's kept messages and thread records; return how many messages
        (those already forgotten with their thread are not counted again).

        Positions keep counting (:meth:`length` is unchanged): this clears the history
        alone (``UserChatMessageHistory.clear``), and the summarizer's watermark, kept by
        the summary store, stays valid for messages appended afterwards. The erasure of the
        whole user is :meth:`erase`.
        """

    aclear = threaded(clear)

    def erase(self, user_id: str) -> int:
        """Delete everything the store keeps of the user, the position counter included
        (an erasure: ``forget_user`` leaves no byte of the user); return how many messages,
        as :meth:`clear` counts them. Positions start again at 0.

        Why a counter may restart here and not in :meth:`clear`: positions are what the
        summarizer's watermark and the items' ``source_positions`` refer to. The erasure
        deletes those with the history (the summary store's ``clear``), and rotates the
        user's erasure fence first, so a summarizer that read positions before it cannot
        store what it made of them after it (``SummaryStore.add`` with ``fence=``). So no
        record is left that a reused position could be mistaken by.

        This default is :meth:`clear` (the counter stays): a backend written before this
        method keeps running, and the conformance suite's erasure test tells it to
        override this.
        """
        logger.warning(
            "%s does not implement erase: the position counter of user %r is kept",
            type(self).__name__,
            user_id,
        )
        return self.clear(user_id)

    aerase = threaded(erase)

    def session(self, user_id: str) -> UserChatMessageHistory:
        """A ``BaseChatMessageHistory`` view of one user's history.

        Example:
            >>> from langchain_tiered_memory.stores.history import InMemoryHistoryStore
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
        >>> from langchain_tiered_memory.stores.history import InMemoryHistoryStore
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


def position_arg(thread_id: str | None, thread_position: int | None) -> str:
    """A checked thread position as a script argument (``""``: not tracked)."""
    if thread_position is None:
        return ""
    if isinstance(thread_position, bool) or not isinstance(thread_position, int):
        raise InvalidMessageError(f"thread_position must be an int, got {thread_position!r}.")
    if thread_position < 0:
        raise InvalidMessageError(f"thread_position must be >= 0, got {thread_position}.")
    return "" if thread_id is None else str(thread_position)


def thread_arg(thread_id: str | None) -> str:
    """A checked thread id as a script argument (``""``: none)."""
    return validate_thread_id(thread_id) or ""


def owned_elsewhere(thread_id: str) -> ThreadOwnershipError:
    """The refusal of a turn on another user's thread (the owner is not named)."""
    return ThreadOwnershipError(
        f"thread {thread_id!r:.80} belongs to another user: a thread is its first user's "
        "conversation, and another user's turn would read and write it. Start a new "
        "thread id for this user (one that includes the user id, or a fresh UUID)."
    )


def owner_text(reply: object, key: str) -> str | None:
    """A stored owner record as text (``None``: none); anything this package does not
    write raises :class:`CorruptMemoryError` naming the key.
    """
    if reply is None:
        return None
    if isinstance(reply, str):
        return reply
    if isinstance(reply, bytes):
        try:
            return reply.decode()
        except UnicodeDecodeError:
            pass
    raise CorruptMemoryError(
        f"the thread owner record {key!r} holds {reply!r:.60}, not a user id this package "
        "writes (another writer, or a bug). Delete the key (the thread's owner's next "
        "turn records it again), or forget the user who owns the thread."
    )


def decoded_members(raw: Iterable[bytes | str], where: str) -> list[str]:
    """Stored thread ids as text; one that is not UTF-8 (not written by this package) is
    logged and skipped, so that it cannot block the user's erasure or export.
    """
    out = []
    for member in raw:
        try:
            out.append(member.decode() if isinstance(member, bytes) else member)
        except UnicodeDecodeError:
            logger.warning("%s: skipped a thread record that is not UTF-8: %r", where, member)
    return out


def owned_threads(
    user_id: str, members: Sequence[str], owners: Sequence[bytes | str | None], where: str
) -> list[str]:
    """``members`` whose owner record names the user or is absent (a thread recorded
    before owners were kept); a thread another user owns is never the user's.
    """
    kept = []
    for member, owner in zip(members, owners, strict=True):
        try:
            text = owner_text(owner, f"owner of {member!r}")
        except CorruptMemoryError:
            # only the user's own claim put the thread in their set: an unreadable
            # owner record never hides it from their export or erasure
            logger.warning("%s: thread %r has a corrupt owner record; kept", where, member)
            text = None
        if text is None or text == user_id:
            kept.append(member)
        else:
            logger.info("%s: thread %r is another user's; left out", where, member)
    return sorted(kept)


def limit_arg(limit: int | None) -> str | int:
    """A read limit as a script argument (``"all"``: none)."""
    return "all" if limit is None else max(limit, 0)

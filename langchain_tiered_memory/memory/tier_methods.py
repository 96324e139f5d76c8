"""The facade's per-tier methods: the history, the tags, the summary items, a turn's read
and the retention clock, each a thin call into its store or the :class:`Tiers`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

from langchain_core.documents import Document
from langchain_core.messages import BaseMessage

from langchain_tiered_memory._ids import validate_count, validate_user_id
from langchain_tiered_memory._steps import adrive, drive
from langchain_tiered_memory.backend.server import EmbeddedRedis
from langchain_tiered_memory.retrieval.conversation import (
    DEFAULT_CONTEXT_TURNS,
    recent_user_texts,
)
from langchain_tiered_memory.stores.history import (
    OnInvalid,
)
from langchain_tiered_memory.stores.tags import (
    TagChange,
)
from langchain_tiered_memory.summarization.jobs import Summarization
from langchain_tiered_memory.tiers import MemorySnapshot, Tiers

if TYPE_CHECKING:
    pass


__all__ = ["TierMethods"]


class TierMethods:
    """``TieredMemory``'s methods over the three tiers (it inherits them)."""

    tiers: Tiers
    summarization: Summarization
    _server: EmbeddedRedis | None

    # ----- short-term -----

    def load_context(self, user_id: str, max: int = 20) -> list[BaseMessage]:  # noqa: A002
        """The user's last ``max`` messages, newest last."""
        return self.tiers.history.tail(user_id, validate_count(max, "max"))

    async def aload_context(self, user_id: str, max: int = 20) -> list[BaseMessage]:  # noqa: A002
        """Async :meth:`load_context`."""
        return await self.tiers.history.atail(user_id, validate_count(max, "max"))

    def add_session_log(
        self,
        user_id: str,
        messages: Sequence[BaseMessage],
        *,
        thread_id: str | None = None,
        thread_position: int | None = None,
        on_invalid: OnInvalid = "raise",
    ) -> None:
        """Append a turn's messages to the user's history in one atomic write.

        ``thread_id`` (the graph passes its checkpointer thread) is recorded so that
        :meth:`forget_user` can delete the user's threads from a checkpointer too. With
        ``thread_position`` (where ``messages[0]`` stands in the thread) the write is
        idempotent: a retried save stores nothing twice. ``on_invalid="placeholder"``
        stores a short note in place of a message that cannot be stored (see
        :meth:`HistoryStore.append`) instead of refusing the whole turn.

        Raises:
            InvalidMessageError: a message cannot be stored (``on_invalid="raise"``);
                nothing was written.

        """
        drive(self.tiers.save(user_id, messages, thread_id, thread_position, on_invalid))

    async def aadd_session_log(
        self,
        user_id: str,
        messages: Sequence[BaseMessage],
        *,
        thread_id: str | None = None,
        thread_position: int | None = None,
        on_invalid: OnInvalid = "raise",
    ) -> None:
        """Async :meth:`add_session_log`."""
        await adrive(self.tiers.save(user_id, messages, thread_id, thread_position, on_invalid))

    # ----- long-term exact -----

    def get_user_tag(self, user_id: str, tag: str) -> str | None:
        """One tag's value, or ``None``."""
        return self.tiers.tags.get(user_id, tag)

    async def aget_user_tag(self, user_id: str, tag: str) -> str | None:
        """Async :meth:`get_user_tag`."""
        return await self.tiers.tags.aget(user_id, tag)

    def get_user_tags(self, user_id: str) -> dict[str, str]:
        """Every tag of the user."""
        return self.tiers.tags.get_all(user_id)

    async def aget_user_tags(self, user_id: str) -> dict[str, str]:
        """Async :meth:`get_user_tags`."""
        return await self.tiers.tags.aget_all(user_id)

    def set_user_tags(
        self, user_id: str, mapping: Mapping[str, Any], *, thread_id: str | None = None
    ) -> dict[str, str]:
        """Validate and write tags (all or nothing); return the stored string values.

        A value that changes is kept in the tag's history (:meth:`get_tag_history`) with
        the value it replaced, when, and ``thread_id``.

        Raises:
            InvalidTagError: unknown tag or invalid value; nothing was written.

        """
        stored = self.tiers.tags.set(user_id, mapping, thread_id=thread_id)
        if self.tiers.user_ttl is not None:
            self.touch_user(user_id)
        return stored

    async def aset_user_tags(
        self, user_id: str, mapping: Mapping[str, Any], *, thread_id: str | None = None
    ) -> dict[str, str]:
        """Async :meth:`set_user_tags`."""
        stored = await self.tiers.tags.aset(user_id, mapping, thread_id=thread_id)
        if self.tiers.user_ttl is not None:
            await self.atouch_user(user_id)
        return stored

    def get_tag_history(self, user_id: str, tag: str) -> list[TagChange]:
        """Every change of ``tag``, oldest first: ``value``, ``previous``, ``changed_at``,
        ``thread_id``.

        Example:
            >>> memory.set_user_tags("alice", {"age": 30})  # doctest: +SKIP
            >>> memory.set_user_tags("alice", {"age": 31}, thread_id="t2")  # doctest: +SKIP
            >>> [c["value"] for c in memory.get_tag_history("alice", "age")]  # doctest: +SKIP
            ['30', '31']

        """
        user_id = validate_user_id(user_id)
        return self.tiers.tags.history(user_id, tag)

    async def aget_tag_history(self, user_id: str, tag: str) -> list[TagChange]:
        """Async :meth:`get_tag_history`."""
        user_id = validate_user_id(user_id)
        return await self.tiers.tags.ahistory(user_id, tag)

    # ----- long-term fuzzy -----

    def add_summaries(
        self,
        user_id: str,
        items: Sequence[str],
        *,
        created_at: datetime | date | str | None = None,
        metadata: Mapping[str, Any] | None = None,
        supersedes: Mapping[int, Sequence[str]] | None = None,
    ) -> list[str]:
        """Store summary items (near-duplicates of stored items are skipped); return ids.

        ``supersedes={i: [ids]}`` marks stored items that ``items[i]`` makes no longer true
        (see :meth:`SummaryStore.add`).
        """
        ids = self.tiers.summaries.add(
            user_id, items, created_at=created_at, metadata=metadata, supersedes=supersedes
        )
        if self.tiers.user_ttl is not None:
            self.touch_user(user_id)
        return ids

    async def aadd_summaries(
        self,
        user_id: str,
        items: Sequence[str],
        *,
        created_at: datetime | date | str | None = None,
        metadata: Mapping[str, Any] | None = None,
        supersedes: Mapping[int, Sequence[str]] | None = None,
    ) -> list[str]:
        """Async :meth:`add_summaries`."""
        ids = await self.tiers.summaries.aadd(
            user_id, items, created_at=created_at, metadata=metadata, supersedes=supersedes
        )
        if self.tiers.user_ttl is not None:
            await self.atouch_user(user_id)
        return ids

    def recall_summaries(
        self,
        user_id: str,
        query: str | None = None,
        n: int = 3,
        *,
        messages: Sequence[BaseMessage | str] = (),
        context_turns: int = DEFAULT_CONTEXT_TURNS,
        include_superseded: bool = False,
    ) -> list[Document]:
        """The ``n`` items most relevant to ``query``, best first (``metadata["score"]``).

        With ``messages`` (a conversation, oldest first; strings are user messages) the
        query is its last ``context_turns`` user turns, ``query`` after them if given: what
        the graph recalls with, so a memory the conversation is about comes up though the
        last message does not name it
        (:mod:`~langchain_tiered_memory.retrieval.conversation`). Items that a newer one
        superseded (``metadata["superseded_by"]``, ``"valid_until"``) are left out unless
        ``include_superseded``.

        Example:
            >>> memory.recall_summaries("alice", messages=[
            ...     "There's a big test on Friday.", "I'm scared I'll fail again."
            ... ])  # doctest: +SKIP
            [Document(page_content='The user failed their driving test last spring.', ...)]
        """
        user_id = validate_user_id(user_id)  # whatever the store: an invalid id is an error
        n = validate_count(n, "n")
        texts = _query_texts(query, messages, context_turns)
        if not texts:
            return []
        return self.tiers.summaries.search_conversation(
            user_id, texts, n, include_superseded=include_superseded
        )

    async def arecall_summaries(
        self,
        user_id: str,
        query: str | None = None,
        n: int = 3,
        *,
        messages: Sequence[BaseMessage | str] = (),
        context_turns: int = DEFAULT_CONTEXT_TURNS,
        include_superseded: bool = False,
    ) -> list[Document]:
        """Async :meth:`recall_summaries`."""
        user_id = validate_user_id(user_id)
        n = validate_count(n, "n")
        texts = _query_texts(query, messages, context_turns)
        if not texts:
            return []
        return await self.tiers.summaries.asearch_conversation(
            user_id, texts, n, include_superseded=include_superseded
        )

    # ----- retention -----

    def touch_user(self, user_id: str) -> None:
        """Restart the clock of every key of the user (``user_ttl``): they expire together.
        Every write and load does it; a service that writes for the user calls it too.
        Nothing happens without ``user_ttl`` or off Redis.

        Example:
            >>> memory.touch_user("alice")  # doctest: +SKIP
        """
        self.tiers.touch_user(user_id)

    async def atouch_user(self, user_id: str) -> None:
        """Async :meth:`touch_user`."""
        await self.tiers.atouch_user(user_id)

    # ----- one turn's read -----

    def load(
        self,
        user_id: str,
        query: str | None,
        *,
        max_messages: int = 20,
        k: int = 3,
        context: Sequence[str] = (),
        thread_id: str | None = None,
        touch: bool = True,
        shared_thread: bool = False,
    ) -> MemorySnapshot:
        """Read a turn's memory: tags, the last ``max_messages`` messages, ``k`` items.

        ``context``: the conversation's earlier user messages (oldest first), recalled with
        ``query`` as one conversation query (see :meth:`recall_summaries`). ``thread_id``
        (the graph passes its checkpointer thread) is recorded as the user's at once, so
        :meth:`forget_user` finds a thread even if its first turn never reached the save;
        a thread another user's turns started is refused (:class:`ThreadOwnershipError`).
        ``shared_thread=True`` (users of the app share threads, said explicitly) records
        the thread without claiming it. ``touch=False``: an inspection, not the user's
        activity (the console's recall playground): the ``user_ttl`` clock is not restarted.

        On the Redis stores this is one pipelined round trip (plus a fetch of new summary
        items if another process added some) and one query embedding. A tier whose stored
        data is corrupt (:class:`CorruptMemoryError`) is logged as an error and comes back
        empty, so the other tiers still reach the model; the store's own methods raise it.
        """
        return drive(
            self.tiers.load(
                user_id, query, max_messages, k, context, thread_id, touch, not shared_thread
            )
        )

    async def aload(
        self,
        user_id: str,
        query: str | None,
        *,
        max_messages: int = 20,
        k: int = 3,
        context: Sequence[str] = (),
        thread_id: str | None = None,
        touch: bool = True,
        shared_thread: bool = False,
    ) -> MemorySnapshot:
        """Async :meth:`load`."""
        return await adrive(
            self.tiers.load(
                user_id, query, max_messages, k, context, thread_id, touch, not shared_thread
            )
        )


def _query_texts(query: str | None, messages: Sequence[BaseMessage | str], turns: int) -> list[str]:
    """The texts a recall query reads: the last ``turns`` user turns of ``messages`` and
    ``query``, oldest first.
    """
    return recent_user_texts([*messages, *([query] if query else [])], max(turns, 1))

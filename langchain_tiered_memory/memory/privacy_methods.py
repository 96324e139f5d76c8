"""The facade's erasure and export methods; ``privacy.py`` does the work."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.store.base import BaseStore

from langchain_tiered_memory import privacy
from langchain_tiered_memory._steps import adrive, drive
from langchain_tiered_memory.summarization.jobs import Summarization
from langchain_tiered_memory.tiers import Tiers

__all__ = ["PrivacyMethods"]


class PrivacyMethods:
    """``TieredMemory``'s erasure and export methods (it inherits them)."""

    tiers: Tiers
    summarization: Summarization

    # ----- privacy: langchain_tiered_memory.privacy does the work -----

    def attach(
        self,
        *,
        checkpointer: BaseCheckpointSaver | None = None,
        store: BaseStore | None = None,
        store_namespaces: Sequence[tuple[str, ...]] | None = None,
    ) -> None:
        """Tell the memory of a checkpointer or store that holds its users' data, once:
        every erasure and export reaches it, from any entry point and (recorded beside the
        data) any process, which reports as ``unreached`` what it does not hold itself.
        The memory's own ``checkpointer()`` and ``store()`` need no attaching. Attach one
        that lives as long as the memory (the memory keeps it; a closed one fails the next
        erasure, loudly). ``store_namespaces``: the templates of a user's namespaces in
        ``store`` (default ``[("memories", "{user_id}")]``); without ``store``, of the
        memory's own. An async-only saver (``AsyncPostgresSaver``) is erased by
        ``aforget_user``.

        Example:
            >>> memory.attach(checkpointer=PostgresSaver(conn))  # doctest: +SKIP
            >>> memory.forget_user("alice")  # its threads there too  # doctest: +SKIP
        """
        if store_namespaces is not None:
            privacy.check_namespaces(store_namespaces)
        self.tiers.attach(checkpointer=checkpointer, store=store, store_namespaces=store_namespaces)
        self.tiers.record_attachments()

    def forget_user(
        self,
        user_id: str,
        *,
        checkpointer: BaseCheckpointSaver | None = None,
        store: BaseStore | None = None,
        store_namespaces: Sequence[tuple[str, ...]] | None = None,
    ) -> dict[str, int]:
        """Erase every tier of the user; return how much of each was removed.

        Erases everything the memory knows of: the three tiers, the threads the user owns
        (a thread is its first user's: another user's thread is never touched) in every
        checkpointer the memory knows (on Redis its own, which ``checkpointer()`` hands
        out, and any given to :meth:`attach`), and the user's namespaces in every store it
        knows (its own ``store()`` and any attached). ``checkpointer`` and ``store`` add
        one more for this call only. A user's namespaces are those that start with one of
        the store's templates once ``"{user_id}"`` is replaced by the user id (default
        LangMem's ``("memories", "{user_id}")``; ``store_namespaces`` gives ``store``'s,
        e.g. ``[("{user_id}",)]`` for LangGraph's ``(user_id, ...)`` layout). The user id is
        matched at that position only, never as any label: a user called ``"memories"``
        erases ``("memories", "memories")``, not everyone's ``("memories", <id>)``. On the
        package's embedded server the server's files are rewritten before this returns, so
        the erased data is off disk too
        (:meth:`EmbeddedRedis.compact <langchain_tiered_memory.EmbeddedRedis.compact>`).

        Example:
            >>> memory.forget_user("alice", checkpointer=saver, store=store)  # doctest: +SKIP
            {'threads': 2, 'history': 12, 'tags': 2, 'summaries': 3, 'store_items': 4}
        """
        removed = privacy.forget_user(
            self.tiers,
            user_id,
            checkpointer=checkpointer,
            store=store,
            store_namespaces=store_namespaces,
        )
        return removed

    async def aforget_user(
        self,
        user_id: str,
        *,
        checkpointer: BaseCheckpointSaver | None = None,
        store: BaseStore | None = None,
        store_namespaces: Sequence[tuple[str, ...]] | None = None,
    ) -> dict[str, int]:
        """Async :meth:`forget_user`."""
        removed = await privacy.aforget_user(
            self.tiers,
            user_id,
            checkpointer=checkpointer,
            store=store,
            store_namespaces=store_namespaces,
        )
        return removed

    def delete_summaries(self, user_id: str, ids: Sequence[str]) -> int:
        """Delete summary items by id; return how many existed. On the embedded server its
        files are rewritten before this returns, so the deleted text is off disk too.

        Example:
            >>> memory.delete_summaries("alice", ["3"])  # doctest: +SKIP
            1
        """
        return drive(privacy.delete_items(self.tiers, user_id, ids))

    async def adelete_summaries(self, user_id: str, ids: Sequence[str]) -> int:
        """Async :meth:`delete_summaries`."""
        return await adrive(privacy.delete_items(self.tiers, user_id, ids))

    def update_summary(self, user_id: str, item_id: str, text: str) -> bool:
        """Fix one summary item's text in place: same id, date, provenance and
        supersession, the earlier text kept on the item (``metadata["edits"]``); the old
        text is off the embedded server's files when this returns. Returns whether the
        text changed.

        Raises:
            InvalidSummaryError: no such item, or ``text`` is not a valid item.

        Example:
            >>> memory.update_summary("alice", "3", "Alice is 31.")  # doctest: +SKIP
            True
        """
        return drive(privacy.edit_item(self.tiers, user_id, item_id, text))

    async def aupdate_summary(self, user_id: str, item_id: str, text: str) -> bool:
        """Async :meth:`update_summary`."""
        return await adrive(privacy.edit_item(self.tiers, user_id, item_id, text))

    def delete_user_tags(self, user_id: str, names: Sequence[str]) -> int:
        """Delete tags by name (logged in the tag history); return how many existed. The
        embedded server's files are rewritten before this returns.

        Example:
            >>> memory.delete_user_tags("alice", ["age"])  # doctest: +SKIP
            1
        """
        return drive(privacy.delete_tags(self.tiers, user_id, names))

    async def adelete_user_tags(self, user_id: str, names: Sequence[str]) -> int:
        """Async :meth:`delete_user_tags`."""
        return await adrive(privacy.delete_tags(self.tiers, user_id, names))

    def forget_thread(
        self, user_id: str, thread_id: str, *, checkpointer: BaseCheckpointSaver | None = None
    ) -> dict[str, int]:
        """Erase one conversation thread of the user; return how much was removed.

        Deletes the thread's messages from the history, the summary items made only from
        that thread (items that also came from other threads stay), and the thread's
        checkpoints in every checkpointer the memory knows (see :meth:`forget_user`; plus
        ``checkpointer``), but only for a thread this user owns (another user's thread id
        is left alone: 0 checkpoints). Tags stay: they are the user's, and their history
        says which thread set them.

        Example:
            >>> memory.forget_thread("alice", "t-2", checkpointer=saver)  # doctest: +SKIP
            {'messages': 4, 'summaries': 1, 'checkpoints': 3}

        """
        removed = privacy.forget_thread(self.tiers, user_id, thread_id, checkpointer=checkpointer)
        return removed

    async def aforget_thread(
        self, user_id: str, thread_id: str, *, checkpointer: BaseCheckpointSaver | None = None
    ) -> dict[str, int]:
        """Async :meth:`forget_thread`."""
        removed = await privacy.aforget_thread(
            self.tiers, user_id, thread_id, checkpointer=checkpointer
        )
        return removed

    def export_user(
        self,
        user_id: str,
        *,
        checkpointer: BaseCheckpointSaver | None = None,
        store: BaseStore | None = None,
        store_namespaces: Sequence[tuple[str, ...]] | None = None,
    ) -> dict[str, Any]:
        """A JSON-serializable copy of every tier of the user.

        The latest state of each thread the user owns, from the checkpointers the memory
        knows (``"thread_states"``), and the items of the user's namespaces in the stores
        it knows (``"store"``): what :meth:`forget_user` would erase.

        Example:
            >>> memory.export_user("alice", checkpointer=saver)["thread_states"]  # doctest: +SKIP
            [{'thread_id': 't-1', 'checkpoint_id': '1f0...', 'values': {...}}]
        """
        return privacy.export_user(
            self.tiers,
            user_id,
            checkpointer=checkpointer,
            store=store,
            store_namespaces=store_namespaces,
        )

    async def aexport_user(
        self,
        user_id: str,
        *,
        checkpointer: BaseCheckpointSaver | None = None,
        store: BaseStore | None = None,
        store_namespaces: Sequence[tuple[str, ...]] | None = None,
    ) -> dict[str, Any]:
        """Async :meth:`export_user`."""
        return await privacy.aexport_user(
            self.tiers,
            user_id,
            checkpointer=checkpointer,
            store=store,
            store_namespaces=store_namespaces,
        )

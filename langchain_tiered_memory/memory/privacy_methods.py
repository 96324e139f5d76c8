"""The facade's erasure and export methods; ``privacy.py`` does the work."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.store.base import BaseStore

from langchain_tiered_memory import privacy
from langchain_tiered_memory.backend.server import EmbeddedRedis
from langchain_tiered_memory.privacy import DEFAULT_STORE_NAMESPACES
from langchain_tiered_memory.summarization.jobs import Summarization
from langchain_tiered_memory.tiers import Tiers

if TYPE_CHECKING:
    pass


__all__ = ["PrivacyMethods"]


class PrivacyMethods:
    """``TieredMemory``'s erasure and export methods (it inherits them)."""

    tiers: Tiers
    summarization: Summarization
    _server: EmbeddedRedis | None

    # ----- privacy: langchain_tiered_memory.privacy does the work -----

    def forget_user(
        self,
        user_id: str,
        *,
        checkpointer: BaseCheckpointSaver | None = None,
        store: BaseStore | None = None,
        store_namespaces: Sequence[tuple[str, ...]] = DEFAULT_STORE_NAMESPACES,
    ) -> dict[str, int]:
        """Erase every tier of the user; return how much of each was removed.

        With ``checkpointer``, the conversation threads the user's turns came from (as
        recorded by the graph) are deleted from it first. With ``store`` (any LangGraph
        ``BaseStore``), every item of the user's namespaces: those that start with one of
        ``store_namespaces`` once ``"{user_id}"`` is replaced by the user id (default
        LangMem's ``("memories", "{user_id}")``; pass ``[("{user_id}",)]`` for LangGraph's
        ``(user_id, ...)`` layout). The user id is matched at that position only, never as
        any label: a user called ``"memories"`` erases ``("memories", "memories")``, not
        everyone's ``("memories", <id>)``. On the package's embedded server the server's
        files are rewritten before this returns, so the erased data is off disk too
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
        if self._server is not None:  # the package's own server: off its files too
            self._server.compact()
        return removed

    async def aforget_user(
        self,
        user_id: str,
        *,
        checkpointer: BaseCheckpointSaver | None = None,
        store: BaseStore | None = None,
        store_namespaces: Sequence[tuple[str, ...]] = DEFAULT_STORE_NAMESPACES,
    ) -> dict[str, int]:
        """Async :meth:`forget_user`."""
        removed = await privacy.aforget_user(
            self.tiers,
            user_id,
            checkpointer=checkpointer,
            store=store,
            store_namespaces=store_namespaces,
        )
        if self._server is not None:
            await self._server.acompact()
        return removed

    def forget_thread(
        self, user_id: str, thread_id: str, *, checkpointer: BaseCheckpointSaver | None = None
    ) -> dict[str, int]:
        """Erase one conversation thread of the user; return how much was removed.

        Deletes the thread's messages from the history, the summary items made only from
        that thread (items that also came from other threads stay), and, with
        ``checkpointer``, the thread's checkpoints, but only for a thread recorded for this
        user (another user's thread id is left alone: 0 checkpoints). Tags stay: they are
        the user's, and their history says which thread set them.

        Example:
            >>> memory.forget_thread("alice", "t-2", checkpointer=saver)  # doctest: +SKIP
            {'messages': 4, 'summaries': 1, 'checkpoints': 3}

        """
        removed = privacy.forget_thread(self.tiers, user_id, thread_id, checkpointer=checkpointer)
        if self._server is not None:
            self._server.compact()
        return removed

    async def aforget_thread(
        self, user_id: str, thread_id: str, *, checkpointer: BaseCheckpointSaver | None = None
    ) -> dict[str, int]:
        """Async :meth:`forget_thread`."""
        removed = await privacy.aforget_thread(
            self.tiers, user_id, thread_id, checkpointer=checkpointer
        )
        if self._server is not None:
            await self._server.acompact()
        return removed

    def export_user(
        self,
        user_id: str,
        *,
        checkpointer: BaseCheckpointSaver | None = None,
        store: BaseStore | None = None,
        store_namespaces: Sequence[tuple[str, ...]] = DEFAULT_STORE_NAMESPACES,
    ) -> dict[str, Any]:
        """A JSON-serializable copy of every tier of the user.

        With ``checkpointer``, the latest state of each of the user's threads
        (``"thread_states"``); with ``store``, the items of the user's namespaces
        (``"store"``, the namespaces :meth:`forget_user` would erase).

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
        store_namespaces: Sequence[tuple[str, ...]] = DEFAULT_STORE_NAMESPACES,
    ) -> dict[str, Any]:
        """Async :meth:`export_user`."""
        return await privacy.aexport_user(
            self.tiers,
            user_id,
            checkpointer=checkpointer,
            store=store,
            store_namespaces=store_namespaces,
        )

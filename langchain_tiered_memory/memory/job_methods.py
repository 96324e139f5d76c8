"""The facade's summarization and re-embedding methods; ``summarization/jobs.py`` does the work."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING

from langchain_core.language_models import BaseChatModel

from langchain_tiered_memory._steps import adrive, drive
from langchain_tiered_memory.backend.server import EmbeddedRedis
from langchain_tiered_memory.stores.summaries import (
    RedisSummaryStore,
)
from langchain_tiered_memory.stores.summaries.reembed import UsersProgress, reembed_users_plan
from langchain_tiered_memory.summarization.jobs import DEFAULT_SUMMARY_BATCH, Summarization
from langchain_tiered_memory.tiers import Tiers

if TYPE_CHECKING:
    pass


__all__ = ["JobMethods"]


class JobMethods:
    """``TieredMemory``'s summarization and re-embedding methods (it inherits them)."""

    tiers: Tiers
    summarization: Summarization
    _server: EmbeddedRedis | None

    # ----- summarization: langchain_tiered_memory.summarization.jobs does the work -----

    def summarize_history(
        self,
        user_id: str,
        model: BaseChatModel,
        *,
        max_messages: int = DEFAULT_SUMMARY_BATCH,
        extractive_fallback: bool = False,
        grounded: bool = False,
        reconcile: bool = True,
    ) -> list[str]:
        """Summarize the user's history after the watermark into stored items.

        Items and the new watermark are written together, only if no other summarizer
        moved the watermark meanwhile. Returns the ids stored (``[]`` if there was nothing
        new, or another summarizer got there first).

        ``extractive_fallback=True`` keeps the user's own first-person statements (quoted)
        when the model returns nothing usable, and ``grounded=True`` keeps only items whose
        content occurs in what the user said: both for small local models (see
        :func:`~langchain_tiered_memory.summarization.summarizer.summarize_messages`).

        ``reconcile=True`` (default) shows the model, in one more call, the stored items most
        like each new one: a new item that repeats a stored one is dropped, one that makes a
        stored one no longer true supersedes it (kept with ``superseded_by`` and
        ``valid_until``, out of default recall). An unusable answer stores the items as new.

        Raises:
            SummarizationError: the model failed or returned nothing usable; nothing was
                stored and the watermark did not move.

        """
        return drive(
            self.summarization.summarize(
                user_id,
                model,
                max_messages=max_messages,
                extractive_fallback=extractive_fallback,
                grounded=grounded,
                reconcile=reconcile,
            )
        )

    async def asummarize_history(
        self,
        user_id: str,
        model: BaseChatModel,
        *,
        max_messages: int = DEFAULT_SUMMARY_BATCH,
        extractive_fallback: bool = False,
        grounded: bool = False,
        reconcile: bool = True,
    ) -> list[str]:
        """Async :meth:`summarize_history`."""
        return await adrive(
            self.summarization.summarize(
                user_id,
                model,
                max_messages=max_messages,
                extractive_fallback=extractive_fallback,
                grounded=grounded,
                reconcile=reconcile,
            )
        )

    def summarize_in_background(
        self,
        user_id: str,
        model: BaseChatModel,
        *,
        min_messages: int = 1,
        extractive_fallback: bool = False,
        grounded: bool = False,
        reconcile: bool = True,
    ) -> Future[list[str]] | None:
        """Summarize the user's history in a worker thread if ``min_messages`` are pending.

        Returns at once (``None`` if a job for this user is already running). The check of
        how much is pending happens in the worker too, so the caller's turn pays nothing.
        Failures are logged; the history stays unsummarized for the next attempt.
        """
        return self.summarization.summarize_in_background(
            user_id,
            model,
            min_messages=min_messages,
            extractive_fallback=extractive_fallback,
            grounded=grounded,
            reconcile=reconcile,
        )

    def wait_for_background(self, timeout: float | None = None) -> None:
        """Block until the background summaries running now have finished."""
        self.summarization.wait_for_background(timeout)

    def pending_users(self, min_messages: int = 20) -> list[str]:
        """Users with at least ``min_messages`` unsummarized messages.

        On Redis, once :meth:`sweep_pending` has indexed every user (the worker does it at
        start), this reads the pending index: O(result), never touching idle users. Before
        that it SCANs every user. A user whose counters are unreadable
        (:class:`CorruptMemoryError`) is logged and left out, so one bad record cannot hide
        every other user's work.
        """
        return drive(self.summarization.pending_users(min_messages))

    async def apending_users(self, min_messages: int = 20) -> list[str]:
        """Async :meth:`pending_users`."""
        return await adrive(self.summarization.pending_users(min_messages))

    def sweep_pending(self) -> int:
        """Index every user's pending count (and queue the due ones) with one SCAN.

        Recovers what a crash between a turn's write and its queue note lost, and drops
        from the queue the users whose data is gone (expired by ``user_ttl``); after the
        first sweep :meth:`pending_users` reads the index. Returns the users swept.

        Example:
            >>> memory.sweep_pending()  # doctest: +SKIP
            1042
        """
        return drive(self.summarization.sweep())

    async def asweep_pending(self) -> int:
        """Async :meth:`sweep_pending`."""
        return await adrive(self.summarization.sweep())

    def summarize_pending(
        self,
        model: BaseChatModel,
        *,
        min_messages: int = 20,
        extractive_fallback: bool = False,
        grounded: bool = False,
    ) -> dict[str, list[str]]:
        """The offline job: summarize every user with ``min_messages`` unsummarized messages.

        A failure for one user (the model's, or that user's stored data) is logged and the
        others go on; that user's history stays unsummarized for the next run. Only an
        unreachable store (:class:`MemoryBackendError`) stops the job. Returns
        ``{user_id: stored ids}`` for the users that succeeded.

        Example:
            >>> memory.summarize_pending(ChatOpenAI(), min_messages=50)  # doctest: +SKIP
            {'alice': ['12', '13']}
        """
        return drive(
            self.summarization.summarize_pending(
                model,
                min_messages=min_messages,
                extractive_fallback=extractive_fallback,
                grounded=grounded,
            )
        )

    async def asummarize_pending(
        self,
        model: BaseChatModel,
        *,
        min_messages: int = 20,
        extractive_fallback: bool = False,
        grounded: bool = False,
    ) -> dict[str, list[str]]:
        """Async :meth:`summarize_pending` (users one after another)."""
        return await adrive(
            self.summarization.summarize_pending(
                model,
                min_messages=min_messages,
                extractive_fallback=extractive_fallback,
                grounded=grounded,
            )
        )

    # ----- changing the embeddings model -----

    def reembed(
        self, user_ids: Sequence[str] | None = None, *, progress: UsersProgress | None = None
    ) -> dict[str, int]:
        """Re-embed stored summary items with this memory's embeddings model.

        For every user in ``user_ids`` (default: every user with items): stage the new
        vectors beside the old ones (resumable: a killed run continues where it stopped),
        then swap them in one script. Until its swap a user is served by processes on the
        old model; restart them with the new model when this returns. ``progress`` gets
        (user, items done, items in all) after each page. Returns items re-embedded per user.

        Raises:
            ValueError: the memory is not on Redis (in-process items need no conversion).
            ConcurrentReembedError: another run converts to another model.

        Example:
            >>> new = TieredMemory.from_url(url, embeddings=OpenAIEmbeddings())  # doctest: +SKIP
            >>> new.reembed()  # doctest: +SKIP
            {'alice': 12, 'bob': 3}
        """
        store = self._redis_summaries()
        with store.connection.errors():
            return drive(reembed_users_plan(store, user_ids, progress=progress))

    async def areembed(
        self, user_ids: Sequence[str] | None = None, *, progress: UsersProgress | None = None
    ) -> dict[str, int]:
        """Async :meth:`reembed`."""
        store = self._redis_summaries()
        with store.connection.errors():
            return await adrive(reembed_users_plan(store, user_ids, progress=progress))

    def _redis_summaries(self) -> RedisSummaryStore:
        if not isinstance(self.tiers.summaries, RedisSummaryStore):
            raise ValueError(
                "reembed() converts summary vectors stored in Redis; this memory's items "
                f"live in {type(self.tiers.summaries).__name__}, which the running process embeds."
            )
        return self.tiers.summaries

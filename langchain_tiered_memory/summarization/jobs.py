"""Summarization orchestration: what the ``summarize`` tool, the worker and the job share.

:class:`Summarization` turns a user's unsummarized history into stored items (the model
calls are :mod:`~langchain_tiered_memory.summarization.summarizer`'s), keeps the summarization queue
told where each user stands, runs background summaries in a small thread pool, and finds
the users due. Each multi-step operation is one plan (``_steps``) run by a sync and an async
driver, so the two forms cannot drift apart. ``TieredMemory``'s summarization methods run
these plans; reach it as ``memory.summarization``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel

from langchain_tiered_memory._ids import validate_user_id
from langchain_tiered_memory._steps import Plan, call, drive
from langchain_tiered_memory.errors import (
    CorruptMemoryError,
    MemoryBackendError,
    SummarizationError,
    WatermarkConflict,
)
from langchain_tiered_memory.stores.directory import RedisUserDirectory
from langchain_tiered_memory.stores.history.codec import RETRACTED
from langchain_tiered_memory.stores.queue import QueueEntry
from langchain_tiered_memory.summarization.provenance import grounded_in_user, item_provenance
from langchain_tiered_memory.summarization.reconcile import areconcile_items, reconcile_items
from langchain_tiered_memory.summarization.summarizer import (
    MAX_ITEMS,
    SAID,
    asummarize_messages,
    extract_user_statements,
    summarize_messages,
    user_text,
)
from langchain_tiered_memory.summarization.uncovered import keep_uncovered, user_statements
from langchain_tiered_memory.summarization.updates import clear_updates, kept_part, may_update
from langchain_tiered_memory.tiers import Tiers

__all__ = ["DEFAULT_SUMMARY_BATCH", "Summarization"]

logger = logging.getLogger(__name__)

DEFAULT_SUMMARY_BATCH = 200


def _with_kept_parts(
    items: list[str],
    metadata: list[dict[str, Any]],
    supersedes: dict[int, list[str]],
    similar: Sequence[Sequence[Document]],
) -> tuple[list[str], list[dict[str, Any]]]:
    """``items`` and their ``metadata`` with, for each superseded item that said more than
    the update changes, what it said besides (:func:`kept_part`), still current, from the
    messages the superseded item came from (so ``forget_thread`` finds it).
    """
    stored = {doc.id: doc for docs in similar for doc in docs}
    items, metadata = list(items), list(metadata)
    for i, old_ids in supersedes.items():
        for old_id in old_ids:
            doc = stored.get(old_id)
            kept = None if doc is None else kept_part(items[i], doc.page_content)
            if doc is None or kept is None or kept in items:
                continue
            logger.info("superseded %r keeps %r", doc.page_content, kept)
            items.append(kept)
            metadata.append({k: v for k, v in doc.metadata.items() if k.startswith("source_")})
    return items, metadata


class Summarization:
    """The summarization of one memory's users (see the module docstring).

    It reads the stores (its ``Tiers``) at each call, so a store an app swaps on the memory
    is the one used.

    Its operations are plans (``_steps``): ``TieredMemory`` runs them with ``drive`` or
    ``adrive``, and so does the worker.

    Example:
        >>> from langchain_tiered_memory._steps import drive
        >>> drive(memory.summarization.summarize("alice", model))  # doctest: +SKIP
        ['12', '13']
    """

    def __init__(self, tiers: Tiers) -> None:
        self.tiers = tiers
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._jobs: dict[str, Future[list[str]]] = {}

    # ----- one user (plans: run them with _steps.drive or adrive) -----

    def summarize(
        self,
        user_id: str,
        model: BaseChatModel,
        *,
        max_messages: int = DEFAULT_SUMMARY_BATCH,
        extractive_fallback: bool = False,
        grounded: bool = False,
        reconcile: bool = True,
        settle: bool = True,
    ) -> Plan[list[str]]:
        """The plan of :meth:`TieredMemory.summarize_history`; with ``settle=False`` the
        queue is not told (the worker settles the entry it claimed itself).
        """
        options = {"extractive_fallback": extractive_fallback, "grounded": grounded}
        try:
            return (yield from self._once_plan(user_id, model, max_messages, reconcile, options))
        finally:
            if settle and self.tiers.queue is not None:
                yield from self.settle(user_id)

    def settle(
        self, user_id: str, entry: QueueEntry | None = None, *, requeue: bool = True
    ) -> Plan[None]:
        """Tell the queue where the user's summarization stands (ack ``entry``); with
        ``requeue``, a user still due goes back on the queue. After a failed attempt it
        does not: the user's next turn queues it again, so a user the model cannot
        summarize does not spin the workers.
        """
        tiers = self.tiers
        assert tiers.queue is not None
        watermark = yield call(
            tiers.summaries.get_watermark, tiers.summaries.aget_watermark, user_id
        )
        length = yield call(tiers.history.length, tiers.history.alength, user_id)
        threshold = tiers.summarize_after if requeue else None
        yield call(
            tiers.queue.settle,
            tiers.queue.asettle,
            user_id,
            watermark=watermark,
            length=length,
            threshold=threshold,
            entry=entry,
        )

    def _once_plan(
        self,
        user_id: str,
        model: BaseChatModel,
        max_messages: int,
        reconcile: bool,
        options: dict[str, bool],
    ) -> Plan[list[str]]:
        tiers = self.tiers
        # the fence first, the messages after: an erasure in between is seen by the write
        watermark, fence = yield call(
            tiers.summaries.get_fence, tiers.summaries.aget_fence, user_id
        )
        first, end, found = yield call(
            tiers.history.window_positions,
            tiers.history.awindow_positions,
            user_id,
            watermark,
            max_messages,
        )
        # a message whose item the user deleted or edited, or of a branch the thread left,
        # is no longer what the user says (HistoryStore.retract): never summarized again
        found = [(p, m) for p, m in found if not m.response_metadata.get(RETRACTED)]
        messages = [m for _, m in found]
        if end == first:
            return []
        items: list[str] = []
        if messages:  # else only forgotten messages: move the watermark past them
            items = yield call(summarize_messages, asummarize_messages, model, messages, **options)
            # for every model: what an item names comes from the user (what they said,
            # or their tags), and no item is made of the assistant's words alone
            tags = yield call(tiers.tags.get_all, tiers.tags.aget_all, user_id)
            items, dropped = grounded_in_user(items, found, list(tags.values()))
            if dropped and not items and options["extractive_fallback"]:
                # a small model's items all unsaid ("I work as a nurse" -> "Emma is a
                # nurse"): the user's own statements, as when it gives none
                items = extract_user_statements(messages)
            elif dropped and options["grounded"]:
                # a dropped item held a fact the summarizer took as kept ("The user's
                # birthday is on March 5th, 2024.": SmolLM2's year): the user's sentence
                said = user_statements(messages, **SAID)
                items = keep_uncovered(items, said, MAX_ITEMS, user_text(messages))
        supersedes: dict[int, list[str]] = {}
        similar: list[list[Document]] = []
        # for every model, the updates the words make clear ("moved to", "不再"); a capable
        # model's update step decides the rest
        if items and (reconcile or any(may_update(item) for item in items)):
            similar = yield call(tiers.summaries.similar, tiers.summaries.asimilar, user_id, items)
            supersedes = clear_updates(items, similar)
            if reconcile:
                items, supersedes = yield call(
                    reconcile_items, areconcile_items, model, items, similar, supersedes
                )
        spans = yield call(tiers.history.spans, tiers.history.aspans, user_id)
        # per item: the messages (and so the threads) it came from
        metadata = item_provenance(items, found, spans, first, end)
        items, metadata = _with_kept_parts(items, metadata, supersedes, similar)
        try:
            ids: list[str] = yield call(
                tiers.summaries.add,
                tiers.summaries.aadd,
                user_id,
                items,
                metadata=metadata,
                watermark=(watermark, end),
                supersedes=supersedes,
                fence=fence,
            )
        except WatermarkConflict:
            logger.info("summarization of %r raced with another summarizer; skipped", user_id)
            return []
        if tiers.history_retention is not None:
            yield call(
                tiers.history.trim,
                tiers.history.atrim,
                user_id,
                keep_last=tiers.history_retention,
                not_after=end,
            )
        if tiers.user_ttl is not None:
            # new items join the user's retention clock
            yield call(tiers.touch_user, tiers.atouch_user, user_id)
        return ids

    # ----- in the background -----

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
        """See :meth:`TieredMemory.summarize_in_background`."""
        user_id = validate_user_id(user_id)
        options = {
            "extractive_fallback": extractive_fallback,
            "grounded": grounded,
            "reconcile": reconcile,
        }
        with self._lock:
            if user_id in self._jobs:
                return None
            if self._executor is None:
                self._executor = ThreadPoolExecutor(
                    max_workers=2, thread_name_prefix="tiered-memory-summarize"
                )
            job = self._executor.submit(self._background_job, user_id, model, min_messages, options)
            self._jobs[user_id] = job
        return job

    def _background_job(
        self, user_id: str, model: BaseChatModel, min_messages: int, options: dict[str, bool]
    ) -> list[str]:
        tiers = self.tiers
        try:
            pending = tiers.history.length(user_id) - tiers.summaries.get_watermark(user_id)
            if pending < min_messages:
                return []
            return drive(self.summarize(user_id, model, **options))
        except Exception:  # a background job has nobody to raise to: log it
            logger.exception("background summarization of %r failed", user_id)
            return []
        finally:
            with self._lock:
                self._jobs.pop(user_id, None)

    def wait_for_background(self, timeout: float | None = None) -> None:
        """Block until the background summaries running now have finished."""
        with self._lock:
            jobs = list(self._jobs.values())
        wait(jobs, timeout=timeout)

    def shutdown(self) -> None:
        """Wait for the background summaries and stop their threads."""
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)

    # ----- every user -----

    def pending_users(self, min_messages: int = 20) -> Plan[list[str]]:
        """The plan of :meth:`TieredMemory.pending_users`."""
        tiers = self.tiers
        if tiers.queue is not None and (yield call(tiers.queue.indexed, tiers.queue.aindexed)):
            return (yield call(tiers.queue.pending_users, tiers.queue.apending_users, min_messages))  # type: ignore[no-any-return]
        out = []
        for user_id in (yield call(tiers.history.users, tiers.history.ausers)):
            try:
                length = yield call(tiers.history.length, tiers.history.alength, user_id)
                watermark = yield call(
                    tiers.summaries.get_watermark, tiers.summaries.aget_watermark, user_id
                )
            except CorruptMemoryError:
                logger.exception("cannot tell whether %r has pending messages", user_id)
                continue
            if length - watermark >= min_messages:
                out.append(user_id)
        return out

    def expire_directory(self) -> Plan[int]:
        """With ``user_ttl``: take the users whose keys expired out of the console's
        directory (its entries follow each user's clock). Returns how many.
        """
        ttl = self.tiers.user_ttl
        directory = RedisUserDirectory.of(self.tiers.history)
        if ttl is None or directory is None:
            return 0
        return (yield call(directory.expire, directory.aexpire, time.time() - ttl))

    def sweep(self) -> Plan[int]:
        """The plan of :meth:`TieredMemory.sweep_pending`."""
        yield from self.expire_directory()
        queue = self.tiers.queue
        if queue is None:
            return 0
        n = 0
        indexed = yield call(
            queue.indexed_users, queue.aindexed_users
        )  # before the SCAN: a user new since is kept
        users = yield call(self.tiers.history.users, self.tiers.history.ausers)
        for user_id in users:
            try:
                yield from self.settle(user_id)
            except CorruptMemoryError:
                logger.exception("cannot index the pending messages of %r", user_id)
                continue
            n += 1
        for gone in sorted(indexed - set(users)):
            yield call(
                queue.forget, queue.aforget, gone
            )  # its data expired (user_ttl) or was deleted
        yield call(queue.mark_indexed, queue.amark_indexed)
        return n

    def summarize_pending(
        self,
        model: BaseChatModel,
        *,
        min_messages: int = 20,
        extractive_fallback: bool = False,
        grounded: bool = False,
    ) -> Plan[dict[str, list[str]]]:
        """The plan of :meth:`TieredMemory.summarize_pending`."""
        options = {"extractive_fallback": extractive_fallback, "grounded": grounded}
        done: dict[str, list[str]] = {}
        for user_id in (yield from self.pending_users(min_messages)):
            try:
                done[user_id] = yield from self.summarize(user_id, model, **options)
            except MemoryBackendError:
                raise  # the store is down: every other user would fail the same way
            except SummarizationError as exc:
                logger.warning("summarizing %r failed: %s", user_id, exc)
            except Exception:  # one user's bad data must not stop the others
                logger.exception("summarizing %r failed; going on with the other users", user_id)
        return done

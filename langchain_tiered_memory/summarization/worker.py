"""``SummaryWorker``: the offline summarization job as a worker on the Redis Streams queue.

Run as many as you like, in as many processes and machines as you like: each reads the
queue's shards through one consumer group, summarizes up to ``concurrency`` users at a
time (asyncio), acknowledges a user after its items and watermark are written, and claims
the users of a worker that died (idle longer than ``claim_after`` seconds). Two workers
that race on one user cannot store its messages twice: the watermark's compare-and-set
lets one of them win and the other store nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from langchain_core.language_models import BaseChatModel

from langchain_tiered_memory._steps import adrive
from langchain_tiered_memory.backend.keys import validate_user_id
from langchain_tiered_memory.capabilities import Capability
from langchain_tiered_memory.errors import (
    InvalidUserIdError,
    MemoryBackendError,
    SummarizationError,
    UnsupportedOperationError,
)
from langchain_tiered_memory.stores.queue import QueueEntry
from langchain_tiered_memory.summarization.jobs import DEFAULT_SUMMARY_BATCH, Summarization
from langchain_tiered_memory.tiers import Tiers

logger = logging.getLogger(__name__)

__all__ = ["MemoryServices", "SummaryWorker", "WorkerStats"]


class MemoryServices(Protocol):
    """What the worker uses of a memory (a ``TieredMemory`` has it): its tiers and its
    summarization. A protocol, so the worker does not import the facade.
    """

    tiers: Tiers
    summarization: Summarization


@dataclass
class WorkerStats:
    """What one worker did (users summarized, failed, claimed from dead workers, items
    stored) and, refreshed every few seconds, the queue as a whole (``queue``: queued,
    unacked, pending_users, lag_s).
    """

    done: int = 0
    failed: int = 0
    claimed: int = 0
    items: int = 0
    queue: dict[str, int] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)

    @property
    def rate(self) -> float:
        """Users per second since the start."""
        return self.done / max(time.monotonic() - self.started, 1e-9)


class SummaryWorker:
    """Summarizes the users on the memory's queue until stopped (or, ``once``, drained).

    Args:
        memory: a ``TieredMemory`` on Redis (``from_url`` or ``embedded``).
        model: the summarizer model.
        concurrency: users summarized at the same time by this worker.
        claim_after: seconds an entry may stay unacknowledged before another worker takes
            it over (its worker is presumed dead); longer than one summarization.
        consumer: this worker's name in the consumer group (default: host and pid).
        extractive_fallback: passed to ``summarize_history`` (small local models).
        grounded: passed to ``summarize_history`` (small local models).
        reconcile: passed to ``summarize_history`` (the update step; off for small models).

    Example:
        >>> worker = SummaryWorker(memory, ChatOpenAI(), concurrency=8)  # doctest: +SKIP
        >>> asyncio.run(worker.run(once=True))  # doctest: +SKIP
        WorkerStats(done=120, failed=0, claimed=0, items=301, ...)
    """

    def __init__(
        self,
        memory: MemoryServices,
        model: BaseChatModel,
        *,
        concurrency: int = 8,
        claim_after: float = 300.0,
        consumer: str | None = None,
        extractive_fallback: bool = False,
        grounded: bool = False,
        reconcile: bool = True,
    ) -> None:
        self.tiers = memory.tiers
        self.summarization = memory.summarization
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency!r}.")
        queue = self.tiers.queue
        if queue is None:  # a memory on Redis has one (opening.py)
            self.tiers.require(Capability.QUEUE, "the worker")
            raise UnsupportedOperationError("the worker needs the memory's summarization queue.")
        self.queue = queue
        self.model = model
        self.concurrency = concurrency
        self.claim_after = claim_after
        self.consumer = consumer or f"{socket.gethostname()}-{os.getpid()}"
        self.extractive_fallback = extractive_fallback
        self.grounded = grounded
        self.reconcile = reconcile
        self.stats = WorkerStats()
        self._stop = asyncio.Event()

    def stop(self) -> None:
        """Finish the users in progress, take no new ones, and return from :meth:`run`."""
        self._stop.set()

    async def run(
        self,
        *,
        once: bool = False,
        sweep: bool | None = None,
        poll_interval: float = 0.5,
        on_progress: Callable[[WorkerStats], None] | None = None,
    ) -> WorkerStats:
        """Work until :meth:`stop` (``once``: until the queue is empty).

        ``sweep`` (default: if no sweep ever ran on this Redis) first indexes every user's
        pending count and queues the due ones: what a crash between a turn and its queue
        note lost. Then every indexed user with ``memory.summarize_after`` pending
        messages is queued: a worker may use a lower threshold than the app that wrote
        the turns. With the memory's ``user_ttl``, the sweep runs again every
        ``user_ttl`` (at least every 10 minutes' worth), so users whose data expired
        leave the queue's index too.
        """
        if sweep or (sweep is None and not await self.queue.aindexed()):
            swept = await adrive(self.summarization.sweep())
            logger.info("indexed the pending messages of %d users", swept)
        if self.tiers.summarize_after is not None:
            due = await self.queue.aenqueue_due(self.tiers.summarize_after)
            if due:
                logger.info(
                    "queued %d users already due at %d messages", due, self.tiers.summarize_after
                )
        sweep_every = max(self.tiers.user_ttl, 600.0) if self.tiers.user_ttl else None
        last_sweep = time.monotonic()
        running: set[asyncio.Task[None]] = set()
        shard = 0
        idle_rounds = 0
        last_claim = last_stats = 0.0
        last_purge = 0.0
        while not self._stop.is_set():
            if sweep_every is not None and time.monotonic() - last_sweep >= sweep_every:
                last_sweep = time.monotonic()
                await adrive(self.summarization.sweep())
            if self.tiers.user_ttl and time.monotonic() - last_purge >= 5.0:
                # expired users' ids out of the queue and the console's directory within
                # seconds, not at the next sweep
                last_purge = time.monotonic()
                await self.queue.apurge_expired()
                await adrive(self.summarization.expire_directory())
            if on_progress is not None and time.monotonic() - last_stats >= 2.0:
                last_stats = time.monotonic()
                self.stats.queue = await self.queue.astats(lag=True)
            free = self.concurrency - len(running)
            found: list[QueueEntry] = []
            if free > 0:
                now = time.monotonic()
                if now - last_claim >= min(self.claim_after, 5.0):
                    last_claim = now
                    for s in range(self.queue.shards):
                        claimed = await self.queue.aclaim(
                            s,
                            self.consumer,
                            min_idle_ms=int(self.claim_after * 1000),
                            count=free - len(found),
                        )
                        self.stats.claimed += len(claimed)
                        found += claimed
                        if len(found) >= free:
                            break
                # new entries, the shards in turn so that none starves
                for _ in range(self.queue.shards):
                    if len(found) >= free:
                        break
                    found += await self.queue.aread(shard, self.consumer, free - len(found))
                    shard = (shard + 1) % self.queue.shards
            for entry in found:
                task = asyncio.create_task(self._one(entry))
                running.add(task)
                task.add_done_callback(running.discard)
            if on_progress is not None:
                on_progress(self.stats)
            if found:
                idle_rounds = 0
                await asyncio.sleep(0)
                continue
            if running:
                await asyncio.wait(running, timeout=poll_interval, return_when="FIRST_COMPLETED")
                continue
            idle_rounds += 1
            if once and idle_rounds >= 2:
                break  # nothing new twice in a row, nothing in flight: drained
            with contextlib.suppress(asyncio.TimeoutError):  # not the builtin on 3.10
                await asyncio.wait_for(self._stop.wait(), timeout=poll_interval)
        if running:
            await asyncio.gather(*running, return_exceptions=True)
        if on_progress is not None:
            on_progress(self.stats)
        return self.stats

    async def _one(self, entry: QueueEntry) -> None:
        user = entry.user_id
        try:
            validate_user_id(user)
        except InvalidUserIdError as exc:
            # no worker can ever summarize it: acknowledged and recorded, not retried
            logger.error("dead-lettered queue entry %s (%s)", entry.entry_id, exc)
            self.stats.failed += 1
            await self.queue.adead_letter(entry, str(exc))
            return
        ok = False
        try:
            ids = await adrive(
                self.summarization.summarize(
                    user,
                    self.model,
                    max_messages=DEFAULT_SUMMARY_BATCH,
                    extractive_fallback=self.extractive_fallback,
                    grounded=self.grounded,
                    reconcile=self.reconcile,
                    settle=False,  # acked below, with its entry
                )
            )
            self.stats.done += 1
            self.stats.items += len(ids)
            ok = True
        except MemoryBackendError:
            logger.exception("the store failed while summarizing %r; left for a retry", user)
            self.stats.failed += 1
            return  # unacknowledged: claimed again after claim_after
        except SummarizationError as exc:
            logger.warning("summarizing %r failed: %s", user, exc)
            self.stats.failed += 1
        except Exception:
            logger.exception("summarizing %r failed", user)
            self.stats.failed += 1
        try:
            # ack; the user is queued again if it is still due (or a turn came meanwhile)
            await adrive(self.summarization.settle(user, entry, requeue=ok))
        except MemoryBackendError:
            logger.exception("could not acknowledge %r; it will be claimed again", user)

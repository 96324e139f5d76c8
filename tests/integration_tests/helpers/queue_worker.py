"""A summarization worker process on the Redis queue, for the kill -9 and race tests.

Usage: python queue_worker.py REDIS_URL KEY_PREFIX CONCURRENCY DELAY_S [--once] [--go]

Runs :class:`SummaryWorker` with the echo summarizer, each call taking ``DELAY_S``; prints
``ready`` once connected (with ``--go``, then waits for a line on stdin, so that racing
workers start together) and ``stats <done> <items>`` when it returns.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from helpers.fakes import RandomEmbeddings, _echo  # noqa: E402
from langchain_tiered_memory import TieredMemory  # noqa: E402
from langchain_tiered_memory.summarization.worker import SummaryWorker  # noqa: E402
from langchain_tiered_memory.testing import ScriptedChatModel  # noqa: E402


def slow_echo(delay: float) -> Any:
    def reply(messages: Any) -> Any:
        time.sleep(delay)  # a model call in flight when the process is killed
        return _echo(messages)

    return reply


async def main() -> None:
    url, prefix, concurrency, delay = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    once = "--once" in sys.argv
    memory = TieredMemory.from_url(
        url, key_prefix=prefix, embeddings=RandomEmbeddings(), summarize_after=1
    )
    async with memory:
        worker = SummaryWorker(
            memory,
            ScriptedChatModel(replies=[slow_echo(delay)]),
            concurrency=concurrency,
            claim_after=1.0,
            reconcile=False,
        )
        await memory.queue.astats()  # type: ignore[union-attr]  # connected
        print("ready", flush=True)
        if "--go" in sys.argv:
            await asyncio.to_thread(sys.stdin.readline)
        stats = await worker.run(once=once, sweep=False, poll_interval=0.1)
        print("stats", stats.done, stats.items, flush=True)


if __name__ == "__main__":
    asyncio.run(main())

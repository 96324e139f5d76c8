"""Many concurrent turns of the prebuilt graph on one memory and one ``AsyncRedisSaver``.

    python bench/concurrency.py                 # 100, 300 and 1,000 concurrent ainvoke turns
    python bench/concurrency.py --turns 1000 --max-connections 100

Each turn is ``graph.ainvoke`` of the prebuilt memory graph for its own user and thread,
with a scripted model (no model cost: what is measured is memory, checkpoints and the
connection pool), all started at once with ``asyncio.gather`` in one process, on the
embedded server. Reported: failures, p50/p99 of a turn, turns per second. Before the
blocking pools, redis-py's asyncio pool raised past its 100 connections: 60 concurrent
turns lost 109 of 180 calls.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from typing import Any

from langchain_core.messages import HumanMessage

from langchain_tiered_memory import HashingEmbeddings, TieredMemory
from langchain_tiered_memory.agent.graph import create_memory_graph
from langchain_tiered_memory.testing import ScriptedChatModel


async def run(memory: TieredMemory, turns: int) -> tuple[int, list[float], float]:
    graph = create_memory_graph(
        ScriptedChatModel(replies=["Noted."]),
        memory=memory,
        checkpointer=memory.acheckpointer(),
        tag_capture="tool",
    )

    async def turn(i: int) -> float:
        t0 = time.perf_counter()
        await graph.ainvoke(
            {"messages": [HumanMessage(f"Question {i}: what did I say yesterday?")]},
            context={"user_id": f"user-{i}"},
            config={"configurable": {"thread_id": f"thread-{i}"}},
        )
        return time.perf_counter() - t0

    t0 = time.perf_counter()
    results: list[Any] = await asyncio.gather(
        *(turn(i) for i in range(turns)), return_exceptions=True
    )
    wall = time.perf_counter() - t0
    failures = [r for r in results if isinstance(r, BaseException)]
    if failures:
        print(f"  first failure: {failures[0]!r}")
    return len(failures), [r for r in results if isinstance(r, float)], wall


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--turns", type=int, nargs="+", default=[100, 300, 1000])
    p.add_argument("--max-connections", type=int, default=100)
    args = p.parse_args()
    print("| concurrent turns | failures | turn p50 ms | turn p99 ms | turns/s |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="tm-concurrency-") as tmp:
        for turns in args.turns:
            memory = TieredMemory.embedded(
                tmp,
                embeddings=HashingEmbeddings(),
                key_prefix=f"c{turns}",
                appendfsync="no",
                max_connections=args.max_connections,
                pool_timeout=60,
            )

            async def once(memory: TieredMemory = memory, turns: int = turns) -> Any:
                async with memory:
                    return await run(memory, turns)

            failed, times, wall = asyncio.run(once())
            times.sort()
            p50 = 1e3 * statistics.median(times) if times else float("nan")
            p99 = 1e3 * times[int(0.99 * (len(times) - 1))] if times else float("nan")
            print(f"| {turns:,} | {failed} | {p50:.0f} | {p99:.0f} | {turns / wall:.0f} |")


if __name__ == "__main__":
    main()

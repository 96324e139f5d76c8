"""The offline summarization job at scale: finding work, draining it with workers, sizing.

    python bench/offline.py            # 100k users (1% pending), 2,000 users to drain
    python bench/offline.py --quick    # 10k users, 400 to drain
    python bench/offline.py --redis-url redis://...   # else the embedded server

1. **Finding work.** ``pending_users(20)`` the old way (a SCAN over every user's history
   key, then two reads per user) against the pending index of the queue (``ZRANGEBYSCORE``
   per shard), at two numbers of idle users, so flatness in idle users shows.
2. **Draining.** N pending users, a scripted summarizer that takes 50 ms per call (an
   asyncio sleep, as a remote model would): one worker process summarizing one user at a
   time (what ``summarize_pending`` did) against 4 worker processes x 8 concurrent. Users
   per second, and the checks: no message summarized twice, none left behind.
3. **Sizing.** ``MEMORY USAGE`` over all keys of a typical user (200 messages, 5 tags, 50
   summary items with 384-d vectors), and the projection to 10M users.

Everything goes through the package's own write path (``add_session_log`` with the queue's
note, ``set_user_tags``, ``add_summaries``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "integration_tests"))

MODEL_DELAY = 0.05


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true", help="10k users, 400 to drain")
    p.add_argument("--redis-url", help="a Redis to use (default: the embedded server)")
    p.add_argument(
        "--worker", nargs=3, metavar=("URL", "PREFIX", "CONCURRENCY"), help=argparse.SUPPRESS
    )  # internal: run one worker process
    return p.parse_args()


def _memory(url: str, prefix: str, **options: Any) -> Any:
    from helpers.fakes import RandomEmbeddings

    from langchain_tiered_memory import TieredMemory

    return TieredMemory.from_url(url, key_prefix=prefix, embeddings=RandomEmbeddings(), **options)


def _turn(user: str, t: int) -> list[Any]:
    from langchain_core.messages import AIMessage, HumanMessage

    return [HumanMessage(f"{user} says {t}"), AIMessage(f"noted {t}")]


def _slow_model() -> Any:
    from helpers.fakes import EchoSummarizer

    from langchain_tiered_memory.testing import ScriptedChatModel

    class SlowEcho(ScriptedChatModel):
        """The echo summarizer, 50 ms per call on the event loop (as a remote model)."""

        async def _agenerate(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
        ) -> Any:
            await asyncio.sleep(MODEL_DELAY)
            return self._generate(messages, stop, **kw)

    return SlowEcho(replies=EchoSummarizer().replies)


# --------------------------------------------------------------------------- 1. finding


def _fill(memory: Any, idle: int, pending: int, start: int = 0) -> None:
    for i in range(start, start + idle):
        memory.add_session_log(f"idle{i}", _turn(f"idle{i}", 0))
    for i in range(pending):
        user = f"due{i}"
        if memory.history.length(user):
            continue
        for t in range(12):  # 24 messages: due at 20
            memory.add_session_log(user, _turn(user, t))


def _time(fn: Any, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def finding(url: str, sizes: list[int]) -> list[list[Any]]:
    rows = []
    with _memory(url, "bench-find") as memory:
        have = 0
        pending = max(sizes) // 100  # the same pending users at every size: only idle grow
        for idle in sizes:
            print(f"  filling {idle:,} idle users + {pending:,} pending ...", flush=True)
            _fill(memory, idle - have, pending, start=have)
            have = idle
            client = memory.connection.sync
            client.delete(memory.queue.keys.queue_marker_key())  # the old path: SCAN
            scan = _time(lambda: memory.pending_users(20), repeat=1)
            found_scan = len(memory.pending_users(20))
            t0 = time.perf_counter()
            memory.sweep_pending()  # once; the worker does it at start
            sweep = time.perf_counter() - t0
            index = _time(lambda: memory.pending_users(20), repeat=5)
            found_index = len(memory.pending_users(20))
            assert found_scan == found_index == pending, (found_scan, found_index, pending)
            rows.append([idle, pending, scan * 1000, index * 1000, scan / index, sweep])
    return rows


# --------------------------------------------------------------------------- 2. draining


def _worker_process(url: str, prefix: str, concurrency: int) -> None:
    from langchain_tiered_memory.summarization.worker import SummaryWorker

    async def main() -> None:
        memory = _memory(url, prefix, summarize_after=20)
        async with memory:
            worker = SummaryWorker(memory, _slow_model(), concurrency=concurrency, reconcile=False)
            stats = await worker.run(once=True, sweep=False, poll_interval=0.05)
            print("stats", stats.done, stats.items, flush=True)

    asyncio.run(main())


def draining(url: str, users: int) -> list[list[Any]]:
    rows = []
    for processes, concurrency in ((1, 1), (4, 8)):
        prefix = f"bench-drain-{processes}x{concurrency}"
        with _memory(url, prefix, summarize_after=20) as memory:
            for i in range(users):
                for t in range(10):  # 20 messages each: due
                    memory.add_session_log(f"d{i}", _turn(f"d{i}", t))
        print(f"  draining {users:,} users with {processes} x {concurrency} ...", flush=True)
        t0 = time.perf_counter()
        procs = [
            subprocess.Popen(
                [sys.executable, __file__, "--worker", url, prefix, str(concurrency)],
                stdout=subprocess.PIPE,
                text=True,
            )
            for _ in range(processes)
        ]
        outputs = [p.communicate()[0] for p in procs]
        elapsed = time.perf_counter() - t0
        done = sum(
            int(line.split()[1])
            for o in outputs
            for line in o.splitlines()
            if line.startswith("stats")
        )
        twice = left = 0
        with _memory(url, prefix) as memory:
            for i in range(users):
                texts = Counter(d.page_content for d in memory.summaries.get_all(f"d{i}"))
                twice += sum(1 for n in texts.values() if n > 1)
                wanted = {f"Remembered: d{i} says {t}" for t in range(10)}
                left += len(wanted - set(texts))
        rows.append(
            [f"{processes} x {concurrency}", users, done, elapsed, users / elapsed, twice, left]
        )
    return rows


# --------------------------------------------------------------------------- 3. sizing


def sizing(url: str) -> tuple[int, dict[str, int]]:
    from helpers.fakes import RandomEmbeddings
    from pydantic import BaseModel

    from langchain_tiered_memory import TieredMemory
    from langchain_tiered_memory.memory.opening import keys_of

    class Profile(BaseModel):
        name: str | None = None
        age: int | None = None
        city: str | None = None
        job: str | None = None
        language: str | None = None

    memory = TieredMemory.from_url(
        url, key_prefix="bench-size", embeddings=RandomEmbeddings(384), tag_schema=Profile
    )
    with memory:
        from langchain_core.messages import AIMessage, HumanMessage

        for t in range(100):  # 200 messages of ordinary length
            memory.add_session_log(
                "typical",
                [
                    HumanMessage(
                        f"Turn {t}: I went to the market and bought apples and tea today."
                    ),
                    AIMessage(f"Turn {t}: That sounds nice! Did you find the green tea you like?"),
                ],
            )
        memory.set_user_tags(
            "typical",
            {"name": "Alice", "age": 30, "city": "Paris", "job": "nurse", "language": "fr"},
        )
        memory.add_summaries(
            "typical", [f"Item {i}: the user likes thing number {i} a lot." for i in range(50)]
        )
        assert memory.connection is not None
        client = memory.connection.sync
        per_kind = {}
        for key in keys_of(memory.history).all_keys("typical"):
            used = client.memory_usage(key, samples=0)
            if used:
                per_kind[key.rsplit("}:", 1)[1]] = int(used)
        return sum(per_kind.values()), per_kind


def _table(header: list[str], rows: list[list[Any]]) -> str:
    def cell(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:,.1f}" if v >= 10 else f"{v:.3f}"
        return f"{v:,}" if isinstance(v, int) else str(v)

    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(out)


@contextlib.contextmanager
def _redis(args: argparse.Namespace) -> Iterator[str]:
    if args.redis_url:
        yield args.redis_url
        return
    from langchain_tiered_memory import EmbeddedRedis

    with tempfile.TemporaryDirectory(prefix="bench-offline-") as tmp:
        server = EmbeddedRedis(tmp).start()
        try:
            yield server.url
        finally:
            server.stop()


def main() -> None:
    args = _args()
    if args.worker:
        url, prefix, concurrency = args.worker
        _worker_process(url, prefix, int(concurrency))
        return
    sizes = [1_000, 10_000] if args.quick else [10_000, 100_000]
    drain = 400 if args.quick else 2_000
    with _redis(args) as url:
        print("finding work ...", flush=True)
        found = finding(url, sizes)
        print("\n### Finding work: pending_users(20) (ms); pending = 1% of the largest size\n")
        print(
            _table(
                ["idle users", "pending", "SCAN (ms)", "index (ms)", "ratio", "one sweep (s)"],
                found,
            )
        )
        print("\ndraining ...", flush=True)
        drained = draining(url, drain)
        print(f"\n### Draining: a {MODEL_DELAY * 1000:.0f} ms summarizer, {os.cpu_count()} cores\n")
        print(
            _table(
                [
                    "processes x concurrent",
                    "users",
                    "done",
                    "seconds",
                    "users/s",
                    "summarized twice",
                    "left behind",
                ],
                drained,
            )
        )
        print(f"\nspeed-up: {drained[1][4] / drained[0][4]:.1f}x")
        total, per_kind = sizing(url)
        print(
            "\n### Sizing: one typical user (200 messages, 5 tags, 50 items with 384-d vectors)\n"
        )
        print(
            _table(
                ["key", "bytes"],
                [[k, v] for k, v in sorted(per_kind.items(), key=lambda kv: -kv[1])]
                + [["total", total]],
            )
        )
        print(f"\n10M such users: {total * 10_000_000 / 2**30:,.0f} GiB of Redis memory")


if __name__ == "__main__":
    main()

"""What sending a batch's scripts by source costs a turn (issue 76 item 1).

    python bench/script_batches.py                    # 400 saves a mode, embedded Redis
    python bench/script_batches.py --saves 2000 --redis-url redis://127.0.0.1:6379/0

``RedisConnection.run_all`` pipelines a batch of Lua calls (a turn's save: the append,
the directory entry, the touch, the owner record, the queue note). It sent them by SHA1
(``EVALSHA``) and, for a script the server had not cached, sent that one again by source
after the batch: behind the calls that had run meanwhile, which left a user's history
without its TTL. It now sends every call by source (``EVAL``, a few KB). Measured here in
one process, the two modes interleaved save by save on one server so that load falls on
both alike: ``memory.add_session_log`` (a turn's save, two messages, ``user_ttl`` and
``summarize_after`` set) with the package's ``run_all`` ("source"), and with a
``run_all`` that sends ``EVALSHA`` to a server that has every script cached ("sha",
the cost before, minus its ordering defect). p50 and p90 in ms, and their ratio.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory import HashingEmbeddings, TieredMemory
from langchain_tiered_memory.backend.connection import RedisConnection, ScriptCall, _sha1


def _by_sha(self: RedisConnection, calls: Sequence[ScriptCall]) -> list[Any]:
    """``run_all`` as it was for a server with every script cached (no fallback)."""
    pipe = self.sync.pipeline(transaction=False)
    for call in calls:
        pipe.evalsha(_sha1(call.script), call.numkeys, *call.args)
    return list(pipe.execute())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--saves", type=int, default=400)
    parser.add_argument("--redis-url", default=None)
    args = parser.parse_args()
    options: dict[str, Any] = {
        "embeddings": HashingEmbeddings(),
        "user_ttl": 3600,
        "summarize_after": 10_000,
    }
    memory = (
        TieredMemory.from_url(args.redis_url, key_prefix="bench-batches", **options)
        if args.redis_url
        else TieredMemory.embedded(tempfile.mkdtemp(prefix="tm-bench-"), **options)
    )
    source = RedisConnection.run_all
    times: dict[str, list[float]] = {"source": [], "sha": []}
    try:
        turn = [HumanMessage("I moved to Valencia last month."), AIMessage("Noted.")]
        memory.add_session_log("warm", turn, thread_id="t-warm")  # caches every script
        for i in range(args.saves):
            for mode in ("source", "sha") if i % 2 else ("sha", "source"):
                RedisConnection.run_all = source if mode == "source" else _by_sha  # type: ignore[method-assign]
                began = time.perf_counter()
                memory.add_session_log(f"u{i % 50}", turn, thread_id=f"t{i % 50}")
                times[mode].append((time.perf_counter() - began) * 1000)
    finally:
        RedisConnection.run_all = source  # type: ignore[method-assign]
        memory.close()

    def pct(values: list[float], q: int) -> float:
        return statistics.quantiles(values, n=100)[q - 1]

    rows = {
        mode: {"p50_ms": round(pct(v, 50), 3), "p90_ms": round(pct(v, 90), 3)}
        for mode, v in times.items()
    }
    ratio = rows["source"]["p50_ms"] / rows["sha"]["p50_ms"]
    print(json.dumps({"saves": args.saves, **rows, "p50_ratio": round(ratio, 3)}, indent=2))


if __name__ == "__main__":
    main()

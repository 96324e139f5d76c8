"""Checkpointer speed and size: the package's RedisSaver against SqliteSaver and PostgresSaver.

    python bench/checkpoint.py                 # threads of 10 / 1k / 100k checkpoints
    python bench/checkpoint.py --quick         # 10 / 1k / 10k, fewer samples
    python bench/checkpoint.py --postgres-url postgresql://...   # else one is started

What is timed, on the same checkpoints for every saver, in one process:

- ``put``: appending one checkpoint (with its parent) to a thread that already holds n;
- ``get_tuple``: the latest checkpoint of that thread (what every graph step reads);
- ``list(limit=10)``: the ten newest (``get_state_history`` pages);
- the same ``get_tuple`` on one of 10k threads of one checkpoint each;
- a whole turn of the package's memory graph (scripted model, hashing embeddings, memory
  on the embedded Redis) with each saver as its checkpointer.

Savers: ``RedisSaver`` on the embedded server (a unix socket, append-only ``always``),
``SqliteSaver`` on a file (LangGraph's defaults) and ``PostgresSaver`` on a throwaway local
PostgreSQL over loopback TCP (started with fsync off, the most favourable setting for it).
A checkpoint is ~2 KB: ten short messages and a memory section, as the memory graph writes.
Redis memory per checkpoint is ``MEMORY USAGE`` of the thread's keys over its length.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "integration_tests"))


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true", help="threads of 10 / 1k / 10k")
    p.add_argument("--postgres-url", help="an existing PostgreSQL (default: start one)")
    p.add_argument("--no-postgres", action="store_true", help="skip PostgresSaver")
    p.add_argument("--samples", type=int, default=None, help="timed calls per cell")
    p.add_argument("--turns-only", action="store_true", help="only the whole-turn table")
    return p.parse_args()


def _payload(step: int) -> dict[str, Any]:
    from langchain_core.messages import AIMessage, HumanMessage

    messages: list[Any] = []
    for i in range(5):
        messages.append(
            HumanMessage(f"message {step}-{i}: what did I say about Paris?", id=f"h{i}")
        )
        messages.append(AIMessage(f"You said you moved to Paris in {2000 + i}.", id=f"a{i}"))
    return {
        "messages": messages,
        "memory_prompt": 'The user\'s name is "Alice".\nThe user\'s age is "30".\n' * 8,
    }


def _checkpoint(step: int) -> Any:
    from langgraph.checkpoint.base import empty_checkpoint

    cp = empty_checkpoint()
    cp["channel_values"] = _payload(step)
    cp["channel_versions"] = {"messages": step + 1, "memory_prompt": step + 1}
    return cp


def _fill(saver: Any, thread: str, n: int) -> Any:
    config: Any = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    for i in range(n):
        config = saver.put(config, _checkpoint(i), {"source": "loop", "step": i}, {})
    return config


def _percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(round(0.99 * (len(ordered) - 1))))]
    return statistics.median(ordered) * 1000, p99 * 1000


def _time(fn: Callable[[], Any], samples: int) -> tuple[float, float]:
    for _ in range(min(20, samples)):
        fn()  # warm caches, connections, scripts
    taken = []
    for _ in range(samples):
        t0 = time.perf_counter()
        fn()
        taken.append(time.perf_counter() - t0)
    return _percentiles(taken)


@contextlib.contextmanager
def _savers(args: argparse.Namespace, workdir: Path) -> Iterator[dict[str, Any]]:
    from langgraph.checkpoint.sqlite import SqliteSaver

    from langchain_tiered_memory import EmbeddedRedis
    from langchain_tiered_memory.persistence.checkpoint import RedisSaver

    with contextlib.ExitStack() as stack:
        server = EmbeddedRedis(workdir / "redis").start()
        stack.callback(server.stop)
        savers: dict[str, Any] = {
            "RedisSaver": stack.enter_context(RedisSaver.from_url(server.url, key_prefix="bench")),
            "SqliteSaver": stack.enter_context(
                SqliteSaver.from_conn_string(str(workdir / "checkpoints.sqlite"))
            ),
        }
        if not args.no_postgres:
            from langgraph.checkpoint.postgres import PostgresSaver

            url = args.postgres_url
            if url is None:
                from helpers.postgres import postgres_server

                url = stack.enter_context(postgres_server())
            saver = stack.enter_context(PostgresSaver.from_conn_string(url))
            saver.setup()
            savers["PostgresSaver"] = saver
        for saver in savers.values():
            if hasattr(saver, "setup"):
                saver.setup()
        yield {"savers": savers, "redis_url": server.url}


def _thread_rows(savers: dict[str, Any], lengths: list[int], samples: int) -> list[list[Any]]:
    rows = []
    for n in lengths:
        for name, saver in savers.items():
            thread = f"t{n}-{uuid.uuid4().hex[:6]}"
            t0 = time.perf_counter()
            head = _fill(saver, thread, n)
            fill = time.perf_counter() - t0
            latest: Any = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
            get = _time(partial(saver.get_tuple, latest), samples)
            lst = _time(partial(_list10, saver, latest), max(20, samples // 4))
            put_t = _time(_Appender(saver, head, n), samples)
            rows.append([name, n, *put_t, *get, lst[0], n / fill])
            print(f"  {name:<13} n={n:<7} get p50 {get[0]:.3f} ms  (fill {fill:.1f} s)", flush=True)
    return rows


class _Appender:
    """Puts the next checkpoint of a thread on each call."""

    def __init__(self, saver: Any, head: Any, step: int) -> None:
        self.saver, self.parent, self.step = saver, head, step

    def __call__(self) -> None:
        self.parent = self.saver.put(self.parent, _checkpoint(self.step), {"source": "loop"}, {})
        self.step += 1


def _list10(saver: Any, config: Any) -> None:
    list(saver.list(config, limit=10))


def _get_random(saver: Any, ids: list[str], pick: Any) -> None:
    saver.get_tuple({"configurable": {"thread_id": pick.choice(ids), "checkpoint_ns": ""}})


def _turn(graph: Any, config: Any, user: str) -> None:
    graph.invoke({"messages": [("user", "I moved to Paris.")]}, config, context={"user_id": user})


def _many_threads(savers: dict[str, Any], threads: int, samples: int) -> list[list[Any]]:
    import random

    rows = []
    for name, saver in savers.items():
        ids = [f"many-{i}" for i in range(threads)]
        for thread in ids:
            _fill(saver, thread, 1)
        get = partial(_get_random, saver, ids, random.Random(0))
        rows.append([name, threads, *_time(get, samples)])
    return rows


def _turns(savers: dict[str, Any], redis_url: str, turns: int) -> list[list[Any]]:
    from langgraph.checkpoint.memory import InMemorySaver

    from langchain_tiered_memory import HashingEmbeddings, TieredMemory
    from langchain_tiered_memory.agent.graph import create_memory_graph
    from langchain_tiered_memory.testing import ScriptedChatModel

    rows = []
    memory = TieredMemory.from_url(
        redis_url, key_prefix="bench-mem", embeddings=HashingEmbeddings()
    )
    # InMemorySaver is the floor: what a turn costs with no storage behind its checkpoints
    with memory:
        for name, saver in {**savers, "InMemorySaver (floor)": InMemorySaver()}.items():
            model = ScriptedChatModel(replies=["Noted."] * (turns + 10))
            graph = create_memory_graph(model, memory=memory, checkpointer=saver)
            config: Any = {"configurable": {"thread_id": f"turns-{name}"}}
            user = f"user-{name}"
            rows.append([name, *_time(partial(_turn, graph, config, user), turns)])
    return rows


def _redis_bytes_per_checkpoint(saver: Any, n: int) -> float:
    thread = f"size-{uuid.uuid4().hex[:6]}"
    _fill(saver, thread, n)
    client = saver.connection.sync
    total = sum(client.memory_usage(k, samples=0) or 0 for k in saver.keys.thread_keys(thread))
    return total / n


def _table(header: list[str], rows: list[list[Any]]) -> str:
    def cell(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.3f}" if v < 100 else f"{v:,.0f}"
        return f"{v:,}" if isinstance(v, int) else str(v)

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _ratios(rows: list[list[Any]], key: Callable[[list[Any]], Any], col: int) -> list[list[Any]]:
    """Per group (thread length), each other saver's time over RedisSaver's."""
    out = []
    groups: dict[Any, dict[str, float]] = {}
    for row in rows:
        groups.setdefault(key(row), {})[row[0]] = row[col]
    for group, by_saver in groups.items():
        ours = by_saver.get("RedisSaver")
        if not ours:
            continue
        out.append([group, *(by_saver[s] / ours for s in by_saver if s != "RedisSaver")])
    return out


def _print_turns(turns: list[list[Any]]) -> None:
    print("\n### A whole turn of the memory graph (ms)\n")
    print(_table(["saver", "p50", "p99"], turns))
    ours = next(r[1] for r in turns if r[0] == "RedisSaver")
    floor = next(r[1] for r in turns if r[0].startswith("InMemorySaver"))
    print(
        "\nthe checkpointer's share of a turn (p50 over the floor): "
        + ", ".join(f"{r[0]} {r[1] - floor:.2f} ms" for r in turns if r[1] is not floor)
    )
    print(
        "\nper turn, over RedisSaver: "
        + ", ".join(f"{r[0]} {r[1] / ours:.2f}x" for r in turns if r[0] != "RedisSaver")
    )


def main() -> None:
    args = _args()
    lengths = [10, 1_000, 10_000] if args.quick else [10, 1_000, 100_000]
    samples = args.samples or (100 if args.quick else 300)
    with (
        tempfile.TemporaryDirectory(prefix="bench-checkpoint-") as tmp,
        _savers(args, Path(tmp)) as setup,
    ):
        savers = setup["savers"]
        others = [s for s in savers if s != "RedisSaver"]
        if args.turns_only:
            _print_turns(_turns(savers, setup["redis_url"], 30 if args.quick else 100))
            return
        print("filling threads (each saver gets the same checkpoints)...", flush=True)
        rows = _thread_rows(savers, lengths, samples)
        print("\n### One thread of n checkpoints (ms; fill: checkpoints written per second)\n")
        print(
            _table(
                [
                    "saver",
                    "n",
                    "put p50",
                    "put p99",
                    "get_tuple p50",
                    "get_tuple p99",
                    "list(10) p50",
                    "fill/s",
                ],
                rows,
            )
        )
        print("\n### get_tuple p50, each saver's over RedisSaver's (above 1: RedisSaver faster)\n")
        print(_table(["n", *others], _ratios(rows, lambda r: r[1], 4)))
        print("\n### put p50, each saver's over RedisSaver's (above 1: RedisSaver faster)\n")
        print(_table(["n", *others], _ratios(rows, lambda r: r[1], 2)))
        many = _many_threads(savers, 10_000, samples)
        print("\n### get_tuple of a random one of 10k threads (ms)\n")
        print(_table(["saver", "threads", "p50", "p99"], many))
        _print_turns(_turns(savers, setup["redis_url"], 30 if args.quick else 100))
        per = _redis_bytes_per_checkpoint(savers["RedisSaver"], 1_000)
        print(f"\nRedis memory per checkpoint (MEMORY USAGE, 1k checkpoints): {per:,.0f} bytes")


if __name__ == "__main__":
    main()

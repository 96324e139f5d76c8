"""LangGraph store at many namespaces: list, export and erase one user among thousands.

    python bench/store_erasure.py                      # 2k and 8k namespaces
    python bench/store_erasure.py --sizes 2000 --no-postgres

Every namespace is one user's (``("memories", <user>)``, LangMem's layout) holding
``--items`` items. What is timed, on the same data for every store, in one process:

- ``list_namespaces(limit=100)``: the first page of namespaces (LangGraph Studio's view);
- ``export_user(u, store=)`` and ``forget_user(u, store=)`` of one user (the privacy
  operations; the memory's other tiers are empty, so this is the store's cost).

Stores: the package's ``RedisStore`` on the embedded server, LangGraph's ``InMemoryStore``
and ``PostgresStore`` on a throwaway local PostgreSQL (fsync off). Run it from an older
checkout (``PYTHONPATH=<old checkout>``) for a before/after of the package's numbers.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "integration_tests"))


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[2000, 8000])
    p.add_argument("--items", type=int, default=3, help="items per namespace (default: 3)")
    p.add_argument("--repeat", type=int, default=5, help="timed runs per operation")
    p.add_argument("--postgres-url", help="an existing PostgreSQL (default: start one)")
    p.add_argument("--no-postgres", action="store_true", help="skip PostgresStore")
    return p.parse_args()


def fill(store: Any, namespaces: int, items: int) -> None:
    from langgraph.store.base import PutOp

    ops = [
        PutOp(("memories", f"user{n}"), f"m{i}", {"content": f"user{n} fact {i}"})
        for n in range(namespaces)
        for i in range(items)
    ]
    for start in range(0, len(ops), 2000):
        store.batch(ops[start : start + 2000])


def timed(fn: Callable[[], Any], repeat: int) -> float:
    """Median milliseconds of ``fn``."""
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1000)
    return statistics.median(samples)


def measure(name: str, store: Any, memory: Any, size: int, args: argparse.Namespace) -> dict:
    fill(store, size, args.items)
    victims = iter(f"user{n}" for n in range(size))

    def forget() -> None:
        memory.forget_user(next(victims), store=store)

    return {
        "store": name,
        "namespaces": size,
        "list": timed(lambda: store.list_namespaces(limit=100), args.repeat),
        "export": timed(lambda: memory.export_user(f"user{size - 1}", store=store), args.repeat),
        "forget": timed(forget, args.repeat),
    }


@contextlib.contextmanager
def stores(args: argparse.Namespace, workdir: Path) -> Iterator[list[tuple[str, Any, Any]]]:
    from langgraph.store.memory import InMemoryStore

    from langchain_tiered_memory import HashingEmbeddings, TieredMemory

    with contextlib.ExitStack() as stack:
        redis_memory = stack.enter_context(
            TieredMemory.embedded(workdir / "redis", embeddings=HashingEmbeddings())
        )
        plain = TieredMemory.in_memory(embeddings=HashingEmbeddings())
        found = [
            ("RedisStore", redis_memory, redis_memory.store),
            ("InMemoryStore", plain, InMemoryStore),
        ]
        if not args.no_postgres:
            from langgraph.store.postgres import PostgresStore

            url = args.postgres_url
            if url is None:
                from helpers.postgres import postgres_server

                url = stack.enter_context(postgres_server())

            def postgres() -> Any:
                store = stack.enter_context(PostgresStore.from_conn_string(url))
                store.setup()
                with store._cursor() as cur:  # a clean table for each size
                    cur.execute("DELETE FROM store")
                return store

            found.append(("PostgresStore", plain, postgres))
        yield found


def main() -> None:
    args = parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp, stores(args, Path(tmp)) as found:
        for size in args.sizes:
            for name, memory, make in found:
                store = make()
                if name == "RedisStore":  # a fresh prefix per size
                    store = memory.store()
                    store.connection.sync.flushdb()
                rows.append(measure(name, store, memory, size, args))
                print(f"  measured {name} at {size}", file=sys.stderr, flush=True)
    print("| store | namespaces | list_namespaces(100) ms | export_user ms | forget_user ms |")
    print("|---|---:|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row['store']} | {row['namespaces']:,} | {row['list']:.1f} | "
            f"{row['export']:.1f} | {row['forget']:.1f} |"
        )
    print()
    for size in args.sizes:
        redis = next(r for r in rows if r["store"] == "RedisStore" and r["namespaces"] == size)
        for row in rows:
            if row["namespaces"] == size and row["store"] != "RedisStore":
                ratios = ", ".join(
                    f"{k} {row[k] / redis[k]:.1f}x" for k in ("list", "export", "forget")
                )
                print(f"{size:,}: {row['store']} / RedisStore: {ratios}")


if __name__ == "__main__":
    main()

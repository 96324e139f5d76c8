"""A memory query the model writes, measured with a real model on the hard associative set.

    python bench/model_query.py --base-url http://127.0.0.1:8765/v1   # asks what is missing
    python bench/model_query.py                                       # recorded answers only
    python bench/model_query.py --split held_out --base-url URL       # once, at the end

For every conversation of ``bench/data/associative_hard.json`` (the talks and the named-fact
asks of a split), the model is asked, with the package's own prompt
(:mod:`langchain_tiered_memory.agent.memory_query`), for a *note* it would hope to find and
for a search *query*. Its answers, latency and tokens are kept in
``bench/data/model_queries.json`` (one answer per conversation text and kind, greedy), so a
rerun measures without the model. Rows, in one run on the same vectors:

- the package's recall (the last 3 turns joined, hybrid, the latest's best kept at rank 2);
- the same with the model's line joined as one more turn before the latest (what
  ``create_memory_graph(memory_query="note"|"query")`` runs);
- the model's line alone (dense and hybrid);
- a reciprocal-rank fusion of the package's ranking and the line's.

Each with recall@1/3/5/10 and 95% bootstrap intervals per language, the paired difference
to the package, and the cost per turn (model calls, tokens, latency p50/p95).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.documents import Document
from recall_hard import DATA, KS, Cached, _interval, _queries, _rrf  # noqa: E402  (from bench/)

from langchain_tiered_memory import InMemorySummaryStore
from langchain_tiered_memory.agent.memory_query import (
    MEMORY_QUERY_KINDS,
    MEMORY_QUERY_TURNS,
    memory_query_messages,
    parse_memory_query,
)
from langchain_tiered_memory.defaults import default_embeddings
from langchain_tiered_memory.retrieval import RetrievalConfig
from langchain_tiered_memory.retrieval.conversation import DEFAULT_CONTEXT_TURNS

ANSWERS = Path(__file__).parent / "data" / "model_queries.json"

Rank = Callable[[InMemorySummaryStore, str, list[str], str | None, int], list[Document]]


def _key(texts: list[str]) -> str:
    return "\n".join(texts[-MEMORY_QUERY_TURNS:])


def _ask(model: Any, texts: list[str], kind: str) -> dict[str, Any]:
    start = time.perf_counter()
    reply = model.invoke(memory_query_messages(texts[-MEMORY_QUERY_TURNS:], kind))  # type: ignore[arg-type]
    seconds = time.perf_counter() - start
    usage = reply.usage_metadata or {}
    return {
        "raw": reply.text,
        "line": parse_memory_query(reply),
        "seconds": round(seconds, 2),
        "input_tokens": usage.get("input_tokens"),
        "output_tokens": usage.get("output_tokens"),
    }


def _package(store: InMemorySummaryStore, user: str, texts: list[str], line: str | None, k: int):  # type: ignore[no-untyped-def]
    return store.search_conversation(user, texts[-DEFAULT_CONTEXT_TURNS:], k)


def _joined(store: InMemorySummaryStore, user: str, texts: list[str], line: str | None, k: int):  # type: ignore[no-untyped-def]
    recent = texts[-DEFAULT_CONTEXT_TURNS:]
    with_line = [*recent[:-1], line, recent[-1]] if line else recent
    return store.search_conversation(user, with_line, k)


def _alone(store: InMemorySummaryStore, user: str, texts: list[str], line: str | None, k: int):  # type: ignore[no-untyped-def]
    query = line or texts[-1]
    return store.search(user, query, k)


def _fused(store: InMemorySummaryStore, user: str, texts: list[str], line: str | None, k: int):  # type: ignore[no-untyped-def]
    depth = max(2 * k, 10)
    package = _package(store, user, texts, line, depth)
    if not line:
        return package[:k]
    return _rrf([package, store.search(user, line, depth)], k)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--answers", type=Path, default=ANSWERS)
    parser.add_argument("--split", choices=["dev", "held_out"], default="dev")
    parser.add_argument("--base-url", help="an OpenAI-compatible server: ask what is missing")
    parser.add_argument("--model", default="qwen.gguf")
    args = parser.parse_args()
    data: dict[str, Any] = json.loads(args.data.read_text(encoding="utf-8"))
    store_answers: dict[str, Any] = (
        json.loads(args.answers.read_text(encoding="utf-8"))
        if args.answers.exists()
        else {"model": args.model, "answers": {kind: {} for kind in MEMORY_QUERY_KINDS}}
    )
    answers: dict[str, dict[str, dict[str, Any]]] = store_answers["answers"]
    model = None
    if args.base_url:
        from langchain_openai import ChatOpenAI

        model = ChatOpenAI(
            base_url=args.base_url,
            api_key="local",  # type: ignore[arg-type]
            model=args.model,
            temperature=0,
            max_tokens=80,  # type: ignore[call-arg]
            timeout=600,
        )
    conversations = {
        _key(texts): texts
        for user in data["users"]
        for kind in ("talks", "asks")
        for _, _, texts in _queries(user, kind, args.split)
    }
    for kind in MEMORY_QUERY_KINDS:
        missing = [key for key in conversations if key not in answers[kind]]
        if missing and model is None:
            print(f"{len(missing)} {kind} answers missing: pass --base-url", file=sys.stderr)
            return 2
        for n, key in enumerate(missing, 1):
            answers[kind][key] = _ask(model, conversations[key], kind)
            print(f"{kind} {n}/{len(missing)}: {answers[kind][key]['line']!r}", flush=True)
            args.answers.write_text(
                json.dumps(store_answers, ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
            )
    _cost(answers, conversations)
    embeddings = Cached(default_embeddings())
    hybrid = InMemorySummaryStore(embeddings=embeddings, dedup_threshold=1.0)
    dense = InMemorySummaryStore(
        embeddings=embeddings, retrieval=RetrievalConfig.dense_only(), dedup_threshold=1.0
    )
    for store in (hybrid, dense):
        for user in data["users"]:
            for event in user["events"]:
                store.add(user["user"], [event["text"]], created_at=event["created_at"])
    rows: list[tuple[str, str | None, InMemorySummaryStore, Rank]] = [
        ("the package (conversation only)", None, hybrid, _package)
    ]
    for kind in MEMORY_QUERY_KINDS:
        rows += [
            (f"+ the model's {kind}, joined as a turn", kind, hybrid, _joined),
            (f"RRF(package, the model's {kind})", kind, hybrid, _fused),
            (f"the model's {kind} alone, hybrid", kind, hybrid, _alone),
            (f"the model's {kind} alone, dense", kind, dense, _alone),
        ]
    rng = random.Random(0)
    print(f"\n{args.data.name}, split {args.split}, model {store_answers['model']}\n")
    for what in ("talks", "asks"):
        print(f"### {what}\n")
        print("| system | lang | " + " | ".join(f"@{k}" for k in KS) + " | Δ@5 (paired) |")
        print("|---|---|" + "---:|" * (len(KS) + 1))
        for lang in ("en", "zh"):
            base: dict[str, list[float]] = {}
            for name, asked, store, rank in rows:
                hits: dict[int, dict[str, list[float]]] = {k: {} for k in KS}
                for user in data["users"]:
                    if user["lang"] != lang:
                        continue
                    ids = {e["text"]: e["id"] for e in user["events"]}
                    for n, targets, texts in _queries(user, what, args.split):
                        target = targets[0]  # one target each in the sets this reads
                        line = answers[asked][_key(texts)]["line"] if asked else None
                        found = rank(store, user["user"], texts, line, max(KS))
                        ranked = [ids.get(d.page_content) for d in found]
                        for k in KS:
                            hits[k].setdefault(f"{n}", []).append(float(target in ranked[:k]))
                if asked is None:
                    base = hits[5]
                cells = []
                for k in KS:
                    mean, lo, hi = _interval(hits[k], rng)
                    cells.append(f"{mean:.3f} [{lo:.2f}, {hi:.2f}]")
                cells.append(_paired(hits[5], base, rng) if asked else "")
                print(f"| {name} | {lang} | " + " | ".join(cells) + " |", flush=True)
        print()
    return 0


def _paired(
    hits: dict[str, list[float]], base: dict[str, list[float]], rng: random.Random, n: int = 2000
) -> str:
    keys = sorted(base)
    diffs = {key: float(np.mean(hits[key])) - float(np.mean(base[key])) for key in keys}
    draws = [float(np.mean([diffs[rng.choice(keys)] for _ in keys])) for _ in range(n)]
    lo, hi = np.percentile(draws, [2.5, 97.5])
    return f"{float(np.mean(list(diffs.values()))):+.3f} [{lo:+.2f}, {hi:+.2f}]"


def _cost(answers: dict[str, dict[str, dict[str, Any]]], conversations: dict[str, Any]) -> None:
    """What one memory query costs a turn: one model call, its tokens and latency."""
    print("\n### cost per turn (one extra model call before the reply)\n")
    print("| kind | calls | input tokens p50 | output tokens p50 | latency p50 | p95 | no line |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for kind in MEMORY_QUERY_KINDS:
        got = [answers[kind][key] for key in conversations if key in answers[kind]]
        if not got:
            continue
        seconds = sorted(a["seconds"] for a in got)
        p95 = seconds[min(len(seconds) - 1, int(0.95 * len(seconds)))]
        tokens_in = statistics.median(a["input_tokens"] or 0 for a in got)
        tokens_out = statistics.median(a["output_tokens"] or 0 for a in got)
        none = sum(a["line"] is None for a in got)
        print(
            f"| {kind} | {len(got)} | {tokens_in:.0f} | {tokens_out:.0f} | "
            f"{statistics.median(seconds):.1f} s | {p95:.1f} s | {none} |"
        )
    print()


if __name__ == "__main__":
    sys.exit(main())

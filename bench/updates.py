"""Knowledge updates: is the *current* value recalled, or a stale one? And what recall costs.

    python bench/updates.py                    # 60 users x 8 facts that change, MiniLM
    python bench/updates.py --users 20 --embeddings hashing --latency-items 2000

Each synthetic user first has 8 facts (home, job, partner, diet, pet, hobby, car, phone)
and 20 unrelated notes stored with dates in the first half of 2025, then a conversation in
which every one of the 8 facts changes ("The user moved to Lisbon."). That conversation is
summarized through the public API, ``summarize_history``, with a scripted model:

- its summary is the 8 update items (what a capable model would write);
- its answer to the update step is a rule: "supersedes X" when a stored item it is shown
  is the old value of the same fact. It can only supersede what the update step *shows*
  it (the stored items the hybrid index finds most like the new item), so the run measures
  the real mechanism; what it cannot measure offline is a real model's judgment, which
  this rule stands in for.

For each user and fact the question ("Where does the user live?") is asked with
``recall_summaries(user, question, n=3)``. Reported, per system:

- recall@1 of the current item (the update ranks first);
- stale rate: the share of the top 3 that are old values of that fact.

Systems, all in one run on the same data and embeddings: the default hybrid ranking with
and without the update step (``reconcile=True/False``), and the dense-only ranking
(``RetrievalConfig.dense_only()``, a bare vector index) with and without it.

Latency: ``recall_summaries`` p50/p95 including the query embedding, at ``--latency-items``
items of one user, default ranking vs dense-only, in the same run.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import tempfile
import time
from typing import Any

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage  # noqa: E402

from langchain_tiered_memory import (  # noqa: E402
    HashingEmbeddings,
    InMemoryHistoryStore,
    InMemoryTagStore,
    RedisSummaryStore,
    TieredMemory,
)
from langchain_tiered_memory.retrieval import RetrievalConfig  # noqa: E402
from langchain_tiered_memory.testing import ScriptedChatModel  # noqa: E402

CITIES = "Berlin Paris Lisbon Oslo Vienna Madrid Prague Dublin Kyoto Lima Quito Accra".split()
JOBS = "nurse teacher pilot chef lawyer plumber architect baker journalist dentist".split()
NAMES = "Sam Alex Maria Jonas Priya Chen Omar Lena Ivan Aiko Nadia Tom".split()
DIETS = "vegan vegetarian keto paleo pescatarian Mediterranean".split()
PETS = "dog cat parrot rabbit hamster tortoise".split()
HOBBIES = "climbing painting chess gardening surfing pottery running knitting".split()
CARS = "Volvo Toyota Fiat Tesla Skoda Honda Renault Mazda".split()
PHONES = "iPhone Pixel Galaxy Fairphone Nokia Xperia".split()

# fact: (values, old template, update template, question)
FACTS: dict[str, tuple[list[str], str, str, str]] = {
    "home": (CITIES, "The user lives in {}.", "The user moved to {}.", "Where does the user live?"),
    "job": (
        JOBS,
        "The user works as a {}.",
        "The user started a new job as a {}.",
        "What is the user's job?",
    ),
    "partner": (
        NAMES,
        "The user's partner is {}.",
        "The user is now in a relationship with {}.",
        "Who is the user's partner?",
    ),
    "diet": (
        DIETS,
        "The user follows a {} diet.",
        "The user switched to a {} diet.",
        "What diet does the user follow?",
    ),
    "pet": (
        PETS,
        "The user has a {} as a pet.",
        "The user adopted a {} and that is now their pet.",
        "What pet does the user have?",
    ),
    "hobby": (
        HOBBIES,
        "The user's hobby is {}.",
        "These days the user spends their free time on {}.",
        "What is the user's hobby?",
    ),
    "car": (
        CARS,
        "The user drives a {}.",
        "The user sold their car and now drives a {}.",
        "What car does the user drive?",
    ),
    "phone": (
        PHONES,
        "The user uses a {} phone.",
        "The user switched to a {} phone.",
        "What phone does the user use?",
    ),
}
TOPICS = "history astronomy jazz baking sailing poetry robots volcanoes tea mosaics".split()
MONTHS = "January February March April May June July August September October".split()


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--users", type=int, default=60)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--embeddings", choices=["local", "hashing"], default="local")
    p.add_argument("--latency-items", type=int, default=10_000)
    p.add_argument("--latency-reps", type=int, default=200)
    return p.parse_args()


def _embeddings(kind: str) -> Any:
    if kind == "hashing":
        return HashingEmbeddings()
    from langchain_tiered_memory.embeddings import LocalMiniLMEmbeddings

    return LocalMiniLMEmbeddings()


class _Cached:
    """Each text embedded once, reused by every system (they compare ranking, not models)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.cache: dict[str, list[float]] = {}

    def _many(self, texts: list[str]) -> list[list[float]]:
        todo = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if todo:
            for t, v in zip(todo, self.inner.embed_documents(todo)):
                self.cache[t] = v
        return [self.cache[t] for t in texts]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._many(list(texts))

    def embed_query(self, text: str) -> list[float]:
        return self._many([text])[0]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        return self.embed_query(text)


def _user_plan(rng: random.Random) -> dict[str, tuple[str, str]]:
    plan = {}
    for fact, (values, old, new, _) in FACTS.items():
        a, b = rng.sample(values, 2)
        plan[fact] = (old.format(a), new.format(b))
    return plan


def _judge(plan: dict[str, tuple[str, str]]) -> Any:
    """The update step's rule: a new item supersedes a shown stored item holding the old
    value of the same fact."""
    old_to_fact = {old: fact for fact, (old, _) in plan.items()}
    new_to_fact = {new: fact for fact, (_, new) in plan.items()}

    def decide(messages: list[BaseMessage]) -> AIMessage:
        decisions = []
        note, fact = -1, None
        for line in messages[-1].text.splitlines():
            m = re.match(r'New note (\d+): "(.*)"$', line)
            if m:
                note, fact = int(m.group(1)), new_to_fact.get(m.group(2))
                decisions.append({"note": note, "action": "new"})
                continue
            s = re.match(r'\s+stored id=(\S+) \(.*\): "(.*)"$', line)
            if s and fact is not None and old_to_fact.get(s.group(2)) == fact:
                decisions[-1] = {"note": note, "action": "supersedes", "stored_id": s.group(1)}
        call = {"name": "NoteDecisions", "args": {"decisions": decisions}, "id": "d"}
        return AIMessage("", tool_calls=[call])

    return decide


def _memory(emb: Any, config: RetrievalConfig, url: str, prefix: str) -> TieredMemory:
    from langchain_tiered_memory.backend.connection import RedisConnection
    from langchain_tiered_memory.backend.keys import KeyBuilder

    conn = RedisConnection(url, cluster=False)
    return TieredMemory(
        history=InMemoryHistoryStore(),
        tags=InMemoryTagStore(),
        summaries=RedisSummaryStore(
            conn, keys=KeyBuilder(prefix), embeddings=emb, retrieval=config
        ),
        _connection=conn,
    )


def run_updates(args: argparse.Namespace, emb: Any, url: str) -> None:
    systems = {
        "hybrid + update step": (RetrievalConfig(), True),
        "hybrid, no update step": (RetrievalConfig(), False),
        "dense-only + update step": (RetrievalConfig.dense_only(), True),
        "dense-only, no update step": (RetrievalConfig.dense_only(), False),
    }
    results = {}
    for s_i, (name, (config, reconcile)) in enumerate(systems.items()):
        rng = random.Random(args.seed)  # the same users for every system
        memory = _memory(emb, config, url, f"upd{s_i}")
        hits1 = stale = asked = shown_old = 0
        started = time.perf_counter()
        for u in range(args.users):
            user = f"user-{u}"
            plan = _user_plan(rng)
            notes = [
                f"The user {rng.choice(['read about', 'watched a film on', 'visited a museum of'])}"
                f" {rng.choice(TOPICS)} in {rng.choice(MONTHS)}."
                for _ in range(20)
            ]
            for i, (old, _) in enumerate(plan.values()):
                memory.add_summaries(user, [old], created_at=f"2025-0{1 + i % 6}-1{i}")
            memory.add_summaries(user, list(dict.fromkeys(notes)), created_at="2025-05-20")
            updates = [new for _, new in plan.values()]
            memory.add_session_log(user, [HumanMessage(" ".join(updates)), AIMessage("Noted!")])
            model = ScriptedChatModel(
                replies=[
                    AIMessage(
                        "",
                        tool_calls=[
                            {"name": "SummaryItems", "args": {"items": updates}, "id": "s"}
                        ],
                    ),
                    _judge(plan),
                ]
            )
            memory.summarize_history(user, model, reconcile=reconcile)
            if reconcile and len(model.prompts) > 1:
                shown = model.prompts[1][-1].text
                shown_old += sum(old in shown for old, _ in plan.values())
            for fact, (old, new) in plan.items():
                top = [d.page_content for d in memory.recall_summaries(user, FACTS[fact][3], 3)]
                asked += 1
                hits1 += bool(top) and top[0] == new
                stale += sum(t == old for t in top)
        results[name] = (
            hits1 / asked,
            stale / (3 * asked),
            shown_old / asked if reconcile else float("nan"),
            time.perf_counter() - started,
        )
    print(f"\n## Current-value questions ({args.users} users x {len(FACTS)} facts)\n")
    print("| system | recall@1 current | stale share of top 3 | old item shown to update step |")
    print("|---|---|---|---|")
    for system, (r1, stale_share, shown_rate, _) in results.items():
        shown_s = "-" if shown_rate != shown_rate else f"{shown_rate:.3f}"
        print(f"| {system} | {r1:.3f} | {stale_share:.3f} | {shown_s} |")


def run_latency(args: argparse.Namespace, emb: Any, url: str) -> None:
    rng = random.Random(args.seed)
    words = [f"w{i}" for i in range(3000)]
    texts = [
        f"The user {rng.choice(['likes', 'met', 'visited', 'read'])} "
        + " ".join(rng.choice(words) for _ in range(8))
        for _ in range(args.latency_items)
    ]
    queries = [
        f"What did the user {rng.choice(['like', 'read'])} about {rng.choice(words)}?"
        for _ in range(args.latency_reps)
    ]
    print(f"\n## Recall latency, {args.latency_items} items, query embedding included\n")
    print("| ranking | p50 ms | p95 ms |")
    print("|---|---|---|")
    inner = emb.inner if isinstance(emb, _Cached) else emb
    p50s = {}
    for i, (name, config) in enumerate(
        {"hybrid (default)": RetrievalConfig(), "dense-only": RetrievalConfig.dense_only()}.items()
    ):
        memory = _memory(_Cached(inner), config, url, f"lat{i}")
        for start in range(0, len(texts), 500):
            memory.add_summaries("big", texts[start : start + 500], created_at="2025-01-01")
        memory.summaries.embeddings = inner  # queries pay the real embedding from here on
        memory.recall_summaries("big", queries[0])  # warm the index cache
        times = []
        for q in queries:
            t = time.perf_counter()
            memory.recall_summaries("big", q + " ")  # a new string: never a cache hit
            times.append(time.perf_counter() - t)
        p50 = statistics.median(times) * 1e3
        p50s[name] = p50
        print(f"| {name} | {p50:.2f} | {sorted(times)[int(0.95 * len(times))] * 1e3:.2f} |")
    ratio = p50s["hybrid (default)"] / p50s["dense-only"]
    print(f"\nhybrid / dense-only p50: {ratio:.2f}x")


def main() -> None:
    args = _args()
    emb = _Cached(_embeddings(args.embeddings))
    print(f"embeddings: {args.embeddings}; users: {args.users}; seed: {args.seed}")
    with tempfile.TemporaryDirectory() as tmp:
        memory = TieredMemory.embedded(tmp, embeddings=HashingEmbeddings(), appendfsync="no")
        try:
            assert memory.redis_url is not None
            run_updates(args, emb, memory.redis_url)
            run_latency(args, emb, memory.redis_url)
        finally:
            memory.close()


if __name__ == "__main__":
    main()

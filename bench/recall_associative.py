"""Associative recall: the memory a conversation is about, not the one its last message names.

    python bench/recall_associative.py [--data bench/data/associative_dev.json]

Each scenario (``bench/data/associative_dev.json``, English and Chinese, of this project's
own making) is a user with eight dated life events and a three-turn user dialogue that
stops where the assistant should bring one of them up; the event shares no words with the
last message. Every event goes in through ``add_summaries`` on the default embeddings
(multilingual-e5-small); the query variants:

- ``last``: the last message (what the graph sent before);
- ``turns=N decay=D``: the last N user turns, each embedded once, their vectors summed with
  weights D^age (``bench/_queries.py``, the package's query before issue 45); the
  lexical side reads the same turns (``lex=all``) or the last one (``lex=last``);
- ``joined``: the N turns as one string, embedded as one;
- ``dense``/``bm25``: one side alone, on the ``turns=3`` query;
- ``fused``: the ``turns=3`` ranking fused with the last message's own (reciprocal rank),
  what the graph and ``recall_summaries(messages=...)`` do;
- ``PRF``: pseudo-relevance feedback (Rocchio): the fused top-2 items' vectors added to the
  ``turns=3`` vector, searched again and fused with the last message's ranking.

Reported: recall@1/3/5 of the scenario's event, per language. A dev set: the default of
``recall_context_turns`` is chosen on it.

``--locomo PATH`` adds the other side: direct questions (LoCoMo, session-level recall@5 of
the evidence) asked after a change of topic, the two questions before each one as its
earlier turns, so that a conversation query can only hurt them: what the graph loses on a
question that names its fact.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from _queries import combine, fuse  # noqa: E402  (run from bench/)

from langchain_tiered_memory import InMemorySummaryStore
from langchain_tiered_memory.defaults import default_embeddings
from langchain_tiered_memory.retrieval import RetrievalConfig

DATA = Path(__file__).parent / "data" / "associative_dev.json"


@dataclass(frozen=True)
class Variant:
    name: str
    turns: int
    decay: float = 0.5
    lexical: str = "all"  # "all" turns or the "last" one
    joined: bool = False
    config: RetrievalConfig | None = None
    fused: bool = False  # fused with the latest message's own ranking (what the graph does)
    prf: float = 0.0  # pseudo-relevance feedback: add this times the top-2 items' mean vector


VARIANTS = [
    Variant("last", 1),
    Variant("the package (turns joined, latest best kept)", 3, fused=True),
    Variant("turns=2 decay=0.5 lex=all", 2),
    Variant("turns=3 decay=0.5 lex=all", 3),
    Variant("turns=3 decay=0.5 lex=last", 3, lexical="last"),
    Variant("turns=3 decay=0.7 lex=all", 3, decay=0.7),
    Variant("turns=3 decay=1.0 lex=all", 3, decay=1.0),
    Variant("joined turns=3", 3, joined=True),
    Variant("turns=3 + PRF 0.5 (top-2 items), fused with last", 3, fused=True, prf=0.5),
    Variant("turns=3 + PRF 1.0 (top-2 items), fused with last", 3, fused=True, prf=1.0),
    Variant("dense turns=3", 3, config=RetrievalConfig.dense_only()),
    # BM25 over the cosine by a factor that leaves the cosine only to break ties
    Variant("bm25 turns=3", 3, config=RetrievalConfig(lexical_weight=1000.0)),
]


def rank(store: InMemorySummaryStore, user: str, turns: list[str], v: Variant) -> list[str]:
    texts = turns[-v.turns :]
    if v.prf:
        first = store.search_conversation(user, texts, 2)
        items = np.array(store.embeddings.embed_documents([d.page_content for d in first]))
        vector = combine(np.stack([store.embed_query(t) for t in texts]), v.decay)
        vector = vector + v.prf * items.mean(axis=0)
        vector = vector / np.linalg.norm(vector)
        again = store.search(user, " ".join(texts), 10, vector=vector)
        last = store.search(user, texts[-1], 10)
        return [d.page_content for d in fuse(last, again, k=5)]
    if v.fused:
        return [d.page_content for d in store.search_conversation(user, texts, 5)]
    if v.joined:
        vector = store.embed_query(" ".join(texts))
    else:
        vector = combine(np.stack([store.embed_query(t) for t in texts]), v.decay)
    query = " ".join(texts) if v.lexical == "all" else texts[-1]
    return [d.page_content for d in store.search(user, query, 5, vector=vector)]


def locomo_topic_switch(path: str, embeddings: Any) -> None:
    from _datasets import load_locomo

    print()
    print("| LoCoMo dev, a question after two others | turns | R@5 |")
    print("|---|---:|---:|")
    users = load_locomo(path)
    for turns, fused in (
        (1, False),
        (2, False),
        (3, False),
        (3, True),
    ):  # (3, True): the package's own recall
        store = InMemorySummaryStore(embeddings=embeddings, dedup_threshold=1.0)
        total, n = 0.0, 0
        for user in users:
            for item, created in zip(user.items, user.created, strict=True):
                store.add(user.user_id, [item], created_at=created)
            groups = {text: g for text, g in zip(user.items, user.groups, strict=True)}
            qs = [q.text for q in user.questions]
            for i, question in enumerate(user.questions):
                texts = (qs[max(0, i - 2) : i] + [question.text])[-turns:]
                if fused:
                    found = store.search_conversation(user.user_id, texts, 5)
                else:
                    vector = combine(np.stack([store.embed_query(t) for t in texts]))
                    found = store.search(user.user_id, " ".join(texts), 5, vector=vector)
                sessions = {groups.get(d.page_content) for d in found}
                total += len(sessions & question.evidence) / len(question.evidence)
                n += 1
        print(f"| | {turns}{' fused' if fused else ''} | {total / n:.3f} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--locomo", help="LoCoMo json: direct questions after a topic switch")
    args = parser.parse_args()
    scenarios: list[dict[str, Any]] = json.loads(args.data.read_text(encoding="utf-8"))["scenarios"]
    embeddings = default_embeddings()
    print(f"{len(scenarios)} scenarios from {args.data.name}; embeddings {embeddings!r}"[:160])
    print()
    print("| query | lang | @1 | @3 | @5 |")
    print("|---|---|---:|---:|---:|")
    for variant in VARIANTS:
        store = InMemorySummaryStore(embeddings=embeddings, retrieval=variant.config)
        hits: dict[str, list[int]] = {}
        for i, s in enumerate(scenarios):
            user = f"u{i}"
            for j, event in enumerate(s["events"]):
                store.add(user, [event], created_at=f"2025-{j + 1:02d}-01")
            ranked = rank(store, user, s["turns"], variant)
            target = s["events"][s["target"]]
            position = ranked.index(target) if target in ranked else 99
            hits.setdefault(s["lang"], []).append(position)
        for lang, positions in sorted(hits.items()):
            at = [sum(p < k for p in positions) / len(positions) for k in (1, 3, 5)]
            print(f"| {variant.name} | {lang} | {at[0]:.2f} | {at[1]:.2f} | {at[2]:.2f} |")
    if args.locomo:
        locomo_topic_switch(args.locomo, embeddings)
    return 0


if __name__ == "__main__":
    sys.exit(main())

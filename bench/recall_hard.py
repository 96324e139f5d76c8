"""Associative recall on a hard set: every part of the ranking against plain baselines.

    python bench/recall_hard.py                       # the dev split, e5-small (default)
    python bench/recall_hard.py --embeddings minilm   # all-MiniLM-L6-v2 beside it
    python bench/recall_hard.py --split held_out      # once, at the end
    python bench/recall_hard.py --data bench/data/associative_multi.json   # several targets

Data: ``bench/data/associative_hard.json`` (``bench/make_associative_hard.py``): 12 users
(English, Chinese) x 80 dated events, ten on each of eight topics, so every conversation
has same-topic distractors; conversations of 5 user turns that stop where one event should
come up, linked by situation or feeling; named-fact questions ("What did I score on the
IELTS?"), each asked after two turns of an unrelated conversation (a change of topic).

Rows, all in one run on the same vectors:

- plain baselines, none of the package's ranking: dense cosine on the last message, on the
  last 2 and 3 user turns joined; BM25 on the last 3; a reciprocal-rank fusion of those four;
- the query before issue 45 (the last 3 turns' vectors summed with decay 0.5, hybrid,
  fused with the last message's own ranking by reciprocal rank);
- the package's recall (what a turn's load runs: the last 3 turns joined into one text,
  the hybrid score, the last message's own best item kept at rank 2), and the same with one
  part removed or changed: the kept item, BM25 (weight 0 or doubled), the centering, the
  time signal, MMR diversity added (0.2, the default before issue 57), newer-first
  ordering, the whole hybrid (dense only), 2 or 4 turns; the dates read from all turns;
  two ways to embed at the load only the latest message (issue 57 item 4); the latest
  message's best item by its own embedding (the package before issue 70 item 5, which
  finds it by its words).

Reported per language: recall@1/3/5/10 of the conversation's event (talks) and of the
named fact (asks); with several target events (``associative_multi.json``,
``make_associative_multi.py``) the share of them among the top k (at rank 1: whether one is
first), with 95% bootstrap intervals that resample the conversations (the same
conversation over six users with other dates is one sample, not six).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from _queries import combine, fuse  # noqa: E402  (run from bench/)
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from langchain_tiered_memory import InMemorySummaryStore
from langchain_tiered_memory.retrieval import RetrievalConfig
from langchain_tiered_memory.retrieval.conversation import conversation_depth, keep_latest_best

DATA = Path(__file__).parent / "data" / "associative_hard.json"
KS = (1, 3, 5, 10)
RRF_K = 60


class Cached(Embeddings):
    """An embeddings model with every text's vector kept: each variant reuses them."""

    def __init__(self, inner: Embeddings) -> None:
        self.inner = inner
        self.docs: dict[str, list[float]] = {}
        self.queries: dict[str, list[float]] = {}

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        missing = [t for t in dict.fromkeys(texts) if t not in self.docs]
        if missing:
            self.docs.update(zip(missing, self.inner.embed_documents(missing)))
        return [self.docs[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        if text not in self.queries:
            self.queries[text] = self.inner.embed_query(text)
        return self.queries[text]


@dataclass(frozen=True)
class System:
    name: str
    rank: Callable[[InMemorySummaryStore, str, list[str], int], list[Document]]
    config: RetrievalConfig | None = None


def _dense(turns: int) -> Callable[[InMemorySummaryStore, str, list[str], int], list[Document]]:
    def rank(store: InMemorySummaryStore, user: str, texts: list[str], k: int) -> list[Document]:
        joined = " ".join(texts[-turns:])
        vector = np.asarray(store.embed_query(joined), dtype=np.float32)
        return store.search(user, joined, k, vector=vector)

    return rank


def _bm25(store: InMemorySummaryStore, user: str, texts: list[str], k: int) -> list[Document]:
    joined = " ".join(texts[-3:])
    return store.search(user, joined, k, vector=np.asarray(store.embed_query(joined)))


def _rrf(rankings: Sequence[Sequence[Document]], k: int) -> list[Document]:
    scores: dict[str, float] = {}
    docs: dict[str, Document] = {}
    for ranking in rankings:
        for r, doc in enumerate(ranking):
            key = str(doc.id)
            scores[key] = scores.get(key, 0.0) + 1.0 / (RRF_K + r + 1)
            docs.setdefault(key, doc)
    return [docs[key] for key in sorted(scores, key=lambda key: -scores[key])[:k]]


def _package(turns: int) -> Callable[[InMemorySummaryStore, str, list[str], int], list[Document]]:
    """The package's own recall (what a turn's load runs) over the last ``turns`` turns."""

    def rank(store: InMemorySummaryStore, user: str, texts: list[str], k: int) -> list[Document]:
        return store.search_conversation(user, texts[-turns:], k)

    return rank


def _joined_alone(
    store: InMemorySummaryStore, user: str, texts: list[str], k: int
) -> list[Document]:
    """The package's conversation ranking without the latest message's best item kept."""
    recent = texts[-3:]
    return store.search(user, " ".join(recent), k, vector=store.embed_conversation(recent))


def _joined_ranking(
    store: InMemorySummaryStore, user: str, recent: list[str], vector: Any, k: int
) -> list[Document]:
    """The package's ranking of the turns joined, with another query ``vector`` (dates
    from the latest message), the latest message's best item kept."""
    joined = store.search(
        user, " ".join(recent), conversation_depth(k), vector=vector, dates_from=recent[-1]
    )
    return keep_latest_best(joined, store.search(user, recent[-1], 1), k)


def _dates_from_all(
    store: InMemorySummaryStore, user: str, texts: list[str], k: int
) -> list[Document]:
    """The package's recall with the time windows read from all the turns joined (before
    issue 57 item 2), not the latest message."""
    recent = texts[-3:]
    vector = store.embed_conversation(recent)
    joined = store.search(user, " ".join(recent), conversation_depth(k), vector=vector)
    return keep_latest_best(joined, store.search(user, recent[-1], 1), k)


def _split_query(
    store: InMemorySummaryStore, user: str, texts: list[str], k: int
) -> list[Document]:
    """Issue 57 item 4's candidate: the earlier turns joined (known when the previous turn
    ends, embedded then) and the latest message (embedded at the load) as two vectors,
    summed with equal weight; the lexical side still reads the three turns joined."""
    recent = texts[-3:]
    if len(recent) < 2:
        return store.search_conversation(user, recent, k)
    vector = combine(
        np.stack([store.embed_query(" ".join(recent[:-1])), store.embed_query(recent[-1])]),
        decay=1.0,
    )
    return _joined_ranking(store, user, recent, vector, k)


def _earlier_ranking(
    store: InMemorySummaryStore, user: str, texts: list[str], k: int
) -> list[Document]:
    """Issue 57 item 4's second candidate: the ranking of all three turns joined (the text
    the lexical side reads) with the vector of the earlier turns alone (embedded when the
    previous turn ended), the latest message's best item kept."""
    recent = texts[-3:]
    if len(recent) < 2:
        return store.search_conversation(user, recent, k)
    vector = store.embed_query(" ".join(recent[:-1]))
    return _joined_ranking(store, user, recent, vector, k)


def _latest_embedded(
    store: InMemorySummaryStore, user: str, texts: list[str], k: int
) -> list[Document]:
    """The package's recall before issue 70 item 5: the latest message's best item by its
    own embedding (the hybrid), a second text for the engine each turn."""
    recent = texts[-3:]
    if len(recent) < 2:
        return store.search_conversation(user, recent, k)
    return _joined_ranking(store, user, recent, store.embed_conversation(recent), k)


def _words_of_all(
    store: InMemorySummaryStore, user: str, texts: list[str], k: int
) -> list[Document]:
    """Issue 70 item 1's bounded whole conversation at no engine cost: the lexical side
    reads every turn, the embedding the last 3 (dates from the latest message)."""
    recent = texts[-3:]
    if len(recent) < 2:
        return store.search_conversation(user, recent, k)
    vector = store.embed_conversation(recent)
    joined = store.search(
        user, " ".join(texts), conversation_depth(k), vector=vector, dates_from=recent[-1]
    )
    return keep_latest_best(joined, store.search_words(user, recent[-1], 1), k)


def _topic_back(store: InMemorySummaryStore, user: str, texts: list[str], k: int) -> list[Document]:
    """Issue 70 item 1's next candidate, back to the last change of topic: the last 3 turns,
    and each earlier turn while its vector is as close to the turns after it (their mean
    direction) as the conversation's turns are, on average, to the whole conversation's (no
    constant; each turn's own vector, one short text for the engine a turn); then the
    package's recall of those turns. On every dev set it never reads past 3 turns; the
    looser rule (closer than the mean pair of turns) always read them all."""
    if len(texts) <= 3:
        return store.search_conversation(user, texts, k)
    vecs = np.stack([store.embed_query(t) for t in texts])
    whole = vecs.sum(0) / np.linalg.norm(vecs.sum(0))
    typical = float(np.mean(vecs @ whole))
    start = len(texts) - 3
    while start > 0:
        after = vecs[start:].sum(0)
        if float(vecs[start - 1] @ after) / float(np.linalg.norm(after)) < typical:
            break
        start -= 1
    return store.search_conversation(user, texts[start:], k)


def _before(store: InMemorySummaryStore, user: str, texts: list[str], k: int) -> list[Document]:
    """The query before issue 45: 3 turn vectors summed (decay 0.5), hybrid, fused with
    the latest message's ranking."""
    recent = texts[-3:]
    vector = combine(np.stack([store.embed_query(t) for t in recent]))
    together = store.search(user, " ".join(recent), max(2 * k, 10), vector=vector)
    return fuse(store.search(user, recent[-1], max(2 * k, 10)), together, k=k)


def _decayed(store: InMemorySummaryStore, user: str, texts: list[str], k: int) -> list[Document]:
    """Every turn's vector summed, each older one weighted half the next (a decayed window);
    the lexical side reads the last 3 turns; the latest message's best item kept."""
    vector = combine(np.stack([store.embed_query(t) for t in texts]))
    recent = texts[-3:]
    return _joined_ranking(store, user, recent, vector, k)


ALL = 10_000  # every turn of the conversation

DENSE = RetrievalConfig.dense_only()
BM25 = RetrievalConfig(lexical_weight=1000.0, centering=0.0, time_weight=0.0, diversity=0.0)
DEFAULT = RetrievalConfig()


def systems(rrf_parts: dict[str, System]) -> list[System]:
    def rrf(store: InMemorySummaryStore, user: str, texts: list[str], k: int) -> list[Document]:
        depth = max(2 * k, 10)
        return _rrf([s.rank(stores[s.name], user, texts, depth) for s in rrf_parts.values()], k)

    package = _package(3)
    return [
        *rrf_parts.values(),
        System("RRF of the four above", rrf),
        System("before issue 45: turn vectors summed, fused with last", _before, DEFAULT),
        System("the package: 3 turns joined, hybrid, latest's best kept", package, DEFAULT),
        System("- latest's best kept", _joined_alone, DEFAULT),
        System("- BM25 (lexical weight 0)", package, replace(DEFAULT, lexical_weight=0.0)),
        System("BM25 weight doubled (0.5)", package, replace(DEFAULT, lexical_weight=0.5)),
        System("- centering", package, replace(DEFAULT, centering=0.0)),
        System("- time signal", package, replace(DEFAULT, time_weight=0.0)),
        System("dates from all 3 turns (before 57.2)", _dates_from_all, DEFAULT),
        System("earlier turns + latest, two vectors summed", _split_query, DEFAULT),
        System("earlier turns' vector, latest's best kept", _earlier_ranking, DEFAULT),
        System("latest's best by its embedding (before 70.5)", _latest_embedded, DEFAULT),
        System("words of all turns, meaning of the last 3", _words_of_all, DEFAULT),
        System("back to the last change of topic (turn vectors)", _topic_back, DEFAULT),
        System(
            "+ MMR diversity 0.2 (the default before)", package, replace(DEFAULT, diversity=0.2)
        ),
        System("- newer-first ordering", package, replace(DEFAULT, newer_first=False)),
        System("- all of the hybrid (dense only)", package, DENSE),
        System("2 turns", _package(2), DEFAULT),
        System("4 turns", _package(4), DEFAULT),
        # issue 70 items 1-2: the depth, on conversations long enough to choose it
        *(System(f"{n} turns", _package(n), DEFAULT) for n in (1, 5, 6, 8)),
        System("all turns", _package(ALL), DEFAULT),
        System("all turns' vectors, decay 0.5, latest's best kept", _decayed, DEFAULT),
        *(
            System(f"{name} - centering", _package(n), replace(DEFAULT, centering=0.0))
            for name, n in (("4 turns", 4), ("6 turns", 6), ("all turns", ALL))
        ),
    ]


stores: dict[str, InMemorySummaryStore] = {}


def _interval(
    hits: dict[str, list[float]], rng: random.Random, n: int = 1000
) -> tuple[float, float, float]:
    """Mean and 95% interval, resampling the conversations (clusters of hits)."""
    groups = list(hits.values())
    mean = float(np.mean([h for g in groups for h in g]))
    draws = []
    for _ in range(n):
        sample = [h for _ in groups for h in rng.choice(groups)]
        draws.append(float(np.mean(sample)))
    lo, hi = np.percentile(draws, [2.5, 97.5])
    return mean, float(lo), float(hi)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--split", choices=["dev", "held_out"], default="dev")
    parser.add_argument("--embeddings", choices=["e5", "minilm"], default="e5")
    parser.add_argument("--only", nargs="+", help="systems whose name has one of these")
    args = parser.parse_args()
    data: dict[str, Any] = json.loads(args.data.read_text(encoding="utf-8"))
    if args.embeddings == "e5":
        from langchain_tiered_memory.defaults import default_embeddings

        inner: Embeddings = default_embeddings()
    else:
        from langchain_tiered_memory.embeddings import minilm_embeddings

        inner = minilm_embeddings()
    embeddings = Cached(inner)
    parts = {
        "dense, last message": System("dense, last message", _dense(1), DENSE),
        "dense, last 2 turns": System("dense, last 2 turns", _dense(2), DENSE),
        "dense, last 3 turns": System("dense, last 3 turns", _dense(3), DENSE),
        "BM25, last 3 turns": System("BM25, last 3 turns", _bm25, BM25),
    }
    every = systems(parts)
    if args.only:
        every = [s for s in every if any(o in s.name for o in args.only) or s.name in parts]
    for system in every:
        stores[system.name] = InMemorySummaryStore(
            embeddings=embeddings, retrieval=system.config, dedup_threshold=1.0
        )
        for user in data["users"]:
            for event in user["events"]:
                stores[system.name].add(
                    user["user"], [event["text"]], created_at=event["created_at"]
                )
    rng = random.Random(0)
    print(f"{args.data.name}, split {args.split}, embeddings {args.embeddings}\n")
    # per system and kind: (lang, query n) -> [hit@1, hit@5] per user, for paired intervals
    per: dict[str, dict[str, dict[tuple[str, int], list[tuple[float, float]]]]] = {}
    for kind in ("talks", "asks"):
        if not any(user[kind] for user in data["users"]):
            continue
        print(f"### {kind}\n")
        print("| system | lang | " + " | ".join(f"@{k}" for k in KS) + " |")
        print("|---|---|" + "---:|" * len(KS))
        for system in every:
            store = stores[system.name]
            for lang in ("en", "zh"):
                hits: dict[int, dict[str, list[float]]] = {k: {} for k in KS}
                for user in data["users"]:
                    if user["lang"] != lang:
                        continue
                    ids = {e["text"]: e["id"] for e in user["events"]}
                    for n, targets, texts in _queries(user, kind, args.split):
                        found = system.rank(store, user["user"], texts, max(KS))
                        ranked = [ids.get(d.page_content) for d in found]
                        for k in KS:
                            hits[k].setdefault(f"{kind}{n}", []).append(_share(targets, ranked, k))
                        cell = per.setdefault(system.name, {}).setdefault(kind, {})
                        cell.setdefault((lang, n), []).append(
                            (_share(targets, ranked, 1), _share(targets, ranked, 5))
                        )
                cells = []
                for k in KS:
                    mean, lo, hi = _interval(hits[k], rng)
                    cells.append(f"{mean:.3f} [{lo:.2f}, {hi:.2f}]")
                print(f"| {system.name} | {lang} | " + " | ".join(cells) + " |", flush=True)
        print()
        _paired(per, kind, rng)
    return 0


PACKAGE = "the package: 3 turns joined, hybrid, latest's best kept"


def _paired(
    per: dict[str, dict[str, dict[tuple[str, int], list[tuple[float, float]]]]],
    kind: str,
    rng: random.Random,
    n: int = 2000,
) -> None:
    """Each system minus the package, both languages, with a paired 95% interval that
    resamples the conversations: what a part's removal costs (negative: the part helps)."""
    if PACKAGE not in per:
        return
    base = per[PACKAGE][kind]
    keys = sorted(base)
    print(f"{kind}: each system minus the package (paired, 95% interval)\n")
    print("| system | Δ@1 | Δ@5 |")
    print("|---|---:|---:|")
    for name, kinds in per.items():
        if name == PACKAGE:
            continue
        cells = []
        for at in (0, 1):
            diffs = {
                key: float(np.mean([h[at] for h in kinds[kind][key]]))
                - float(np.mean([h[at] for h in base[key]]))
                for key in keys
            }
            mean = float(np.mean(list(diffs.values())))
            draws = [float(np.mean([diffs[rng.choice(keys)] for _ in keys])) for _ in range(n)]
            lo, hi = np.percentile(draws, [2.5, 97.5])
            cells.append(f"{mean:+.3f} [{lo:+.2f}, {hi:+.2f}]")
        print(f"| {name} | " + " | ".join(cells) + " |")
    print()


def _queries(user: dict[str, Any], kind: str, split: str) -> list[tuple[int, list[str], list[str]]]:
    """(the conversation, the target events, the user's turns) of each query: one target,
    or several (the multi set's ``targets``), or a long conversation's probes (the long
    set's ``probes``: the turns up to each, its targets; one conversation, one sample)."""
    talks = [t for t in user["talks"] if t["split"] == split]
    if kind == "talks":
        out = []
        for n, t in enumerate(talks):
            for probe in t.get("probes") or [{"at": len(t["turns"]) - 1}]:
                targets = probe.get("targets") or t.get("targets") or [t["target"]]
                out.append((n, targets, t["turns"][: probe["at"] + 1]))
        return out
    out = []
    for n, ask in enumerate(user["asks"]):
        before = talks[n % len(talks)]["turns"][-2:]  # a change of topic
        out.append((n, [ask["target"]], [*before, ask["question"]]))
    return out


def _share(targets: list[str], ranked: list[str | None], k: int) -> float:
    """The share of ``targets`` among the top ``k``, of as many as fit in it (one target: hit
    or not; at rank 1: whether a target is first)."""
    return sum(t in ranked[:k] for t in targets) / min(len(targets), k)


if __name__ == "__main__":
    sys.exit(main())

"""The ranking of recalled items: BM25, time windows, hybrid fusion, diversity, IVF mode.

Deterministic: hand-made vectors or ``HashingEmbeddings``, a fixed ``now``.
"""

from __future__ import annotations

import json
import math
import random
from collections import Counter
from datetime import datetime, timezone
from typing import Any

import numpy as np
import pytest

from langchain_tiered_memory import HashingEmbeddings, InMemorySummaryStore
from langchain_tiered_memory._steps import call, drive
from langchain_tiered_memory.retrieval import (
    HybridIndex,
    LexicalIndex,
    RetrievalConfig,
    parse_time_windows,
    stem,
    to_epoch,
    tokenize,
)
from langchain_tiered_memory.retrieval.conversation import recall
from langchain_tiered_memory.stores.summaries.index import UserIndex, extend_index

NOW = datetime(2024, 3, 15, 12, 0, tzinfo=timezone.utc)
WORDS = "cello piano birthday lyon paris garden dog cat sister trip museum book".split()


def unit(v: list[float] | np.ndarray) -> np.ndarray:
    a = np.asarray(v, dtype=np.float32)
    return a / np.linalg.norm(a)


def random_texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 8))) + f" note{i % 7}"
        for i in range(n)
    ]


# --------------------------------------------------------------------------- text


def test_tokenize_drops_stop_words_and_folds_inflections() -> None:
    assert tokenize("What did Melanie paint recently?") == ["melanie", "paint", "recently"]
    assert tokenize("Her paintings, PAINTED and painting") == ["paint", "paint", "paint"]
    assert [stem(w) for w in ["hobbies", "classes", "glass", "bus", "running"]] == [
        "hobby",
        "class",
        "glass",
        "bus",
        "run",
    ]
    assert tokenize("") == [] and tokenize("the and of") == []


# --------------------------------------------------------------------------- BM25


def reference_bm25(docs: list[str], query: str, k1: float = 1.2, b: float = 0.75) -> np.ndarray:
    toks = [tokenize(d) for d in docs]
    n = len(docs)
    avg = sum(map(len, toks)) / n
    df = Counter(t for d in toks for t in set(d))
    out = np.zeros(n)
    for term in set(tokenize(query)):
        idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
        for i, d in enumerate(toks):
            tf = d.count(term)
            if tf:
                out[i] += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(d) / avg))
    return out


def test_bm25_matches_the_textbook_formula() -> None:
    docs = random_texts(60, seed=1)
    lex = LexicalIndex()
    lex.add(docs)
    for query in ["cello birthday", "garden garden dog", "note3 sister", "unknown words"]:
        np.testing.assert_allclose(
            lex.scores(tokenize(query)), reference_bm25(docs, query), rtol=1e-5, atol=1e-6
        )


def test_incremental_bm25_equals_a_full_rebuild() -> None:
    docs = random_texts(300, seed=2)
    incremental = LexicalIndex()
    rng = random.Random(3)
    i = 0
    queries = ["cello", "trip museum note1", "cat dog dog", "piano"]
    while i < len(docs):
        step = rng.randint(1, 40)
        incremental.add(docs[i : i + step])
        i += step
        for q in queries:  # interleaved searches cache weights; later adds must refresh them
            incremental.scores(tokenize(q))
    rebuilt = LexicalIndex()
    rebuilt.add(docs)
    for q in queries:
        np.testing.assert_allclose(
            incremental.scores(tokenize(q)), rebuilt.scores(tokenize(q)), rtol=1e-6
        )


# --------------------------------------------------------------------------- time


def test_time_windows_absolute_relative_and_none() -> None:
    (day,) = parse_time_windows("what did we do on 8 May, 2023?", NOW)
    assert day.start == datetime(2023, 5, 8, tzinfo=timezone.utc).timestamp()
    assert day.end == datetime(2023, 5, 9, tzinfo=timezone.utc).timestamp()
    (month,) = parse_time_windows("her trip in June 2022", NOW)
    assert month.start == to_epoch("2022-06-01") and month.end == to_epoch("2022-07-01")
    (year,) = parse_time_windows("what happened in 2021", NOW)
    assert year.start == to_epoch("2021-01-01") and year.end == to_epoch("2022-01-01")
    (ago,) = parse_time_windows("the concert 3 days ago", NOW)
    assert ago.start is not None and ago.end is not None
    assert ago.start <= to_epoch("2024-03-12T12:00:00") <= ago.end
    (yearless,) = parse_time_windows("when did she go camping in June?", NOW)
    assert yearless.start is None and yearless.month == 6
    assert parse_time_windows("May I ask what her name is?", NOW) == []
    assert parse_time_windows("what is her favourite colour", NOW) == []


def test_yearless_month_matches_every_year() -> None:
    (june,) = parse_time_windows("in June", NOW)
    epochs = np.array(
        [to_epoch(d) for d in ["2021-06-15", "2023-06-02", "2023-01-10", "2022-12-30"]]
    )
    match = june.match(epochs)
    assert match[0] == pytest.approx(1.0) and match[1] == pytest.approx(1.0)
    assert match[2] < 0.01 and match[3] < 0.01


# --------------------------------------------------------------------------- hybrid


def test_exact_keyword_item_beats_a_dense_similar_distractor() -> None:
    emb = HashingEmbeddings()
    items = [
        "Who is she and who is her best friend?",  # shares the function words
        "Bruno teaches cello on Mondays.",  # holds every keyword of the query
        "She moved to Lyon last spring.",
    ]
    query = "who is her Bruno who teaches cello?"
    qv = unit(emb.embed_query(query))

    def top(config: RetrievalConfig) -> str:
        index = HybridIndex(emb.dim, config)
        index.add(items, np.array(emb.embed_documents(items)), [0.0] * 3)
        return items[index.search(query, qv, 1, now=NOW)[0].position]

    assert top(RetrievalConfig.dense_only()) == items[0]  # the embedding alone is fooled
    assert top(RetrievalConfig()) == items[1]


def test_a_partial_keyword_match_counts_for_its_share_of_the_query() -> None:
    """The lexical score is the share of the query's (IDF-weighted) terms an item holds:
    a lone common match is weak evidence, not a perfect one."""
    emb = HashingEmbeddings()
    items = ["Alice has a brother.", "Alice keeps a cat named Tom.", "Alice lives in Lyon."]
    index = HybridIndex(emb.dim)
    index.add(items, np.array(emb.embed_documents(items)), [0.0] * 3)
    full = index.search("Tom the cat", unit(emb.embed_query("Tom the cat")), 1)[0]
    assert full.position == 1 and full.lexical > 0.75  # below 1 only by its length
    query = "brother pets hobbies"  # one of three terms is in an item
    part = index.search(query, unit(emb.embed_query(query)), 1)[0]
    assert part.position == 0
    assert 0.1 < part.lexical < 0.5


def test_store_recall_uses_the_query_text() -> None:
    items = ["Who is she and who is her best friend?", "Bruno teaches cello on Mondays."]
    query = "who is her Bruno who teaches cello?"
    store = InMemorySummaryStore(embeddings=HashingEmbeddings())
    store.add("alice", items)
    (doc,) = store.search("alice", query, 1)
    assert doc.page_content == items[1]
    assert doc.metadata["score"] > 0 and doc.metadata["similarity"] < 0.5
    plain = InMemorySummaryStore(
        embeddings=HashingEmbeddings(), retrieval=RetrievalConfig.dense_only()
    )
    plain.add("alice", items)
    (doc,) = plain.search("alice", query, 1)
    assert doc.page_content == items[0]


def _two_concerts() -> tuple[np.ndarray, HybridIndex]:
    """A query vector and two concerts, the second on 8 May 2023 and a little further."""
    q = unit([1.0, 0.1, 0.0])
    index = HybridIndex(3)
    index.add(
        ["went to a concert", "went to a concert again"],
        np.array([unit([1.0, 0.12, 0.0]), unit([1.0, 0.0, 0.1])]),
        [to_epoch("2023-01-20T10:00:00"), to_epoch("2023-05-08T10:00:00")],
    )
    return q, index


def test_a_named_date_favours_items_created_then() -> None:
    q, index = _two_concerts()
    best = index.search("which concert on 8 May, 2023?", q, 1, now=NOW)[0]
    assert best.position == 1 and best.time == pytest.approx(1.0)
    assert index.search("which concert?", q, 1, now=NOW)[0].position == 0


def test_the_dates_are_read_from_the_text_given_for_them() -> None:
    q, index = _two_concerts()
    dated = "which concert on 8 May, 2023?"
    assert index.search("which concert?", q, 1, now=NOW, dates_from=dated)[0].position == 1
    assert index.search(dated, q, 1, now=NOW, dates_from="which concert?")[0].position == 0


async def _alen(texts: Any) -> int:
    return len(texts)


def test_a_conversation_reads_dates_from_its_latest_message() -> None:
    """Issue 57 item 2: "last time" or "next month" turns ago named a date of their own;
    the conversation's ranking reads the dates the latest message names."""
    asked: list[tuple[str, str | None]] = []

    def search(query: str, depth: int, vector: Any, dates_from: str | None) -> Any:
        asked.append((query, dates_from))
        return []
        yield  # a plan with no step

    def words(query: str) -> Any:
        asked.append((query, "words"))
        return []
        yield  # a plan with no step

    texts = ["Last May I failed my driving test.", "I have an exam tomorrow."]
    drive(recall(search, words, lambda t: call(len, _alen, t), texts, 3))
    # the latest message's best item by its words alone: no second embedding
    assert asked == [(" ".join(texts), texts[-1]), (texts[-1], "words")]


def test_diversity_skips_a_restatement_of_a_chosen_item() -> None:
    q = unit([1.0, 0.9, 0.0])
    vecs = np.array([unit([1.0, 0.02, 0.0]), unit([1.0, 0.0, 0.0]), unit([0.0, 1.0, 0.0])])
    texts = ["a", "a again", "b"]
    plain = HybridIndex(3, RetrievalConfig(diversity=0.0, centering=0.0))
    plain.add(texts, vecs, [0.0] * 3)
    assert [h.position for h in plain.search("", q, 2)] == [0, 1]
    diverse = HybridIndex(3, RetrievalConfig(centering=0.0, diversity=0.2))  # opt-in
    diverse.add(texts, vecs, [0.0] * 3)
    assert [h.position for h in diverse.search("", q, 2)] == [0, 2]


def test_scores_are_bounded_sorted_and_one_for_a_perfect_match() -> None:
    emb = HashingEmbeddings()
    texts = random_texts(40, seed=4)
    index = HybridIndex(emb.dim, RetrievalConfig(centering=0.0, diversity=0.0))
    index.add(texts, np.array(emb.embed_documents(texts)), [0.0] * len(texts))
    hits = index.search(texts[5], unit(emb.embed_query(texts[5])), 10, now=NOW)
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert all(-1.0 - 1e-6 <= s <= 1.0 + 1e-6 for s in scores)
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    for h in hits:
        assert h.similarity == pytest.approx(
            float(np.dot(emb.embed_query(texts[5]), emb.embed_query(texts[h.position]))), abs=1e-5
        )


def test_a_single_relevant_item_scores_positive_despite_centering() -> None:
    store = InMemorySummaryStore(embeddings=HashingEmbeddings())
    store.add("alice", ["Alice's birthday is on May 8."])
    (doc,) = store.search("alice", "birthday", 1)
    assert 0.0 < doc.metadata["score"] <= 1.0
    assert 0.0 < doc.metadata["similarity"] <= 1.0


# --------------------------------------------------------------------------- scale


def test_ivf_mode_finds_what_exact_search_finds_and_keeps_growing() -> None:
    rng = np.random.default_rng(5)
    centers = rng.standard_normal((20, 32))
    vecs = centers[rng.integers(0, 20, 600)] + 0.3 * rng.standard_normal((600, 32))
    vecs = (vecs / np.linalg.norm(vecs, axis=1, keepdims=True)).astype(np.float32)
    texts = [f"item {i}" for i in range(600)]
    cfg = RetrievalConfig(exact_limit=100, diversity=0.0)
    big = HybridIndex(32, cfg)
    exact = HybridIndex(32, RetrievalConfig(diversity=0.0))
    for start in range(0, 600, 50):
        big.add(texts[start : start + 50], vecs[start : start + 50], [0.0] * 50)
        exact.add(texts[start : start + 50], vecs[start : start + 50], [0.0] * 50)
    assert big._ivf is not None and big._flat is None  # trained, and retrained as it grew
    assert big._ivf_trained_on >= 400
    agree = 0
    for i in range(0, 600, 37):
        got = [h.position for h in big.search("", vecs[i], 5)]
        want = [h.position for h in exact.search("", vecs[i], 5)]
        assert got[0] == i
        agree += len(set(got) & set(want))
    assert agree >= 0.9 * 5 * len(range(0, 600, 37))
    np.testing.assert_allclose(big.vectors(np.array([3, 599])), vecs[[3, 599]], atol=1e-6)
    scores, positions = big.nearest(vecs[:2])
    assert scores[:, 0] == pytest.approx([1.0, 1.0], abs=1e-5)
    assert positions[:, 0].tolist() == [0, 1]


def test_overlapping_deltas_never_add_an_item_twice() -> None:
    emb = HashingEmbeddings(dim=16)

    def fetched(ids: range) -> tuple[dict[bytes, bytes], dict[bytes, bytes]]:
        items, vecs = {}, {}
        for i in ids:
            text = f"fact number {i}"
            items[str(i).encode()] = json.dumps(
                {"text": text, "created_at": "2024-01-01T00:00:00+00:00", "metadata": {}}
            ).encode()
            vecs[str(i).encode()] = unit(emb.embed_query(text)).tobytes()
        return items, vecs

    index = UserIndex(dim=16, next_id=3)
    extend_index(index, *fetched(range(0, 3)))
    extend_index(index, *fetched(range(3, 6)), next_id=6)  # one thread's delta
    extend_index(index, *fetched(range(3, 8)), next_id=8)  # a racing, longer delta
    extend_index(index, *fetched(range(3, 6)), next_id=6)  # a late, shorter one
    assert [r.id for r in index.records] == [str(i) for i in range(8)]
    assert index.next_id == 8 and len(index.hybrid) == 8
    (doc,) = index.search(unit(emb.embed_query("fact number 7")), 1, query="fact number 7")
    assert doc.page_content == "fact number 7" and doc.id == "7"


@pytest.mark.parametrize("in_order", [True, False])
def test_ivf_mode_brings_in_items_of_a_named_date(in_order: bool) -> None:
    rng = np.random.default_rng(6)
    n = 400
    base = unit(rng.standard_normal(16))
    # near-identical embeddings: the dense candidates are arbitrary, only the date tells
    vecs = (base + 0.02 * rng.standard_normal((n, 16))).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    days = np.arange(n) if in_order else rng.permutation(n)
    epochs = [to_epoch("2022-01-01T12:00:00") + 86400.0 * float(d) for d in days]
    target = int(np.argmax(days == 200))  # created on 2022-07-20
    q = base
    index = HybridIndex(16, RetrievalConfig(exact_limit=100, candidates=8))
    index.add(["something happened"] * n, vecs, epochs)
    assert index._ivf is not None and index._times_sorted is in_order
    hits = index.search("what happened on 20 July 2022?", q, 3, now=NOW)
    assert hits[0].position == target and hits[0].time == pytest.approx(1.0)

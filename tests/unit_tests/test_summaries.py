"""Long-term fuzzy memory: summary items in Redis, searched through a per-user FAISS cache."""

from __future__ import annotations

import json
import re
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_tests.integration_tests import RetrieversIntegrationTests
from support import MemoryFactory, raw_client

from langchain_tiered_memory import (
    EmbeddedRedis,
    EmbeddingsMismatchError,
    HashingEmbeddings,
    InMemorySummaryStore,
    InvalidSummaryError,
    InvalidUserIdError,
    RedisConnection,
    RedisSummaryStore,
    RetrievalConfig,
    SummaryRetriever,
    TieredMemory,
    WatermarkConflict,
)
from langchain_tiered_memory.backend.keys import KeyBuilder
from langchain_tiered_memory.stores.summaries import MAX_SUMMARY_CHARS

FACTS = [
    "Alice's birthday is on May 8.",
    "Alice works as a nurse in Lyon.",
    "Alice has two cats named Tom and Jerry.",
    "Alice is learning to play the cello.",
]


def texts(docs: list[Document]) -> list[str]:
    return [d.page_content for d in docs]


# --------------------------------------------------------------------------- add / recall


def _safe_id(text: str) -> str:
    # plain ASCII test ids: tools that pass node ids back to pytest (mutmut) can find them
    return re.sub(r"[^A-Za-z0-9_=.-]", "_", text)


@pytest.mark.parametrize(
    ("query", "best"),
    [
        ("when is her birthday", FACTS[0]),
        ("where does she work as a nurse", FACTS[1]),
        ("cats named Tom", FACTS[2]),
        ("which instrument: cello", FACTS[3]),
    ],
)
def test_recall_ranks_the_matching_item_first(memory: TieredMemory, query: str, best: str) -> None:
    ids = memory.add_summaries("alice", FACTS)
    assert len(ids) == len(set(ids)) == len(FACTS)
    found = memory.recall_summaries("alice", query, n=len(FACTS))
    assert texts(found)[0] == best
    assert sorted(texts(found)) == sorted(FACTS)
    scores = [d.metadata["score"] for d in found]
    assert scores == sorted(scores, reverse=True)
    assert scores[0] > scores[1]


def test_recall_n_and_empty_cases(memory: TieredMemory) -> None:
    assert memory.recall_summaries("alice", "anything") == []
    memory.add_summaries("alice", FACTS)
    assert len(memory.recall_summaries("alice", "birthday")) == 3  # default n
    assert len(memory.recall_summaries("alice", "birthday", n=1)) == 1
    assert len(memory.recall_summaries("alice", "birthday", n=50)) == len(FACTS)
    assert memory.recall_summaries("alice", "birthday", n=0) == []
    assert memory.recall_summaries("bob", "birthday") == []


def test_recalled_metadata(memory: TieredMemory) -> None:
    stamp = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
    ids = memory.add_summaries(
        "alice", [FACTS[0]], created_at=stamp, metadata={"source": "chat", "turn": 7}
    )
    (doc,) = memory.recall_summaries("alice", "birthday", n=1)
    assert doc.page_content == FACTS[0]
    assert doc.id == ids[0]
    assert doc.metadata["source"] == "chat" and doc.metadata["turn"] == 7
    assert datetime.fromisoformat(doc.metadata["created_at"]) == stamp
    score = doc.metadata["score"]
    assert isinstance(score, float) and 0.0 < score <= 1.0 + 1e-6


def test_created_at_defaults_to_now_in_utc(memory: TieredMemory) -> None:
    before = datetime.now(timezone.utc).replace(microsecond=0)
    memory.add_summaries("alice", [FACTS[0]])
    after = datetime.now(timezone.utc)
    (doc,) = memory.recall_summaries("alice", "birthday", n=1)
    created = datetime.fromisoformat(doc.metadata["created_at"])
    assert created.utcoffset() == timedelta(0)
    assert before <= created <= after


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (datetime(2023, 5, 8, 13, 56), "2023-05-08T13:56:00+00:00"),  # naive = UTC
        (
            datetime(2023, 5, 8, 13, 56, tzinfo=timezone(timedelta(hours=2))),
            "2023-05-08T13:56:00+02:00",
        ),
        (date(2023, 5, 8), "2023-05-08"),
        ("2023-05-08T13:56", "2023-05-08T13:56:00+00:00"),
        ("2023-05-08T13:56:07+02:00", "2023-05-08T13:56:07+02:00"),
        ("2023-05-08", "2023-05-08T00:00:00+00:00"),
    ],
)
def test_created_at_parsing(memory: TieredMemory, given: Any, expected: str) -> None:
    memory.add_summaries("alice", [FACTS[0]], created_at=given)
    (doc,) = memory.summaries.get_all("alice")
    assert doc.metadata["created_at"] == expected


@pytest.mark.parametrize("bad", ["yesterday", "2023-13-01", 1683554160, ["2023-05-08"]])
def test_bad_created_at_is_rejected(memory: TieredMemory, bad: Any) -> None:
    with pytest.raises(InvalidSummaryError):
        memory.add_summaries("alice", [FACTS[0]], created_at=bad)
    assert memory.summaries.get_all("alice") == []


# --------------------------------------------------------------------------- dedup / validation


def test_near_duplicates_are_not_stored_twice(memory: TieredMemory) -> None:
    assert len(memory.add_summaries("alice", [FACTS[0]])) == 1
    assert memory.add_summaries("alice", [FACTS[0]]) == []
    assert memory.add_summaries("alice", ["  alice's BIRTHDAY is on may 8  "]) == []
    # within one batch as well, while distinct items still go in
    ids = memory.add_summaries("alice", [FACTS[1], FACTS[1], FACTS[2]])
    assert len(ids) == 2
    assert texts(memory.summaries.get_all("alice")) == FACTS[:3]
    # another user's items are no duplicates
    assert len(memory.add_summaries("bob", [FACTS[0]])) == 1


def test_items_are_stripped(memory: TieredMemory) -> None:
    memory.add_summaries("alice", ["  padded item \n"])
    assert texts(memory.summaries.get_all("alice")) == ["padded item"]


@pytest.mark.parametrize(
    "items",
    [
        [""],
        ["   \n\t"],
        ["x" * (MAX_SUMMARY_CHARS + 1)],
        [None],
        [42],
        [b"bytes"],
        ["lone \ud800 surrogate"],
        "a single string is not a list of items",
        [FACTS[0], ""],  # one bad item spoils the batch
        [FACTS[0], "y" * 10_000],
    ],
    ids=lambda v: _safe_id(repr(v)[:24]),
)
def test_invalid_items_raise_and_store_nothing(memory: TieredMemory, items: Any) -> None:
    memory.add_summaries("alice", [FACTS[3]])
    with pytest.raises(InvalidSummaryError) as info:
        memory.add_summaries("alice", items)
    assert isinstance(info.value, ValueError)
    assert texts(memory.summaries.get_all("alice")) == [FACTS[3]]


def test_longest_item_is_accepted(memory: TieredMemory) -> None:
    assert len(memory.add_summaries("alice", ["z" * MAX_SUMMARY_CHARS])) == 1


def test_non_json_metadata_is_rejected(memory: TieredMemory) -> None:
    with pytest.raises(InvalidSummaryError):
        memory.add_summaries("alice", [FACTS[0]], metadata={"when": object()})
    assert memory.summaries.get_all("alice") == []


def test_empty_list_stores_nothing(memory: TieredMemory) -> None:
    assert memory.add_summaries("alice", []) == []
    assert memory.summaries.get_all("alice") == []


@pytest.mark.parametrize("bad", ["", None, 1, "x" * 257], ids=["empty", "none", "int", "long"])
async def test_invalid_user_id_raises(memory: TieredMemory, bad: Any) -> None:
    for call in (
        lambda: memory.add_summaries(bad, [FACTS[0]]),
        lambda: memory.recall_summaries(bad, "birthday"),
        lambda: memory.summaries.as_retriever(bad),
    ):
        with pytest.raises(InvalidUserIdError):
            call()
    with pytest.raises(InvalidUserIdError):
        await memory.aadd_summaries(bad, [FACTS[0]])
    with pytest.raises(InvalidUserIdError):
        await memory.arecall_summaries(bad, "birthday")


# --------------------------------------------------------------------------- dimension


class _SameSizeOtherModel(HashingEmbeddings):
    """Another model with the vectors' size of the first (as MiniLM and e5-small: 384)."""

    def __init__(self) -> None:
        super().__init__(dim=256)
        self.model_id = "another-model-256"

    def _one(self, text: str) -> list[float]:
        return super()._one(text[::-1])


def test_embedding_dimension_mismatch_is_a_clear_error(memory: TieredMemory) -> None:
    memory.add_summaries("alice", FACTS[:2])
    memory.summaries.embeddings = HashingEmbeddings(dim=64)
    with pytest.raises(EmbeddingsMismatchError, match="'hashing-256'.*'hashing-64'"):
        memory.add_summaries("alice", [FACTS[2]])
    assert texts(memory.summaries.get_all("alice")) == FACTS[:2]
    # another user starts fresh with the new model
    assert len(memory.add_summaries("bob", [FACTS[2]])) == 1


def test_dimension_mismatch_from_another_process_is_caught(
    embedded_memory: TieredMemory,
) -> None:
    embedded_memory.add_summaries("alice", FACTS[:2])
    assert embedded_memory.data_dir is not None
    with (
        TieredMemory.embedded(
            embedded_memory.data_dir, embeddings=HashingEmbeddings(dim=64)
        ) as other,
        pytest.raises(InvalidSummaryError),
    ):
        other.add_summaries("alice", [FACTS[2]])
    assert texts(embedded_memory.summaries.get_all("alice")) == FACTS[:2]


def test_searching_with_another_embedding_size_is_a_clear_error(memory: TieredMemory) -> None:
    memory.add_summaries("alice", FACTS)
    memory.summaries.embeddings = HashingEmbeddings(dim=64)
    with pytest.raises(InvalidSummaryError):
        memory.recall_summaries("alice", "birthday")


async def test_another_model_of_the_same_size_is_refused_not_mixed(memory: TieredMemory) -> None:
    memory.add_summaries("alice", FACTS[:2])
    memory.summaries.embeddings = _SameSizeOtherModel()
    for call in (
        lambda: memory.recall_summaries("alice", "birthday"),
        lambda: memory.add_summaries("alice", [FACTS[2]]),
    ):
        with pytest.raises(EmbeddingsMismatchError, match="another-model-256.*reembed"):
            call()
    with pytest.raises(EmbeddingsMismatchError):
        await memory.arecall_summaries("alice", "birthday")
    with pytest.raises(EmbeddingsMismatchError):
        await memory.aadd_summaries("alice", [FACTS[2]])
    assert texts(memory.summaries.get_all("alice")) == FACTS[:2]
    # another user, and alice once forgotten, start fresh with the new model
    assert len(memory.add_summaries("bob", [FACTS[2]])) == 1
    memory.forget_user("alice")
    assert len(memory.add_summaries("alice", [FACTS[2]])) == 1
    assert memory.recall_summaries("alice", "birthday")


def test_a_writer_with_another_model_is_refused_by_the_script(
    embedded_memory: TieredMemory,
) -> None:
    """Two processes, one Redis: the name check holds inside the write script too (the
    other process's cache saw no items yet when it embedded)."""
    embedded_memory.add_summaries("alice", FACTS[:2])
    store = embedded_memory.summaries
    assert isinstance(store, RedisSummaryStore)
    other = RedisSummaryStore(store.connection, embeddings=_SameSizeOtherModel(), keys=store.keys)
    other.index_for = lambda user_id, version=None: None  # type: ignore[method-assign]
    with pytest.raises(EmbeddingsMismatchError, match="hashing-256"):
        other.add("alice", [FACTS[2]])
    assert texts(store.get_all("alice")) == FACTS[:2]


def test_legacy_384_dimensional_items_are_taken_as_minilms(
    embedded_memory: TieredMemory,
) -> None:
    """0.1 recorded no model; its 384-d items came from all-MiniLM-L6-v2, the default then.
    The new default (multilingual-e5-small) is 384-d too: it must not search them."""
    store = embedded_memory.summaries
    assert isinstance(store, RedisSummaryStore)
    store.embeddings = HashingEmbeddings(dim=384)
    embedded_memory.add_summaries("alice", FACTS[:2])
    assert embedded_memory.redis_url is not None
    raw_client(embedded_memory.redis_url).hdel(store.keys.key("alice", "meta"), "model")
    store.index_cache.clear()
    with pytest.raises(EmbeddingsMismatchError, match="all-minilm-l6-v2"):
        embedded_memory.recall_summaries("alice", "birthday")
    minilm_named = HashingEmbeddings(dim=384)
    minilm_named.model_id = "all-minilm-l6-v2"
    store.embeddings = minilm_named
    assert embedded_memory.recall_summaries("alice", "birthday")


def test_items_stored_before_models_were_recorded_still_load(
    embedded_memory: TieredMemory,
) -> None:
    """Items written by 0.1 carry no model name: they are searched and extended as before,
    and no name is claimed for them afterwards."""
    embedded_memory.add_summaries("alice", FACTS[:2])
    store = embedded_memory.summaries
    assert isinstance(store, RedisSummaryStore)
    meta = store.keys.key("alice", "meta")
    assert embedded_memory.redis_url is not None
    client = raw_client(embedded_memory.redis_url)
    client.hdel(meta, "model")
    store.index_cache.clear()
    assert embedded_memory.recall_summaries("alice", "birthday", n=1)
    assert len(embedded_memory.add_summaries("alice", [FACTS[2]])) == 1
    assert client.hget(meta, "model") is None


# --------------------------------------------------------------------------- watermark


def test_watermark_conditional_add(memory: TieredMemory) -> None:
    store = memory.summaries
    assert store.get_watermark("alice") == 0
    ids = store.add("alice", [FACTS[0]], watermark=(0, 5))
    assert len(ids) == 1 and store.get_watermark("alice") == 5

    with pytest.raises(WatermarkConflict):
        store.add("alice", [FACTS[1]], watermark=(0, 9))  # someone else moved it to 5
    assert store.get_watermark("alice") == 5
    assert texts(store.get_all("alice")) == [FACTS[0]]

    # all items duplicates: nothing stored, but the watermark still moves
    assert store.add("alice", [FACTS[0]], watermark=(5, 7)) == []
    assert store.get_watermark("alice") == 7
    assert len(store.add("alice", [FACTS[1]], watermark=(7, 9))) == 1
    assert store.get_watermark("alice") == 9


def test_watermark_moves_with_no_items_for_a_new_user(memory: TieredMemory) -> None:
    assert memory.summaries.add("alice", [], watermark=(0, 4)) == []
    assert memory.summaries.get_watermark("alice") == 4


def test_in_memory_watermark_moves_with_no_items_when_items_exist() -> None:
    store = TieredMemory.in_memory(embeddings=HashingEmbeddings()).summaries
    store.add("alice", [FACTS[0]], watermark=(0, 2))
    assert store.add("alice", [], watermark=(2, 4)) == []
    assert store.get_watermark("alice") == 4


def test_redis_watermark_moves_with_no_items_when_items_exist(
    embedded_memory: TieredMemory,
) -> None:
    store = embedded_memory.summaries
    store.add("alice", [FACTS[0]], watermark=(0, 2))
    assert store.add("alice", [], watermark=(2, 4)) == []
    assert store.get_watermark("alice") == 4


# --------------------------------------------------------------------------- listing / delete


def test_get_all_delete_clear(memory: TieredMemory) -> None:
    store = memory.summaries
    ids = store.add("alice", FACTS)
    assert [d.id for d in store.get_all("alice")] == ids  # oldest first
    assert store.delete("alice", [ids[1], "no-such-id"]) == 1
    assert store.delete("alice", [ids[1]]) == 0
    assert texts(store.get_all("alice")) == [FACTS[0], FACTS[2], FACTS[3]]
    assert FACTS[1] not in texts(memory.recall_summaries("alice", "nurse in Lyon", n=4))
    # ids are never reused
    new = store.add("alice", [FACTS[1]])
    assert new[0] not in ids
    store.add("alice", [FACTS[0]], watermark=(0, 3))
    assert store.clear("alice") == 4
    assert store.get_all("alice") == [] and store.get_watermark("alice") == 0
    assert memory.recall_summaries("alice", "birthday") == []


async def test_async_parity(memory_factory: MemoryFactory) -> None:
    a, b = memory_factory(), memory_factory()
    stamp = "2023-05-08T13:56:00+00:00"
    ids_sync = a.summaries.add("u", FACTS, created_at=stamp, metadata={"k": 1}, watermark=(0, 3))
    ids_async = await b.summaries.aadd(
        "u", FACTS, created_at=stamp, metadata={"k": 1}, watermark=(0, 3)
    )
    assert ids_sync == ids_async
    assert a.summaries.get_all("u") == await b.summaries.aget_all("u")
    assert a.summaries.get_watermark("u") == await b.summaries.aget_watermark("u") == 3
    for query in ("birthday", "cats", "cello lessons"):
        assert a.recall_summaries("u", query, 2) == await b.arecall_summaries("u", query, 2)
    with pytest.raises(WatermarkConflict):
        await b.summaries.aadd("u", ["new fact"], watermark=(0, 9))
    assert await b.aadd_summaries("u", [FACTS[0]]) == []
    assert await b.summaries.aclear("u") == a.summaries.clear("u") == len(FACTS)
    assert await b.arecall_summaries("u", "birthday") == []


# --------------------------------------------------------------------------- Redis layout


def test_redis_records_are_json_and_vectors_int8(embedded_memory: TieredMemory) -> None:
    (item_id,) = embedded_memory.add_summaries("alice", [FACTS[0]], metadata={"k": "v"})
    assert embedded_memory.redis_url is not None
    client = raw_client(embedded_memory.redis_url)
    keys = KeyBuilder()
    raw_record = client.hget(keys.key("alice", "sum:items"), item_id)
    assert isinstance(raw_record, bytes)
    record = json.loads(raw_record)
    assert record["text"] == FACTS[0] and record["metadata"] == {"k": "v"}
    datetime.fromisoformat(record["created_at"])
    raw = client.hget(keys.key("alice", "sum:vecs"), item_id)
    assert isinstance(raw, bytes)
    assert len(raw) == 256 + 4  # int8 values, then their float32 scale
    scale = np.frombuffer(raw[256:], dtype=np.float32)[0]
    vector = np.frombuffer(raw[:256], dtype=np.int8).astype(np.float32) * scale
    expected = np.asarray(HashingEmbeddings().embed_query(FACTS[0]), dtype=np.float32)
    unit = expected / np.linalg.norm(expected)
    assert abs(scale * 127 - np.abs(unit).max()) < 1e-6  # the largest value maps to 127
    # each value within half a step of the scale: ample for a ranking
    np.testing.assert_allclose(vector, unit, atol=float(scale) / 2 + 1e-7)
    client.close()


# --------------------------------------------------------------------------- the FAISS cache


def _second(memory: TieredMemory) -> TieredMemory:
    """Another TieredMemory on the same embedded data dir: own connection, own cache."""
    assert memory.data_dir is not None
    return TieredMemory.embedded(memory.data_dir, embeddings=HashingEmbeddings())


def test_other_instance_sees_additions_through_the_delta_path(
    embedded_memory: TieredMemory,
) -> None:
    with _second(embedded_memory) as other:
        embedded_memory.add_summaries("alice", FACTS[:2])
        assert texts(other.recall_summaries("alice", "birthday", n=1)) == [FACTS[0]]
        store = other.summaries
        assert isinstance(store, RedisSummaryStore)
        cached = store.index_for("alice")
        assert cached is not None and len(cached.records) == 2

        embedded_memory.add_summaries("alice", FACTS[2:])
        assert texts(other.recall_summaries("alice", "cats named", n=1)) == [FACTS[2]]
        # extended in place: the same index object, with only the new items fetched
        again = store.index_for("alice")
        assert again is cached and len(again.records) == len(FACTS)
        assert other.add_summaries("alice", [FACTS[3]]) == []  # dedup sees the new items


def test_other_instance_rebuilds_after_a_delete(embedded_memory: TieredMemory) -> None:
    with _second(embedded_memory) as other:
        ids = embedded_memory.add_summaries("alice", FACTS)
        store = other.summaries
        assert isinstance(store, RedisSummaryStore)
        assert texts(other.recall_summaries("alice", "birthday", n=1)) == [FACTS[0]]
        before = store.index_for("alice")
        assert embedded_memory.summaries.delete("alice", [ids[0]]) == 1
        found = texts(other.recall_summaries("alice", "birthday", n=len(FACTS)))
        assert FACTS[0] not in found and sorted(found) == sorted(FACTS[1:])
        after = store.index_for("alice")
        assert after is not before and after is not None and len(after.records) == 3
        # and a clear by the first is seen as well
        embedded_memory.summaries.clear("alice")
        assert other.recall_summaries("alice", "birthday") == []


def test_cache_is_bounded_and_least_recently_used_goes_first(
    embedded_server: EmbeddedRedis,
) -> None:
    keys = KeyBuilder("lru-test")
    store = RedisSummaryStore(
        RedisConnection(embedded_server.url),
        embeddings=HashingEmbeddings(),
        keys=keys,
        max_cached_users=2,
    )
    for user in ("u1", "u2", "u3"):
        store.add(user, [f"{user} likes green tea"])
    store.connection.close()
    fresh = RedisSummaryStore(
        RedisConnection(embedded_server.url),
        embeddings=HashingEmbeddings(),
        keys=keys,
        max_cached_users=2,
    )
    first = fresh.index_for("u1")
    second = fresh.index_for("u2")
    assert fresh.index_for("u1") is first  # u1 is now the most recently used
    fresh.index_for("u3")  # evicts u2, the least recently used
    assert len(fresh.index_cache) == 2
    assert fresh.index_for("u1") is first
    assert fresh.index_for("u2") is not second  # rebuilt from Redis
    assert texts(fresh.search("u2", "green tea", 1)) == ["u2 likes green tea"]
    assert len(fresh.index_cache) == 2
    fresh.connection.close()


def test_forgotten_items_never_come_back_from_another_cache(
    embedded_memory: TieredMemory,
) -> None:
    with _second(embedded_memory) as other:
        embedded_memory.add_summaries("carol", ["Carol has a secret diagnosis", FACTS[1]])
        assert other.recall_summaries("carol", "secret diagnosis", n=1)  # cached now
        embedded_memory.forget_user("carol")
        embedded_memory.add_summaries("carol", ["Carol likes tea", "Carol plays chess"])
        found = texts(other.recall_summaries("carol", "secret diagnosis", n=5))
        assert "Carol has a secret diagnosis" not in found
        assert sorted(found) == ["Carol likes tea", "Carol plays chess"]


# --------------------------------------------------------------------------- retriever


async def test_as_retriever(memory: TieredMemory) -> None:
    memory.add_summaries("alice", FACTS)
    memory.add_summaries("bob", ["Bob's birthday is in June."])
    retriever = memory.summaries.as_retriever("alice", k=2)
    assert isinstance(retriever, BaseRetriever)
    docs = retriever.invoke("when is her birthday")
    assert len(docs) == 2 and docs[0].page_content == FACTS[0]
    assert all(isinstance(d, Document) for d in docs)
    adocs = await retriever.ainvoke("when is her birthday")
    assert adocs == docs
    assert "Bob's birthday is in June." not in texts(
        memory.summaries.as_retriever("alice", k=10).invoke("birthday")
    )
    batched = retriever.batch(["cats named", "the cello"])
    assert [b[0].page_content for b in batched] == [FACTS[2], FACTS[3]]


class _StandardRetrieverTests(RetrieversIntegrationTests):
    store: Any

    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return SummaryRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"store": self.store, "user_id": "alice", "k": 3}

    @property
    def retriever_query_example(self) -> str:
        return "when is her birthday"


class TestStandardRetrieverInMemory(_StandardRetrieverTests):
    @pytest.fixture(autouse=True)
    def _store(self) -> None:
        memory = TieredMemory.in_memory(embeddings=HashingEmbeddings())
        memory.add_summaries("alice", FACTS)
        self.store = memory.summaries


class TestStandardRetrieverEmbedded(_StandardRetrieverTests):
    @pytest.fixture(autouse=True)
    def _store(self, tmp_path: Path) -> Any:
        with TieredMemory.embedded(tmp_path / "d", embeddings=HashingEmbeddings()) as memory:
            memory.add_summaries("alice", FACTS)
            self.store = memory.summaries
            yield


def test_vectors_are_stored_as_int8_and_float16_and_float32_ones_still_load(
    embedded_memory: TieredMemory,
) -> None:
    """A quarter of float32's bytes per vector; a store written as float32 (0.1) or float16
    (0.2) mixes with it."""
    from langchain_tiered_memory.stores.summaries import RedisSummaryStore

    memory = embedded_memory
    (first,) = memory.add_summaries("u", ["The user likes green tea."])
    summaries = memory.summaries
    assert isinstance(summaries, RedisSummaryStore)
    client = summaries.connection.sync
    vecs_key = summaries.keys.key("u", "sum:vecs")
    dim = len(memory.summaries.embeddings.embed_query("x"))
    assert len(client.hget(vecs_key, first) or b"") == dim + 4  # values and their scale
    wide = RedisSummaryStore(
        summaries.connection,
        embeddings=summaries.embeddings,
        keys=summaries.keys,
        vector_dtype="float32",
    )
    (second,) = wide.add("u", ["The user plays the violin."])
    assert len(client.hget(vecs_key, second) or b"") == 4 * dim
    half = RedisSummaryStore(
        summaries.connection,
        embeddings=summaries.embeddings,
        keys=summaries.keys,
        vector_dtype="float16",
    )
    (third,) = half.add("u", ["The user's sister lives in Lyon."])
    assert len(client.hget(vecs_key, third) or b"") == 2 * dim
    fresh = RedisSummaryStore(
        summaries.connection, embeddings=summaries.embeddings, keys=summaries.keys
    )
    found = fresh.search("u", "What does the user play?", k=3)
    assert found[0].page_content == "The user plays the violin."
    assert {d.id for d in found} == {first, second, third}
    assert fresh.search("u", "Where does the user's sister live?", k=1)[0].id == third


def test_int8_vectors_keep_the_ranking_of_float32() -> None:
    """The int8 form (values over a per-vector scale) is within 1/127 of each value's
    scale, so cosine rankings of unit vectors barely move."""
    from langchain_tiered_memory.stores.summaries.index import decode_vectors, encode_vector

    rng = np.random.default_rng(7)
    rows = rng.normal(size=(200, 384)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    back = decode_vectors([encode_vector(r, "int8") for r in rows], 384)
    assert back is not None and back.shape == rows.shape
    assert float(np.abs(back - rows).max()) <= float(np.abs(rows).max()) / 127
    query = rows[0] + 0.1 * rows[1]
    assert np.argsort(-(rows @ query))[:5].tolist() == np.argsort(-(back @ query))[:5].tolist()
    assert decode_vectors([b"\x00" * 7], 384) is None


@pytest.mark.parametrize(
    "config",
    [
        RetrievalConfig.dense_only(),  # knobs read at search time
        RetrievalConfig(bm25_k1=2.0, bm25_b=0.3, lexical_weight=0.6),  # the index's structure
    ],
)
def test_a_live_retrieval_change_ranks_cached_users_with_it(
    memory_factory: MemoryFactory, config: RetrievalConfig
) -> None:
    """Issue 57 item 3: a cached index kept the config it was built with until the
    user's items changed. A store whose ``retrieval`` is changed ranks with it."""
    memory = memory_factory()
    texts = [
        "Alice keeps bees on the roof of her building.",
        "Alice's sister Emma lives in Lyon.",
        "Alice failed her driving test in March.",
        "Alice drinks green tea every morning.",
    ]
    memory.add_summaries("alice", texts, created_at="2026-01-05")
    query = "Does Alice have any bees?"

    def scores() -> list[tuple[str, float]]:
        docs = memory.summaries.search("alice", query, k=4)
        return [(d.page_content, round(d.metadata["score"], 6)) for d in docs]

    before = scores()  # the index is built and cached with the default config
    memory.summaries.retrieval = config
    changed = scores()
    fresh = InMemorySummaryStore(embeddings=HashingEmbeddings(), retrieval=config)
    fresh.add("alice", texts, created_at="2026-01-05")
    expected = [
        (d.page_content, round(d.metadata["score"], 6)) for d in fresh.search("alice", query, k=4)
    ]
    assert changed == expected
    assert changed != before

"""Defects found by hostile testing (issue 13), each pinned by a test that failed before the fix.

Real embedded Redis where a store is involved; scripted models stand in for providers.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from support import MemoryFactory, raw_client

from langchain_tiered_memory import (
    CorruptMemoryError,
    HashingEmbeddings,
    InvalidMessageError,
    InvalidSummaryError,
    InvalidTagError,
    MemoryBackendError,
    SummaryLimitError,
    TieredMemory,
    WatermarkConflict,
)
from langchain_tiered_memory.agent.graph import create_memory_graph
from langchain_tiered_memory.stores.history import (
    MAX_NESTING,
    RedisHistoryStore,
    check_portable,
    dump_message,
    replayed_prefix,
)
from langchain_tiered_memory.stores.summaries import (
    DEDUP_THRESHOLD,
    InMemorySummaryStore,
    RedisSummaryStore,
)
from langchain_tiered_memory.testing import ScriptedChatModel


def _cfg(thread: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread}}


def _texts(memory: TieredMemory, user: str = "alice") -> list[str]:
    return [m.text for m in memory.history.since(user, 0)[1]]


# --------------------------------------------------------------------------- 3. duplicates


class _AppliedThenTimedOut(RedisHistoryStore):
    """Applies the append, then fails as a timeout would: the write is in Redis."""

    fail_next = True

    def after_append(self, *args: Any) -> Any:
        # what follows the append's reply, alone or in a turn's one round trip
        if self.fail_next:
            self.fail_next = False
            raise MemoryBackendError("Redis timed out (simulated after the write applied)")
        return super().after_append(*args)


def test_a_save_that_timed_out_after_applying_is_not_stored_twice(
    embedded_memory: TieredMemory,
) -> None:
    memory = embedded_memory
    flaky = _AppliedThenTimedOut(memory.history.connection, keys=memory.history.keys)  # type: ignore[attr-defined]
    memory.history = flaky
    graph = create_memory_graph(
        ScriptedChatModel(replies=["one", "two"]), memory=memory, checkpointer=InMemorySaver()
    )
    ctx: dict[str, Any] = {"user_id": "alice"}
    with pytest.raises(MemoryBackendError):
        graph.invoke({"messages": [HumanMessage("first")]}, _cfg("t"), context=ctx)
    assert _texts(memory) == ["first", "one"]  # applied despite the error
    graph.invoke({"messages": [HumanMessage("second")]}, _cfg("t"), context=ctx)
    assert _texts(memory) == ["first", "one", "second", "two"]  # each message once


def test_append_is_idempotent_per_thread_position_and_a_fork_is_stored(
    memory_factory: MemoryFactory,
) -> None:
    memory = memory_factory()
    a, b, c, d = (HumanMessage(t, id=t) for t in "abcd")
    memory.add_session_log("u", [a, b], thread_id="t", thread_position=0)
    memory.add_session_log("u", [a, b], thread_id="t", thread_position=0)  # replay
    memory.add_session_log("u", [b, c], thread_id="t", thread_position=1)  # overlap
    assert _texts(memory, "u") == ["a", "b", "c"]
    # time travel: a fork from position 1 with another message there is a new turn
    memory.add_session_log("u", [d], thread_id="t", thread_position=1)
    assert _texts(memory, "u") == ["a", "b", "c", "d"]
    # another thread at the same positions is its own
    memory.add_session_log("u", [a], thread_id="other", thread_position=0)
    assert _texts(memory, "u") == ["a", "b", "c", "d", "a"]


def test_a_turn_saved_before_its_checkpoint_was_lost_keeps_one_human_message(
    memory_factory: MemoryFactory,
) -> None:
    """LangGraph's async durability: save_memory applied, the step's checkpoint lost. The
    next run starts from the input checkpoint, so its batch at the same thread position
    starts with the same human message id and goes on with a regenerated reply.
    """
    memory = memory_factory()
    h1, a1 = HumanMessage("hi", id="h1"), AIMessage("hello", id="a1")
    h2, a2 = HumanMessage("how are you", id="h2"), AIMessage("fine", id="a2")
    memory.add_session_log("u", [h1, a1], thread_id="t", thread_position=0)
    memory.add_session_log("u", [h2, a2], thread_id="t", thread_position=2)
    again = AIMessage("fine, thanks", id="a2-regenerated")
    memory.add_session_log("u", [h2, again], thread_id="t", thread_position=2)
    assert _texts(memory, "u") == ["hi", "hello", "how are you", "fine", "fine, thanks"]
    # and the next turn after it is stored once
    h3 = HumanMessage("bye", id="h3")
    memory.add_session_log("u", [h3], thread_id="t", thread_position=4)
    memory.add_session_log("u", [h3], thread_id="t", thread_position=4)
    assert _texts(memory, "u")[-2:] == ["fine, thanks", "bye"]


def test_replayed_prefix_only_skips_an_exact_match() -> None:
    assert replayed_prefix(None, 0, ["a"]) == 0
    assert replayed_prefix((2, ("b",)), 0, ["a", "b", "c"]) == 2
    assert replayed_prefix((2, ("x",)), 0, ["a", "b", "c"]) == 0  # a fork
    assert replayed_prefix((2, ("",)), 0, ["", "", "c"]) == 0  # no ids: cannot tell
    assert replayed_prefix((5, ("b",)), 0, ["a", "b"]) == 0  # beyond the batch
    assert replayed_prefix((1, ("a",)), 1, ["b"]) == 0  # batch starts at the mark
    # the stored prefix of ids at the batch's positions: the same human message, a new reply
    assert replayed_prefix((4, ("h2", "a2")), 2, ["h2", "a2-new", "h3"]) == 1
    assert replayed_prefix((4, ("h2", "a2")), 2, ["x", "a3"]) == 0  # a fork at the first
    assert replayed_prefix((4, ("", "a2")), 2, ["", "a2-new"]) == 0  # an id-less message


# --------------------------------------------------------------------------- 4. poison


def _nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("poison", ["tool-result-over-4MiB", "ai-message-nested-200"])
def test_a_refused_message_does_not_poison_the_thread(
    embedded_memory: TieredMemory, poison: str
) -> None:
    @tool
    def fetch() -> str:
        """Fetch a document."""
        return "x" * (4 * 1024 * 1024 + 10) if poison.startswith("tool") else "doc"

    memory = embedded_memory
    fetched = AIMessage("fetched")
    if poison.startswith("ai"):
        fetched = AIMessage("fetched", additional_kwargs={"trace": _nested(200)})
    model = ScriptedChatModel(
        replies=[
            AIMessage("", tool_calls=[{"name": "fetch", "args": {}, "id": "f1"}]),
            fetched,
            "still here",
        ]
    )
    graph = create_memory_graph(model, memory=memory, tools=[fetch], checkpointer=InMemorySaver())
    ctx: dict[str, Any] = {"user_id": "alice"}
    graph.invoke({"messages": [HumanMessage("get it")]}, _cfg("t"), context=ctx)
    out = graph.invoke({"messages": [HumanMessage("and now?")]}, _cfg("t"), context=ctx)
    assert out["messages"][-1].content == "still here"
    stored = memory.history.since("alice", 0)[1]
    assert [m.type for m in stored] == ["human", "ai", "tool", "ai", "human", "ai"]
    note = stored[2] if poison.startswith("tool") else stored[3]
    assert note.text.startswith("[not stored:") and len(note.text) < 1000
    assert stored[2].tool_call_id == "f1"  # type: ignore[attr-defined]  # pairing kept
    assert [m.text for m in stored if not m.text.startswith("[not")] == [
        "get it",
        "",
        *(["doc"] if poison.startswith("ai") else []),
        *(["fetched"] if poison.startswith("tool") else []),
        "and now?",
        "still here",
    ]


def test_the_api_still_refuses_a_bad_message_whole(memory: TieredMemory) -> None:
    with pytest.raises(InvalidMessageError):
        memory.add_session_log("u", [HumanMessage("ok"), HumanMessage("x" * (5 * 2**20))])
    assert memory.history.length("u") == 0
    with pytest.raises(InvalidMessageError):
        memory.add_session_log("u", [AIMessage("x", additional_kwargs={"d": _nested(5000)})])
    assert memory.history.length("u") == 0


# --------------------------------------------------------------------------- 5. huge numbers


def test_an_absurd_number_in_a_tool_call_breaks_no_thread(embedded_memory: TieredMemory) -> None:
    memory = embedded_memory
    huge = AIMessage("", tool_calls=[{"name": "user_tag", "args": {"age": 10**400}, "id": "h"}])
    model = ScriptedChatModel(replies=[huge, "noted", "hello again"])
    saver = InMemorySaver()
    graph = create_memory_graph(model, memory=memory, checkpointer=saver)
    ctx: dict[str, Any] = {"user_id": "alice"}
    out = graph.invoke(
        {"messages": [HumanMessage("I am 10^400 years old")]}, _cfg("1"), context=ctx
    )
    errors = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert errors and errors[0].status == "error" and "64 bits" in errors[0].text
    assert memory.get_user_tags("alice") == {}
    # a new thread loads that history (checkpointed with msgpack) and works
    out = graph.invoke({"messages": [HumanMessage("hi")]}, _cfg("2"), context=ctx)
    assert out["messages"][-1].content == "hello again"
    for message in memory.history.since("alice", 0)[1]:
        check_portable(json.loads(dump_message(message, 2**22)))


@pytest.mark.parametrize(
    "value",
    [2**64, -(2**63) - 1, math.nan, math.inf, {1: "a"}, object(), _nested(MAX_NESTING + 1)],
    ids=["2^64", "-2^63-1", "nan", "inf", "int-key", "object", "deep"],
)
def test_check_portable_refuses_what_a_checkpointer_cannot_carry(value: Any) -> None:
    with pytest.raises(InvalidMessageError):
        check_portable({"v": value})


@pytest.mark.parametrize(
    "value", [2**64 - 1, -(2**63), 1.5, "é", None, True, _nested(MAX_NESTING - 1)]
)
def test_check_portable_accepts_the_edges(value: Any) -> None:
    check_portable({"v": value})


# --------------------------------------------------------------------------- 6. jobs


def test_summarize_pending_goes_on_past_one_users_bad_data(
    embedded_memory: TieredMemory, caplog: pytest.LogCaptureFixture
) -> None:
    memory = embedded_memory
    for user in ("a-bad", "b-good"):
        memory.add_session_log(user, [HumanMessage(f"My name is {user} and I live in Lyon.")])
    client = raw_client(memory.redis_url or "")
    client.rpush(memory.history.keys.key("a-bad", "history"), b"{not json")  # type: ignore[attr-defined]
    client.close()
    model = ScriptedChatModel(
        replies=[
            AIMessage(
                "",
                tool_calls=[
                    {
                        "name": "SummaryItems",
                        "args": {"items": ["The user lives in Lyon."]},
                        "id": "s",
                    }
                ],
            )
        ]
    )
    with caplog.at_level(logging.ERROR):
        done = memory.summarize_pending(model, min_messages=1)
    assert list(done) == ["b-good"] and done["b-good"]
    assert "a-bad" in caplog.text and "CorruptMemoryError" in caplog.text


def test_summarize_pending_stops_when_the_store_is_down(data_dir: Any) -> None:
    memory = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings())
    memory.add_session_log("u", [HumanMessage("My name is U.")])
    users = memory.pending_users(1)
    memory.close()  # detached: nothing restarts the server
    memory.pending_users = lambda min_messages=20: users  # type: ignore[method-assign]
    with pytest.raises(MemoryBackendError):
        memory.summarize_pending(ScriptedChatModel(replies=["- x"]), min_messages=1)


# --------------------------------------------------------------------------- 7. corrupt data


def _corrupt(memory: TieredMemory, user: str, kind: str, value: Any) -> str:
    client = raw_client(memory.redis_url or "")
    key = memory.history.keys.key(user, kind)  # type: ignore[attr-defined]
    if kind == "history":
        client.rpush(key, value)
    elif kind == "meta":
        client.hset(key, "watermark", value)
    else:
        client.hset(key, *value)
    client.close()
    return key


def _fill(memory: TieredMemory, user: str = "alice") -> None:
    memory.add_session_log(user, [HumanMessage("hello"), AIMessage("hi")])
    memory.set_user_tags(user, {"name": "Alice"})
    memory.add_summaries(user, ["Alice likes tea."])


@pytest.mark.parametrize(
    ("kind", "value", "broken"),
    [
        ("history", b"\xff\xfe not utf-8", "history"),
        ("history", b'{"type": "human"}', "history"),
        ("history", b"[" * 6000 + b"]" * 6000, "history"),
        ("tags", ("city", b"\xff"), "tags"),
        ("sum:items", ("0", b"{broken"), "recalled"),
        ("sum:vecs", ("0", b"\x00\x01"), "recalled"),
        ("sum:vecs", ("0", np.full(256, np.nan, dtype=np.float32).tobytes()), "recalled"),
    ],
    ids=[
        "history-bytes",
        "history-shape",
        "history-deep",
        "tags-bytes",
        "item-json",
        "vector-size",
        "vector-nan",
    ],
)
@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_corrupt_data_names_user_and_key_and_other_tiers_still_load(
    embedded_memory: TieredMemory, kind: str, value: Any, broken: str, mode: str
) -> None:
    memory = embedded_memory
    _fill(memory)
    _fill(memory, "bob")
    key = _corrupt(memory, "alice", kind, value)
    memory.summaries.index_cache.clear()  # type: ignore[attr-defined]

    if mode == "sync":
        snap = memory.load("alice", "tea", max_messages=10, k=3)
    else:
        snap = await memory.aload("alice", "tea", max_messages=10, k=3)
    parts = {"tags": snap.tags, "history": snap.history, "recalled": snap.recalled}
    assert parts.pop(broken) in ({}, [])
    assert all(parts.values()), parts  # every other tier loaded

    reads = {
        "history": lambda: memory.history.since("alice", 0),
        "tags": lambda: memory.get_user_tags("alice"),
        "recalled": lambda: memory.recall_summaries("alice", "tea"),
    }
    with pytest.raises(CorruptMemoryError) as info:
        reads[broken]()
    assert "'alice'" in str(info.value) and key in str(info.value)
    assert isinstance(info.value, ValueError)
    bob = memory.load("bob", "tea", max_messages=10, k=3)  # a bystander is untouched
    assert bob.tags and bob.history and bob.recalled


def test_a_corrupt_watermark_is_reported_and_skipped_by_pending_users(
    embedded_memory: TieredMemory,
) -> None:
    memory = embedded_memory
    memory.add_session_log("alice", [HumanMessage("a")])
    memory.add_session_log("bob", [HumanMessage("b")])
    _corrupt(memory, "alice", "meta", b"twelve")
    with pytest.raises(CorruptMemoryError, match="alice"):
        memory.summaries.get_watermark("alice")
    assert memory.pending_users(1) == ["bob"]


class _NaNEmbeddings(Embeddings):
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[math.nan] * 8 for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        return [math.nan] * 8


def test_non_finite_vectors_are_refused_on_write(memory_factory: MemoryFactory) -> None:
    memory = memory_factory(embeddings=_NaNEmbeddings())
    with pytest.raises(InvalidSummaryError, match="NaN"):
        memory.add_summaries("alice", ["Alice likes tea."])
    assert memory.summaries.get_all("alice") == []


# --------------------------------------------------------------------------- 9. bounds


def test_the_per_user_item_cap_refuses_the_batch_whole(memory_factory: MemoryFactory) -> None:
    memory = memory_factory()
    memory.summaries.max_items = 3
    memory.add_summaries("alice", ["Alice likes tea.", "Alice has a cat named Tom."])
    with pytest.raises(SummaryLimitError, match="max_items"):
        memory.add_summaries("alice", ["Alice lives in Lyon.", "Alice was born in May."])
    assert len(memory.summaries.get_all("alice")) == 2  # nothing of the batch
    memory.add_summaries("alice", ["Alice plays the violin."])  # up to the cap is fine
    assert len(memory.summaries.get_all("alice")) == 3
    memory.add_summaries("bob", ["Bob likes coffee."])  # per user


def test_the_index_cache_is_bounded_by_bytes(embedded_memory: TieredMemory) -> None:
    memory = embedded_memory
    store = memory.summaries
    assert isinstance(store, RedisSummaryStore)
    for user in ("u1", "u2", "u3"):
        memory.add_summaries(user, [f"{user} fact number {i} about tea" for i in range(40)])
        memory.recall_summaries(user, "tea")
    one_user = store.index_cache.nbytes() // len(store.index_cache)
    assert len(store.index_cache) == 3 and one_user > 0
    store.index_cache.max_bytes = int(one_user * 1.5)
    memory.recall_summaries("u1", "tea")  # a refreshed read re-checks the budget
    memory.add_summaries("u4", ["u4 likes tea."])
    memory.recall_summaries("u4", "tea")
    # least recently used first: u2 and u3 go, u1 (just read) and u4 fit the budget
    assert len(store.index_cache) == 2 and store.index_cache.nbytes() <= store.index_cache.max_bytes
    assert [d.page_content for d in memory.recall_summaries("u2", "fact number 7", 1)]


# --------------------------------------------------------------------------- 10. mutants


def test_in_memory_watermark_must_match_exactly() -> None:
    store = InMemorySummaryStore(embeddings=HashingEmbeddings())
    store.add("u", ["Alice likes tea."], watermark=(0, 10))
    # a summarizer that read watermark 20 (the user was forgotten and refilled since)
    with pytest.raises(WatermarkConflict):
        store.add("u", ["Alice likes coffee."], watermark=(20, 30))
    with pytest.raises(WatermarkConflict):
        store.add("u", ["Alice likes coffee."], watermark=(5, 30))
    assert store.get_watermark("u") == 10 and len(store.get_all("u")) == 1


class _FixedEmbeddings(Embeddings):
    """Vectors chosen per text, to put items at a known cosine from each other."""

    def __init__(self, table: dict[str, Sequence[float]]) -> None:
        self.table = table

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [list(self.table[t]) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return list(self.table.get(text, [1.0, 0.0]))


def _at_cosine(c: float) -> list[float]:
    return [c, math.sqrt(1 - c * c)]


@pytest.mark.parametrize(
    ("cosine", "kept"),
    [(0.999, False), (DEDUP_THRESHOLD + 0.01, False), (DEDUP_THRESHOLD - 0.02, True), (0.8, True)],
)
def test_dedup_threshold_boundary(memory_factory: MemoryFactory, cosine: float, kept: bool) -> None:
    # the same words, case and punctuation aside: a restatement when the cosine is high
    emb = _FixedEmbeddings({"Base fact": [1.0, 0.0], "base FACT!": _at_cosine(cosine)})
    memory = memory_factory(embeddings=emb)
    memory.add_summaries("u", ["Base fact"])
    ids = memory.add_summaries("u", ["base FACT!"])
    assert bool(ids) is kept
    assert len(memory.summaries.get_all("u")) == (2 if kept else 1)


@pytest.mark.parametrize(
    "other",
    ["The user's father lives in Hangzhou.", "用户的爸爸住在杭州。", "用户不吃肉。"],
)
def test_a_near_vector_that_says_other_words_is_kept(
    memory_factory: MemoryFactory, other: str
) -> None:
    """Embedding models put facts that differ in one word at a high cosine (multilingual
    e5: 0.99 for mother/father): only the same words make a restatement."""
    base = {
        "The user's father lives in Hangzhou.": "The user's mother lives in Hangzhou.",
        "用户的爸爸住在杭州。": "用户的妈妈住在杭州。",
        "用户不吃肉。": "用户吃肉。",
    }[other]
    emb = _FixedEmbeddings({base: [1.0, 0.0], other: _at_cosine(0.999)})
    memory = memory_factory(embeddings=emb)
    memory.add_summaries("u", [base])
    assert len(memory.add_summaries("u", [other])) == 1
    # within one batch too
    memory.forget_user("u")
    assert len(memory.add_summaries("u", [base, other])) == 2


# --------------------------------------------------------------------------- issue 32, item 14


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda m: m.load_context("u", max=10**20), "max must be from 0"),
        (lambda m: m.load_context("u", max=-1), "max must be from 0"),
        (lambda m: m.load("u", "hi", max_messages=2.5), "max_messages must be a whole"),
        (lambda m: m.recall_summaries("u", "tea", n=1.5), "n must be a whole number"),
        (lambda m: m.recall_summaries("u", "tea", n=True), "n must be a whole number"),
        (
            lambda m: m.add_session_log(
                "u", [HumanMessage("hi")], thread_id="t\ud800", thread_position=0
            ),
            "not valid text",
        ),
        (lambda m: m.add_session_log("u", [HumanMessage("hi")], thread_id=""), "thread_id"),
    ],
)
def test_bad_counts_and_thread_ids_are_clear_errors_and_write_nothing(
    memory_factory: MemoryFactory, call: Any, error: str
) -> None:
    from langchain_tiered_memory import InvalidArgumentError

    memory = memory_factory()
    memory.add_session_log("u", [HumanMessage("kept")])
    with pytest.raises(InvalidArgumentError, match=error):
        call(memory)
    assert [m.text for m in memory.load_context("u")] == ["kept"]


def test_nul_in_a_tag_given_as_bytes_or_an_item_and_nan_metadata_are_refused(
    memory_factory: MemoryFactory,
) -> None:
    memory = memory_factory()
    with pytest.raises(InvalidTagError, match="control characters"):
        memory.set_user_tags("u", {"name": b"Al\x00ice"})
    with pytest.raises(InvalidSummaryError, match="control characters"):
        memory.add_summaries("u", ["Alice\x00 likes tea"])
    with pytest.raises(InvalidSummaryError, match="JSON"):
        memory.add_summaries("u", ["Alice likes tea"], metadata={"x": math.nan})
    assert memory.get_user_tags("u") == {} and memory.summaries.get_all("u") == []


def test_a_user_id_with_a_period_is_erased_and_exported_beside_a_langgraph_store(
    memory_factory: MemoryFactory,
) -> None:
    """Item 7: LangGraph refuses '.' in a namespace label, so such a user has no store items;
    forget/export skip that namespace instead of failing (and erasing nothing)."""
    from langgraph.store.memory import InMemoryStore

    memory = memory_factory()
    user = "ann.lee@example.com"
    memory.add_session_log(user, [HumanMessage("hi")])
    store = InMemoryStore()
    exported = memory.export_user(user, store=store)
    assert exported["history"]["messages"][0]["data"]["content"] == "hi"
    assert memory.forget_user(user, store=store)["history"] == 1
    assert memory.load_context(user) == []

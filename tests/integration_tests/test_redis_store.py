"""The Redis ``BaseStore`` against LangGraph's ``InMemoryStore``, LangMem and real servers.

The differential test runs the same random sequences of operations on both stores (same
embeddings) and compares every result. Where the reference has a quirk of its own it is
named at the comparison: it lists namespaces whose items were all deleted (or that were
only read), and orders an unranked search by insertion where ours (as ``PostgresStore``)
orders it newest first.
"""

from __future__ import annotations

import asyncio
import copy
import time
import uuid
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.store.base import (
    GetOp,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchItem,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

from langchain_tiered_memory import EmbeddedRedis, HashingEmbeddings, TieredMemory
from langchain_tiered_memory.persistence.store import AsyncRedisStore, RedisStore

EMBEDDINGS = HashingEmbeddings()
DIMS = len(EMBEDDINGS.embed_query("x"))
INDEX: Any = {"dims": DIMS, "embed": EMBEDDINGS, "fields": ["text"]}


@pytest.fixture(scope="module")
def embedded_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server = EmbeddedRedis(tmp_path_factory.mktemp("store-embedded")).start()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(params=["embedded", "cluster"])
def server_url(request: pytest.FixtureRequest) -> str:
    fixture = {"embedded": "embedded_url", "cluster": "redis_cluster_url"}[request.param]
    return str(request.getfixturevalue(fixture))


# --------------------------------------------------------------------------- differential

NAMESPACES = [("a",), ("a", "b"), ("a", "b", "c"), ("b",), ("b", "a"), ("ab",)]
WORDS = ["tea", "coffee", "birthday", "May", "Paris", "Berlin", "likes", "green"]


@st.composite
def puts(draw: st.DrawFn) -> PutOp:
    namespace = draw(st.sampled_from(NAMESPACES))
    key = draw(st.sampled_from(["k1", "k2", "k3"]))
    if draw(st.booleans()) and draw(st.booleans()):
        return PutOp(namespace, key, None)  # a delete
    words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3))
    # the text names its key: InMemoryStore raises on two equal texts in one batch
    # (its embedding bookkeeping dedups texts), which tests below check ours does not do
    text = " ".join([*words, "/".join(namespace), key])
    return PutOp(namespace, key, {"text": text, "n": draw(st.integers(0, 3))})


gets = st.builds(
    GetOp, namespace=st.sampled_from(NAMESPACES), key=st.sampled_from(["k1", "k2", "k3"])
)
filters = st.one_of(
    st.none(),
    st.builds(lambda n: {"n": n}, st.integers(0, 3)),
    st.builds(lambda n: {"n": {"$gte": n}}, st.integers(0, 3)),
)
searches = st.builds(
    SearchOp,
    namespace_prefix=st.sampled_from([(), *NAMESPACES]),
    filter=filters,
    limit=st.sampled_from([1, 2, 100]),
    offset=st.sampled_from([0, 1]),
    query=st.one_of(st.none(), st.sampled_from(WORDS)),
)
conditions = st.lists(
    st.builds(
        MatchCondition,
        match_type=st.sampled_from(["prefix", "suffix"]),
        path=st.sampled_from([("a",), ("b",), ("a", "*"), ("*", "a")]),
    ),
    max_size=2,
).map(tuple)
listings = st.builds(
    ListNamespacesOp,
    match_conditions=conditions,
    max_depth=st.one_of(st.none(), st.integers(1, 2)),
    limit=st.just(100),
    offset=st.just(0),
)
operations = st.lists(st.one_of(puts(), puts(), gets, searches, listings), min_size=1, max_size=25)


def _has_items(reference: InMemoryStore, namespace: tuple[str, ...]) -> bool:
    return bool(reference._data.get(namespace))


def _compare(reference: InMemoryStore, op: Any, expected: Any, got: Any) -> None:
    if isinstance(op, GetOp):
        assert (got.value if got else None) == (expected.value if expected else None)
    elif isinstance(op, ListNamespacesOp):
        # the reference also lists namespaces whose items were all deleted (or only read)
        live = [n for n in reference._data if _has_items(reference, n)]
        again = InMemoryStore()
        for namespace in live:
            again.put(namespace, "x", {"x": 1})
        assert got == again.batch([op])[0]
    elif isinstance(op, SearchOp):
        if op.query is None:
            # unranked: the reference in insertion order, ours newest first; same page size
            assert len(got) == len(expected)
            if op.offset == 0 and op.limit == 100:
                assert {(tuple(i.namespace), i.key) for i in got} == {
                    (tuple(i.namespace), i.key) for i in expected
                }
        else:
            assert [round(i.score or 0, 5) for i in got] == [
                round(i.score or 0, 5) for i in expected
            ]
            ranked: list[SearchItem] = reference.batch([op._replace(limit=1000, offset=0)])[0]  # type: ignore[assignment]
            everything = {(tuple(i.namespace), i.key): round(i.score or 0, 5) for i in ranked}
            for item in got:
                assert everything[(tuple(item.namespace), item.key)] == round(item.score or 0, 5)
                assert item.value == reference.get(tuple(item.namespace), item.key).value  # type: ignore[union-attr]


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(batches=st.lists(operations, min_size=1, max_size=4))
def test_same_results_as_langgraphs_in_memory_store(
    embedded_url: str, batches: list[list[Any]]
) -> None:
    reference = InMemoryStore(index=INDEX)
    with RedisStore.from_url(
        embedded_url, key_prefix=f"d{uuid.uuid4().hex[:8]}", index=INDEX
    ) as store:
        for ops in batches:
            # both answer reads from the state before the batch's own puts
            before = copy.deepcopy(reference)
            expected = reference.batch(ops)
            got = store.batch(ops)
            for op, want, have in zip(ops, expected, got, strict=True):
                _compare(before, op, want, have)


# --------------------------------------------------------------------------- servers


def test_store_on_each_server_sync_and_async(server_url: str, key_prefix: str) -> None:
    with RedisStore.from_url(server_url, key_prefix=key_prefix, index=INDEX) as store:
        for n in range(30):  # namespaces spread over the cluster's slots
            store.put(("users", f"u{n}", "memories"), "m", {"text": f"likes tea {n}", "n": n})
        assert len(store.list_namespaces(prefix=("users",))) == 30
        assert store.list_namespaces(prefix=("users",), max_depth=1) == [("users",)]
        found = store.search(("users",), query="tea", filter={"n": {"$lt": 3}}, limit=10)
        assert sorted(i.value["n"] for i in found) == [0, 1, 2]
        assert all(i.score is not None for i in found)

    async def main() -> list[Any]:
        async with AsyncRedisStore.from_url(server_url, key_prefix=key_prefix) as store:
            await store.aput(("users", "u1", "memories"), "m", {"text": "async", "n": -1})
            got = await store.aget(("users", "u1", "memories"), "m")
            await store.adelete(("users", "u2", "memories"), "m")
            return [got.value if got else None, await store.alist_namespaces(suffix=("memories",))]

    value, namespaces = asyncio.run(main())
    assert value == {"text": "async", "n": -1}
    assert len(namespaces) == 29  # u2's only item is gone, so is its namespace


def test_item_ttl_expires_and_reads_refresh(
    embedded_url: str, key_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The store's clock is the client's (time.time() in persistence/store/base.py): the
    # test moves it, so no assertion depends on how long a step takes (issue 47 item 4:
    # one-second sleeps against a one-second TTL raced on a loaded machine).
    from langchain_tiered_memory.persistence.store import base as store_base

    now = [time.time()]
    monkeypatch.setattr(store_base, "time", SimpleNamespace(time=lambda: now[0]))
    ttl: Any = {"default_ttl": 1, "refresh_on_read": True}  # one minute
    with RedisStore.from_url(embedded_url, key_prefix=key_prefix, ttl=ttl) as store:
        store.put(("t",), "short", {"v": 1})
        store.put(("t",), "forever", {"v": 2}, ttl=None)
        now[0] += 40
        assert store.get(("t",), "short") is not None  # refreshed: one more minute
        now[0] += 40
        assert store.get(("t",), "short", refresh_ttl=False) is not None
        now[0] += 40
        assert store.get(("t",), "short") is None
        assert [i.key for i in store.search(("t",))] == ["forever"]
        assert store.sweep_ttl() == 1
        assert store.connection.sync.hlen(store.keys.store_key(("t",), "items")) == 1


def test_equal_texts_in_one_batch_are_each_indexed(embedded_url: str, key_prefix: str) -> None:
    # LangGraph's InMemoryStore raises "Number of embeddings (1) does not match number of
    # indices (2)" on this batch; both items must be stored and found
    ops = [PutOp(("a",), "k1", {"text": "tea"}), PutOp(("a",), "k2", {"text": "tea"})]
    with pytest.raises(ValueError, match="Number of embeddings"):
        InMemoryStore(index=INDEX).batch(ops)
    with RedisStore.from_url(embedded_url, key_prefix=key_prefix, index=INDEX) as store:
        store.batch(ops)
        found = store.search(("a",), query="tea")
        assert sorted(i.key for i in found) == ["k1", "k2"]
        assert found[0].score == pytest.approx(found[1].score) and (found[0].score or 0) > 0.9


def test_bad_values_fail_the_batch_before_any_write(embedded_url: str, key_prefix: str) -> None:
    with RedisStore.from_url(embedded_url, key_prefix=key_prefix) as store:
        store.put(("ns",), "kept", {"v": 1})
        with pytest.raises(TypeError, match="not JSON-serializable"):
            store.batch([PutOp(("ns",), "kept", {"v": 2}), PutOp(("ns",), "bad", {"v": object()})])
        assert store.get(("ns",), "kept").value == {"v": 1}  # type: ignore[union-attr]
        assert store.get(("ns",), "bad") is None
        with pytest.raises(ValueError, match="periods"):
            store.batch([GetOp(("a.b",), "k")])
        for ttl in (0, -1.0, float("inf"), 1e300):
            with pytest.raises(ValueError, match="positive number of minutes"):
                store.put(("ns",), "kept", {"v": 3}, ttl=ttl)
        assert store.get(("ns",), "kept").value == {"v": 1}  # type: ignore[union-attr]


# --------------------------------------------------------------------------- LangMem


def test_langmem_tools_manage_and_search_memories_in_a_graph(
    embedded_url: str, key_prefix: str
) -> None:
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage
    from langmem import create_manage_memory_tool, create_search_memory_tool

    from langchain_tiered_memory.testing import ScriptedChatModel

    namespace = ("memories", "{user_id}")
    manage = create_manage_memory_tool(namespace=namespace)
    search = create_search_memory_tool(namespace=namespace)

    def call(name: str, args: dict[str, Any]) -> AIMessage:
        return AIMessage(
            content="", tool_calls=[{"name": name, "args": args, "id": uuid.uuid4().hex}]
        )

    model = ScriptedChatModel(
        replies=[
            call(manage.name, {"content": "Alice's birthday is on May 8.", "action": "create"}),
            "Noted.",
            call(search.name, {"query": "birthday"}),
            "Your birthday is on May 8.",
        ]
    )
    memory = TieredMemory.from_url(embedded_url, key_prefix=key_prefix, embeddings=EMBEDDINGS)
    with memory:
        store = memory.store(index={"dims": DIMS, "fields": ["content"]})
        agent = create_agent(model, tools=[manage, search], store=store)
        config: Any = {"configurable": {"user_id": "alice"}}
        agent.invoke({"messages": [("user", "My birthday is on May 8.")]}, config)
        stored = store.search(("memories", "alice"), query="birthday")
        assert [i.value["content"] for i in stored] == ["Alice's birthday is on May 8."]
        result = agent.invoke({"messages": [("user", "When is my birthday?")]}, config)
        tool_output = next(m for m in result["messages"] if m.type == "tool").content
        assert "May 8" in str(tool_output)

        exported = memory.export_user("alice", store=store)
        assert [i["value"]["content"] for i in exported["store"]] == [
            "Alice's birthday is on May 8."
        ]
        removed = memory.forget_user("alice", store=store)
        assert removed["store_items"] == 1
        assert store.search(("memories", "alice")) == []

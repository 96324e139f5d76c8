"""``stores.turn.RedisTiers``: a turn's read of the three Redis tiers in one round trip."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory import (
    EmbeddedRedis,
    HashingEmbeddings,
    InMemorySummaryStore,
    RedisConnection,
    RedisSummaryStore,
    TieredMemory,
)
from langchain_tiered_memory.stores.turn import RedisTiers


def test_only_three_redis_stores_on_one_connection_are_read_together(
    embedded_server: EmbeddedRedis,
) -> None:
    memory = TieredMemory.embedded(embedded_server.data_dir, embeddings=HashingEmbeddings())
    try:
        assert RedisTiers.of(memory.history, memory.tags, memory.summaries) is not None
        in_memory = InMemorySummaryStore(embeddings=HashingEmbeddings())
        assert RedisTiers.of(memory.history, memory.tags, in_memory) is None
        other = RedisSummaryStore(
            RedisConnection(embedded_server.url, cluster=False), embeddings=HashingEmbeddings()
        )
        assert RedisTiers.of(memory.history, memory.tags, other) is None
        memory.summaries = in_memory  # an app swapping a store: load takes the per-store path
        assert memory._tiers is None
    finally:
        memory.close()


def test_one_round_trip_reads_what_each_store_reads(embedded_server: EmbeddedRedis) -> None:
    memory = TieredMemory.embedded(
        embedded_server.data_dir, embeddings=HashingEmbeddings(), key_prefix="turn"
    )
    try:
        memory.set_user_tags("alice", {"name": "Alice", "age": 30})
        memory.add_session_log("alice", [HumanMessage("I have a cat."), AIMessage("Nice!")])
        memory.add_summaries("alice", ["Alice has a cat named Tom."])
        tiers = RedisTiers.of(memory.history, memory.tags, memory.summaries)
        assert tiers is not None
        replies = tiers.fetch("alice", max_messages=1)
        assert tiers.tags("alice", replies) == memory.get_user_tags("alice")
        assert [m.text for m in tiers.messages("alice", replies)] == ["Nice!"]
        recalled = tiers.recall("alice", replies, "cat named Tom", 1)
        assert [d.page_content for d in recalled] == ["Alice has a cat named Tom."]
        assert tiers.messages("alice", tiers.fetch("alice", max_messages=0)) == []
        # user_ttl: the same round trip restarts the clock of every key the user has
        touched = tiers.fetch("alice", max_messages=0, touch_ms=60_000)
        assert touched.history is None and tiers.tags("alice", touched)["name"] == "Alice"
        raw = tiers.history.connection.sync
        live = [k for k in tiers.history.keys.all_keys("alice") if raw.exists(k)]
        assert live and all(0 < raw.pttl(k) <= 60_000 for k in live)
        memory.forget_user("alice")
        scan = list(tiers.history.connection.sync.scan_iter(match="turn:*alice*"))
        assert scan == []  # purge left no key of the user
    finally:
        memory.close()


async def test_async_round_trip_matches(embedded_server: EmbeddedRedis) -> None:
    memory = TieredMemory.embedded(
        embedded_server.data_dir, embeddings=HashingEmbeddings(), key_prefix="aturn"
    )
    try:
        await memory.aset_user_tags("bob", {"name": "Bob"})
        await memory.aadd_summaries("bob", ["Bob lives in Oslo."])
        tiers = memory._tiers
        assert tiers is not None
        replies = await tiers.afetch("bob", max_messages=5)
        assert tiers.tags("bob", replies) == {"name": "Bob"}
        recalled = await tiers.arecall("bob", replies, "Oslo", 1)
        assert [d.page_content for d in recalled] == ["Bob lives in Oslo."]
        await memory.aforget_user("bob")
        assert await tiers.afetch("bob", max_messages=5) == tiers.fetch("bob", max_messages=5)
    finally:
        await memory.aclose()


def test_facade_sends_no_redis_command_itself() -> None:
    source = (Path(__file__).parents[2] / "langchain_tiered_memory" / "memory.py").read_text()
    for needle in (".sync.", ".aio.", "pipeline(", "import redis", "from redis"):
        assert needle not in source, needle


@pytest.mark.parametrize("max_messages", [0, 3])
def test_fetch_sends_only_what_is_asked(embedded_server: EmbeddedRedis, max_messages: int) -> None:
    memory = TieredMemory.embedded(embedded_server.data_dir, embeddings=HashingEmbeddings())
    try:
        tiers = memory._tiers
        assert tiers is not None
        replies = tiers.fetch("carol", max_messages=max_messages)
        assert (replies.history is None) == (max_messages == 0)
    finally:
        memory.close()

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
from langchain_tiered_memory._steps import adrive, drive
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
        assert memory.tiers.redis is None
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
        recalled = drive(tiers.recall("alice", replies, ["cat named Tom"], 1))
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
        tiers = memory.tiers.redis
        assert tiers is not None
        replies = await tiers.afetch("bob", max_messages=5)
        assert tiers.tags("bob", replies) == {"name": "Bob"}
        recalled = await adrive(tiers.recall("bob", replies, ["Oslo"], 1))
        assert [d.page_content for d in recalled] == ["Bob lives in Oslo."]
        await memory.aforget_user("bob")
        assert await tiers.afetch("bob", max_messages=5) == tiers.fetch("bob", max_messages=5)
    finally:
        await memory.aclose()


def test_facade_sends_no_redis_command_itself() -> None:
    for path in (Path(__file__).parents[2] / "langchain_tiered_memory" / "memory").glob("*.py"):
        source = path.read_text()
        for needle in (".sync.", ".aio.", "pipeline(", "import redis", "from redis"):
            assert needle not in source, f"{path.name}: {needle}"


@pytest.mark.parametrize("max_messages", [0, 3])
def test_fetch_sends_only_what_is_asked(embedded_server: EmbeddedRedis, max_messages: int) -> None:
    memory = TieredMemory.embedded(embedded_server.data_dir, embeddings=HashingEmbeddings())
    try:
        tiers = memory.tiers.redis
        assert tiers is not None
        replies = tiers.fetch("carol", max_messages=max_messages)
        assert (replies.history is None) == (max_messages == 0)
    finally:
        memory.close()


class _Sends:
    """Counts the packed writes to Redis (a pipeline is one) while in its block."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import redis.asyncio.connection as async_connection
        import redis.connection as sync_connection

        self.count = 0
        for module in (sync_connection, async_connection):
            original = module.AbstractConnection.send_packed_command

            def counted(conn: object, *args: object, _o: object = original, **kw: object) -> object:
                self.count += 1
                return _o(conn, *args, **kw)  # type: ignore[operator]

            monkeypatch.setattr(module.AbstractConnection, "send_packed_command", counted)


def test_a_saved_turn_is_one_round_trip_as_its_load_is(
    embedded_server: EmbeddedRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Append, the user's retention clock and the summary queue's note are sent together;
    before, a save was three round trips (append, note, touch)."""
    memory = TieredMemory.embedded(
        embedded_server.data_dir,
        embeddings=HashingEmbeddings(),
        key_prefix="save",
        summarize_after=4,
        user_ttl=3600,
    )
    try:
        turn = [HumanMessage("I have a cat."), AIMessage("Nice!")]
        memory.add_session_log("bob", turn)  # the server caches the scripts
        memory.load("bob", "cat")
        sends = _Sends(monkeypatch)
        memory.add_session_log("alice", turn)
        assert sends.count == 1
        memory.load("alice", "cat")
        assert sends.count == 2
        memory.add_session_log("alice", turn, thread_id="t", thread_position=0)
        assert sends.count == 3
        # what the three did: stored, clock restarted, queued at the threshold
        assert [m.text for m in memory.load_context("alice")] == ["I have a cat.", "Nice!"] * 2
        raw = memory.history.connection.sync  # type: ignore[attr-defined]
        live = [k for k in memory.history.keys.all_keys("alice") if raw.exists(k)]  # type: ignore[attr-defined]
        assert live and all(0 < raw.pttl(k) <= 3_600_000 for k in live)
        assert memory.queue is not None
        assert memory.queue.pending_users(4) == ["alice"]
        entries = memory.queue.keys.queue_key(memory.queue.shard_of("alice"), "entries")
        assert raw.hexists(entries, "alice")  # queued: 4 messages reached summarize_after
    finally:
        memory.close()


async def test_an_async_saved_turn_is_one_round_trip(
    embedded_server: EmbeddedRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = TieredMemory.embedded(
        embedded_server.data_dir,
        embeddings=HashingEmbeddings(),
        key_prefix="asave",
        summarize_after=2,
        user_ttl=3600,
    )
    try:
        turn = [HumanMessage("I have a dog."), AIMessage("Nice!")]
        await memory.aadd_session_log("bob", turn)
        sends = _Sends(monkeypatch)
        await memory.aadd_session_log("alice", turn)
        assert sends.count == 1
        assert [m.text for m in await memory.aload_context("alice")] == ["I have a dog.", "Nice!"]
        assert memory.queue is not None and memory.queue.pending_users(2) == ["alice", "bob"]
    finally:
        await memory.aclose()


async def test_a_save_after_the_server_lost_its_scripts_stores_the_turn_once(
    embedded_server: EmbeddedRedis,
) -> None:
    """``SCRIPT FLUSH`` (a restarted or failed-over server): the pipelined EVALSHAs are
    refused and each is sent again by its source, once; the turn is stored once."""
    memory = TieredMemory.embedded(
        embedded_server.data_dir,
        embeddings=HashingEmbeddings(),
        key_prefix="flush",
        summarize_after=2,
        user_ttl=3600,
    )
    try:
        raw = memory.history.connection.sync  # type: ignore[attr-defined]
        raw.script_flush()
        memory.add_session_log("alice", [HumanMessage("one"), AIMessage("two")])
        raw.script_flush()
        await memory.aadd_session_log("alice", [HumanMessage("three")])
        assert [m.text for m in memory.load_context("alice")] == ["one", "two", "three"]
        assert memory.queue is not None and memory.queue.pending_users(3) == ["alice"]
    finally:
        memory.close()

"""A turn's storage (``stores.turn``): one interface, the Redis one a round trip each way."""

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
from langchain_tiered_memory.stores.redis_turn import RedisTurn
from langchain_tiered_memory.stores.turn import ComposedTurn


def test_only_three_redis_stores_on_one_connection_are_read_together(
    embedded_server: EmbeddedRedis,
) -> None:
    memory = TieredMemory.embedded(embedded_server.data_dir, embeddings=HashingEmbeddings())
    try:
        assert RedisTurn.of(memory.history, memory.tags, memory.summaries) is not None
        assert isinstance(memory.tiers.turn, RedisTurn)
        in_memory = InMemorySummaryStore(embeddings=HashingEmbeddings())
        assert RedisTurn.of(memory.history, memory.tags, in_memory) is None
        other = RedisSummaryStore(
            RedisConnection(embedded_server.url, cluster=False), embeddings=HashingEmbeddings()
        )
        assert RedisTurn.of(memory.history, memory.tags, other) is None
        memory.summaries = in_memory  # an app swapping a store: the turn is composed again
        assert isinstance(memory.tiers.turn, ComposedTurn)
        assert memory.tiers.turn is memory.tiers.turn  # chosen once for these stores
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
        storage = RedisTurn.of(memory.history, memory.tags, memory.summaries)
        assert storage is not None
        read = drive(storage.read("alice", 1))
        assert drive(read.tags.run()) == memory.get_user_tags("alice")
        assert [m.text for m in drive(read.history.run())] == ["Nice!"]
        recalled = drive(read.recall(["cat named Tom"], 1).run())
        assert [d.page_content for d in recalled] == ["Alice has a cat named Tom."]
        assert drive(drive(storage.read("alice", 0)).history.run()) == []
        # user_ttl: the same round trip restarts the clock of every key the user has
        touched = drive(storage.read("alice", 0, touch_ms=60_000))
        assert drive(touched.tags.run())["name"] == "Alice"
        raw = storage.history.connection.sync
        live = [k for k in storage.history.keys.all_keys("alice") if raw.exists(k)]
        assert live and all(0 < raw.pttl(k) <= 60_000 for k in live)
        memory.forget_user("alice")
        scan = list(storage.history.connection.sync.scan_iter(match="turn:*alice*"))
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
        storage = memory.tiers.turn
        read = await adrive(storage.read("bob", 5, thread_id="t-bob"))
        assert await adrive(read.tags.run()) == {"name": "Bob"}
        assert read.thread == (None, False)
        recalled = await adrive(read.recall(["Oslo"], 1).run())
        assert [d.page_content for d in recalled] == ["Bob lives in Oslo."]
    finally:
        await memory.aclose()


def test_the_turn_read_names_the_thread_record_it_judged_on(
    embedded_server: EmbeddedRedis,
) -> None:
    """The record comes back by name, whatever else the round trip holds (before: the
    claim's reply was read by its position, which moved with ``max_messages``)."""
    memory = TieredMemory.embedded(
        embedded_server.data_dir, embeddings=HashingEmbeddings(), key_prefix="rec", user_ttl=600
    )
    try:
        memory.load("ann", "hi", thread_id="t-ann")
        storage = memory.tiers.turn
        for max_messages in (0, 5):
            for touch_ms in (None, 60_000):
                read = drive(
                    storage.read("ann", max_messages, thread_id="t-ann", touch_ms=touch_ms)
                )
                assert read.thread == ("ann", True)
                assert drive(storage.read("bo", max_messages, thread_id="t-ann")).thread == (
                    "ann",
                    False,
                )
    finally:
        memory.close()


def test_facade_sends_no_redis_command_itself() -> None:
    for path in (Path(__file__).parents[2] / "langchain_tiered_memory" / "memory").glob("*.py"):
        source = path.read_text()
        for needle in (".sync.", ".aio.", "pipeline(", "import redis", "from redis"):
            assert needle not in source, f"{path.name}: {needle}"


@pytest.mark.parametrize("max_messages", [0, 3])
def test_fetch_sends_only_what_is_asked(embedded_server: EmbeddedRedis, max_messages: int) -> None:
    memory = TieredMemory.embedded(embedded_server.data_dir, embeddings=HashingEmbeddings())
    try:
        storage = memory.tiers.turn
        assert isinstance(storage, RedisTurn)
        commands = storage._commands("carol", max_messages, None, None)
        assert ("history" in commands) == (max_messages > 0)
        assert drive(drive(storage.read("carol", max_messages)).history.run()) == []
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


def test_the_owners_turn_on_a_thread_is_one_round_trip_each_way(
    embedded_server: EmbeddedRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The thread's owner record comes in the read's round trip, judged by the guard
    without another; only a thread's first turn sends more: the memory's checkpointer asked
    whether it holds the thread, the claim, the new record's clock (``user_ttl``)."""
    memory = TieredMemory.embedded(
        embedded_server.data_dir, embeddings=HashingEmbeddings(), key_prefix="tsave", user_ttl=60
    )
    try:
        turn = [HumanMessage("I have a cat."), AIMessage("Nice!")]
        memory.load("bob", "cat", thread_id="warm")  # the server caches the scripts
        sends = _Sends(monkeypatch)
        memory.load("alice", "cat", thread_id="t")
        assert sends.count == 4
        memory.add_session_log("alice", turn, thread_id="t", thread_position=0)
        assert sends.count == 5
        memory.load("alice", "cat", thread_id="t")
        assert sends.count == 6  # her own thread: the read alone
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
    """``SCRIPT FLUSH`` (a restarted or failed-over server): a batch sends its scripts by
    source, so nothing is refused or sent twice; the turn is stored once."""
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


def test_a_queue_on_another_connection_is_noted_after_the_round_trip(
    embedded_server: EmbeddedRedis,
) -> None:
    """The queue an app gave its own connection cannot ride the save's pipeline: its note
    follows it; the turn is stored and queued all the same."""
    from langchain_tiered_memory.stores.queue import SummaryQueue

    memory = TieredMemory.embedded(
        embedded_server.data_dir,
        embeddings=HashingEmbeddings(),
        key_prefix="apart",
        summarize_after=2,
    )
    own = RedisConnection(embedded_server.url, cluster=False)
    try:
        assert memory.queue is not None
        memory.queue = SummaryQueue(own, keys=memory.queue.keys)
        memory.add_session_log("alice", [HumanMessage("one"), AIMessage("two")])
        assert isinstance(memory.tiers.turn, RedisTurn)
        assert [m.text for m in memory.load_context("alice")] == ["one", "two"]
        assert memory.queue.pending_users(2) == ["alice"]
    finally:
        memory.close()
        own.close()

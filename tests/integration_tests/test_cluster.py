"""The core memory operations on a real 3-master Redis Cluster.

Every key of one user must hash to one slot (multi-key Lua scripts and pipelines depend on
it), users must spread over the masters, and SCAN-based listings must visit every node.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from helpers.fakes import EchoSummarizer, split_turns, turn
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from redis.cluster import RedisCluster

from langchain_tiered_memory import HashingEmbeddings, RedisConnection, TieredMemory

USERS = [f"user-{i}" for i in range(24)] + ["{odd}", "a:b", "*?", "ünï cödé", "x" * 200]


@pytest.fixture
def memory(redis_cluster_url: str, key_prefix: str) -> Iterator[TieredMemory]:
    mem = TieredMemory.from_url(
        redis_cluster_url, key_prefix=key_prefix, embeddings=HashingEmbeddings()
    )
    try:
        yield mem
    finally:
        mem.close()


@pytest.fixture
def cluster(redis_cluster_url: str) -> Iterator[RedisCluster]:
    rc = RedisCluster.from_url(redis_cluster_url)
    try:
        yield rc
    finally:
        rc.close()


def keys_of(cluster: RedisCluster, prefix: str) -> list[bytes]:
    return list(cluster.scan_iter(match=f"{prefix}:*", count=1000))


def test_detects_cluster_and_keeps_each_user_on_one_slot(
    memory: TieredMemory, cluster: RedisCluster, key_prefix: str
) -> None:
    assert memory.connection is not None and memory.connection.is_cluster
    for i, user in enumerate(USERS):
        memory.add_session_log(user, turn(i, 0))
        memory.set_user_tags(user, {"name": f"N{i}", "age": i})
        memory.add_summaries(user, [f"{user} likes item number {i}."])
    keys = keys_of(cluster, key_prefix)
    by_user: dict[str, set[int]] = {}
    keybuilder = memory.history.keys  # type: ignore[attr-defined]
    for key in keys:
        if b":{wq:" in key or b":{dir:}" in key or b":{meta:}" in key:
            continue  # the queue's shards and the console's directory: shared by all users
        user = keybuilder.user_from_key(key)
        assert user in USERS, key
        by_user.setdefault(user, set()).add(cluster.keyslot(key))
    assert set(by_user) == set(USERS)
    for user, slots in by_user.items():
        assert len(slots) == 1, f"{user!r} spans slots {slots}"
        # every kind of key the user can own maps to that slot too
        assert {cluster.keyslot(k) for k in keybuilder.all_keys(user)} == slots
    nodes = {cluster.get_node_from_key(keybuilder.key(u, "history")).name for u in USERS}
    assert len(nodes) == 3, f"users landed on {nodes} only"
    for user in USERS:
        memory.forget_user(user)
    # what is left is the memory's, no user's: its stored format
    assert keys_of(cluster, key_prefix) == [f"{key_prefix}:{{meta:}}:format".encode()]


def test_history_tags_summaries_and_snapshot(memory: TieredMemory) -> None:
    for s in range(30):
        memory.add_session_log("alice", turn(0, s))
    tail = memory.load_context("alice", 7)
    assert len(tail) <= 7 and tail[-1].content == turn(0, 29)[-1].content
    assert split_turns(memory.history.since("alice", 0)[1]) == [(0, s) for s in range(30)]
    # a tool-call turn: the tail never starts with an orphan ToolMessage
    call = AIMessage("", tool_calls=[{"name": "user_tag", "args": {"age": 3}, "id": "c1"}])
    memory.add_session_log(
        "alice", [HumanMessage("hi"), call, ToolMessage("ok", tool_call_id="c1")]
    )
    assert memory.load_context("alice", 1) == []
    assert memory.load_context("alice", 2)[0].tool_calls[0]["id"] == "c1"  # type: ignore[attr-defined]

    assert memory.set_user_tags("alice", {"name": "Alice", "age": 30}) == {
        "name": "Alice",
        "age": "30",
    }
    assert memory.get_user_tag("alice", "age") == "30"
    ids = memory.add_summaries(
        "alice",
        ["Alice's birthday is on May 8.", "Alice has a cat named Tom.", "Alice lives in Oslo."],
        created_at="2023-05-08T13:56",
        metadata={"source": "test"},
    )
    assert ids == ["0", "1", "2"]
    top = memory.recall_summaries("alice", "when is the birthday", n=1)
    assert top[0].page_content == "Alice's birthday is on May 8."
    assert top[0].metadata["source"] == "test" and "score" in top[0].metadata

    snap = memory.load("alice", "cat named", max_messages=5, k=2)
    assert snap.tags == {"name": "Alice", "age": "30"}
    assert snap.recalled[0].page_content == "Alice has a cat named Tom."
    assert 0 < len(snap.history) <= 5

    async def async_side() -> None:
        asnap = await memory.aload("alice", "lives where Oslo", max_messages=5, k=1)
        assert asnap.tags == snap.tags
        assert [m.content for m in asnap.history] == [m.content for m in snap.history]
        assert asnap.recalled[0].page_content == "Alice lives in Oslo."
        await memory.aadd_session_log("alice", turn(0, 99))
        await memory.aset_user_tags("alice", {"age": 31})
        assert await memory.aget_user_tags("alice") == {"name": "Alice", "age": "31"}
        assert (await memory.aload_context("alice", 3))[-1].content == turn(0, 99)[-1].content
        assert await memory.aadd_summaries("alice", ["Alice plays the violin."]) == ["3"]
        found = await memory.arecall_summaries("alice", "violin", n=1)
        assert found[0].page_content == "Alice plays the violin."
        exported = await memory.aexport_user("alice")
        assert len(exported["summaries"]) == 4
        removed = await memory.aforget_user("alice")
        assert removed["summaries"] == 4
        assert await memory.aexport_user("alice") == {
            "user_id": "alice",
            "tags": {},
            "tag_history": [],
            "threads": [],
            "history": {"first_position": 0, "messages": []},
            "summaries": [],
            "watermark": 0,
            # what the memory's own checkpointer and store hold of the user (issue 43)
            "thread_states": [],
            "store": [],
        }
        await memory.aclose()

    asyncio.run(async_side())


def test_export_forget_leave_no_key(
    memory: TieredMemory, cluster: RedisCluster, key_prefix: str
) -> None:
    for user in ("bob", "carol"):
        memory.add_session_log(user, turn(1, 0))
        memory.set_user_tags(user, {"name": user.title()})
        memory.add_summaries(user, [f"{user} enjoys hiking in the mountains."])
    exported = memory.export_user("bob")
    assert exported["tags"] == {"name": "Bob"}
    assert [m["data"]["content"] for m in exported["history"]["messages"]] == [
        m.content for m in turn(1, 0)
    ]
    assert exported["summaries"][0]["text"] == "bob enjoys hiking in the mountains."
    removed = memory.forget_user("bob")
    assert removed == {
        "threads": 0,
        "history": len(turn(1, 0)),
        "tags": 1,
        "summaries": 1,
        "store_items": 0,
    }
    kb = memory.history.keys  # type: ignore[attr-defined]
    keys = keys_of(cluster, key_prefix)
    # the queue's, the console directory's and the memory's own records (its format)
    shared = (b":{wq:", b":{dir:", b":{meta:}")
    assert {kb.user_from_key(k) for k in keys if not any(m in k for m in shared)} == {"carol"}
    # the directory (its own slot): bob's member went with him, carol's stays
    assert [m for m, _ in cluster.zscan_iter(kb.directory_key())] == [b"carol"]
    queue = memory.queue
    assert queue is not None
    assert [u for u in ("bob", "carol") if queue.shard_of(u) is not None] and all(
        cluster.zscore(queue.keys.queue_key(queue.shard_of(u), "wm"), u) is None for u in ("bob",)
    )  # bob left the queue's index too
    assert memory.recall_summaries("bob", "hiking", n=3) == []
    assert memory.recall_summaries("carol", "hiking", n=1)[0].page_content.startswith("carol")


def test_summarize_users_scan_and_pending_across_nodes(
    memory: TieredMemory, cluster: RedisCluster
) -> None:
    users = [f"u{i}" for i in range(12)]
    for i, user in enumerate(users):
        for s in range(3 + i % 3):  # 9 to 25 messages each
            memory.add_session_log(user, turn(i, s))
    kb = memory.history.keys  # type: ignore[attr-defined]
    assert len({cluster.get_node_from_key(kb.key(u, "history")).name for u in users}) == 3
    assert memory.history.users() == sorted(users)  # SCAN visited every master
    assert asyncio.run(memory.history.ausers()) == sorted(users)  # the async client's too
    pending = memory.pending_users(min_messages=12)
    expected = [u for u in users if memory.history.length(u) >= 12]
    assert sorted(pending) == sorted(expected) and expected

    model = EchoSummarizer()
    first = users[0]
    ids = memory.summarize_history(first, model, max_messages=5)
    # the user's 3 of the 5 messages: an echo of what only the assistant said is no memory
    # (attributed to the assistant alone since an item's sources are the messages that said
    # it; the look-alike user messages made it pass as the user's before)
    assert len(ids) == 3 and memory.summaries.get_watermark(first) == 5
    expected.remove(first)  # 12 messages, 5 of them summarized now: 7 pending
    assert sorted(memory.pending_users(min_messages=12)) == sorted(expected)
    done = memory.summarize_pending(model, min_messages=12)
    assert sorted(done) == sorted(expected)
    for user in expected:
        length = memory.history.length(user)
        assert memory.summaries.get_watermark(user) == length
        docs = memory.summaries.get_all(user)
        # one item per message, minus near-duplicates the bag-of-words embeddings merge
        assert 0 < len(docs) <= length
        assert len({d.page_content for d in docs}) == len(docs)
    hit = memory.recall_summaries(users[2], "msg w2 s1 p0", n=1)
    assert hit[0].page_content == "remembered: msg w2 s1 p0 of 3"
    for user in users:
        memory.forget_user(user)
    assert memory.history.users() == []


def test_retention_trim_on_cluster(redis_cluster_url: str, key_prefix: str) -> None:
    with TieredMemory.from_url(
        redis_cluster_url,
        key_prefix=key_prefix,
        embeddings=HashingEmbeddings(),
        history_retention=4,
    ) as memory:
        for s in range(6):
            memory.add_session_log("dora", turn(3, s, size=3))
        memory.summarize_history("dora", EchoSummarizer(), max_messages=10)
        assert memory.history.length("dora") == 18
        first, kept = memory.history.since("dora", 0)
        assert (first, len(kept)) == (10, 8)  # only summarized messages were dropped
        memory.summarize_history("dora", EchoSummarizer(), max_messages=10)
        first, kept = memory.history.since("dora", 0)
        assert (first, len(kept)) == (14, 4)
        assert memory.summaries.get_watermark("dora") == 18
        memory.forget_user("dora")


def test_explicit_cluster_clients_are_used_as_given(
    redis_cluster_url: str, key_prefix: str
) -> None:
    """A RedisCluster passed in is detected as a cluster without a probe, and used: the
    connection's commands go through it (a plain client is not taken for one)."""
    import redis as redis_lib

    rc = RedisCluster.from_url(redis_cluster_url)
    conn = RedisConnection(client=rc)
    try:
        assert conn.is_cluster and conn.sync is rc
        key = f"{key_prefix}:{{given}}:k"
        assert conn.pipelined([("SET", key, "v"), ("GET", key)]) == [True, b"v"]
        assert rc.get(key) == b"v"  # the given client holds what the connection wrote
        rc.delete(key)
    finally:
        rc.close()
    plain = redis_lib.Redis.from_url(redis_cluster_url)
    try:
        assert RedisConnection(client=plain).is_cluster is False
    finally:
        plain.close()


def test_reembed_on_cluster_converts_users_on_every_node(
    redis_cluster_url: str, key_prefix: str, cluster: RedisCluster
) -> None:
    users = USERS[:12] + ["{odd}", "ünï cödé"]
    with TieredMemory.from_url(
        redis_cluster_url, key_prefix=key_prefix, embeddings=HashingEmbeddings(dim=64)
    ) as old:
        for user in users:
            old.add_summaries(user, [f"{user} keeps bees on the roof.", "Likes green tea."])
    with TieredMemory.from_url(
        redis_cluster_url, key_prefix=key_prefix, embeddings=HashingEmbeddings(dim=96)
    ) as new:
        assert new.reembed() == dict.fromkeys(sorted(users), 2)
        for user in users:
            assert "bees" in new.recall_summaries(user, "bees roof", n=1)[0].page_content
        for user in users:
            new.forget_user(user)
    assert keys_of(cluster, key_prefix) == [f"{key_prefix}:{{meta:}}:format".encode()]

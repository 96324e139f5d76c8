"""Erasure leaves no byte of the user behind, and touches nobody else: proven with SCAN + DUMP.

Every tier is filled for two users through the real paths (graph turns with a run id on
``memory.checkpointer()``, the summarization queue, a LangGraph store with an expired but
unswept item and an unreadable one), then one user is forgotten. A SCAN over the whole
keyspace and a ``DUMP`` of every key (``rdbcompression no``, so payloads hold raw bytes)
must find neither the user's id nor its texts, while every key of the other user dumps
exactly as before. Run on Debian's redis-server and on the embedded Valkey.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
import redis

from langchain_tiered_memory import (
    EmbeddedRedis,
    HashingEmbeddings,
    TieredMemory,
    create_memory_graph,
)
from langchain_tiered_memory.testing import ScriptedChatModel

USER, OTHER = "zoë-erase-7f3a", "bob-keeps-9c1d"
SECRET = "xylophone-marmalade"  # in every tier of USER, in no byte of OTHER's


@pytest.fixture(params=["redis-server", "embedded"])
def url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if request.param == "redis-server":
        yield str(request.getfixturevalue("redis_server_url"))
        return
    with EmbeddedRedis(tmp_path_factory.mktemp("erase")) as server:
        yield server.url


def dumps(client: redis.Redis, prefix: str) -> dict[bytes, bytes]:
    """Every key under ``prefix`` and its DUMP payload."""
    found = {}
    for key in client.scan_iter(match=f"{prefix}:*", count=1000):
        payload = client.dump(key)
        if payload is not None:
            found[key] = payload
    return found


def fill(memory: TieredMemory, user: str, secret: str, *, saver: Any, store: Any) -> None:
    model = ScriptedChatModel(replies=[f"I will remember {secret}."])
    graph = create_memory_graph(model, memory=memory, checkpointer=saver)
    for turn in range(2):
        graph.invoke(
            {"messages": [("user", f"turn {turn}: my password hint is {secret}")]},
            {"configurable": {"thread_id": f"thread-of-{user}"}, "run_id": uuid.uuid4()},
            context={"user_id": user},
        )
    memory.set_user_tags(user, {"name": f"{secret.title()} {user}"})
    memory.add_summaries(user, [f"The user's hint is {secret}."])
    store.put(("memories", user), "fact", {"content": f"{user} hint {secret}"})
    store.put(("memories", user, "work"), "job", {"content": f"{secret} at work"})
    store.put(("memories", user), "brief", {"content": f"{secret} expires"}, ttl=0.0005)


def test_forget_user_leaves_no_trace_and_no_change_to_others(url: str, key_prefix: str) -> None:
    client = redis.Redis.from_url(url)
    client.config_set("rdbcompression", "no")  # DUMP payloads hold the raw bytes
    memory = TieredMemory.from_url(
        url, key_prefix=key_prefix, embeddings=HashingEmbeddings(), summarize_after=2
    )
    saver, store = memory.checkpointer(), memory.store()
    try:
        fill(memory, USER, SECRET, saver=saver, store=store)
        fill(memory, OTHER, "plain-toast", saver=saver, store=store)
        queue = memory.queue
        assert queue is not None and USER in queue.indexed_users()  # queued: two turns
        # an item another writer planted that no code can parse, under the user's prefix
        items_key = store.keys.store_key(("memories", USER, "odd"), "items")
        client.hset(items_key, "junk", b"\xff\x00 " + SECRET.encode())
        time.sleep(0.1)  # the TTL item has expired; no sweep ran
        before = dumps(client, key_prefix)
        assert any(SECRET.encode() in p for p in before.values())  # the check can see it

        removed = memory.forget_user(USER, checkpointer=saver, store=store)
        assert removed["threads"] == 1 and removed["store_items"] == 4
        after = dumps(client, key_prefix)
    finally:
        memory.close()
        client.close()

    names = [USER.encode(), quote(USER, safe="").encode(), SECRET.encode()]
    for key, payload in after.items():
        for name in names:
            assert name not in key, f"{key!r} names the forgotten user"
            assert name not in payload, f"the DUMP of {key!r} still holds {name!r}"
    # the other user's keys are byte-for-byte what they were
    others = {k: p for k, p in before.items() if b"bob-keeps" in k}
    assert others and all(after.get(k) == p for k, p in others.items())


def test_user_ttl_expires_threads_and_leaves_the_queue(url: str, key_prefix: str) -> None:
    client = redis.Redis.from_url(url)
    memory = TieredMemory.from_url(
        url,
        key_prefix=key_prefix,
        embeddings=HashingEmbeddings(),
        summarize_after=1,
        user_ttl=1.0,
    )
    try:
        saver = memory.checkpointer()
        fill(memory, USER, SECRET, saver=saver, store=memory.store())
        thread_keys = saver.keys.thread_keys(f"thread-of-{USER}")
        assert all(0 < client.pttl(k) <= 1000 for k in thread_keys if client.exists(k))
        queue = memory.queue
        assert queue is not None and USER in queue.indexed_users()
        time.sleep(1.3)
        assert not any(client.exists(k) for k in thread_keys)  # the messages went with it
        memory.sweep_pending()
        assert USER not in queue.indexed_users()
        # nor does the console's directory name the user once the sweep ran
        key = memory.history.keys.directory_key()  # type: ignore[attr-defined]
        assert client.zscore(key, USER) is None and client.zscore(key, quote(USER, safe="")) is None
    finally:
        memory.close()
        client.close()

"""Several app instances and processes on one Redis: one truth, caches that follow it.

Each process keeps a FAISS index per user, built from Redis and refreshed by a version
(``gen``, ``next_id``) in the user's meta hash: additions are fetched as a delta, deletions
force a rebuild, and ``forget_user`` in one process must not leave recallable data in
another's cache. The cache is an LRU bounded by ``max_cached_users``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.fakes import turn

from langchain_tiered_memory import HashingEmbeddings, RedisSummaryStore, TieredMemory

HELPERS = Path(__file__).resolve().parent / "helpers"


class Peer:
    """The other app: a TieredMemory in another process, or another instance here."""

    def __init__(self, url: str, prefix: str, *, process: bool) -> None:
        self.process = process
        if process:
            self.proc = subprocess.Popen(
                [sys.executable, str(HELPERS / "peer.py"), url, prefix],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
        else:
            self.memory = TieredMemory.from_url(
                url, key_prefix=prefix, embeddings=HashingEmbeddings()
            )

    def __call__(self, op: str, user: str, *args: Any) -> Any:
        if self.process:
            assert self.proc.stdin is not None and self.proc.stdout is not None
            self.proc.stdin.write(json.dumps([op, user, *args]) + "\n")
            self.proc.stdin.flush()
            return json.loads(self.proc.stdout.readline())
        m = self.memory
        if op == "load":
            snap = m.load(user, args[0], max_messages=args[1], k=args[2])
            return {
                "tags": snap.tags,
                "history": [msg.content for msg in snap.history],
                "recalled": [[d.id, d.page_content] for d in snap.recalled],
                "cached_users": len(m.summaries.index_cache),  # type: ignore[attr-defined]
            }
        if op == "tag":
            return m.set_user_tags(user, args[0])
        if op == "add":
            return m.add_summaries(user, args[0])
        if op == "delete":
            return m.summaries.delete(user, args[0])
        if op == "forget":
            return m.forget_user(user)
        raise ValueError(op)

    def close(self) -> None:
        if self.process:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            assert self.proc.wait(30) == 0
        else:
            self.memory.close()


@pytest.fixture(params=["two instances", "two processes"])
def pair(
    request: pytest.FixtureRequest, redis_server_url: str, key_prefix: str
) -> Iterator[tuple[TieredMemory, Peer]]:
    here = TieredMemory.from_url(
        redis_server_url, key_prefix=key_prefix, embeddings=HashingEmbeddings()
    )
    other = Peer(redis_server_url, key_prefix, process=request.param == "two processes")
    try:
        yield here, other
    finally:
        other.close()
        here.close()


def recalled(snapshot: dict[str, Any]) -> list[str]:
    ids = [i for i, _ in snapshot["recalled"]]
    assert len(ids) == len(set(ids)), f"an item is recalled twice: {snapshot['recalled']}"
    return sorted(t for _, t in snapshot["recalled"])


def test_writes_of_one_are_in_the_others_next_load(pair: tuple[TieredMemory, Peer]) -> None:
    here, other = pair
    assert other("load", "alice", "cat", 10, 5)["recalled"] == []

    here.set_user_tags("alice", {"name": "Alice"})
    here.add_session_log("alice", turn(0, 0))
    snap = other("load", "alice", "cat", 10, 5)
    assert snap["tags"] == {"name": "Alice"}
    assert snap["history"] == [m.content for m in turn(0, 0)]

    here.add_summaries("alice", ["Alice has a cat named Tom."])
    assert recalled(other("load", "alice", "cat", 1, 5)) == ["Alice has a cat named Tom."]
    # delta path: the other's cached index gets the new item, once
    here.add_summaries("alice", ["Alice adopted a second cat, Luna."])
    assert recalled(other("load", "alice", "cat", 1, 5)) == [
        "Alice adopted a second cat, Luna.",
        "Alice has a cat named Tom.",
    ]
    # delete path: the other's cached index is rebuilt without the item
    assert here.summaries.delete("alice", ["0"]) == 1
    assert recalled(other("load", "alice", "cat", 1, 5)) == ["Alice adopted a second cat, Luna."]

    # the other direction, the other's cache being warm here too
    here.recall_summaries("alice", "cat", 5)
    other("tag", "alice", {"age": 30})
    assert other("add", "alice", ["Alice's cat Luna is two years old."]) == ["2"]
    snap_here = here.load("alice", "cat Luna", k=5)
    assert snap_here.tags == {"name": "Alice", "age": "30"}
    assert sorted(d.page_content for d in snap_here.recalled) == [
        "Alice adopted a second cat, Luna.",
        "Alice's cat Luna is two years old.",
    ]


def test_forget_in_one_leaves_nothing_recallable_in_the_other(
    pair: tuple[TieredMemory, Peer],
) -> None:
    here, other = pair
    here.set_user_tags("bob", {"name": "Bob"})
    here.add_summaries("bob", ["Bob's secret PIN hint is his dog's name, Rex."])
    assert recalled(other("load", "bob", "dog name", 1, 3))  # the other caches bob's index
    here.forget_user("bob")
    snap = other("load", "bob", "dog name", 1, 3)
    assert snap == {**snap, "tags": {}, "history": [], "recalled": []}
    assert snap["cached_users"] == 0, "the forgotten user's index stayed in the other's cache"

    # Forget, then new data under the same ids (the counters restart with the deleted meta
    # hash) before the other loads again: its stale cache must not match the new version.
    here.add_summaries("bob", ["Bob's secret PIN hint is his dog's name, Rex."])
    assert recalled(other("load", "bob", "dog name", 1, 3))
    here.forget_user("bob")
    here.add_summaries("bob", ["Bob likes dogs."])
    assert recalled(other("load", "bob", "dog name", 1, 3)) == ["Bob likes dogs."]
    # and the other way round
    here.recall_summaries("bob", "dog", 3)
    other("forget", "bob")
    here_cached = len(here.summaries.index_cache)  # type: ignore[attr-defined]
    other("add", "bob", ["Bob started learning the cello."])
    assert here_cached == 1  # still holding the index of the forgotten item
    assert [d.page_content for d in here.recall_summaries("bob", "dog cello", 3)] == [
        "Bob started learning the cello."
    ]


def test_cache_is_an_lru_bounded_by_max_cached_users(
    redis_server_url: str, key_prefix: str
) -> None:
    with (
        TieredMemory.from_url(
            redis_server_url, key_prefix=key_prefix, embeddings=HashingEmbeddings()
        ) as writer,
        TieredMemory.from_url(
            redis_server_url, key_prefix=key_prefix, embeddings=HashingEmbeddings()
        ) as reader,
    ):
        store = reader.summaries
        assert isinstance(store, RedisSummaryStore)
        store.index_cache.max_users = 5
        users = [f"user{i}" for i in range(12)]
        for i, user in enumerate(users):
            writer.add_summaries(user, [f"{user} collects stamps from country {i}."])
        for user in users:
            assert reader.recall_summaries(user, "stamps", 1)[0].page_content.startswith(user)
            assert len(store.index_cache) <= 5
        assert store.index_cache.users() == users[-5:]  # the 5 most recently used
        reader.recall_summaries(users[7], "stamps", 1)  # touch: now most recent
        reader.recall_summaries(users[0], "stamps", 1)  # evicted earlier: rebuilt, right data
        assert store.index_cache.users() == [*users[9:], users[7], users[0]]
        assert reader.recall_summaries(users[0], "stamps", 1)[0].page_content.startswith("user0 ")
        for user in users:
            writer.forget_user(user)


def test_rebuilds_racing_writers_never_duplicate_or_miss_items(
    redis_server_url: str, key_prefix: str
) -> None:
    """One instance adds items (and another deletes some) while a third searches in
    several threads: results never hold an item twice, and once writers stop the reader's
    index holds exactly what Redis holds."""
    adder = TieredMemory.from_url(
        redis_server_url, key_prefix=key_prefix, embeddings=HashingEmbeddings()
    )
    deleter = TieredMemory.from_url(
        redis_server_url, key_prefix=key_prefix, embeddings=HashingEmbeddings()
    )
    reader = TieredMemory.from_url(
        redis_server_url, key_prefix=key_prefix, embeddings=HashingEmbeddings()
    )
    stop = threading.Event()
    problems: list[str] = []

    def add() -> None:
        for i in range(300):
            adder.add_summaries("carol", [f"Carol fact number {i} about topic t{i}."])
        stop.set()

    def delete() -> None:
        n = 0
        while not stop.is_set():
            deleter.summaries.delete("carol", [str(n)])
            n += 7

    def read() -> None:
        while not stop.is_set():
            docs = reader.recall_summaries("carol", "Carol fact number topic", 50)
            ids = [d.id for d in docs]
            if len(ids) != len(set(ids)):
                problems.append(f"duplicate ids {sorted(map(str, ids))}")
                return

    threads = [threading.Thread(target=f) for f in (add, delete, read, read, read)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not problems, problems[0]
    stored = {d.id for d in adder.summaries.get_all("carol")}
    index = reader.summaries.index_for("carol")  # type: ignore[attr-defined]
    assert index is not None
    assert sorted((str(r.id) for r in index.records), key=int) == sorted(
        (str(i) for i in stored), key=int
    )
    assert len(index.vectors()) == len(stored)
    for m in (adder, deleter, reader):
        m.forget_user("carol")
        m.close()

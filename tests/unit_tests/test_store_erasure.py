"""The Redis store's registry and erasure: what a killed batch, a planted value or a deep
value cannot break, and what erasure and listing cost (the user's keys, not everyone's).
"""

from __future__ import annotations

from typing import Any

import pytest

from langchain_tiered_memory import CorruptMemoryError, TieredMemory
from langchain_tiered_memory.backend.connection import as_text
from langchain_tiered_memory.persistence.store import RedisStore
from langchain_tiered_memory.persistence.store.base import _PRUNE, MAX_VALUE_DEPTH


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(depth - 1):
        value = {"n": value}
    return value


@pytest.fixture
def store(embedded_memory: TieredMemory) -> RedisStore:
    return embedded_memory.store()


def registered(store: RedisStore) -> list[bytes]:
    members: Any = store.connection.sync.zrange(store.keys.store_registry_key(), 0, -1)
    return list(members)


def test_values_nest_at_most_the_cap_and_what_is_stored_reads_back(store: RedisStore) -> None:
    store.put(("a",), "deep", nested(MAX_VALUE_DEPTH))
    item = store.get(("a",), "deep")
    assert item is not None and item.value == nested(MAX_VALUE_DEPTH)
    with pytest.raises(ValueError, match="nests deeper than 100"):
        store.put(("a",), "deeper", nested(985))
    assert store.get(("a",), "deeper") is None


def test_an_unreadable_item_names_its_key_and_erasure_still_removes_it(
    embedded_memory: TieredMemory, store: RedisStore
) -> None:
    for user in ("alice", "bob"):
        store.put(("memories", user), "fact", {"content": f"{user} likes tea"})
    items_key = store.keys.store_key(("memories", "alice"), "items")
    store.connection.sync.hset(items_key, "planted", b"\xff\x00not json")
    with pytest.raises(CorruptMemoryError, match="'planted'.*memories"):
        store.search(("memories", "alice"))
    with pytest.raises(CorruptMemoryError, match="planted"):
        embedded_memory.export_user("alice", store=store)
    # the other user is untouched by the bad item: export and erasure work for them
    assert embedded_memory.export_user("bob", store=store)["store"][0]["key"] == "fact"
    removed = embedded_memory.forget_user("alice", store=store)
    assert removed["store_items"] == 2  # the planted one is counted and gone
    assert not store.connection.sync.exists(items_key)
    assert store.list_namespaces() == [("memories", "bob")]


def test_a_put_registers_its_namespace_before_writing_the_item(
    store: RedisStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[list[tuple[Any, ...]]] = []
    run = store.connection.pipelined

    def record(commands: list[tuple[Any, ...]]) -> list[Any]:
        sent.append(commands)
        return run(commands)

    monkeypatch.setattr(store.connection, "pipelined", record)
    store.put(("memories", "alice"), "m1", {"content": "x"})
    writes = [c[0] for c in sent[-1]]
    # a batch killed after any prefix of these commands leaves no unregistered item
    assert writes.index("ZADD") < writes.index("HSET")


def test_erasure_finds_items_no_registry_names(
    embedded_memory: TieredMemory, store: RedisStore
) -> None:
    """What a pre-0.2 batch killed between its item and its registry write left behind."""
    store.put(("memories", "alice"), "m1", {"content": "registered"})
    stray = store.keys.store_key(("memories", "alice", "old"), "items")
    store.connection.sync.hset(stray, "m2", '{"v": {}, "c": "x", "u": "x"}')
    assert embedded_memory.forget_user("alice", store=store)["store_items"] == 2
    assert not store.connection.sync.exists(stray)


def test_deleting_the_last_item_unregisters_the_namespace(store: RedisStore) -> None:
    store.put(("memories", "alice"), "m1", {"content": "x"})
    store.put(("memories", "alice"), "m2", {"content": "y"})
    store.delete(("memories", "alice"), "m1")
    assert registered(store) == [b"memories/alice/"]
    store.delete(("memories", "alice"), "m2")
    assert registered(store) == []
    assert store.list_namespaces() == []


def test_a_put_racing_the_prune_keeps_its_namespace(store: RedisStore) -> None:
    """The prune script unregisters only if no put has counted a write since the check."""
    store.put(("ns",), "k", {"v": 1})
    client = store.connection.sync
    versions, registry = store.keys.store_versions_key(), store.keys.store_registry_key()
    seen = as_text(client.hget(versions, "ns/"))
    client.hincrby(versions, "ns/", 1)  # a put registered meanwhile
    assert client.eval(_PRUNE, 2, registry, versions, "ns/", seen) == 0
    assert registered(store) == [b"ns/"]
    now = as_text(client.hget(versions, "ns/"))
    assert client.eval(_PRUNE, 2, registry, versions, "ns/", now) == 1
    assert registered(store) == []


def test_listing_and_erasure_read_only_the_user_range(
    embedded_memory: TieredMemory, store: RedisStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(50):
        store.put(("memories", f"user{i}"), "m", {"content": str(i)})
    store.put(("memories", "alice"), "m", {"content": "a"})
    commands: list[tuple[Any, ...]] = []
    run = store.connection.pipelined

    def record(sent: list[tuple[Any, ...]]) -> list[Any]:
        commands.extend(sent)
        return run(sent)

    monkeypatch.setattr(store.connection, "pipelined", record)
    assert store.list_namespaces(prefix=("memories", "alice")) == [("memories", "alice")]
    assert not [c for c in commands if c[0] == "HGETALL"]  # listing reads no item
    assert len([c for c in commands if c[0] == "HLEN"]) == 1  # only the range asked for
    commands.clear()
    embedded_memory.forget_user("alice", store=store)
    # the store's keys (the memory's own erasure shares the connection)
    touched = {c[1] for c in commands if c[0] in ("HLEN", "DEL", "HGETALL") and "}:st:" in c[1]}
    assert touched == {
        store.keys.store_key(("memories", "alice"), "items"),
        store.keys.store_key(("memories", "alice"), "vecs"),
    }
    assert len(store.list_namespaces(limit=100)) == 50


def test_erasure_unregisters_every_namespace_of_the_user_and_counts_each_item(
    embedded_memory: TieredMemory, store: RedisStore
) -> None:
    store.put(("memories", "alice"), "m1", {"content": "a"})
    store.put(("memories", "alice", "work"), "m2", {"content": "b"})
    store.put(("memories", "alice", "work"), "m3", {"content": "c"})
    store.put(("memories", "bob"), "m1", {"content": "d"})
    assert embedded_memory.forget_user("alice", store=store)["store_items"] == 3
    assert registered(store) == [b"memories/bob/"]
    versions = store.connection.sync.hkeys(store.keys.store_versions_key())
    assert versions == [b"memories/bob/"]
    assert embedded_memory.forget_user("carol", store=store)["store_items"] == 0


def test_a_namespace_registered_before_write_counts_were_kept_is_pruned_too(
    store: RedisStore,
) -> None:
    """0.1 registered namespaces without a write count: emptied, they still leave."""
    client = store.connection.sync
    client.zadd(store.keys.store_registry_key(), {"old/": 0})
    store.put(("old",), "k", {"v": 1})
    client.hdel(store.keys.store_versions_key(), "old/")  # as 0.1 left it
    store.delete(("old",), "k")
    assert registered(store) == []


def test_a_registered_namespace_without_items_is_not_listed(store: RedisStore) -> None:
    store.connection.sync.zadd(store.keys.store_registry_key(), {"ghost/": 0})
    store.put(("real",), "k", {"v": 1})
    assert store.list_namespaces() == [("real",)]


def test_listing_truncates_deduplicates_and_takes_wildcard_prefixes(store: RedisStore) -> None:
    for namespace in [("a", "x", "1"), ("a", "x", "2"), ("a", "y"), ("b", "x")]:
        store.put(namespace, "k", {"v": 1})
    assert store.list_namespaces(max_depth=2) == [("a", "x"), ("a", "y"), ("b", "x")]
    assert store.list_namespaces(prefix=("a", "*"), max_depth=2) == [("a", "x"), ("a", "y")]
    assert store.list_namespaces(prefix=("*", "x")) == [
        ("a", "x", "1"),
        ("a", "x", "2"),
        ("b", "x"),
    ]
    assert store.list_namespaces(limit=1, offset=1) == [("a", "x", "2")]


def test_the_depth_cap_sees_a_deep_branch_that_is_not_the_last(store: RedisStore) -> None:
    with pytest.raises(ValueError, match="nests deeper"):
        store.put(("a",), "k", {"deep": nested(MAX_VALUE_DEPTH + 5), "flat": 1})


@pytest.mark.parametrize("kind", ["redis", "in_memory"])
def test_a_user_named_like_a_template_reaches_only_their_own_namespaces(
    embedded_memory: TieredMemory, kind: str
) -> None:
    """Issue 66 item 8: with the guide's ("{user_id}",) layout declared beside the default
    ("memories", "{user_id}"), the user "memories" exported and erased every user's
    LangMem items. A namespace another template reads as another user's is not theirs."""
    from langgraph.store.memory import InMemoryStore

    memory = embedded_memory
    store = memory.store() if kind == "redis" else InMemoryStore()
    memory.attach(store=store, store_namespaces=[("{user_id}",), ("memories", "{user_id}")])
    store.put(("memories", "alice"), "a", {"content": "Alice's secret."})
    store.put(("memories", "bob"), "b", {"content": "Bob's secret."})
    store.put(("memories",), "own", {"content": "The user 'memories' own note."})
    store.put(("memories", "memories"), "own2", {"content": "Theirs under the default."})
    exported = memory.export_user("memories")["store"]
    assert sorted(i["key"] for i in exported) == ["own", "own2"]
    memory.forget_user("memories")
    left = {i.key for ns in (("memories", "alice"), ("memories", "bob")) for i in store.search(ns)}
    assert left == {"a", "b"}
    assert store.get(("memories",), "own") is None
    assert store.get(("memories", "memories"), "own2") is None

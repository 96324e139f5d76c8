"""The user directory the console lists (stores/directory.py) and tag deletion, on the
embedded Redis: every user listed exactly once over all pages, search, counts per tier,
last activity, look-alike ids kept apart."""

from __future__ import annotations

import time
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.errors import InvalidTagError
from langchain_tiered_memory.stores.directory import RedisUserDirectory


def directory(memory: TieredMemory) -> RedisUserDirectory:
    history: Any = memory.history
    return RedisUserDirectory(history.connection, keys=history.keys)


def every_page(memory: TieredMemory, count: int, contains: str | None = None) -> list[str]:
    users: list[str] = []
    cursor = None
    for _ in range(1000):
        page = directory(memory).page(cursor, count=count, contains=contains)
        users += [row.user_id for row in page.users]
        cursor = page.next_cursor
        if cursor is None:
            return users
    raise AssertionError("the listing never ended")


def test_every_user_is_listed_once_whatever_tiers_they_have(
    embedded_memory: TieredMemory,
) -> None:
    memory = embedded_memory
    expected = set()
    for i in range(120):  # history, tags, items, or all three: one row each
        user = f"user-{i}"
        if i % 3 == 0:
            memory.add_session_log(user, [HumanMessage("hi"), AIMessage("hello")])
        if i % 3 == 1 or i % 5 == 0:
            memory.set_user_tags(user, {"age": 30})
        if i % 3 == 2 or i % 5 == 0:
            memory.add_summaries(user, [f"note {i}"])
        expected.add(user)
    for count in (1, 7, 50, 500):
        listed = every_page(memory, count)
        assert sorted(listed) == sorted(expected), count


def test_rows_count_each_tier_and_the_last_write(embedded_memory: TieredMemory) -> None:
    memory = embedded_memory
    before = time.time()
    memory.add_session_log("alice", [HumanMessage("hi"), AIMessage("hello")], thread_id="t1")
    memory.set_user_tags("alice", {"name": "Alice", "age": 30})
    memory.add_summaries("alice", ["one", "two", "three"])
    memory.set_user_tags("bob", {"age": 41})
    rows = {r.user_id: r for r in directory(memory).page().users}
    alice, bob = rows["alice"], rows["bob"]
    assert (alice.messages, alice.tags, alice.items, alice.threads) == (2, 2, 3, 1)
    assert alice.last_active is not None and before - 1 <= alice.last_active <= time.time() + 1
    assert (bob.messages, bob.tags, bob.items, bob.last_active) == (0, 1, 0, None)


def test_search_matches_part_of_the_id_in_either_case_and_nothing_else(
    embedded_memory: TieredMemory,
) -> None:
    memory = embedded_memory
    for user in ("Alice", "alice@example.com", "malice", "bob", "李明", "a*b", "a?c"):
        memory.set_user_tags(user, {"age": 30})
    assert sorted(every_page(memory, 50, "ALIC")) == ["Alice", "alice@example.com", "malice"]
    assert every_page(memory, 50, "李") == ["李明"]
    # glob characters in the search are literal
    assert every_page(memory, 50, "*") == ["a*b"]
    assert every_page(memory, 50, "?") == ["a?c"]
    assert every_page(memory, 50, "nobody") == []
    assert every_page(memory, 50, "2a") == []  # "a*b" is stored as a%2Ab: no match inside


def test_a_cursor_not_from_the_directory_is_a_clear_error(embedded_memory: TieredMemory) -> None:
    with pytest.raises(ValueError, match="start again without one"):
        directory(embedded_memory).page("garbage")
    with pytest.raises(ValueError, match="start again without one"):
        directory(embedded_memory).page("9.0.0")


def test_the_directory_writes_nothing(embedded_memory: TieredMemory) -> None:
    memory = embedded_memory
    memory.set_user_tags("alice", {"age": 30})
    assert memory.redis_url is not None
    import redis

    client = redis.Redis.from_url(memory.redis_url)
    before = {k: client.dump(k) for k in client.scan_iter()}
    every_page(memory, 1, "ali")
    assert {k: client.dump(k) for k in client.scan_iter()} == before


def test_deleting_a_tag_logs_it_and_leaves_the_others(memory_factory: Any) -> None:
    memory = memory_factory()
    memory.set_user_tags("alice", {"name": "Alice", "age": 30}, thread_id="t1")
    memory.set_user_tags("alice2", {"age": 30})
    assert memory.tags.delete("alice", ["age", "age"], thread_id="console") == 1
    assert memory.tags.delete("alice", ["age"]) == 0  # gone already: nothing logged
    assert memory.get_user_tags("alice") == {"name": "Alice"}
    assert memory.get_user_tags("alice2") == {"age": "30"}
    last = memory.get_tag_history("alice", "age")[-1]
    assert (last["value"], last["previous"], last["thread_id"]) == ("", "30", "console")
    assert len(memory.get_tag_history("alice", "age")) == 2
    with pytest.raises(InvalidTagError, match="unknown tag 'colour'"):
        memory.tags.delete("alice", ["colour"])
    with pytest.raises(InvalidTagError, match="list of tag names"):
        memory.tags.delete("alice", "age")
    assert memory.get_user_tags("alice") == {"name": "Alice"}


async def test_adelete_is_the_async_twin(memory_factory: Any) -> None:
    memory = memory_factory()
    await memory.aset_user_tags("alice", {"name": "Alice", "age": 30})
    assert await memory.tags.adelete("alice", ["name"]) == 1
    assert await memory.aget_user_tags("alice") == {"age": "30"}


def test_the_index_lists_the_recently_active_first_a_page_exactly_with_the_total(
    embedded_memory: TieredMemory,
) -> None:
    """Issue 46 items 1 and 4: sorted by last activity, pages of the size asked, a count."""
    memory = embedded_memory
    for i in range(23):
        memory.set_user_tags(f"user-{i:02d}", {"age": 20 + i})
    memory.add_session_log("user-05", [HumanMessage("back again"), AIMessage("hi")])
    pages, cursor = [], None
    while True:
        page = directory(memory).page(cursor, count=5)
        assert page.indexed and page.total == 23
        pages.append([r.user_id for r in page.users])
        cursor = page.next_cursor
        if cursor is None:
            break
    assert [len(p) for p in pages] == [5, 5, 5, 5, 3]
    listed = [u for p in pages for u in p]
    assert listed[0] == "user-05" and sorted(listed) == [f"user-{i:02d}" for i in range(23)]
    assert listed[1] == "user-22"  # then the newest by their tag writes


def test_search_finds_a_tag_value_too(embedded_memory: TieredMemory) -> None:
    memory = embedded_memory
    memory.set_user_tags("u-1", {"name": "Ann Lee", "age": 31})
    memory.set_user_tags("u-2", {"name": "王芳", "age": 28})
    memory.set_user_tags("leeds-fan", {"age": 40})
    memory.add_session_log("u-3", [HumanMessage("hi"), AIMessage("hello")])
    assert sorted(every_page(memory, 50, "LEE")) == ["leeds-fan", "u-1"]
    assert every_page(memory, 50, "王") == ["u-2"]
    assert every_page(memory, 50, "31") == ["u-1"]
    assert every_page(memory, 50, "nobody") == []


def test_erasure_takes_the_users_member_and_nothing_else(embedded_memory: TieredMemory) -> None:
    import redis

    memory = embedded_memory
    for user in ("ann", "bob", "cy"):
        memory.add_session_log(user, [HumanMessage("hi"), AIMessage("hello")])
    assert memory.redis_url is not None
    client = redis.Redis.from_url(memory.redis_url)
    key = memory.history.keys.directory_key()  # type: ignore[attr-defined]
    before = dict(client.zscan_iter(key))
    memory.forget_user("bob")
    after = dict(client.zscan_iter(key))
    assert after == {k: v for k, v in before.items() if k != b"bob"}
    assert every_page(memory, 50) == ["cy", "ann"]


def test_an_expired_user_leaves_the_index_when_a_page_meets_them(
    embedded_memory: TieredMemory,
) -> None:
    import redis

    memory = embedded_memory
    for user in ("ann", "bob"):
        memory.set_user_tags(user, {"age": 30})
    assert memory.redis_url is not None
    client = redis.Redis.from_url(memory.redis_url)
    keys = memory.history.keys  # type: ignore[attr-defined]
    client.delete(*keys.all_keys("bob"))  # what user_ttl's expiry leaves
    assert every_page(memory, 50) == ["ann"]
    assert client.zscore(keys.directory_key(), "bob") is None


def test_data_from_before_the_index_is_scanned_until_reindexed(
    embedded_memory: TieredMemory,
) -> None:
    import redis

    memory = embedded_memory
    for i in range(7):
        memory.add_summaries(f"old-{i}", ["a note"])
    assert memory.redis_url is not None
    client = redis.Redis.from_url(memory.redis_url)
    key = memory.history.keys.directory_key()  # type: ignore[attr-defined]
    client.delete(key)  # as a version without the index left it
    page = directory(memory).page(count=50)
    assert not page.indexed and page.total is None and len(page.users) == 7
    assert directory(memory).reindex() == 7
    assert directory(memory).reindex() == 0  # again: nothing new
    page = directory(memory).page(count=50)
    assert page.indexed and page.total == 7


def test_the_values_index_follows_tag_writes_and_leaves_with_the_user(
    embedded_memory: TieredMemory,
) -> None:
    import redis

    memory = embedded_memory
    memory.set_user_tags("u-1", {"name": "Ann Lee", "age": 31})
    memory.set_user_tags("u-2", {"name": "Bo Chen", "age": 45})
    assert every_page(memory, 50, "lee") == ["u-1"]
    memory.set_user_tags("u-1", {"name": "Ann Park"})  # the old value leaves the index
    assert every_page(memory, 50, "lee") == [] and every_page(memory, 50, "park") == ["u-1"]
    memory.tags.delete("u-2", ["age"])
    assert every_page(memory, 50, "45") == []
    assert memory.redis_url is not None
    client = redis.Redis.from_url(memory.redis_url)
    key = memory.history.keys.directory_key("values")  # type: ignore[attr-defined]
    members = {m.decode() for m, _ in client.zscan_iter(key)}
    assert members == {"u-1\x1fname\x1fann park", "u-1\x1fage\x1f31", "u-2\x1fname\x1fbo chen"}
    memory.forget_user("u-1")
    assert {m.decode() for m, _ in client.zscan_iter(key)} == {"u-2\x1fname\x1fbo chen"}
    client.delete(key, memory.history.keys.directory_key())  # type: ignore[attr-defined]
    directory(memory).reindex()  # data from before the index: its values too
    assert every_page(memory, 50, "chen") == ["u-2"]


@pytest.mark.parametrize("corruption", ["string", "not utf-8"])
def test_a_damaged_index_fails_no_turn_tag_write_or_erasure(
    embedded_memory: TieredMemory, corruption: str
) -> None:
    """Issue 55 item 7: the indexes are an aid. Replaced by a key of another type, or
    holding a member this package did not write, they fail no user's turn, tag write or
    erasure (which still compacts), and the console lists by SCAN and says so."""
    from langchain_tiered_memory.console import views

    memory = embedded_memory
    memory.add_session_log("ann", [HumanMessage("My PIN is 4711."), AIMessage("Noted.")])
    memory.set_user_tags("ann", {"name": "Ann"})
    assert memory.connection is not None
    sync = memory.connection.sync
    active, values = (
        directory(memory).keys.directory_key(),
        directory(memory).keys.directory_key("values"),
    )
    if corruption == "string":
        sync.delete(active, values)
        sync.set(active, "x")
        sync.set(values, "x")
    else:
        sync.zadd(active, {b"\xff\xfe": 1.0})
        sync.zadd(values, {b"\xff\xfe\x1fname\x1fx": 0})
    memory.load("bob", "hello", thread_id="b1")
    memory.add_session_log("bob", [HumanMessage("hi")], thread_id="b1")
    memory.set_user_tags("bob", {"name": "Bob"})
    memory.add_summaries("bob", ["Bob likes tea."])
    listing = views.list_users(memory, None, None)
    assert {"ann", "bob"} <= {row.user_id for row in listing.users}
    assert {row.user_id for row in views.list_users(memory, None, "bo").users} == {"bob"}
    if corruption == "string":
        assert set(listing.damaged) == {active, values}
    assert memory.forget_user("ann")["history"] == 2
    data_dir = memory.data_dir
    assert data_dir is not None
    for path in data_dir.rglob("*"):  # compacted: the PIN is in no file
        if path.is_file():
            assert b"4711" not in path.read_bytes(), path


def test_an_expired_users_tag_values_leave_the_index_with_no_worker(
    embedded_server: Any,
) -> None:
    """Issue 55 item 13: with ``user_ttl`` and no worker, an expired user's name stayed
    in the values index (and dump.rdb). Any later turn's directory write takes users whose
    keys have all expired out of both indexes. Time is moved, not slept."""
    from langchain_tiered_memory import HashingEmbeddings

    memory = TieredMemory.embedded(
        embedded_server.data_dir, embeddings=HashingEmbeddings(), key_prefix="ttl13", user_ttl=600
    )
    try:
        memory.load("ann", "hi")
        memory.set_user_tags("ann", {"name": "Zorblatt"})
        memory.add_session_log("ann", [HumanMessage("hi")])
        assert memory.connection is not None
        sync = memory.connection.sync
        keys = directory(memory).keys
        for key in sync.scan_iter(match="ttl13:{ann}*"):
            sync.delete(key)  # expired
        sync.zadd(keys.directory_key(), {"ann": time.time() - 700})  # 700 s ago
        memory.load("bob", "hello")  # another user's turn, no worker
        memory.add_session_log("bob", [HumanMessage("hello")])
        left = [
            k
            for k in sync.scan_iter(match="ttl13:*")
            if b"Zorblatt".lower() in (sync.dump(k) or b"").lower()
        ]
        assert left == []
        assert sync.zscore(keys.directory_key(), "ann") is None
        assert sync.zscore(keys.directory_key(), "bob") is not None
    finally:
        memory.close()

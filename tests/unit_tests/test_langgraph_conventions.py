"""LangGraph's saver and store conventions: ``from_conn_string``, an awaitable ``setup()`` on
the async classes, TTL sweepers as ``PostgresStore``/``AsyncPostgresStore`` have them, and a
``distance_type`` the store cannot honour refused, not ignored.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from langchain_tiered_memory import EmbeddedRedis, HashingEmbeddings
from langchain_tiered_memory.persistence.checkpoint import AsyncRedisSaver, RedisSaver
from langchain_tiered_memory.persistence.store import AsyncRedisStore, RedisStore


@pytest.fixture
def url(data_dir: Path) -> Iterator[str]:
    server = EmbeddedRedis(data_dir).start()
    yield server.url
    server.stop()


def test_sync_classes_open_with_from_conn_string(url: str) -> None:
    with RedisSaver.from_conn_string(url) as saver, RedisStore.from_conn_string(url) as store:
        saver.setup()
        store.setup()
        store.put(("a",), "k", {"v": 1})
        assert store.get(("a",), "k") is not None
    assert not saver._owns_connection or saver.connection._sync is None  # closed on exit


async def test_async_classes_open_with_from_conn_string_and_await_setup(url: str) -> None:
    async with (
        AsyncRedisSaver.from_conn_string(url) as saver,
        AsyncRedisStore.from_conn_string(url) as store,
    ):
        await saver.setup()
        await store.setup()
        await store.aput(("a",), "k", {"v": 1}, ttl=0.0005)
        await asyncio.sleep(0.1)
        assert await store.sweep_ttl() == 1  # awaitable, as AsyncPostgresStore's


def test_the_sync_ttl_sweeper_deletes_expired_items_until_stopped(url: str) -> None:
    with RedisStore.from_conn_string(url) as store:
        store.put(("a",), "short", {"v": 1}, ttl=0.0005)
        store.put(("a",), "kept", {"v": 2})
        items = store.keys.store_key(("a",), "items")
        store.start_ttl_sweeper(0.002)  # every 0.12 s
        deadline = time.monotonic() + 10
        while store.connection.sync.hlen(items) > 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert store.stop_ttl_sweeper(timeout=5) is True
        assert store.connection.sync.hkeys(items) == [b"kept"]


async def test_the_async_ttl_sweeper_runs_on_the_loop_until_stopped(url: str) -> None:
    async with AsyncRedisStore.from_conn_string(url) as store:
        await store.aput(("a",), "short", {"v": 1}, ttl=0.0005)
        items = store.keys.store_key(("a",), "items")
        task = await store.start_ttl_sweeper(0.002)
        deadline = time.monotonic() + 10
        while await (await store.connection.aclient()).hlen(items) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert await store.stop_ttl_sweeper(timeout=5) is True
        assert task.done()
        assert await (await store.connection.aclient()).hlen(items) == 0


@pytest.mark.parametrize("distance", ["l2", "inner_product"])
def test_a_distance_type_the_store_cannot_honour_is_refused(url: str, distance: str) -> None:
    index = {"dims": 64, "embed": HashingEmbeddings(dim=64), "distance_type": distance}
    with pytest.raises(ValueError, match=f"distance_type '{distance}' is not supported"):
        RedisStore.from_conn_string(url, index=index).__enter__()  # type: ignore[arg-type]

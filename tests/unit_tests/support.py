"""Small helpers shared by the unit test modules (fixtures live in tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Callable

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from langchain_tiered_memory import TieredMemory

# The type of the ``memory_factory`` fixture: keyword arguments go to the constructor.
MemoryFactory = Callable[..., TieredMemory]


def raw_client(url: str) -> redis.Redis:
    """A plain redis-py client on ``url``, to look at the keys behind the API."""
    return redis.Redis.from_url(url, retry=Retry(NoBackoff(), 0))


def all_keys(memory: TieredMemory) -> set[str]:
    """Every key in the memory's Redis, found with SCAN (never KEYS)."""
    assert memory.redis_url is not None
    client = raw_client(memory.redis_url)
    try:
        return {k.decode() for k in client.scan_iter(count=1000)}
    finally:
        client.close()

"""LangGraph's ``BaseStore`` on plain Redis (core commands only), beside the memory.

Example:
    >>> from langchain_tiered_memory.persistence.store import RedisStore
    >>> with RedisStore.from_url("redis://localhost:6379/0") as store:  # doctest: +SKIP
    ...     store.put(("alice",), "m1", {"text": "likes tea"})
"""

from langchain_tiered_memory.persistence.store.aio import AsyncRedisStore
from langchain_tiered_memory.persistence.store.base import BaseRedisStore
from langchain_tiered_memory.persistence.store.store import RedisStore

__all__ = ["AsyncRedisStore", "BaseRedisStore", "RedisStore"]

"""The three memory stores, each with a Redis and an in-memory implementation."""

from langchain_tiered_memory.stores.history import (
    HistoryStore,
    InMemoryHistoryStore,
    RedisHistoryStore,
    UserChatMessageHistory,
)
from langchain_tiered_memory.stores.summaries import (
    InMemorySummaryStore,
    RedisSummaryStore,
    SummaryRetriever,
    SummaryStore,
)
from langchain_tiered_memory.stores.tags import (
    DefaultTags,
    InMemoryTagStore,
    RedisTagStore,
    TagStore,
)

__all__ = [
    "DefaultTags",
    "HistoryStore",
    "InMemoryHistoryStore",
    "InMemorySummaryStore",
    "InMemoryTagStore",
    "RedisHistoryStore",
    "RedisSummaryStore",
    "RedisTagStore",
    "SummaryRetriever",
    "SummaryStore",
    "TagStore",
    "UserChatMessageHistory",
]

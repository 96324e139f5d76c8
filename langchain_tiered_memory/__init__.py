"""Three-tier memory for LangChain and LangGraph agents.

- short-term, exact: each user's recent messages (``HistoryStore``);
- long-term, exact: typed facts about the user, "tags" (``TagStore``);
- long-term, fuzzy: summary items recalled by similarity (``SummaryStore``).

``TieredMemory`` is the facade over the three.

Importing the package is cheap: each name is imported from its module on first use (faiss,
redis and LangGraph load only when something needs them), as LangChain's own packages do.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from langchain_tiered_memory._moved import install as _install_moved

_install_moved()  # the modules that moved into folders keep their old import paths

if TYPE_CHECKING:
    from langchain_tiered_memory.agent.context import MemoryContext
    from langchain_tiered_memory.agent.graph import MemoryState, create_memory_graph
    from langchain_tiered_memory.agent.middleware import TieredMemoryMiddleware
    from langchain_tiered_memory.agent.tools import SummarizeTool, UserTagTool
    from langchain_tiered_memory.backend.connection import RedisConnection
    from langchain_tiered_memory.backend.server import EmbeddedRedis
    from langchain_tiered_memory.embeddings import (
        HashingEmbeddings,
        LocalMiniLMEmbeddings,
        MultilingualE5Embeddings,
        OnnxMiniLMEmbeddings,
        SentenceTransformerEmbeddings,
    )
    from langchain_tiered_memory.errors import (
        ConcurrentEditError,
        ConcurrentReembedError,
        CorruptMemoryError,
        DataFormatError,
        EmbeddingsMismatchError,
        InvalidArgumentError,
        InvalidMessageError,
        InvalidSummaryError,
        InvalidTagError,
        InvalidUserIdError,
        MemoryBackendError,
        MissingUserIdError,
        SummarizationError,
        SummaryLimitError,
        ThreadOwnershipError,
        TieredMemoryError,
        UnguardedCheckpointerError,
        UnsafeBindError,
        UnsupportedOperationError,
        WatermarkConflict,
    )
    from langchain_tiered_memory.memory import MemorySnapshot, TieredMemory
    from langchain_tiered_memory.persistence.checkpoint import AsyncRedisSaver, RedisSaver
    from langchain_tiered_memory.persistence.store import AsyncRedisStore, RedisStore
    from langchain_tiered_memory.retrieval import RetrievalConfig
    from langchain_tiered_memory.stores import (
        DefaultTags,
        HistoryStore,
        InMemoryHistoryStore,
        InMemorySummaryStore,
        InMemoryTagStore,
        RedisHistoryStore,
        RedisSummaryStore,
        RedisTagStore,
        SummaryRetriever,
        SummaryStore,
        TagStore,
        UserChatMessageHistory,
    )

__version__ = "0.2.0"

__all__ = [
    "AsyncRedisSaver",
    "AsyncRedisStore",
    "ConcurrentEditError",
    "ConcurrentReembedError",
    "CorruptMemoryError",
    "DataFormatError",
    "DefaultTags",
    "EmbeddedRedis",
    "EmbeddingsMismatchError",
    "HashingEmbeddings",
    "HistoryStore",
    "InMemoryHistoryStore",
    "InMemorySummaryStore",
    "InMemoryTagStore",
    "InvalidArgumentError",
    "InvalidMessageError",
    "InvalidSummaryError",
    "InvalidTagError",
    "InvalidUserIdError",
    "LocalMiniLMEmbeddings",
    "SentenceTransformerEmbeddings",
    "MemoryBackendError",
    "MemoryContext",
    "MemorySnapshot",
    "MemoryState",
    "MissingUserIdError",
    "MultilingualE5Embeddings",
    "OnnxMiniLMEmbeddings",
    "RedisConnection",
    "RedisHistoryStore",
    "RedisSaver",
    "RedisStore",
    "RedisSummaryStore",
    "RedisTagStore",
    "RetrievalConfig",
    "SummarizationError",
    "SummarizeTool",
    "SummaryLimitError",
    "SummaryRetriever",
    "SummaryStore",
    "TagStore",
    "TieredMemory",
    "ThreadOwnershipError",
    "UnguardedCheckpointerError",
    "TieredMemoryError",
    "TieredMemoryMiddleware",
    "UnsafeBindError",
    "UnsupportedOperationError",
    "UserChatMessageHistory",
    "UserTagTool",
    "WatermarkConflict",
    "__version__",
    "create_memory_graph",
]

# Where each public name lives; ``__getattr__`` imports it on first access.
_MODULES: dict[str, str] = {
    "AsyncRedisSaver": "langchain_tiered_memory.persistence.checkpoint",
    "AsyncRedisStore": "langchain_tiered_memory.persistence.store",
    "ConcurrentEditError": "langchain_tiered_memory.errors",
    "ConcurrentReembedError": "langchain_tiered_memory.errors",
    "CorruptMemoryError": "langchain_tiered_memory.errors",
    "DataFormatError": "langchain_tiered_memory.errors",
    "create_memory_graph": "langchain_tiered_memory.agent.graph",
    "DefaultTags": "langchain_tiered_memory.stores",
    "EmbeddedRedis": "langchain_tiered_memory.backend.server",
    "EmbeddingsMismatchError": "langchain_tiered_memory.errors",
    "HashingEmbeddings": "langchain_tiered_memory.embeddings",
    "HistoryStore": "langchain_tiered_memory.stores",
    "InMemoryHistoryStore": "langchain_tiered_memory.stores",
    "InMemorySummaryStore": "langchain_tiered_memory.stores",
    "InMemoryTagStore": "langchain_tiered_memory.stores",
    "InvalidArgumentError": "langchain_tiered_memory.errors",
    "InvalidMessageError": "langchain_tiered_memory.errors",
    "InvalidSummaryError": "langchain_tiered_memory.errors",
    "InvalidTagError": "langchain_tiered_memory.errors",
    "InvalidUserIdError": "langchain_tiered_memory.errors",
    "LocalMiniLMEmbeddings": "langchain_tiered_memory.embeddings",
    "SentenceTransformerEmbeddings": "langchain_tiered_memory.embeddings",
    "MemoryBackendError": "langchain_tiered_memory.errors",
    "MemoryContext": "langchain_tiered_memory.agent.context",
    "MemorySnapshot": "langchain_tiered_memory.memory",
    "MemoryState": "langchain_tiered_memory.agent.graph",
    "MissingUserIdError": "langchain_tiered_memory.errors",
    "MultilingualE5Embeddings": "langchain_tiered_memory.embeddings",
    "OnnxMiniLMEmbeddings": "langchain_tiered_memory.embeddings",
    "RedisConnection": "langchain_tiered_memory.backend.connection",
    "RedisHistoryStore": "langchain_tiered_memory.stores",
    "RedisSaver": "langchain_tiered_memory.persistence.checkpoint",
    "RedisStore": "langchain_tiered_memory.persistence.store",
    "RedisSummaryStore": "langchain_tiered_memory.stores",
    "RedisTagStore": "langchain_tiered_memory.stores",
    "RetrievalConfig": "langchain_tiered_memory.retrieval",
    "SummarizationError": "langchain_tiered_memory.errors",
    "SummarizeTool": "langchain_tiered_memory.agent.tools",
    "SummaryLimitError": "langchain_tiered_memory.errors",
    "SummaryRetriever": "langchain_tiered_memory.stores",
    "SummaryStore": "langchain_tiered_memory.stores",
    "TagStore": "langchain_tiered_memory.stores",
    "TieredMemory": "langchain_tiered_memory.memory",
    "ThreadOwnershipError": "langchain_tiered_memory.errors",
    "UnguardedCheckpointerError": "langchain_tiered_memory.errors",
    "TieredMemoryError": "langchain_tiered_memory.errors",
    "TieredMemoryMiddleware": "langchain_tiered_memory.agent.middleware",
    "UnsafeBindError": "langchain_tiered_memory.errors",
    "UnsupportedOperationError": "langchain_tiered_memory.errors",
    "UserChatMessageHistory": "langchain_tiered_memory.stores",
    "UserTagTool": "langchain_tiered_memory.agent.tools",
    "WatermarkConflict": "langchain_tiered_memory.errors",
}


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(__all__)

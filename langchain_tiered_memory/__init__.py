"""Three-tier memory for LangChain and LangGraph agents.

- short-term, exact: each user's recent messages (``HistoryStore``);
- long-term, exact: typed facts about the user, "tags" (``TagStore``);
- long-term, fuzzy: summary items recalled by similarity (``SummaryStore``).

``TieredMemory`` is the facade over the three.
"""

from langchain_tiered_memory._redis import EmbeddedRedis, RedisConnection
from langchain_tiered_memory.context import MemoryContext
from langchain_tiered_memory.embeddings import HashingEmbeddings, LocalMiniLMEmbeddings
from langchain_tiered_memory.errors import (
    CorruptMemoryError,
    InvalidMessageError,
    InvalidSummaryError,
    InvalidTagError,
    InvalidUserIdError,
    MemoryBackendError,
    MissingUserIdError,
    SummarizationError,
    SummaryLimitError,
    TieredMemoryError,
    WatermarkConflict,
)
from langchain_tiered_memory.graph import MemoryState, create_memory_graph
from langchain_tiered_memory.memory import MemorySnapshot, TieredMemory
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
from langchain_tiered_memory.tools import SummarizeTool, UserTagTool

__version__ = "0.1.0"

__all__ = [
    "CorruptMemoryError",
    "DefaultTags",
    "EmbeddedRedis",
    "HashingEmbeddings",
    "HistoryStore",
    "InMemoryHistoryStore",
    "InMemorySummaryStore",
    "InMemoryTagStore",
    "InvalidMessageError",
    "InvalidSummaryError",
    "InvalidTagError",
    "InvalidUserIdError",
    "LocalMiniLMEmbeddings",
    "MemoryBackendError",
    "MemoryContext",
    "MemorySnapshot",
    "MemoryState",
    "MissingUserIdError",
    "RedisConnection",
    "RedisHistoryStore",
    "RedisSummaryStore",
    "RedisTagStore",
    "RetrievalConfig",
    "SummarizationError",
    "SummarizeTool",
    "SummaryRetriever",
    "SummaryLimitError",
    "SummaryStore",
    "TagStore",
    "TieredMemory",
    "TieredMemoryError",
    "UserChatMessageHistory",
    "UserTagTool",
    "WatermarkConflict",
    "__version__",
    "create_memory_graph",
]

"""Short-term exact memory: each user's chat history, newest last.

Two stores share one interface (:class:`HistoryStore`): :class:`RedisHistoryStore`, a Redis
list per user, and :class:`InMemoryHistoryStore`. Both hand out a LangChain
``BaseChatMessageHistory`` bound to one user through :meth:`HistoryStore.session`, so they
plug into ``RunnableWithMessageHistory`` as ``get_session_history=store.session``.

Messages get absolute positions (0 = the first message the user ever sent) that survive
retention trimming; the summarizer's watermark is such a position.
"""

from langchain_tiered_memory._portable import MAX_NESTING, check_portable
from langchain_tiered_memory.stores.history.base import (
    Appended,
    HistoryStore,
    UserChatMessageHistory,
    replayed_prefix,
)
from langchain_tiered_memory.stores.history.codec import (
    DEFAULT_MAX_MESSAGE_BYTES,
    OnInvalid,
    dump_message,
    placeholder_for,
    threads_between,
)
from langchain_tiered_memory.stores.history.memory_store import InMemoryHistoryStore
from langchain_tiered_memory.stores.history.owners import ThreadGuard
from langchain_tiered_memory.stores.history.redis_store import RedisHistoryStore

__all__ = [
    "ThreadGuard",
    "Appended",
    "HistoryStore",
    "RedisHistoryStore",
    "InMemoryHistoryStore",
    "UserChatMessageHistory",
    "DEFAULT_MAX_MESSAGE_BYTES",
    "MAX_NESTING",
    "OnInvalid",
    "check_portable",
    "dump_message",
    "placeholder_for",
    "threads_between",
    "replayed_prefix",
]

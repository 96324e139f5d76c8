"""Short-term exact memory: each user's chat history, newest last.

Two stores share one interface (:class:`HistoryStore`): :class:`RedisHistoryStore`, a Redis
list per user, and :class:`InMemoryHistoryStore`. Both hand out a LangChain
``BaseChatMessageHistory`` bound to one user through :meth:`HistoryStore.session`, so they
plug into ``RunnableWithMessageHistory`` as ``get_session_history=store.session``.

An app's own store implements the contract of :class:`HistoryStore` with the helpers
exported here: :func:`dump_message` and :func:`parse_tail`/:func:`positioned` (the stored
form, forgotten messages as :data:`TOMBSTONE`), :func:`thread_append` (what a thread's batch
stores: replays, concurrent runs, forks) and :mod:`.revisions` (retractions, a fork's left
branch, edits).

Messages get absolute positions (0 = the first message the user ever sent) that survive
retention trimming; the summarizer's watermark is such a position.
"""

from langchain_tiered_memory._portable import MAX_NESTING, check_portable
from langchain_tiered_memory.stores.history import revisions
from langchain_tiered_memory.stores.history.base import (
    Appended,
    HistoryStore,
    UserChatMessageHistory,
    owned_elsewhere,
)
from langchain_tiered_memory.stores.history.codec import (
    DEFAULT_MAX_MESSAGE_BYTES,
    TOMBSTONE,
    OnInvalid,
    dump_message,
    parse_tail,
    placeholder_for,
    positioned,
    threads_between,
)
from langchain_tiered_memory.stores.history.memory_store import InMemoryHistoryStore
from langchain_tiered_memory.stores.history.owners import ThreadGuard
from langchain_tiered_memory.stores.history.redis_store import RedisHistoryStore
from langchain_tiered_memory.stores.history.rule import (
    ThreadAppend,
    message_ids,
    replayed_prefix,
    thread_append,
    thread_edits,
)

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
    # what an app's own store uses rather than writing again (tests/unit_tests/sqlite_stores.py)
    "TOMBSTONE",
    "ThreadAppend",
    "message_ids",
    "owned_elsewhere",
    "parse_tail",
    "positioned",
    "revisions",
    "thread_append",
    "thread_edits",
]

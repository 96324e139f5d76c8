"""Long-term fuzzy memory: short summary items of old conversation, recalled by similarity.

One room per concern: :mod:`.base` (the :class:`SummaryStore` interface and
:class:`SummaryRetriever`), :mod:`.index` (records, the per-user search index,
de-duplication and the limits), :mod:`.redis_store` (:class:`RedisSummaryStore`: every Redis
command of the tier) and :mod:`.memory_store` (:class:`InMemorySummaryStore`). What an app's
own store must not write again is exported: :func:`kept_items` (the de-duplication rule),
:func:`validate_items`, :func:`normalize_created_at`, :func:`limit_error` and
:func:`metadata_without_thread` (``drop_thread``'s rule).

Example:
    >>> from langchain_tiered_memory import HashingEmbeddings
    >>> from langchain_tiered_memory.stores.summaries import InMemorySummaryStore
    >>> store = InMemorySummaryStore(embeddings=HashingEmbeddings())
    >>> _ = store.add("alice", ["Alice's birthday is on May 8."])
    >>> store.search("alice", "When is her birthday?", k=1)[0].page_content
    "Alice's birthday is on May 8."
"""

from langchain_tiered_memory.stores.summaries.base import SummaryRetriever, SummaryStore
from langchain_tiered_memory.stores.summaries.index import (
    DEDUP_THRESHOLD,
    MAX_SUMMARY_CHARS,
    kept_items,
    limit_error,
    normalize_created_at,
    validate_items,
)
from langchain_tiered_memory.stores.summaries.memory_store import InMemorySummaryStore
from langchain_tiered_memory.stores.summaries.redis_store import RedisSummaryStore
from langchain_tiered_memory.stores.summaries.sources import metadata_without_thread

__all__ = [
    "SummaryStore",
    "RedisSummaryStore",
    "InMemorySummaryStore",
    "SummaryRetriever",
    "MAX_SUMMARY_CHARS",
    "DEDUP_THRESHOLD",
    "kept_items",
    "limit_error",
    "metadata_without_thread",
    "normalize_created_at",
    "validate_items",
]

"""LangGraph checkpointers on plain Redis (core commands only), beside the memory.

``RedisSaver`` and ``AsyncRedisSaver`` keep a graph's threads in the same Redis (the same
key prefix) as :class:`~langchain_tiered_memory.TieredMemory`; ``memory.checkpointer()``
returns one on the memory's own connection.

Example:
    >>> from langchain_tiered_memory.persistence.checkpoint import RedisSaver
    >>> with RedisSaver.from_url("redis://localhost:6379/0") as saver:  # doctest: +SKIP
    ...     saver.setup()
"""

from langchain_tiered_memory.persistence.checkpoint.aio import AsyncRedisSaver
from langchain_tiered_memory.persistence.checkpoint.base import BaseRedisSaver, CheckpointTTL
from langchain_tiered_memory.persistence.checkpoint.owned import OwnedSaver, is_guarded
from langchain_tiered_memory.persistence.checkpoint.saver import RedisSaver

__all__ = [
    "AsyncRedisSaver",
    "BaseRedisSaver",
    "CheckpointTTL",
    "OwnedSaver",
    "RedisSaver",
    "is_guarded",
]

"""Key helpers for the integration tests: a user's keys, found with SCAN (never KEYS)."""

from __future__ import annotations

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.backend.keys import KeyBuilder
from langchain_tiered_memory.memory.opening import keys_of


def user_keys(memory: TieredMemory, user_id: str) -> set[str]:
    """The keys of ``user_id`` that exist, under the memory's prefix."""
    assert memory.connection is not None
    client = memory.connection.sync
    prefix = keys_of(memory.history).prefix
    escaped = KeyBuilder(prefix).key(user_id, "meta").split("}")[0] + "}"
    return {k.decode() for k in client.scan_iter(match=f"{escaped}:*", count=1000)}

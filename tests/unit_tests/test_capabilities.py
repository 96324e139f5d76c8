"""What only memory on Redis does (expiry, the queue, its own saver and store, stored
vectors to convert) raises one typed error on in-process stores, from one check
(``Tiers.require_redis``), where it was accepted and silently not done (``user_ttl``) or
refused with three differently worded ``ValueError``s (issue 58 item 1).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from langchain_tiered_memory import HashingEmbeddings, TieredMemory
from langchain_tiered_memory.errors import UnsupportedOperationError
from langchain_tiered_memory.stores import (
    InMemoryHistoryStore,
    InMemorySummaryStore,
    InMemoryTagStore,
)
from langchain_tiered_memory.summarization.worker import SummaryWorker
from langchain_tiered_memory.testing import ScriptedChatModel


def _in_memory(**options: Any) -> TieredMemory:
    return TieredMemory(
        history=InMemoryHistoryStore(),
        tags=InMemoryTagStore(),
        summaries=InMemorySummaryStore(embeddings=HashingEmbeddings()),
        **options,
    )


def test_expiry_on_in_process_stores_is_refused_not_ignored() -> None:
    with pytest.raises(UnsupportedOperationError, match=r"user_ttl needs memory on Redis"):
        _in_memory(user_ttl=60)
    memory = TieredMemory.in_memory(embeddings=HashingEmbeddings())
    with pytest.raises(UnsupportedOperationError, match="never expire anything"):
        memory.user_ttl = 60
    assert memory.user_ttl is None  # nothing half-set


def test_a_setting_changed_later_is_checked_as_at_construction(data_dir: Path) -> None:
    with TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings()) as memory:
        with pytest.raises(ValueError, match="user_ttl must be a positive number"):
            memory.user_ttl = -5
        with pytest.raises(ValueError, match="summarize_after must be a positive int"):
            memory.summarize_after = 0
        assert (memory.user_ttl, memory.summarize_after) == (None, None)
        memory.user_ttl = 60  # on Redis: taken
        assert memory.tiers.ttl_ms() == 60_000


@pytest.mark.parametrize(
    ("door", "what"),
    [
        (lambda m: m.checkpointer(), "checkpointer()"),
        (lambda m: m.store(), "store()"),
        (lambda m: m.reembed(), "reembed()"),
        (lambda m: SummaryWorker(m, ScriptedChatModel(replies=[])), "the worker"),
    ],
    ids=["checkpointer", "store", "reembed", "worker"],
)
def test_each_redis_only_door_raises_the_one_typed_error(door: Any, what: str) -> None:
    memory = TieredMemory.in_memory(embeddings=HashingEmbeddings())
    with pytest.raises(UnsupportedOperationError) as caught:
        door(memory)
    assert str(caught.value).startswith(f"{what} needs memory on Redis")
    assert "TieredMemory.in_memory()" in str(caught.value)
    assert isinstance(caught.value, ValueError)  # what these raised before

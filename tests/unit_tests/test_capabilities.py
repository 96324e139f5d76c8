"""What the store contract does not cover (expiry, the queue, its own saver and store,
stored vectors to convert, the format upgrade, a directory of users) is a named capability
the memory declares (``TieredMemory.capabilities``) and a feature asks for
(``Tiers.require``): a missing one raises one typed error naming the stores at hand, where
it was accepted and silently not done (``user_ttl``, ``summarize_after``) or refused with
differently worded ``ValueError``s (issues 58 and 69).
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
    with pytest.raises(UnsupportedOperationError, match=r"user_ttl needs the 'expiry'"):
        _in_memory(user_ttl=60)
    memory = TieredMemory.in_memory(embeddings=HashingEmbeddings())
    with pytest.raises(UnsupportedOperationError, match="nothing would expire"):
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
    assert str(caught.value).startswith(f"{what} needs the ")
    assert "InMemoryHistoryStore, InMemoryTagStore, InMemorySummaryStore" in str(caught.value)
    assert isinstance(caught.value, ValueError)  # what these raised before


def test_summarize_after_off_redis_is_refused_not_ignored() -> None:
    """Issue 69 item 3: accepted, and no turn ever queued anything off Redis."""
    with pytest.raises(UnsupportedOperationError, match="summarize_pending"):
        _in_memory(summarize_after=5)
    memory = TieredMemory.in_memory(embeddings=HashingEmbeddings())
    with pytest.raises(UnsupportedOperationError, match=r"'queue' capability"):
        memory.summarize_after = 5
    assert memory.summarize_after is None


def test_each_family_declares_what_it_can_do(data_dir: Path) -> None:
    from langchain_tiered_memory.capabilities import Capability

    assert TieredMemory.in_memory(embeddings=HashingEmbeddings()).capabilities == {
        Capability.USER_DIRECTORY  # each in-memory store lists its users
    }
    with TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings()) as memory:
        assert memory.capabilities == set(Capability)
        with pytest.raises(TypeError):  # declared by the stores, not set
            memory.capabilities = frozenset()


class AppTags(InMemoryTagStore):
    """An app's own tag store that does not list its users."""

    users = None  # type: ignore[assignment]


def test_a_missing_capability_names_the_apps_stores_and_the_console_lists_what_it_can() -> None:
    from langchain_tiered_memory.capabilities import Capability
    from langchain_tiered_memory.console.views import list_users, store_label

    memory = TieredMemory(
        history=InMemoryHistoryStore(),
        tags=AppTags(),
        summaries=InMemorySummaryStore(embeddings=HashingEmbeddings()),
    )
    assert Capability.USER_DIRECTORY not in memory.capabilities
    with pytest.raises(UnsupportedOperationError) as caught:
        memory.reembed()
    assert "AppTags" in str(caught.value)
    memory.set_user_tags("tag-only", {"name": "Tia"})
    memory.add_summaries("items-only", ["Ivo plays the cello."])
    listed = [row.user_id for row in list_users(memory, None, None).users]
    assert listed == ["items-only"]  # the tag store cannot list its users: not guessed
    assert (
        store_label(memory)
        == "the app's stores (InMemoryHistoryStore, AppTags, InMemorySummaryStore)"
    )

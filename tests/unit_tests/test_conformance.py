"""The store contract's conformance suite (``langchain_tiered_memory.testing.conformance``)
on both of the package's store families: in memory and Redis (the embedded server). The
integration tests run it on a standalone redis-server and a Redis Cluster.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.stores.history import HistoryStore
from langchain_tiered_memory.stores.summaries import SummaryStore
from langchain_tiered_memory.stores.tags import TagStore
from langchain_tiered_memory.testing.conformance import (
    HistoryStoreConformance,
    SummaryStoreConformance,
    TagStoreConformance,
)

Factory = Callable[..., TieredMemory]


class TestTagStores(TagStoreConformance):
    @pytest.fixture
    def tag_store(self, memory_factory: Factory) -> TagStore:
        return memory_factory().tags


class TestHistoryStores(HistoryStoreConformance):
    @pytest.fixture
    def history_store(self, memory_factory: Factory) -> HistoryStore:
        return memory_factory().history


class TestSummaryStores(SummaryStoreConformance):
    @pytest.fixture
    def summary_store(self, memory_factory: Factory) -> SummaryStore:
        return memory_factory().summaries


class _LeakyTags(TagStoreConformance):
    """A store that breaks the contract: clear() erases every user."""


def test_the_suite_fails_a_store_that_clears_every_user() -> None:
    from langchain_tiered_memory.stores.tags import InMemoryTagStore

    class Leaky(InMemoryTagStore):
        def clear(self, user_id: str) -> int:
            for user in self.users():
                super().clear(user)
            return 1

    store = Leaky()
    with pytest.raises(AssertionError):
        _LeakyTags().test_delete_and_clear_touch_one_user(store)

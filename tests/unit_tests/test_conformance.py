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


def _ignoring(name: str) -> type:
    """An in-memory summary store whose ``add`` drops the ``name`` argument (issue 69: such a
    store passed the whole suite and broke the guarantees' "Summaries")."""
    from langchain_tiered_memory.stores.summaries import InMemorySummaryStore

    def add(self: InMemorySummaryStore, user_id: str, items: object, **kwargs: object) -> object:
        kwargs.pop(name, None)
        return InMemorySummaryStore.add(self, user_id, items, **kwargs)  # type: ignore[arg-type]

    return type(f"Ignoring{name.title()}", (InMemorySummaryStore,), {"add": add})


@pytest.mark.parametrize(
    ("ignored", "case"),
    [
        ("watermark", "test_the_watermark_moves_only_from_what_was_read"),
        ("fence", "test_an_erasure_fence_refuses_a_write_read_before_it"),
        ("supersedes", "test_a_superseded_item_is_kept_marked_and_left_out_of_recall"),
    ],
)
def test_the_suite_fails_a_store_that_ignores_a_guarantee(ignored: str, case: str) -> None:
    from langchain_tiered_memory import HashingEmbeddings

    store = _ignoring(ignored)(embeddings=HashingEmbeddings())
    with pytest.raises((AssertionError, pytest.fail.Exception)):
        getattr(SummaryStoreConformance(), case)(store)


def test_the_suite_fails_a_store_that_dedups_by_the_cosine_alone() -> None:
    """``add``'s old docstring said near-duplicates (cosine >= 0.95) are skipped; a store
    following it merged "father lives in Hangzhou" into "mother..."."""
    from langchain_tiered_memory import HashingEmbeddings
    from langchain_tiered_memory.stores.summaries import InMemorySummaryStore, index

    class ByCosine(InMemorySummaryStore):
        def add(self, user_id: str, items: object, **kwargs: object) -> list[str]:  # type: ignore[override]
            texts = list(items)  # type: ignore[call-overload]
            vectors = index.unit_rows(self.embeddings.embed_documents(texts))
            stored = self.get_all(user_id)
            olds = (
                index.unit_rows(self.embeddings.embed_documents([d.page_content for d in stored]))
                if stored
                else None
            )
            keep = [
                t
                for i, t in enumerate(texts)
                if (olds is None or float((olds @ vectors[i]).max()) < 0.95)
                and all(float(vectors[i] @ vectors[j]) < 0.95 for j in range(i))
            ]
            return super().add(user_id, keep, **kwargs) if keep else []  # type: ignore[arg-type]

    store = ByCosine(embeddings=HashingEmbeddings())
    with pytest.raises(AssertionError):
        SummaryStoreConformance().test_distinct_facts_with_close_vectors_are_both_stored(store)

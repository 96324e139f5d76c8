"""A backend written with sync I/O only is a complete store (issue 58 item 1).

The store bases give every contract method an async default that runs the sync method,
as the subclass defines it, in a worker thread (``_steps.threaded``). These stores define
only the sync methods, each the in-memory store's, and must pass the whole conformance
suite from both doors, never run a sync method on the event loop's thread, and carry a
memory's async turn.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory import HashingEmbeddings, TieredMemory
from langchain_tiered_memory.stores.history import HistoryStore, InMemoryHistoryStore
from langchain_tiered_memory.stores.summaries import InMemorySummaryStore, SummaryStore
from langchain_tiered_memory.stores.tags import InMemoryTagStore, TagStore
from langchain_tiered_memory.testing.conformance import (
    HistoryStoreConformance,
    SummaryStoreConformance,
    TagStoreConformance,
)

_S = TypeVar("_S")


def sync_only(base: type, inner: _S, threads: set[int]) -> _S:
    """A ``base`` store whose class defines the contract's sync methods only (``base``'s
    abstract methods, each forwarding to ``inner``), recording the threads they run on.
    Any other attribute (the schema, the embeddings) is ``inner``'s.
    """

    def forward(name: str) -> Callable[..., Any]:
        def method(self: Any, *args: Any, **kwargs: Any) -> Any:
            threads.add(threading.get_ident())
            return getattr(inner, name)(*args, **kwargs)

        method.__name__ = name
        return method

    # the abstract methods, and the contract methods whose defaults a complete store
    # overrides (the history's append_turn: a store that marks forks tells them; its
    # erase and the tags' drop_thread: an erasure leaves nothing, issue 76 items 5, 6;
    # the history's read_at/swap_at: its revisions, optional since issue 78; its
    # thread_mark, read with a turn: issue 78's one rule)
    optional = {"append_turn", "erase", "drop_thread", "read_at", "swap_at", "thread_mark"}
    overridden = optional & set(vars(base))
    names = sorted({*base.__abstractmethods__, *overridden})  # type: ignore[attr-defined]
    assert names and not any(name.startswith("a") and name[1:] in names for name in names)
    namespace: dict[str, Any] = {name: forward(name) for name in names}
    namespace["__getattr__"] = lambda self, name: getattr(inner, name)
    cls = type(f"SyncOnly{base.__name__}", (base,), namespace)
    for name in names:  # every async method is the base's default, none of inner's
        assert getattr(cls, f"a{name}") is getattr(base, f"a{name}")
    store: _S = cls()
    return store


@pytest.fixture
def loop_threads() -> set[int]:
    """The threads the sync methods ran on."""
    return set()


class TestSyncOnlyTags(TagStoreConformance):
    @pytest.fixture
    def tag_store(self, loop_threads: set[int]) -> TagStore:
        return sync_only(TagStore, InMemoryTagStore(), loop_threads)


class TestSyncOnlyHistory(HistoryStoreConformance):
    @pytest.fixture
    def history_store(self, loop_threads: set[int]) -> HistoryStore:
        return sync_only(HistoryStore, InMemoryHistoryStore(), loop_threads)


class TestSyncOnlySummaries(SummaryStoreConformance):
    @pytest.fixture
    def summary_store(self, loop_threads: set[int]) -> SummaryStore:
        inner = InMemorySummaryStore(embeddings=HashingEmbeddings())
        return sync_only(SummaryStore, inner, loop_threads)


def test_the_async_doors_never_run_a_sync_method_on_the_loop() -> None:
    threads: set[int] = set()
    tags = sync_only(TagStore, InMemoryTagStore(), threads)
    history = sync_only(HistoryStore, InMemoryHistoryStore(), threads)

    async def main() -> int:
        await tags.aset("ana", {"name": "Ana"})
        await history.aappend("ana", [HumanMessage("hi")], thread_id="t1")
        assert await tags.aget_all("ana") == {"name": "Ana"}
        assert [m.content for m in await history.atail("ana", 5)] == ["hi"]
        return threading.get_ident()

    loop_thread = asyncio.run(main())
    assert threads and loop_thread not in threads


def test_a_memory_over_sync_only_stores_runs_an_async_turn() -> None:
    threads: set[int] = set()
    memory = TieredMemory(
        history=sync_only(HistoryStore, InMemoryHistoryStore(), threads),
        tags=sync_only(TagStore, InMemoryTagStore(), threads),
        summaries=sync_only(
            SummaryStore, InMemorySummaryStore(embeddings=HashingEmbeddings()), threads
        ),
    )

    async def main() -> None:
        await memory.aset_user_tags("ana", {"name": "Ana", "age": 30})
        await memory.aadd_session_log(
            "ana", [HumanMessage("My birthday is on May 8."), AIMessage("Noted.")]
        )
        await memory.summaries.aadd("ana", ["Ana's birthday is on May 8."])
        assert await memory.aget_user_tags("ana") == {"name": "Ana", "age": "30"}
        recalled = await memory.arecall_summaries("ana", "When is my birthday?", 3)
        assert [d.page_content for d in recalled] == ["Ana's birthday is on May 8."]
        context = await memory.aload_context("ana", 10)
        assert [m.content for m in context] == ["My birthday is on May 8.", "Noted."]

    asyncio.run(main())
    assert threads

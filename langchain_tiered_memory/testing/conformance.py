"""The store contract as a test suite any backend can run (needs ``pytest``).

The facade, the graph and the privacy operations rely on what these tests check of a
:class:`TagStore`, a :class:`HistoryStore` and a :class:`SummaryStore`: values round-trip,
writes are all or nothing, every sync method's async twin returns the same, a thread has one
owner, and erasing or forgetting touches exactly one user's (or one thread's) data. The
package runs the suite on its in-memory and its Redis stores; a third party subclasses the
classes with a fixture that returns a fresh store of theirs, as ``langchain-tests`` does for
integrations::

    from langchain_tiered_memory.testing.conformance import TagStoreConformance

    class TestMyTags(TagStoreConformance):
        @pytest.fixture
        def tag_store(self) -> TagStore:
            return MyTagStore(...)  # empty, with DefaultTags' schema

Expiry (``user_ttl``) is not the stores' contract but the memory's (``Tiers``), and is not
checked here. Async checks run in ``asyncio.run``: no pytest-asyncio mode is needed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory.errors import InvalidTagError, ThreadOwnershipError
from langchain_tiered_memory.stores.history import HistoryStore
from langchain_tiered_memory.stores.summaries import SummaryStore
from langchain_tiered_memory.stores.tags import TagStore

__all__ = ["HistoryStoreConformance", "SummaryStoreConformance", "TagStoreConformance"]

_T = TypeVar("_T")


def _run(make: Callable[[], Awaitable[_T]]) -> _T:
    async def main() -> _T:
        return await make()

    return asyncio.run(main())


class TagStoreConformance:
    """What every :class:`TagStore` must do. Override :meth:`tag_store` (an empty store
    with the ``DefaultTags`` schema: ``name``, ``age``, ...).
    """

    @pytest.fixture
    def tag_store(self) -> TagStore:
        """A fresh, empty store (override it)."""
        raise NotImplementedError("override the tag_store fixture with your store")

    def test_values_round_trip_as_stored_strings(self, tag_store: TagStore) -> None:
        assert tag_store.set("ana", {"name": "Ana", "age": 30}) == {"name": "Ana", "age": "30"}
        assert tag_store.get("ana", "age") == "30"
        assert tag_store.get_all("ana") == {"name": "Ana", "age": "30"}
        assert tag_store.get("ana", "birthday") is None
        assert tag_store.get_all("nobody") == {}

    def test_a_refused_value_writes_nothing(self, tag_store: TagStore) -> None:
        tag_store.set("ana", {"name": "Ana"})
        with pytest.raises(InvalidTagError):
            tag_store.set("ana", {"name": "Anna", "age": "not a number"})
        with pytest.raises(InvalidTagError):
            tag_store.set("ana", {"name": "Anna", "no_such_tag": "x"})
        assert tag_store.get_all("ana") == {"name": "Ana"}

    def test_changes_are_logged_with_the_value_they_replaced(self, tag_store: TagStore) -> None:
        tag_store.set("ana", {"age": 30})
        tag_store.set("ana", {"age": 31}, thread_id="t2")
        changes = tag_store.history("ana", "age")
        assert [(c["value"], c["previous"]) for c in changes] == [("30", None), ("31", "30")]
        assert changes[-1]["thread_id"] == "t2"

    def test_delete_and_clear_touch_one_user(self, tag_store: TagStore) -> None:
        tag_store.set("ana", {"name": "Ana", "age": 30})
        tag_store.set("bo", {"name": "Bo", "age": 41})
        assert tag_store.delete("ana", ["age"]) == 1
        assert tag_store.delete("ana", ["age"]) == 0
        assert tag_store.get_all("ana") == {"name": "Ana"}
        tag_store.clear("ana")
        assert tag_store.get_all("ana") == {}
        assert tag_store.get_all("bo") == {"name": "Bo", "age": "41"}

    def test_the_async_twins_return_what_the_sync_methods_do(self, tag_store: TagStore) -> None:
        async def twins() -> list[Any]:
            stored = await tag_store.aset("ana", {"name": "Ana", "age": 30})
            return [
                stored,
                await tag_store.aget("ana", "name"),
                await tag_store.aget_all("ana"),
                len(await tag_store.ahistory("ana")),
                await tag_store.adelete("ana", ["age"]),
                await tag_store.aclear("ana"),
                await tag_store.aget_all("ana"),
            ]

        both = {"name": "Ana", "age": "30"}
        assert _run(twins) == [both, "Ana", both, 2, 1, 1, {}]
        assert tag_store.get_all("ana") == {}


class HistoryStoreConformance:
    """What every :class:`HistoryStore` must do. Override :meth:`history_store`."""

    @pytest.fixture
    def history_store(self) -> HistoryStore:
        """A fresh, empty store (override it)."""
        raise NotImplementedError("override the history_store fixture with your store")

    def test_append_returns_the_length_and_tail_reads_the_newest(
        self, history_store: HistoryStore
    ) -> None:
        assert history_store.append("ana", [HumanMessage("hi"), AIMessage("hello")]) == 2
        assert history_store.append("ana", [HumanMessage("again")]) == 3
        assert [m.text for m in history_store.tail("ana", 2)] == ["hello", "again"]
        assert history_store.length("ana") == 3
        assert history_store.tail("nobody", 5) == []

    def test_a_retried_thread_append_stores_nothing_twice(
        self, history_store: HistoryStore
    ) -> None:
        turn = [HumanMessage("hi", id="m1"), AIMessage("hello", id="m2")]
        history_store.append("ana", turn, thread_id="t1", thread_position=0)
        history_store.append("ana", turn, thread_id="t1", thread_position=0)
        assert history_store.length("ana") == 2

    def test_a_thread_has_one_owner(self, history_store: HistoryStore) -> None:
        history_store.record_thread("ana", "t1")
        with pytest.raises(ThreadOwnershipError):
            history_store.record_thread("bo", "t1")
        assert history_store.thread_record("ana", "t1") == ("ana", True)
        assert history_store.threads("ana") == ["t1"]
        assert history_store.threads("bo") == []

    def test_forgetting_a_thread_touches_that_thread_only(
        self, history_store: HistoryStore
    ) -> None:
        history_store.append("ana", [HumanMessage("in t1")], thread_id="t1", thread_position=0)
        history_store.append("ana", [HumanMessage("in t2")], thread_id="t2", thread_position=0)
        history_store.append("bo", [HumanMessage("bo's")], thread_id="t3", thread_position=0)
        assert history_store.forget_thread("ana", "t1") == 1
        assert [m.text for m in history_store.tail("ana", 10)] == ["in t2"]
        assert [m.text for m in history_store.tail("bo", 10)] == ["bo's"]

    def test_a_retraction_marks_the_message_and_its_reply_only(
        self, history_store: HistoryStore
    ) -> None:
        said = [HumanMessage("My code is A-1."), AIMessage("Noted, A-1."), HumanMessage("Hi")]
        history_store.append("ana", said)
        history_store.append("bo", [HumanMessage("My code is B-2.")])
        assert history_store.retract("ana", [0]) == 2  # the message and the reply to it
        assert history_store.retract("ana", [0, 99]) == 0  # once; a missing one skipped
        kept = history_store.tail("ana", 5)
        assert [m.text for m in kept] == ["My code is A-1.", "Noted, A-1.", "Hi"]
        marked = [bool(m.response_metadata.get("tiered_memory_retracted")) for m in kept]
        assert marked == [True, True, False]
        (bo,) = history_store.tail("bo", 5)
        assert not bo.response_metadata

    def test_a_fork_marks_the_branch_the_thread_left(self, history_store: HistoryStore) -> None:
        def turn(text: str, n: int, position: int) -> None:
            said = [HumanMessage(text, id=f"h{n}"), AIMessage("ok", id=f"a{n}")]
            history_store.append("ana", said, thread_id="t1", thread_position=position)

        turn("hello", 1, 0)
        turn("code ALPHA", 2, 2)
        turn("code ALPHA", 2, 2)  # a replay: nothing left
        said = [HumanMessage("code BRAVO", id="h3"), AIMessage("ok", id="a3")]
        # a run from the checkpoint before ALPHA: append_turn tells the memory which
        # positions it left, so the items made from them are unmade
        appended = history_store.append_turn("ana", said, thread_id="t1", thread_position=2)
        assert appended.left == (2, 3)
        assert appended.length == 6
        left = [
            m.text
            for m in history_store.tail("ana", 10)
            if m.response_metadata.get("tiered_memory_retracted") == "abandoned"
        ]
        assert left == ["code ALPHA", "ok"]
        assert history_store.length("ana") == 6  # kept, only marked

    def test_clear_touches_one_user(self, history_store: HistoryStore) -> None:
        history_store.append("ana", [HumanMessage("a")])
        history_store.append("bo", [HumanMessage("b")])
        assert history_store.clear("ana") >= 1
        assert history_store.tail("ana", 5) == []
        assert [m.text for m in history_store.tail("bo", 5)] == ["b"]

    def test_the_async_twins_return_what_the_sync_methods_do(
        self, history_store: HistoryStore
    ) -> None:
        async def twins() -> list[Any]:
            length = await history_store.aappend(
                "ana", [HumanMessage("hi")], thread_id="t1", thread_position=0
            )
            return [
                length,
                [m.text for m in await history_store.atail("ana", 5)],
                await history_store.athreads("ana"),
                await history_store.aforget_thread("ana", "t1"),
            ]

        assert _run(twins) == [1, ["hi"], ["t1"], 1]
        assert history_store.tail("ana", 5) == []


class SummaryStoreConformance:
    """What every :class:`SummaryStore` must do. Override :meth:`summary_store` (its
    embeddings must tell the items below apart: ``HashingEmbeddings`` do).
    """

    @pytest.fixture
    def summary_store(self) -> SummaryStore:
        """A fresh, empty store (override it)."""
        raise NotImplementedError("override the summary_store fixture with your store")

    def test_added_items_are_found_by_meaning_of_their_words(
        self, summary_store: SummaryStore
    ) -> None:
        ids = summary_store.add(
            "ana",
            ["Ana's birthday is on May 8.", "Ana failed her driving test in spring."],
        )
        assert len(ids) == 2
        found = summary_store.search("ana", "When is Ana's birthday?", 1)
        assert [d.page_content for d in found] == ["Ana's birthday is on May 8."]
        assert summary_store.search("bo", "birthday", 3) == []

    def test_a_repeated_item_is_not_stored_twice(self, summary_store: SummaryStore) -> None:
        summary_store.add("ana", ["Ana's birthday is on May 8."])
        summary_store.add("ana", ["Ana's birthday is on May 8."])
        assert len(summary_store.get_all("ana")) == 1

    def test_delete_update_and_clear_touch_one_user(self, summary_store: SummaryStore) -> None:
        (ana,) = summary_store.add("ana", ["Ana likes green tea."])
        summary_store.add("bo", ["Bo likes black coffee."])
        assert summary_store.update("ana", ana, "Ana likes jasmine tea.")
        assert [d.page_content for d in summary_store.get_all("ana")] == ["Ana likes jasmine tea."]
        assert summary_store.delete("ana", [ana, "no-such-id"]) == 1
        assert summary_store.get_all("ana") == []
        summary_store.add("ana", ["Ana moved to Lyon."])
        summary_store.clear("ana")
        assert summary_store.get_all("ana") == []
        assert [d.page_content for d in summary_store.get_all("bo")] == ["Bo likes black coffee."]

    def test_drop_thread_removes_one_thread_from_one_users_items(
        self, summary_store: SummaryStore
    ) -> None:
        meta: list[dict[str, Any]] = [
            {"source_threads": ["t1", "t2"]},
            {"source_threads": ["t2"]},
            {"threads": "t1"},
        ]
        texts = ["Ana likes green tea.", "Ana moved to Lyon.", "Ana plays the cello."]
        summary_store.add("ana", texts, metadata=meta)
        summary_store.add("bo", ["Bo likes black coffee."], metadata={"source_threads": ["t1"]})
        assert summary_store.drop_thread("ana", "t1") == 2
        items = {d.page_content: d.metadata for d in summary_store.get_all("ana")}
        assert items["Ana likes green tea."]["source_threads"] == ["t2"]
        assert items["Ana moved to Lyon."]["source_threads"] == ["t2"]
        assert items["Ana plays the cello."]["threads"] == []
        # the items are still found by their words; the other user keeps their thread
        found = summary_store.search("ana", "What does Ana drink?", 1)
        assert [d.page_content for d in found] == ["Ana likes green tea."]
        (bo,) = summary_store.get_all("bo")
        assert bo.metadata["source_threads"] == ["t1"]
        assert summary_store.drop_thread("ana", "t1") == 0
        assert _run(lambda: summary_store.adrop_thread("ana", "t2")) == 2

    def test_the_async_twins_return_what_the_sync_methods_do(
        self, summary_store: SummaryStore
    ) -> None:
        async def twins() -> list[Any]:
            ids = await summary_store.aadd("ana", ["Ana's birthday is on May 8."])
            found = await summary_store.asearch("ana", "birthday", 1)
            return [len(ids), [d.page_content for d in found], await summary_store.aclear("ana")]

        assert _run(twins) == [1, ["Ana's birthday is on May 8."], 1]
        assert summary_store.get_all("ana") == []

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

import numpy as np
import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory.errors import (
    InvalidMessageError,
    InvalidSummaryError,
    InvalidTagError,
    ThreadOwnershipError,
    WatermarkConflict,
)
from langchain_tiered_memory.stores.history import HistoryStore, dump_message, message_ids
from langchain_tiered_memory.stores.summaries import (
    DEDUP_THRESHOLD,
    MAX_SUMMARY_CHARS,
    SummaryStore,
)
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

    def test_dropping_a_thread_keeps_its_changes_without_it(self, tag_store: TagStore) -> None:
        # forget_thread: the tags stay, their log no longer names the forgotten thread
        tag_store.set("ana", {"age": 30}, thread_id="t1")
        tag_store.set("ana", {"name": "Ana"}, thread_id="t2")
        tag_store.delete("ana", ["age"], thread_id="t1")
        tag_store.set("bo", {"age": 41}, thread_id="t1")
        assert tag_store.drop_thread("ana", "t1") == 2
        changes = tag_store.history("ana")
        assert [(c["tag"], c["value"], c["thread_id"]) for c in changes] == [
            ("age", "30", None),
            ("name", "Ana", "t2"),
            ("age", "", None),
        ]
        assert tag_store.drop_thread("ana", "t1") == 0
        assert [c["thread_id"] for c in tag_store.history("bo")] == ["t1"]
        assert _run(lambda: tag_store.adrop_thread("ana", "t2")) == 1

    def test_validate_checks_without_writing(self, tag_store: TagStore) -> None:
        assert tag_store.validate({"age": 31}) == {"age": "31"}
        with pytest.raises(InvalidTagError):
            tag_store.validate({"no_such_tag": "x"})
        assert tag_store.get_all("ana") == {}

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
    """What every :class:`HistoryStore` must do. Override :meth:`history_store`.

    A method with a default that keeps an earlier backend running (``erase``,
    ``read_at``/``swap_at``, ``append_turn``'s fork marking) is still tested: the cases
    of what such a backend lacks fail until it overrides the method; the others pass.
    """

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

    def test_the_thread_mark_is_what_the_rule_keeps(self, history_store: HistoryStore) -> None:
        """``thread_mark``: a turn's read asks it, so a fork is followed before the model
        runs (the default knows none).
        """
        said = [HumanMessage("hi", id="h1"), AIMessage("hello", id="a1")]
        history_store.append("ana", said, thread_id="t1", thread_position=0)
        mark = history_store.thread_mark("ana", "t1")
        assert mark is not None and mark[0] == 2
        assert [entry.split("\x1e")[0] for entry in mark[1]] == message_ids(said)
        assert history_store.thread_mark("ana", "t2") is None
        assert history_store.thread_mark("bo", "t1") is None

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

    def test_a_refused_message_writes_nothing_or_a_note(self, history_store: HistoryStore) -> None:
        big = HumanMessage("x" * (history_store.max_message_bytes + 1))
        with pytest.raises(InvalidMessageError):
            history_store.append("ana", [HumanMessage("fine"), big])
        assert history_store.length("ana") == 0  # all or nothing
        assert (
            history_store.append("ana", [HumanMessage("fine"), big], on_invalid="placeholder") == 2
        )
        note = history_store.tail("ana", 1)[0]
        assert note.type == "human" and "x" * 100 not in note.text

    def test_trim_keeps_the_newest_and_never_passes_the_watermark(
        self, history_store: HistoryStore
    ) -> None:
        history_store.append("ana", [HumanMessage(f"m{i}") for i in range(6)])
        history_store.append("bo", [HumanMessage("bo's")])
        assert history_store.trim("ana", keep_last=2, not_after=3) == 3  # 0-2, not 3
        assert history_store.length("ana") == 6  # positions keep counting
        first, end, messages = history_store.window("ana", 0)
        assert (first, end, [m.text for m in messages]) == (3, 6, ["m3", "m4", "m5"])
        assert history_store.trim("ana", keep_last=2, not_after=6) == 1
        assert [m.text for m in history_store.tail("ana", 9)] == ["m4", "m5"]
        assert [m.text for m in history_store.tail("bo", 9)] == ["bo's"]

    def test_positions_tell_each_messages_thread_and_skip_a_forgotten_one(
        self, history_store: HistoryStore
    ) -> None:
        history_store.append(
            "ana", [HumanMessage("a"), AIMessage("b")], thread_id="t1", thread_position=0
        )
        history_store.append("ana", [HumanMessage("c")], thread_id="t2", thread_position=0)
        history_store.append("ana", [HumanMessage("d")], thread_id="t1", thread_position=2)
        assert history_store.spans("ana") == [(0, 2, "t1"), (2, 3, "t2"), (3, 4, "t1")]
        history_store.forget_thread("ana", "t2")
        first, end, found = history_store.window_positions("ana", 0)
        assert (first, end) == (0, 4)
        assert [(p, m.text) for p, m in found] == [(0, "a"), (1, "b"), (3, "d")]
        assert [m.text for m in history_store.window("ana", 1, 2)[2]] == ["b"]  # 1 and 2
        assert history_store.threads("ana") == ["t1"]

    def test_a_swap_replaces_only_what_was_read(self, history_store: HistoryStore) -> None:
        history_store.append("ana", [HumanMessage("I am 30."), HumanMessage("Hi")])
        (read,) = history_store.read_at("ana", [0])
        assert history_store.read_at("ana", [5]) == [None]
        new = dump_message(HumanMessage("I am 31."), history_store.max_message_bytes).decode()
        assert history_store.swap_at("ana", [(0, read, new)]) == 1
        assert history_store.swap_at("ana", [(0, read, new)]) == 0  # no longer what was read
        assert [m.text for m in history_store.tail("ana", 5)] == ["I am 31.", "Hi"]

    def test_an_edit_replaces_the_threads_message_with_its_id(
        self, history_store: HistoryStore
    ) -> None:
        """The thread's rule: the same id with another text at its position is an edit,
        stored in place; the reply after it, with another id, is a fork.
        """
        said = [HumanMessage("I am 30.", id="h1"), AIMessage("ok", id="a1")]
        history_store.append("ana", said, thread_id="t1", thread_position=0)
        history_store.append("bo", [HumanMessage("I am 30.", id="h1")], thread_id="t2")
        edit = [HumanMessage("I am 31.", id="h1"), AIMessage("noted", id="a2")]
        appended = history_store.append_turn("ana", edit, thread_id="t1", thread_position=0)
        assert [(p, m.text) for p, m in appended.replaced] == [(0, "I am 30.")]
        assert appended.left == (1,)  # the old reply: a branch the thread left
        kept = history_store.tail("ana", 5)
        assert [m.text for m in kept] == ["I am 31.", "ok", "noted"]
        marks = [m.response_metadata.get("tiered_memory_retracted") for m in kept]
        assert marks == [None, "abandoned", None]
        again = history_store.append_turn("ana", edit, thread_id="t1", thread_position=0)
        assert again == (3, (), ())  # a replay of the edit changes nothing
        assert [m.text for m in history_store.tail("bo", 5)] == ["I am 30."]

    def test_a_reused_id_after_the_saved_position_is_a_new_message(
        self, history_store: HistoryStore
    ) -> None:
        """Clients that number their messages reuse an id after a trim: stored, once."""
        history_store.append("ana", [HumanMessage("a", id="m1")], thread_id="t1", thread_position=0)
        history_store.append("ana", [HumanMessage("b", id="m1")], thread_id="t1", thread_position=1)
        history_store.append("ana", [HumanMessage("b", id="m1")], thread_id="t1", thread_position=1)
        assert [m.text for m in history_store.tail("ana", 5)] == ["a", "b"]

    def test_release_leaves_another_users_thread_alone(self, history_store: HistoryStore) -> None:
        history_store.record_thread("ana", "t1")
        history_store.record_thread("bo", "t2")
        history_store.release_threads("ana", ["t1", "t2"])
        assert history_store.thread_record("ana", "t1")[0] is None  # no owner now
        assert history_store.thread_record("bo", "t2") == ("bo", True)
        history_store.record_thread("bo", "t1")  # released: anyone's to claim
        assert history_store.thread_owner("t1") == "bo"

    def test_users_and_clear_keep_positions_counting(self, history_store: HistoryStore) -> None:
        history_store.append("ana", [HumanMessage("a"), HumanMessage("b")])
        history_store.append("bo", [HumanMessage("c")])
        assert sorted(history_store.users()) == ["ana", "bo"]
        assert history_store.clear("ana") == 2
        assert history_store.length("ana") == 2  # the watermark stays valid
        assert history_store.append("ana", [HumanMessage("d")]) == 3
        assert history_store.window("ana", 0)[2][0].text == "d"

    def test_erase_leaves_nothing_of_the_user(self, history_store: HistoryStore) -> None:
        # forget_user: no counter either (the erasure fence, not the counter, keeps a
        # summarizer that read before it from writing after it; see HistoryStore.erase)
        history_store.append("ana", [HumanMessage("a"), AIMessage("b")], thread_id="t1")
        history_store.forget_thread("ana", "t1")
        history_store.append("ana", [HumanMessage("c")], thread_id="t2", thread_position=0)
        history_store.record_thread("ana", "t3")
        history_store.trim("ana", keep_last=0, not_after=1)
        history_store.append("bo", [HumanMessage("bo's")], thread_id="t4")
        assert history_store.erase("ana") == 1  # the forgotten ones are not counted again
        assert history_store.length("ana") == 0  # positions start again
        assert history_store.tail("ana", 5) == []
        assert history_store.threads("ana") == [] and history_store.spans("ana") == []
        assert "ana" not in history_store.users()
        assert history_store.append("ana", [HumanMessage("new")]) == 1
        assert history_store.window("ana", 0)[:2] == (0, 1)
        assert history_store.length("bo") == 1 and history_store.threads("bo") == ["t4"]
        assert _run(lambda: history_store.aerase("ana")) == 1
        assert history_store.length("ana") == 0

    def test_since_reads_from_a_position(self, history_store: HistoryStore) -> None:
        history_store.append("ana", [HumanMessage(f"m{i}") for i in range(4)])
        first, messages = history_store.since("ana", 2)
        assert (first, [m.text for m in messages]) == (2, ["m2", "m3"])
        assert history_store.since("ana", 9)[1] == []

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

    def test_distinct_facts_with_close_vectors_are_both_stored(
        self, summary_store: SummaryStore
    ) -> None:
        # one word apart in many: close under any embeddings model (checked below)
        tail = (
            " lives in Hangzhou, near the West Lake, in a flat on the third floor of an old "
            "building with a small garden, a red door and a view of the hills and the water."
        )
        father, mother = f"The user's father{tail}", f"The user's mother{tail}"
        vectors = np.asarray(summary_store.embeddings.embed_documents([father, mother]))
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        assert float(vectors[0] @ vectors[1]) >= DEDUP_THRESHOLD, "the case needs close vectors"
        assert len(summary_store.add("ana", [father])) == 1
        assert len(summary_store.add("ana", [mother, mother.upper()])) == 1  # one restated
        assert summary_store.add("ana", [f"  {father}  "]) == []  # the same words again
        assert sorted(d.page_content for d in summary_store.get_all("ana")) == [father, mother]

    def test_the_watermark_moves_only_from_what_was_read(self, summary_store: SummaryStore) -> None:
        assert summary_store.get_watermark("ana") == 0
        assert summary_store.add("ana", [], watermark=(0, 4)) == []
        assert summary_store.get_watermark("ana") == 4
        with pytest.raises(WatermarkConflict):
            summary_store.add("ana", ["Ana likes tea."], watermark=(0, 6))
        assert summary_store.get_watermark("ana") == 4
        assert summary_store.get_all("ana") == []  # nothing written
        assert len(summary_store.add("ana", ["Ana likes tea."], watermark=(4, 6))) == 1
        assert summary_store.get_watermark("ana") == 6
        assert summary_store.get_watermark("bo") == 0

    def test_an_erasure_fence_refuses_a_write_read_before_it(
        self, summary_store: SummaryStore
    ) -> None:
        summary_store.add("ana", ["Ana plays chess."])  # a user with memory to erase
        mark, fence = summary_store.get_fence("ana")
        summary_store.rotate_fence("ana")
        with pytest.raises(WatermarkConflict):
            summary_store.add("ana", ["Ana likes tea."], watermark=(mark, mark + 2), fence=fence)
        assert [d.page_content for d in summary_store.get_all("ana")] == ["Ana plays chess."]
        assert summary_store.get_watermark("ana") == mark
        mark, fence = summary_store.get_fence("ana")  # read after the erasure: it goes
        assert (
            len(summary_store.add("ana", ["Ana likes tea."], watermark=(mark, 2), fence=fence)) == 1
        )

    def test_a_superseded_item_is_kept_marked_and_left_out_of_recall(
        self, summary_store: SummaryStore
    ) -> None:
        (old,) = summary_store.add("ana", ["Ana lives in Paris."], created_at="2024-01-01")
        (new,) = summary_store.add(
            "ana", ["Ana lives in Lyon now."], created_at="2025-03-01", supersedes={0: [old]}
        )
        items = {d.id: d.metadata for d in summary_store.get_all("ana")}
        assert items[old].get("superseded_by") == new
        assert str(items[old]["valid_until"]).startswith("2025-03-01")
        assert not items[new].get("superseded_by")
        found = summary_store.search("ana", "Where does Ana live?", 5)
        assert [d.id for d in found] == [new]
        every = summary_store.search("ana", "Where does Ana live?", 5, include_superseded=True)
        assert {d.id for d in every} == {old, new}
        assert summary_store.superseded_texts("ana") == ["Ana lives in Paris."]
        assert summary_store.superseded_texts("bo") == []

    def test_words_find_the_item_that_names_them(self, summary_store: SummaryStore) -> None:
        texts = ["Ana scored 7.5 on the IELTS.", "Ana plays chess.", "Ana lives in Lyon."]
        (ielts, *_) = summary_store.add("ana", texts)
        found = summary_store.search_words("ana", "What was my IELTS score?", 1)
        assert [d.page_content for d in found] == [texts[0]]
        retake = "Ana scored 8 on the IELTS retake."
        summary_store.add("ana", [retake], supersedes={0: [ielts]})
        found = summary_store.search_words("ana", "IELTS", 3)
        assert found[0].page_content == retake  # the superseded score is left out
        assert texts[0] not in [d.page_content for d in found]
        every = summary_store.search_words("ana", "IELTS", 3, include_superseded=True)
        assert {texts[0], retake} <= {d.page_content for d in every}
        assert summary_store.search_words("bo", "IELTS", 1) == []
        again = _run(lambda: summary_store.asearch_words("ana", "IELTS", 1))
        assert [d.page_content for d in again] == [retake]

    def test_a_refused_item_writes_nothing(self, summary_store: SummaryStore) -> None:
        for bad in (["Ana likes tea.", "  "], "Ana likes tea.", ["x" * (MAX_SUMMARY_CHARS + 1)]):
            with pytest.raises(InvalidSummaryError):
                summary_store.add("ana", bad)  # type: ignore[arg-type]
        assert summary_store.get_all("ana") == []

    def test_per_item_metadata_and_dates_round_trip(self, summary_store: SummaryStore) -> None:
        meta: list[dict[str, Any]] = [{"source_positions": [0, 1]}, {"source_positions": [2]}]
        ids = summary_store.add(
            "ana", ["Ana likes tea.", "Ana plays chess."], created_at="2024-05-08", metadata=meta
        )
        items = {d.id: d for d in summary_store.get_all("ana")}
        assert [items[i].metadata["source_positions"] for i in ids] == [[0, 1], [2]]
        assert all(str(items[i].metadata["created_at"]).startswith("2024-05-08") for i in ids)
        with pytest.raises(InvalidSummaryError):
            summary_store.update("ana", "no-such-id", "x")
        assert summary_store.update("ana", ids[0], "Ana likes green tea.")
        edited = {d.id: d for d in summary_store.get_all("ana")}[ids[0]]
        assert edited.metadata["source_positions"] == [0, 1]  # same id, date, provenance
        assert str(edited.metadata["created_at"]).startswith("2024-05-08")

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

    def test_the_provided_methods_work_on_the_store(self, summary_store: SummaryStore) -> None:
        texts = ["Ana failed her driving test in spring.", "Ana's birthday is on May 8."]
        summary_store.add("ana", texts)
        assert summary_store.get_all_count("ana") == 2
        assert summary_store.get_all_count("bo") == 0
        conversation = ["I have an exam next week.", "It is the driving test again."]
        found = summary_store.search_conversation("ana", conversation, 1)
        assert [d.page_content for d in found] == [texts[0]]
        assert summary_store.search_conversation("bo", conversation, 1) == []
        (near,) = summary_store.similar("ana", ["Ana failed the driving test."], 1)
        assert [d.page_content for d in near] == [texts[0]]
        assert len(summary_store.embed_query("birthday")) == len(
            summary_store.embed_conversation(conversation)
        )

    def test_the_async_twins_return_what_the_sync_methods_do(
        self, summary_store: SummaryStore
    ) -> None:
        async def twins() -> list[Any]:
            ids = await summary_store.aadd("ana", ["Ana's birthday is on May 8."])
            found = await summary_store.asearch("ana", "birthday", 1)
            return [len(ids), [d.page_content for d in found], await summary_store.aclear("ana")]

        assert _run(twins) == [1, ["Ana's birthday is on May 8."], 1]
        assert summary_store.get_all("ana") == []

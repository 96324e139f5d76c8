"""Ids the package refuses at its doors never reach a backend from inside (issue 76 item 8).

A history store on PostgreSQL ``text`` rejects a NUL byte, and any backend may trust the
package to hand it only ids its doors accept. The paths that hand a store an id the
package did not get from a door (the owner lookup of a copied thread, the admission of a
saver's read, whose config the app built) check it first, with the doors' own error; the
owner lookup itself asks with an id no door refuses.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver

from langchain_tiered_memory import (
    HashingEmbeddings,
    InvalidArgumentError,
    InvalidUserIdError,
    TieredMemory,
)
from langchain_tiered_memory._ids import validate_run_thread_id, validate_user_id
from langchain_tiered_memory.agent.context import thread_of
from langchain_tiered_memory.stores import InMemorySummaryStore, InMemoryTagStore
from langchain_tiered_memory.stores.history import InMemoryHistoryStore, ThreadGuard


class TextColumnRejected(Exception):
    """What a PostgreSQL driver raises for a NUL byte in a ``text`` value."""


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            yield from _strings(item)


class TextColumnHistory(InMemoryHistoryStore):
    """The in-memory history store behind a PostgreSQL-like door: it records every user
    and thread id a call hands it (the string arguments of its public methods, itself
    calling itself included) and rejects a NUL byte as a ``text`` column does.
    """

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def __getattribute__(self, name: str) -> Any:
        attr = object.__getattribute__(self, name)
        if name.startswith("_") or not callable(attr) or name == "seen":
            return attr
        seen: list[str] = object.__getattribute__(self, "seen")

        def checked(*args: Any, **kwargs: Any) -> Any:
            for text in _strings([*args, *kwargs.values()]):
                seen.append(text)
                if "\x00" in text:
                    raise TextColumnRejected(f"invalid byte sequence 0x00 in {name}({text!r})")
            return attr(*args, **kwargs)

        return checked


def _doors_accept(text: str) -> bool:
    """Whether a door would pass ``text`` as a user id and as a thread id (what a store
    may be handed as either)."""
    try:
        validate_user_id(text)
        validate_run_thread_id(text)
    except (InvalidUserIdError, InvalidArgumentError):
        return False
    return True


@pytest.fixture
def history() -> TextColumnHistory:
    return TextColumnHistory()


@pytest.fixture
def memory(history: TextColumnHistory) -> Iterator[TieredMemory]:
    memory = TieredMemory(
        history=history,
        tags=InMemoryTagStore(),
        summaries=InMemorySummaryStore(embeddings=HashingEmbeddings()),
    )
    yield memory
    memory.close()


class CopyingSaver(InMemorySaver):
    """An in-memory saver with a ``copy_thread`` (LangGraph's raises
    ``NotImplementedError``): what the guard does before the copy is what is tested.
    """

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self.storage[target_thread_id] = self.storage[source_thread_id]

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self.copy_thread(source_thread_id, target_thread_id)


def read(thread: str, user: str) -> RunnableConfig:
    """The config of an app's read of a thread as a user (``get_state``'s)."""
    return {"configurable": {"thread_id": thread, "user_id": user}}


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_copying_a_thread_asks_its_owner_with_an_id_a_backend_takes(
    memory: TieredMemory, history: TextColumnHistory, asynchronous: bool
) -> None:
    saver = memory.checkpointer(CopyingSaver())
    history.record_thread("ann", "t1")
    if asynchronous:
        await saver.acopy_thread("t1", "t2")
    else:
        saver.copy_thread("t1", "t2")
    assert history.thread_record("ann", "t2") == ("ann", True)  # the copy is ann's
    assert all(_doors_accept(text) for text in history.seen), history.seen


def test_the_guard_asks_an_owner_with_an_id_a_backend_takes(history: TextColumnHistory) -> None:
    from langchain_tiered_memory._steps import drive

    history.record_thread("ann", "t1")
    drive(ThreadGuard(history).copied("t1", "t-copy"))
    drive(ThreadGuard(history).copied("nobody's", "t-copy2"))  # no owner: no record
    assert history.thread_record("ann", "t-copy")[0] == "ann"
    assert history.thread_record("ann", "t-copy2")[0] is None
    assert all(_doors_accept(text) for text in history.seen), history.seen


BAD_THREADS = ["a\x00b", "\x00", "x" * 1025, "\ud800"]


@pytest.mark.parametrize("bad", BAD_THREADS, ids=["nul", "only-nul", "long", "surrogate"])
@pytest.mark.parametrize("asynchronous", [False, True])
async def test_a_thread_id_the_doors_refuse_never_reaches_the_store_from_inside(
    memory: TieredMemory, history: TextColumnHistory, bad: str, asynchronous: bool
) -> None:
    # the run's door: a graph's or an agent's config naming the thread
    with pytest.raises(InvalidArgumentError) as at_door:
        thread_of({"configurable": {"thread_id": bad}})
    saver = memory.checkpointer(CopyingSaver())
    history.record_thread("ann", "t1")
    inner: list[Callable[[], Any]] = [
        lambda: saver.get_tuple(read(bad, "ann")),  # a read's admission
        lambda: saver.copy_thread(bad, "t2"),
        lambda: saver.copy_thread("t1", bad),
        lambda: ThreadGuard(history).check_thread("ann", bad),
    ]
    ainner: list[Callable[[], Any]] = [
        lambda: saver.aget_tuple(read(bad, "ann")),
        lambda: saver.acopy_thread(bad, "t2"),
        lambda: saver.acopy_thread("t1", bad),
    ]
    for attempt in ainner if asynchronous else inner:
        with pytest.raises(InvalidArgumentError) as inside:
            result = attempt()
            if asynchronous:
                await result
        assert type(inside.value) is type(at_door.value)
        assert str(inside.value) == str(at_door.value)  # the door's own words
    assert bad not in history.seen
    assert all(_doors_accept(text) for text in history.seen), history.seen


def test_erasure_still_reaches_a_thread_recorded_with_a_nul_before(
    memory: TieredMemory,
) -> None:
    """A run's door refuses a NUL now; a thread recorded with one before (a load, or the
    claim of a read the saver then refused) is still erased with its user."""
    plain = InMemoryHistoryStore()  # the store of an earlier release: it took the NUL
    plain.record_thread("ann", "a\x00b")
    legacy = TieredMemory(
        history=plain,
        tags=InMemoryTagStore(),
        summaries=InMemorySummaryStore(embeddings=HashingEmbeddings()),
    )
    try:
        assert legacy.forget_user("ann")["threads"] == 1
        assert plain.thread_owner("a\x00b") is None
    finally:
        legacy.close()


@pytest.mark.parametrize("bad", ["", "u" * 257, "\ud800"], ids=["empty", "long", "surrogate"])
def test_a_user_id_the_doors_refuse_never_reaches_the_store_from_a_read(
    memory: TieredMemory, history: TextColumnHistory, bad: str
) -> None:
    # an app's read names the user in its config (no run): the guard checks it as a door
    saver = memory.checkpointer(CopyingSaver())
    with pytest.raises(InvalidUserIdError):
        memory.load(bad, "hi", thread_id="t1")  # the memory's door
    before = list(history.seen)
    if bad:
        with pytest.raises(InvalidUserIdError):
            saver.get_tuple(read("t1", bad))
    with pytest.raises(InvalidUserIdError):
        ThreadGuard(history).check_thread(bad, "t1")
    assert history.seen == before


def test_the_default_owner_lookup_hands_the_store_an_id_the_doors_accept(
    history: TextColumnHistory,
) -> None:
    """``HistoryStore.thread_owner``'s default asks ``thread_record`` for some user: that
    user id was ``"\\x00owner-lookup"``, rejected by a ``text`` column."""
    from langchain_tiered_memory.stores.history import HistoryStore

    history.record_thread("ann", "t1")
    assert HistoryStore.thread_owner(history, "t1") == "ann"
    assert all(_doors_accept(text) for text in history.seen), history.seen


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_a_load_checks_its_thread_id_before_any_store_sees_it(
    memory: TieredMemory, history: TextColumnHistory, asynchronous: bool
) -> None:
    """``memory.load(thread_id=...)`` (the graph's load node, an app's own loop)."""
    with pytest.raises(InvalidArgumentError):
        if asynchronous:
            await memory.aload("ann", "hi", thread_id="a\x00b")
        else:
            memory.load("ann", "hi", thread_id="a\x00b")
    assert all(_doors_accept(text) for text in history.seen), history.seen

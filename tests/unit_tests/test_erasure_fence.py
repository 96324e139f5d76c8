"""Erasure fences every summarizer that started before it (issue 32, item 1).

A summarization reads the history, then calls the model (seconds), then writes items and
the watermark. An erasure in between must win: the write finds the user's fence moved (or
gone) and stores nothing. Before the fence, ``forget_user`` was undone by the late write
(the erased watermark reads as 0, what a first summarization expects) and ``forget_thread``
let the forgotten thread's item in, credited to the user's other thread.

Both store families; on the embedded server the keys are checked with SCAN.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from support import MemoryFactory, all_keys

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.backend.keys import escape_user_id
from langchain_tiered_memory.testing import ScriptedChatModel


class Paused:
    """A summarizer model that tells when it was called and answers only when released."""

    def __init__(self, item: str) -> None:
        self.item = item
        self.called = threading.Event()
        self.release = threading.Event()

    def __call__(self, messages: list[BaseMessage]) -> AIMessage:
        self.called.set()
        assert self.release.wait(30), "the test never released the summarizer"
        return AIMessage(f"- {self.item}")

    def model(self) -> ScriptedChatModel:
        return ScriptedChatModel(replies=[self])


def _race(memory: TieredMemory, user: str, item: str, erase: Any) -> list[str]:
    """Start a summarization, erase while the model works, then let it write ``item``."""
    paused = Paused(item)
    with ThreadPoolExecutor(1) as pool:
        job = pool.submit(memory.summarize_history, user, paused.model(), max_messages=50)
        assert paused.called.wait(30)
        erase()
        paused.release.set()
        return job.result(30)


def _user_keys(memory: TieredMemory, user: str) -> set[str]:
    """The user's keys under this memory's prefix (other tests share the server)."""
    head = memory.history.keys.key(user, "")  # type: ignore[attr-defined]
    return {k for k in all_keys(memory) if k.startswith(head)}


def test_forget_user_during_a_summarization_stays_forgotten(memory_factory: MemoryFactory) -> None:
    memory = memory_factory()
    memory.add_session_log(
        "ana",
        [HumanMessage("My PIN is 4921."), AIMessage("Noted.")],
        thread_id="t1",
    )
    memory.add_session_log("bob", [HumanMessage("I like chess."), AIMessage("Nice.")])

    stored = _race(memory, "ana", "The user's PIN is 4921.", lambda: memory.forget_user("ana"))

    assert stored == []
    assert memory.summaries.get_all("ana") == []
    assert memory.summaries.get_watermark("ana") == 0
    assert memory.load_context("ana") == []
    if memory.redis_url is not None:
        assert _user_keys(memory, "ana") == set()
        assert _user_keys(memory, "bob")  # the other user is untouched
        # nor is she put back in the console's directory (issue 66 item 11)
        keys = memory.history.keys  # type: ignore[attr-defined]
        client = memory.connection.sync  # type: ignore[union-attr]
        assert client.zscore(keys.directory_key(), escape_user_id("ana")) is None
        assert client.zscore(keys.directory_key(), escape_user_id("bob")) is not None
    # the user's memory works again from nothing
    memory.add_session_log("ana", [HumanMessage("Hello again, I moved to Rome."), AIMessage("Hi.")])
    again = ScriptedChatModel(replies=[AIMessage("- The user moved to Rome.")])
    assert memory.summarize_history("ana", again)


def test_forget_thread_during_a_summarization_stores_nothing_from_it(
    memory_factory: MemoryFactory,
) -> None:
    memory = memory_factory()
    memory.add_session_log("cy", [HumanMessage("I live in Lyon."), AIMessage("OK.")], thread_id="a")
    memory.add_session_log(
        "cy", [HumanMessage("My secret is 77."), AIMessage("OK.")], thread_id="b"
    )

    stored = _race(
        memory,
        "cy",
        "The user's secret is 77; lives in Lyon.",
        lambda: memory.forget_thread("cy", "b"),
    )

    assert stored == []
    texts = [d.page_content for d in memory.summaries.get_all("cy")]
    assert not any("77" in t for t in texts)
    # the next summarization reads the history again, without the forgotten thread
    later = ScriptedChatModel(replies=[AIMessage("- The user lives in Lyon.")])
    assert memory.summarize_history("cy", later)
    texts = [d.page_content for d in memory.summaries.get_all("cy")]
    assert texts == ["The user lives in Lyon."]


def test_a_summarization_with_no_erasure_still_writes(memory_factory: MemoryFactory) -> None:
    memory = memory_factory()
    memory.add_session_log("dee", [HumanMessage("I play the cello."), AIMessage("Lovely.")])
    stored = _race(memory, "dee", "The user plays the cello.", lambda: None)
    assert len(stored) == 1
    assert memory.summaries.get_watermark("dee") == 2

"""Stored data of the wrong kind is corrupt data, not a connection error (issue 32, item 13).

A key of another type (WRONGTYPE) or a value a script cannot read raised
``MemoryBackendError`` (a ``ConnectionError``: "retry later") and ``memory.load`` failed
whole. Now it is ``CorruptMemoryError`` naming the cause, and a turn's load serves the
tiers whose data is sound. On the embedded server.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from support import raw_client

from langchain_tiered_memory import CorruptMemoryError, TieredMemory
from langchain_tiered_memory.agent.graph import create_memory_graph
from langchain_tiered_memory.backend.keys import KeyBuilder
from langchain_tiered_memory.testing import ScriptedChatModel

KEYS = KeyBuilder()


def _fill(memory: TieredMemory, user: str) -> None:
    memory.set_user_tags(user, {"name": "Ana"})
    memory.add_session_log(user, [HumanMessage("I keep bees."), AIMessage("Lovely.")])
    memory.add_summaries(user, ["Ana keeps bees on the roof."])


def _clobber(memory: TieredMemory, key: str) -> None:
    raw = raw_client(memory.redis_url or "")
    try:
        raw.delete(key)
        raw.set(key, "not what the package writes")
    finally:
        raw.close()


@pytest.mark.parametrize("tier", ["tags", "history", "meta"])
async def test_load_serves_the_sound_tiers_when_one_key_has_another_type(
    embedded_memory: TieredMemory, tier: str
) -> None:
    memory = embedded_memory
    _fill(memory, "ana")
    _clobber(memory, KEYS.key("ana", tier))  # type: ignore[arg-type]

    for snap in (
        memory.load("ana", "bees roof"),
        await memory.aload("ana", "bees roof"),
    ):
        assert (snap.tags == {}) == (tier == "tags")
        assert (snap.history == []) == (tier == "history")
        assert (snap.recalled == []) == (tier == "meta")
        assert snap.tags or snap.history or snap.recalled


def test_a_tier_read_alone_raises_corrupt_memory_not_a_connection_error(
    embedded_memory: TieredMemory,
) -> None:
    memory = embedded_memory
    _fill(memory, "ana")
    _clobber(memory, KEYS.key("ana", "tags"))
    with pytest.raises(CorruptMemoryError, match="another type") as caught:
        memory.get_user_tags("ana")
    assert not isinstance(caught.value, ConnectionError)


def _thread_with_checkpoints(memory: TieredMemory) -> tuple[Any, Any, dict[str, Any]]:
    saver = memory.checkpointer()
    graph = create_memory_graph(
        ScriptedChatModel(replies=["ok"]), memory=memory, checkpointer=saver
    )
    config: Any = {"configurable": {"thread_id": "t1"}}
    for i in range(3):
        graph.invoke({"messages": [HumanMessage(f"hi {i}")]}, config, context={"user_id": "u"})
    return saver, graph, config


def test_a_bad_refs_entry_or_a_refs_key_of_another_type_is_corrupt_memory(
    embedded_memory: TieredMemory,
) -> None:
    memory = embedded_memory
    saver, graph, config = _thread_with_checkpoints(memory)
    refs = KEYS.thread_key("t1", "cp:refs")
    raw = raw_client(memory.redis_url or "")
    try:
        raw.hset(refs, max(raw.hkeys(refs)), b"garbage")
        with pytest.raises(CorruptMemoryError, match="could not be read by a script"):
            saver.get_tuple(config)
        _clobber(memory, refs)
        with pytest.raises(CorruptMemoryError, match="another type"):
            saver.get_tuple(config)
        with pytest.raises(CorruptMemoryError):
            graph.invoke({"messages": [HumanMessage("again")]}, config, context={"user_id": "u"})
    finally:
        raw.close()
    # the other users' memory and other threads are unaffected
    other: Any = {"configurable": {"thread_id": "t2"}}
    graph.invoke({"messages": [HumanMessage("hello")]}, other, context={"user_id": "v"})
    assert saver.get_tuple(other) is not None


def test_refs_that_are_not_msgpack_are_corrupt_memory_in_get_state(
    embedded_memory: TieredMemory,
) -> None:
    """Issue 43 item 21: cmsgpack's "Bad data format" was a MemoryBackendError."""
    memory = embedded_memory
    _, graph, config = _thread_with_checkpoints(memory)
    refs = KEYS.thread_key("t1", "cp:refs")
    raw = raw_client(memory.redis_url or "")
    try:
        for field in raw.hkeys(refs):
            raw.hset(refs, field, b"\xc1not msgpack")
    finally:
        raw.close()
    with pytest.raises(CorruptMemoryError, match="Bad data format") as caught:
        graph.get_state(config)
    assert not isinstance(caught.value, ConnectionError)


def test_an_unrelated_refusal_stays_a_backend_error(embedded_memory: TieredMemory) -> None:
    from langchain_tiered_memory import MemoryBackendError

    memory = embedded_memory
    connection = memory.summaries.connection  # type: ignore[attr-defined]
    with pytest.raises(MemoryBackendError, match="refused a command"), connection.errors():
        connection.sync.execute_command("NOSUCHCOMMAND")

"""A saver decodes a stored value once while it holds it (``persistence/checkpoint/cache.py``).

The cache itself (bounded by bytes, fresh containers, off at 0), then the saver on the
embedded server: a long thread's snapshot is not decoded again by the next turn, a thread
deleted and written again under the same fields reads its new values (the cache is keyed by
bytes), and a reducer that extends the list it was given does not change what the next read
returns.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from support import raw_client
from test_checkpoint_blobs import checkpoint, put

from langchain_tiered_memory import TieredMemory, create_memory_graph
from langchain_tiered_memory.backend.keys import KeyBuilder
from langchain_tiered_memory.errors import CorruptMemoryError
from langchain_tiered_memory.persistence.checkpoint import RedisSaver
from langchain_tiered_memory.persistence.checkpoint.cache import MIN_BYTES, DecodedValues
from langchain_tiered_memory.persistence.checkpoint.scripts import DIGEST
from langchain_tiered_memory.testing import ScriptedChatModel


def counting(calls: list[bytes]) -> Any:
    def decode(blob: bytes) -> list[int]:
        calls.append(blob)
        return [len(blob)]

    return decode


def test_a_held_value_is_not_decoded_again_and_comes_in_a_new_list() -> None:
    cache = DecodedValues(max_bytes=1 << 20)
    calls: list[bytes] = []
    blob = b"a" * MIN_BYTES
    first = cache.get(blob, counting(calls))
    first.append("changed by a reducer")
    again = cache.get(bytes(blob), counting(calls))  # equal bytes, another object
    assert calls == [blob]
    assert again == [MIN_BYTES]
    snap = DecodedValues(max_bytes=1 << 20)
    outer = snap.get(blob, lambda b: _DeltaSnapshot([1, 2]))
    outer.value.append(3)
    assert snap.get(blob, lambda b: 1 / 0) == _DeltaSnapshot([1, 2])


def test_the_cache_holds_at_most_max_bytes_dropping_the_least_recent() -> None:
    cache = DecodedValues(max_bytes=3 * MIN_BYTES)
    calls: list[bytes] = []
    blobs = [bytes([i]) * MIN_BYTES for i in range(4)]
    for blob in blobs[:3]:
        cache.get(blob, counting(calls))
    cache.get(blobs[0], counting(calls))  # the oldest, used again: now the newest
    cache.get(blobs[3], counting(calls))  # over the bound: blobs[1] goes
    assert len(cache) == 3
    calls.clear()
    cache.get(blobs[0], counting(calls))
    cache.get(blobs[1], counting(calls))
    assert calls == [blobs[1]]


def test_small_values_and_a_cache_of_zero_bytes_always_decode() -> None:
    calls: list[bytes] = []
    off = DecodedValues(max_bytes=0)
    on = DecodedValues(max_bytes=1 << 20)
    for _ in range(2):
        off.get(b"b" * MIN_BYTES, counting(calls))
        on.get(b"c" * (MIN_BYTES - 1), counting(calls))
    assert len(calls) == 4
    assert len(off) == 0 and len(on) == 0
    with pytest.raises(ValueError, match="max_bytes"):
        DecodedValues(max_bytes=-1)


class CountingSerde(JsonPlusSerializer):
    """LangGraph's serializer, counting the values it decodes that are worth keeping."""

    def __init__(self) -> None:
        super().__init__()
        self.loads = 0

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        value = super().loads_typed(data)
        self.loads += len(data[1]) >= MIN_BYTES
        return value


def test_the_next_turn_of_a_long_thread_does_not_decode_its_snapshot_again(
    embedded_memory: TieredMemory,
) -> None:
    serde = CountingSerde()
    saver = RedisSaver(embedded_memory.connection, serde=serde)  # type: ignore[arg-type]
    graph = create_memory_graph(
        ScriptedChatModel(replies=["r" * 50]), memory=embedded_memory, checkpointer=saver
    )
    config: Any = {"configurable": {"thread_id": "long"}}
    # past the messages channel's first snapshot (every 100 updates)
    for turn in range(60):
        graph.invoke(
            {"messages": [("user", f"{turn} " + "m" * 50)]}, config, context={"user_id": "u"}
        )
    cold = RedisSaver(embedded_memory.connection, serde=CountingSerde())  # type: ignore[arg-type]
    first = cold.get_delta_channel_history(config=config, channels=["messages"])
    cold_loads = cold.serde.loads  # type: ignore[attr-defined]
    second = cold.get_delta_channel_history(config=config, channels=["messages"])
    assert "seed" in first["messages"]  # the walk reached a snapshot
    assert second == first
    # the second walk decodes the target's own record (checkpoint, metadata), not the
    # snapshot and the writes since it
    assert cold_loads > 20
    assert cold.serde.loads - cold_loads <= 2  # type: ignore[attr-defined]
    # nor is what the walk reads of each ancestor, and changing what a walk returned
    # changes no later walk
    read: list[object] = []
    original = cold._ancestor

    def spy(*args: Any) -> Any:
        read.append(args)
        return original(*args)

    cold._ancestor = spy  # type: ignore[method-assign,assignment]
    second["messages"]["seed"].value.append("changed in place")
    second["messages"]["writes"].clear()
    third = cold.get_delta_channel_history(config=config, channels=["messages"])
    assert read == []
    assert third == first
    uncached = RedisSaver(
        embedded_memory.connection,  # type: ignore[arg-type]
        serde=CountingSerde(),
        decode_cache_bytes=0,
    )
    uncached.get_delta_channel_history(config=config, channels=["messages"])
    before = uncached.serde.loads  # type: ignore[attr-defined]
    assert uncached.get_delta_channel_history(config=config, channels=["messages"]) == first
    assert uncached.serde.loads - before == before  # type: ignore[attr-defined]
    state = graph.get_state(config)
    assert len(state.values["messages"]) == 120


def test_a_thread_written_again_under_the_same_fields_reads_its_new_values(
    embedded_memory: TieredMemory,
) -> None:
    saver = embedded_memory.checkpointer()
    old = [HumanMessage("old " * 100, id="1"), AIMessage("a", id="2")]
    new = [HumanMessage("new " * 100, id="1"), AIMessage("b", id="2")]
    versions = {"messages": "0000000000000001.5"}
    put(saver, "again", None, checkpoint("c1", {"messages": old}, versions), versions)
    loaded = saver.get_tuple({"configurable": {"thread_id": "again"}})
    assert loaded is not None and loaded.checkpoint["channel_values"]["messages"] == old
    loaded.checkpoint["channel_values"]["messages"].append(AIMessage("in place"))
    assert (
        saver.get_tuple({"configurable": {"thread_id": "again"}}).checkpoint[  # type: ignore[union-attr]
            "channel_values"
        ]["messages"]
        == old
    )
    assert len(saver._decoded) > 0
    saver.delete_thread("again")
    assert len(saver._decoded) == 0  # an erased thread's values leave the process too
    put(saver, "again", None, checkpoint("c1", {"messages": new}, versions), versions)
    loaded = saver.get_tuple({"configurable": {"thread_id": "again"}})
    assert loaded is not None and loaded.checkpoint["channel_values"]["messages"] == new


# ----- the walk checks what it kept (one digest an ancestor), loads only what is new -----


def _long_thread(memory: TieredMemory, saver: RedisSaver, thread: str, turns: int) -> Any:
    graph = create_memory_graph(
        ScriptedChatModel(replies=["r" * 50]), memory=memory, checkpointer=saver
    )
    config: Any = {"configurable": {"thread_id": thread}}
    for turn in range(turns):
        run: Any = {**config, "metadata": {"run_id": str(uuid.uuid4())}}  # delete_for_runs
        graph.invoke({"messages": [("user", f"{turn} " + "m" * 50)]}, run, context={"user_id": "u"})
    return graph, config


def _ids(value: Any) -> list[str]:
    if isinstance(value, list):
        return [i for item in value for i in _ids(item)]
    return [value.id] if isinstance(value, BaseMessage) and value.id else []


def _walk(saver: RedisSaver, config: Any) -> Any:
    return saver.get_delta_channel_history(config=config, channels=["messages"])


def _cold(memory: TieredMemory) -> RedisSaver:
    return RedisSaver(memory.connection, decode_cache_bytes=0)  # type: ignore[arg-type]


def test_a_warm_walk_loads_only_the_checkpoints_new_since_the_last(
    embedded_memory: TieredMemory,
) -> None:
    saver = embedded_memory.checkpointer()
    graph, config = _long_thread(embedded_memory, saver, "warm", 40)
    _walk(saver, config)
    graph.invoke({"messages": [("user", "one more")]}, config, context={"user_id": "u"})
    decoded: list[object] = []
    original = saver._ancestor

    def spy(*args: Any) -> Any:
        decoded.append(args)
        return original(*args)

    saver._ancestor = spy  # type: ignore[method-assign,assignment]
    warm = _walk(saver, config)
    assert 0 < len(decoded) <= 16  # the turn's few new checkpoints, one small batch
    assert warm == _walk(_cold(embedded_memory), config)
    assert len(warm["messages"]["writes"]) > 16  # the walk itself was long


def test_a_write_to_an_old_checkpoint_a_delete_and_a_rewrite_are_seen(
    embedded_memory: TieredMemory,
) -> None:
    """What another process (or time travel) changes under a kept ancestor is loaded again:
    a late write to a checkpoint that has children, checkpoints deleted by run, and a
    checkpoint put again under its id with another record."""
    saver = embedded_memory.checkpointer()
    graph, config = _long_thread(embedded_memory, saver, "changed", 30)
    history = list(saver.list(config))
    _walk(saver, config)  # kept
    old = history[len(history) // 2].config
    saver.put_writes(old, [("messages", [AIMessage("late", id="late")])], task_id="late-task")
    scripts: list[str] = []
    original = saver._eval

    def counting(script: str, *args: Any) -> Any:
        scripts.append(script)
        return original(script, *args)

    saver._eval = counting  # type: ignore[method-assign,assignment]
    warm = _walk(saver, config)
    saver._eval = original  # type: ignore[method-assign]
    assert warm == _walk(_cold(embedded_memory), config)
    # one digest call: the changed checkpoint is loaded, the ones older than it still serve
    assert scripts.count(DIGEST) == 1
    assert "late" in _ids([value for _, _, value in warm["messages"]["writes"]])
    runs = sorted({str(t.metadata["run_id"]) for t in history if t.metadata.get("run_id")})
    # any run but that of the checkpoint put again below (run ids are random: picked by
    # position alone, it was that checkpoint's own run about once in 30 runs)
    kept_run = str(history[5].metadata.get("run_id"))
    saver.delete_for_runs([next(r for r in runs[len(runs) // 3 :] if r != kept_run)])
    assert _walk(saver, config) == _walk(_cold(embedded_memory), config)
    tuple_ = saver.get_tuple(history[5].config)
    assert tuple_ is not None
    changed = dict(tuple_.metadata, note="put again")
    assert tuple_.parent_config is not None
    saver.put(tuple_.parent_config, tuple_.checkpoint, changed, {})  # type: ignore[arg-type]
    assert _walk(saver, config) == _walk(_cold(embedded_memory), config)
    # a checkpoint put as its own parent is corrupt data: a clear error, not a hang
    saver.put(tuple_.config, tuple_.checkpoint, changed, {})  # type: ignore[arg-type]
    with pytest.raises(CorruptMemoryError, match="its own ancestor"):
        _walk(_cold(embedded_memory), config)


def test_a_thread_restored_from_an_edited_copy_is_read_again(
    embedded_memory: TieredMemory,
) -> None:
    """Issue 32 item 12: the walk's check reads the writes' content, not only their number.

    Another process restores the thread from a copy (delete_thread + copy_thread) whose
    old checkpoint holds as many writes as before, with other values: a long-lived saver
    must not serve the walk it kept.
    """
    saver = embedded_memory.checkpointer()
    other = _cold(embedded_memory)  # another process
    _, config = _long_thread(embedded_memory, saver, "restored", 12)
    other.copy_thread("restored", "backup")
    kept = _walk(saver, config)  # the long-lived saver keeps what it walked

    writes_key = KeyBuilder().thread_key("backup", "cp:writes")
    raw: Any = raw_client(embedded_memory.redis_url or "")
    try:
        # two of the user's messages, written to two old checkpoints: swap their values
        users = [f for f, v in raw.hgetall(writes_key).items() if v.startswith(b"\x94\xa8messages")]
        users = [f for f in users if b"user" in raw.hget(writes_key, f)]
        assert len(users) >= 4
        first, second = sorted(users)[1], sorted(users)[-2]
        a, b = raw.hmget(writes_key, [first, second])
        raw.hset(writes_key, mapping={first: b, second: a})  # same fields, other values
    finally:
        raw.close()
    other.delete_thread("restored")
    other.copy_thread("backup", "restored")

    fresh = _walk(_cold(embedded_memory), config)
    assert fresh != kept  # the copy really holds other values
    assert _walk(saver, config) == fresh

"""A long list snapshot (a ``DeltaChannel``'s) is stored as chunks shared by later
snapshots, so a thread's bytes grow with its turns, not with their square; records are
compressed with a preset dictionary and older forms still read.

The saver API directly on the embedded server, with messages as values (what the prebuilt
graph's snapshots hold). Each property here failed on the saver that stored each snapshot
whole (or each record with plain zlib).
"""

from __future__ import annotations

import zlib
from typing import Any

import ormsgpack
import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from test_checkpoint_blobs import checkpoint, key, put, raw, values_at

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.errors import CorruptMemoryError
from langchain_tiered_memory.persistence.checkpoint import RedisSaver
from langchain_tiered_memory.persistence.checkpoint import chunks as chunks_module
from langchain_tiered_memory.persistence.checkpoint.chunks import CHUNK_ITEMS, is_chunk_field
from langchain_tiered_memory.persistence.checkpoint.records import (
    DICTIONARY,
    pack_record,
    unpack_record,
)


@pytest.fixture
def saver(embedded_memory: TieredMemory) -> RedisSaver:
    return embedded_memory.checkpointer()


def messages(n: int, start: int = 0) -> list[Any]:
    """n messages, a user's and a reply in turn, with ids (as the graph stores them)."""
    out: list[Any] = []
    for i in range(start, start + n):
        cls = HumanMessage if i % 2 == 0 else AIMessage
        out.append(cls(content=f"message {i}: " + "说点什么 and something" * 8, id=f"m{i}"))
    return out


def blob_bytes(saver: RedisSaver, thread: str) -> int:
    values = raw(saver).hvals(key(saver, thread, "cp:blobs"))
    return sum(len(v) for v in values)


def snapshot_put(
    saver: RedisSaver, thread: str, cid: str, parent: str | None, items: list[Any]
) -> None:
    put(
        saver,
        thread,
        parent,
        checkpoint(cid, {"messages": _DeltaSnapshot(items)}, {"messages": f"v{cid}"}),
        {"messages": f"v{cid}"},
    )


def test_a_grown_snapshot_stores_only_its_new_chunks(saver: RedisSaver) -> None:
    first = messages(300)
    snapshot_put(saver, "t", "1", None, first)
    after_first = blob_bytes(saver, "t")
    grown = [*first, *messages(40, start=300)]
    snapshot_put(saver, "t", "2", "1", grown)
    added = blob_bytes(saver, "t") - after_first
    # whole snapshots: the second adds all 340 messages again (113% of the first)
    assert added < 0.3 * after_first
    assert values_at(saver, "t", "1")["messages"] == _DeltaSnapshot(first)
    assert values_at(saver, "t", "2")["messages"] == _DeltaSnapshot(grown)


def test_a_snapshot_after_an_edit_in_the_middle_reads_back_exactly(saver: RedisSaver) -> None:
    first = messages(200)
    snapshot_put(saver, "t", "1", None, first)
    edited = first[:5] + first[6:] + messages(3, start=200)  # one removed, three added
    snapshot_put(saver, "t", "2", "1", edited)
    assert values_at(saver, "t", "2")["messages"] == _DeltaSnapshot(edited)
    assert values_at(saver, "t", "1")["messages"] == _DeltaSnapshot(first)


def test_short_lists_and_other_values_are_stored_whole(saver: RedisSaver) -> None:
    snapshot_put(saver, "t", "1", None, messages(CHUNK_ITEMS - 1))
    fields = [f.decode() for f in raw(saver).hkeys(key(saver, "t", "cp:blobs"))]
    assert fields and not any(is_chunk_field(f) for f in fields)
    assert values_at(saver, "t", "1")["messages"] == _DeltaSnapshot(messages(CHUNK_ITEMS - 1))


def test_deletes_keep_the_chunks_a_remaining_snapshot_holds(saver: RedisSaver) -> None:
    first = messages(100)
    grown = [*first, *messages(50, start=100)]
    snapshot_put(saver, "t", "1", None, first)
    snapshot_put(saver, "t", "2", "1", grown)
    saver.prune(["t"])  # keeps the latest: checkpoint 2, which shares 3 chunks with 1
    assert values_at(saver, "t", "2")["messages"] == _DeltaSnapshot(grown)
    fields = [f.decode() for f in raw(saver).hkeys(key(saver, "t", "cp:blobs"))]
    held = ormsgpack.unpackb(raw(saver).hget(key(saver, "t", "cp:refs"), "\x002"))
    assert sorted(fields) == sorted(held)  # checkpoint 1's own tail chunk went with it
    saver.delete_thread("t")
    assert raw(saver).exists(key(saver, "t", "cp:blobs")) == 0


def test_a_copied_thread_reads_its_chunked_snapshots(saver: RedisSaver) -> None:
    items = messages(90)
    snapshot_put(saver, "src", "1", None, items)
    saver.copy_thread("src", "dst")
    saver.delete_thread("src")
    assert values_at(saver, "dst", "1")["messages"] == _DeltaSnapshot(items)


def test_a_missing_chunk_is_a_corrupt_memory_error(saver: RedisSaver) -> None:
    snapshot_put(saver, "t", "1", None, messages(70))
    blobs = key(saver, "t", "cp:blobs")
    chunk = next(f for f in raw(saver).hkeys(blobs) if is_chunk_field(f.decode()))
    raw(saver).hdel(blobs, chunk)
    with pytest.raises(CorruptMemoryError, match="missing from its thread's blobs"):
        values_at(saver, "t", "1")


def test_the_prebuilt_graphs_long_thread_keeps_its_messages(embedded_memory: TieredMemory) -> None:
    """Through the graph: 120 turns pass a DeltaChannel snapshot (every 100 updates); the
    state read back from a new saver (no cache) is every message in order."""
    from langchain_tiered_memory import create_memory_graph
    from langchain_tiered_memory.testing import ScriptedChatModel

    graph = create_memory_graph(
        ScriptedChatModel(replies=["好的"]),
        memory=embedded_memory,
        checkpointer=embedded_memory.checkpointer(),
    )
    config: Any = {"configurable": {"thread_id": "long"}}
    for turn in range(120):
        graph.invoke(
            {"messages": [("user", f"第{turn}轮 turn {turn}")]}, config, context={"user_id": "u"}
        )
    fields = raw(embedded_memory.checkpointer()).hkeys(
        key(embedded_memory.checkpointer(), "long", "cp:blobs")
    )
    assert any(is_chunk_field(f.decode()) for f in fields)
    fresh_graph = create_memory_graph(
        ScriptedChatModel(replies=["好的"]),
        memory=embedded_memory,
        checkpointer=embedded_memory.checkpointer(),
    )
    texts = [m.content for m in fresh_graph.get_state(config).values["messages"]]
    assert texts[0::2] == [f"第{turn}轮 turn {turn}" for turn in range(120)]
    assert set(texts[1::2]) == {"好的"}


# ---------------------------------------------------------------------------- records


def test_records_are_compressed_with_the_dictionary_and_read_back() -> None:
    fields = [
        "msgpack",
        ormsgpack.packb({"channel_versions": {"messages": "a1.x"}} | {"k" * 300: 1}),
        "msgpack",
        b"\x80",
        "p",
    ]
    stored = pack_record(fields)
    assert stored[:1] == b"\x78" and stored[1] & 0x20  # the zlib header names a dictionary
    assert unpack_record(stored) == fields


def test_records_written_before_the_dictionary_still_read() -> None:
    fields = ["msgpack", b"y" * 400, "msgpack", b"\x80", ""]
    assert unpack_record(zlib.compress(ormsgpack.packb(fields), 1)) == fields  # plain zlib
    assert unpack_record(ormsgpack.packb(fields[:2] + ["msgpack", b"\x80", ""])) == fields[:2] + [
        "msgpack",
        b"\x80",
        "",
    ]


def test_the_dictionary_is_frozen() -> None:
    """Stored records name the dictionary by its Adler-32: changing it loses them all."""
    assert zlib.adler32(DICTIONARY) == 319303474


def test_a_record_naming_an_unknown_dictionary_is_corrupt(saver: RedisSaver) -> None:
    put(saver, "t", None, checkpoint("1", {"n": 1}, {"n": "v1"}), {"n": "v1"})
    data = key(saver, "t", "cp:data")
    other = zlib.compressobj(1, zdict=b"another dictionary")
    raw(saver).hset(data, "\x001", other.compress(ormsgpack.packb(["x"] * 5)) + other.flush())
    with pytest.raises(CorruptMemoryError, match="cannot be read"):
        values_at(saver, "t", "1")


def test_the_input_is_kept_in_its_record_not_a_blob(saver: RedisSaver) -> None:
    value = {"messages": [("user", "x" * 400)]}
    put(
        saver,
        "t",
        None,
        checkpoint("1", {"__start__": value}, {"__start__": "v1"}),
        {"__start__": "v1"},
    )
    assert raw(saver).hlen(key(saver, "t", "cp:blobs")) == 0
    # the serializer gives a list for a tuple, in a record as in a blob
    assert values_at(saver, "t", "1")["__start__"] == {"messages": [["user", "x" * 400]]}


def test_chunk_fields_never_look_like_versions() -> None:
    assert is_chunk_field("ns\x00messages\x00#0a1b")
    assert not is_chunk_field("ns\x00messages\x00b16.k3f9zq")
    assert not is_chunk_field("ns\x00#messages\x00b16.k3f9zq")
    assert chunks_module.split(None, "", "not a snapshot") is None  # type: ignore[arg-type]

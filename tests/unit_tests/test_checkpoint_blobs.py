"""``RedisSaver`` stores a channel value once per version (a blob), not in every checkpoint.

The saver API directly, on the embedded server: a value a step did not change is named,
not stored again; deletes keep the blobs a remaining checkpoint holds and drop the rest;
a thread whose records hold their values inline (written before blobs) still loads, and a
checkpoint that goes on from one sends the values it cannot find.
"""

from __future__ import annotations

from typing import Any

import ormsgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import Checkpoint, empty_checkpoint

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.errors import CorruptMemoryError
from langchain_tiered_memory.persistence.checkpoint import RedisSaver
from langchain_tiered_memory.persistence.checkpoint.base import INLINE_CHARS, SEP

BIG = ["x" * 300, {"note": "y" * 300}]


@pytest.fixture
def saver(embedded_memory: TieredMemory) -> RedisSaver:
    return embedded_memory.checkpointer()


def raw(saver: RedisSaver) -> Any:
    return saver.connection.sync


def key(saver: RedisSaver, thread: str, kind: str) -> str:
    return saver.keys.thread_key(thread, kind)  # type: ignore[arg-type]


def checkpoint(checkpoint_id: str, values: dict[str, Any], versions: dict[str, str]) -> Checkpoint:
    out = empty_checkpoint()
    out["id"] = checkpoint_id
    out["channel_values"] = dict(values)
    out["channel_versions"] = dict(versions)
    return out


def put(
    saver: RedisSaver,
    thread: str,
    parent: str | None,
    ckpt: Checkpoint,
    new_versions: dict[str, str],
    run: str | None = None,
) -> RunnableConfig:
    configurable: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ""}
    if parent:
        configurable["checkpoint_id"] = parent
    metadata: dict[str, Any] = {"run_id": run} if run else {}
    return saver.put({"configurable": configurable}, ckpt, metadata, new_versions)  # type: ignore[arg-type]


def values_at(saver: RedisSaver, thread: str, checkpoint_id: str) -> dict[str, Any]:
    found = saver.get_tuple(
        {"configurable": {"thread_id": thread, "checkpoint_ns": "", "checkpoint_id": checkpoint_id}}
    )
    assert found is not None
    return dict(found.checkpoint["channel_values"])


def test_an_unchanged_value_is_stored_once_and_every_checkpoint_reads_it(
    saver: RedisSaver,
) -> None:
    put(
        saver,
        "t",
        None,
        checkpoint("1", {"big": BIG, "n": 1}, {"big": "v1", "n": "v1"}),
        {"big": "v1", "n": "v1"},
    )
    for i in range(2, 6):  # four steps that change only "n"
        put(
            saver,
            "t",
            str(i - 1),
            checkpoint(str(i), {"big": BIG, "n": i}, {"big": "v1", "n": f"v{i}"}),
            {"n": f"v{i}"},
        )
    assert raw(saver).hlen(key(saver, "t", "cp:blobs")) == 1  # "n" is small: inline
    for i in range(1, 6):
        assert values_at(saver, "t", str(i)) == {"big": BIG, "n": i}
    put(
        saver,
        "t",
        "5",
        checkpoint("6", {"big": [*BIG, "z"], "n": 5}, {"big": "v6", "n": "v5"}),
        {"big": "v6"},
    )
    assert raw(saver).hlen(key(saver, "t", "cp:blobs")) == 2
    assert values_at(saver, "t", "6")["big"] == [*BIG, "z"]
    assert values_at(saver, "t", "5")["big"] == BIG  # time travel reads the old version


def test_small_values_stay_inline_and_are_decided_by_the_value_alone(saver: RedisSaver) -> None:
    small = {"s": "a" * INLINE_CHARS, "i": 7, "e": [], "none": None}
    put(
        saver,
        "t",
        None,
        checkpoint("1", small, dict.fromkeys(small, "v1")),
        dict.fromkeys(small, "v1"),
    )
    assert not raw(saver).exists(key(saver, "t", "cp:blobs"))
    assert not raw(saver).exists(key(saver, "t", "cp:refs"))
    assert values_at(saver, "t", "1") == small
    longer = {"s": "a" * (INLINE_CHARS + 1)}
    put(saver, "t", "1", checkpoint("2", longer, {"s": "v2"}), {"s": "v2"})
    assert raw(saver).hlen(key(saver, "t", "cp:blobs")) == 1


def test_delete_for_runs_keeps_the_blobs_a_remaining_checkpoint_holds(saver: RedisSaver) -> None:
    put(saver, "t", None, checkpoint("1", {"big": BIG}, {"big": "v1"}), {"big": "v1"}, run="a")
    put(
        saver,
        "t",
        "1",
        checkpoint("2", {"big": BIG, "n": 2}, {"big": "v1", "n": "v2"}),
        {"n": "v2"},
        run="b",
    )
    saver.delete_for_runs(["a"])  # the checkpoint that wrote the blob goes, its holder stays
    assert values_at(saver, "t", "2")["big"] == BIG
    saver.delete_for_runs(["b"])
    assert not raw(saver).exists(key(saver, "t", "cp:blobs"))
    assert not raw(saver).exists(key(saver, "t", "cp:refs"))


def test_prune_keeps_only_the_blobs_of_the_latest_checkpoint(saver: RedisSaver) -> None:
    for i in range(1, 5):
        put(
            saver,
            "t",
            str(i - 1) if i > 1 else None,
            checkpoint(str(i), {"big": [*BIG, i], "old": BIG}, {"big": f"v{i}", "old": "v1"}),
            {"big": f"v{i}", "old": "v1"} if i == 1 else {"big": f"v{i}"},
        )
    assert raw(saver).hlen(key(saver, "t", "cp:blobs")) == 5
    saver.prune(["t"], strategy="keep_latest")
    fields = sorted(f.decode() for f in raw(saver).hkeys(key(saver, "t", "cp:blobs")))
    assert fields == [f"{SEP}big{SEP}v4", f"{SEP}old{SEP}v1"]
    assert values_at(saver, "t", "4") == {"big": [*BIG, 4], "old": BIG}


def test_copy_thread_copies_the_blobs(saver: RedisSaver) -> None:
    put(saver, "src", None, checkpoint("1", {"big": BIG}, {"big": "v1"}), {"big": "v1"})
    put(
        saver,
        "src",
        "1",
        checkpoint("2", {"big": BIG, "n": 2}, {"big": "v1", "n": "v2"}),
        {"n": "v2"},
    )
    saver.copy_thread("src", "dst")
    saver.delete_thread("src")
    assert values_at(saver, "dst", "2") == {"big": BIG, "n": 2}


def write_inline_record(saver: RedisSaver, thread: str, ckpt: Checkpoint) -> None:
    """A checkpoint as releases before blobs wrote it: the values in the record."""
    ctype, cbytes = saver.serde.dumps_typed(ckpt)
    mtype, mbytes = saver.serde.dumps_typed({})
    member = f"{SEP}{ckpt['id']}"
    raw(saver).hset(
        key(saver, thread, "cp:data"), member, ormsgpack.packb([ctype, cbytes, mtype, mbytes, ""])
    )
    raw(saver).zadd(key(saver, thread, "cp:ids"), {member: 0})


def test_a_thread_written_inline_loads_and_goes_on(saver: RedisSaver) -> None:
    write_inline_record(saver, "old", checkpoint("1", {"big": BIG}, {"big": "v1"}))
    assert values_at(saver, "old", "1") == {"big": BIG}
    # the next step holds "big" unchanged: its blob is not there, so the put sends it
    put(
        saver,
        "old",
        "1",
        checkpoint("2", {"big": BIG, "n": 2}, {"big": "v1", "n": "v2"}),
        {"n": "v2"},
    )
    assert values_at(saver, "old", "2") == {"big": BIG, "n": 2}
    assert raw(saver).hlen(key(saver, "old", "cp:blobs")) == 1
    assert values_at(saver, "old", "1") == {"big": BIG}


def test_a_missing_blob_is_a_corrupt_memory_error_naming_it(saver: RedisSaver) -> None:
    put(saver, "t", None, checkpoint("1", {"big": BIG}, {"big": "v1"}), {"big": "v1"})
    raw(saver).delete(key(saver, "t", "cp:blobs"))
    with pytest.raises(CorruptMemoryError, match="missing from its thread's blobs"):
        values_at(saver, "t", "1")


def test_versions_are_short_and_compare_above_every_older_scheme(saver: RedisSaver) -> None:
    for old in (
        "00000000000000000000000000000041.0.5103196368858631",  # 32 digits
        "0000000000000041.0.5103196368858631",  # 16 digits
    ):
        new = saver.get_next_version(old, None)
        assert new.split(".")[0] == "b16" and new > old  # 42 in base 36, two digits
        assert len(new) == 10
    assert saver.get_next_version(None, None).startswith("a1.")
    assert saver.get_next_version(None, None) > "00000000000000000000000000009999.0.1"


@given(st.integers(min_value=0, max_value=36**12), st.integers(min_value=1, max_value=5000))
def test_short_versions_compare_as_their_counters(start: int, step: int) -> None:
    from langchain_tiered_memory.persistence.checkpoint.versions import (
        next_version,
        version_counter,
    )

    a = next_version(start)
    b = next_version(start + step)
    assert version_counter(a) == start + 1 and version_counter(b) == start + step + 1
    assert a < b  # string order is counter order, across digit counts
    assert next_version(a) > a and version_counter(next_version(a)) == start + 2


def test_records_are_stored_compressed_and_read_back(saver: RedisSaver) -> None:
    versions = {f"channel-{i}": f"{i:016}.0.123456789" for i in range(20)}
    put(saver, "t", None, checkpoint("1", dict.fromkeys(versions, 1), versions), versions)
    record = raw(saver).hget(key(saver, "t", "cp:data"), f"{SEP}1")
    assert record[:1] == b"\x78" and len(record) < 600  # zlib: the versions repeat
    assert values_at(saver, "t", "1") == dict.fromkeys(versions, 1)

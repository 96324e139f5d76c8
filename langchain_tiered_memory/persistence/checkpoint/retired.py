"""Channels the package's graphs no longer checkpoint, stripped from data written before.

Releases before 0.2 checkpointed the memory section (``memory_prompt``), the history a
new thread carried (``recent_history``) and the tags (``memory_tags``) with every step:
a deleted or edited item, a forgotten thread's messages, stayed in the checkpoints of the
threads that had loaded them. Since 0.2 they are ``UntrackedValue`` channels, which
LangGraph restores empty whatever a checkpoint holds, so their old values are needed by
no reader. ``RedisSaver.strip_retired`` removes them from one thread's keys with
:func:`changes` and :data:`STRIP` (the upgrade of format 1, ``upgrade.py``): the blobs,
the values kept inline in the checkpoint records, the pending writes, and the blob
references. It only replaces what still holds
what it read (one script): a process writing or deleting the thread meanwhile wins.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ormsgpack

from langchain_tiered_memory.backend.connection import as_text
from langchain_tiered_memory.persistence.checkpoint.base import (
    RETIRED_CHANNELS,
    SEP,
    BaseRedisSaver,
)
from langchain_tiered_memory.persistence.checkpoint.records import pack_record, unpack_record

__all__ = ["RETIRED_CHANNELS", "STRIP", "changes"]

# KEYS: the thread's seven keys. ARGV: (key index, field, expected value, new value, or
# "" to delete) quadruples; a field that no longer holds the expected value is left. A
# deleted write's field leaves the writes index too. Returns how many changed.
STRIP = r"""
local changed = 0
for i = 1, #ARGV, 4 do
  local k, f = tonumber(ARGV[i]), ARGV[i + 1]
  if redis.call('HGET', KEYS[k], f) == ARGV[i + 2] then
    if ARGV[i + 3] == '' then
      redis.call('HDEL', KEYS[k], f)
      if k == 3 then redis.call('ZREM', KEYS[4], f) end
    else
      redis.call('HSET', KEYS[k], f, ARGV[i + 3])
    end
    changed = changed + 1
  end
end
return changed
"""

_DATA, _WRITES, _BLOBS, _REFS = 2, 3, 6, 7


def _pairs(flat: Sequence[Any]) -> list[tuple[Any, Any]]:
    return [(flat[i], flat[i + 1]) for i in range(0, len(flat), 2)]


def _retired_field(field: Any) -> bool:
    # a blob field is "<ns>\0<channel>\0<version>" (a chunk's too, with more parts)
    parts = as_text(field).split(SEP)
    return len(parts) > 1 and parts[1] in RETIRED_CHANNELS


def _record_without(saver: BaseRedisSaver, record: bytes) -> bytes | None:
    ctype, cbytes, mtype, mbytes, parent = unpack_record(record)
    checkpoint = saver.serde.loads_typed((ctype, cbytes))
    values = checkpoint.get("channel_values") or {}
    if not RETIRED_CHANNELS & set(values):
        return None
    checkpoint["channel_values"] = {k: v for k, v in values.items() if k not in RETIRED_CHANNELS}
    ctype, cbytes = saver.serde.dumps_typed(checkpoint)
    return pack_record([ctype, cbytes, mtype, mbytes, parent])


def changes(saver: BaseRedisSaver, contents: Sequence[Any]) -> list[Any]:
    """The STRIP script's arguments for one thread, from its READ_ALL reply."""
    _, data, writes, _, _, blobs, refs = contents
    args: list[Any] = []
    for member, record in _pairs(data):
        if (new := _record_without(saver, record)) is not None:
            args += [_DATA, member, record, new]
    for field, value in _pairs(writes):
        if ormsgpack.unpackb(value)[0] in RETIRED_CHANNELS:
            args += [_WRITES, field, value, ""]
    for field, value in _pairs(blobs):
        if _retired_field(field):
            args += [_BLOBS, field, value, ""]
    for member, packed in _pairs(refs):
        held = ormsgpack.unpackb(packed)
        kept = [f for f in held if not _retired_field(f)]
        if len(kept) < len(held):
            args += [_REFS, member, packed, ormsgpack.packb(kept)]
    return args

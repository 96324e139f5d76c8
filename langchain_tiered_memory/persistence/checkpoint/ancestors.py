"""A checkpoint as the delta walk (``get_delta_channel_history``) reads and keeps it, and
the digest that tells whether a kept one is still what Redis holds.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from langgraph.checkpoint.base import PendingWrite

from langchain_tiered_memory.persistence.checkpoint.cache import fresh

__all__ = ["Ancestor", "byte_parts", "digest", "fresh_ancestor", "skip_ext"]


class Ancestor(NamedTuple):
    """A checkpoint as a delta walk reads it: its id, its parent's, the writes to the
    channels walked for (in ``writes_sort_key`` order) and the values it holds of them.
    """

    checkpoint_id: str
    parent: str | None
    writes: list[PendingWrite]
    seeds: dict[str, Any]


def byte_parts(entry: Sequence[Any]) -> Iterable[bytes]:
    """The byte strings of a loaded entry: record, write values, refs, blob values."""
    for part in entry:
        if isinstance(part, bytes):
            yield part
        elif isinstance(part, list):
            yield from (item for item in part if isinstance(item, bytes))


def fresh_ancestor(ancestor: Ancestor) -> Ancestor:
    """A kept ancestor in new containers: a replay that extends a list changes no kept one."""
    writes = [(task, channel, fresh(value)) for task, channel, value in ancestor.writes]
    seeds = {ch: fresh(value) for ch, value in ancestor.seeds.items()}
    return ancestor._replace(writes=writes, seeds=seeds)


def digest(record: Any, refs: Any, fields: Sequence[Any], values: Sequence[Any]) -> str:
    """What ``DIGEST`` returns for a checkpoint loaded as ``record``, ``refs`` and the
    writes ``fields`` -> ``values``.
    """
    parts = "".join(
        _sha1(_as_bytes(f) + b"\0" + _as_bytes(v or b""))
        for f, v in zip(fields, values, strict=True)
    )
    return f"{_sha1(record)}:{_sha1(refs)}:{len(fields)}:{_sha1(parts)}"


def _as_bytes(data: bytes | str) -> bytes:
    return data.encode() if isinstance(data, str) else data


def _sha1(data: bytes | str) -> str:
    """Lua's ``redis.sha1hex`` of the same bytes."""
    return hashlib.sha1(data.encode() if isinstance(data, str) else data).hexdigest()


def skip_ext(code: int, data: bytes) -> None:
    """An msgpack ext hook that builds nothing: the record's shape without its objects."""
    return None

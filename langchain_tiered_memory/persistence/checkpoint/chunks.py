"""A long list snapshot stored as shared chunks, so a thread's bytes grow with its turns,
not with their square.

A ``DeltaChannel`` (the prebuilt graph's messages) writes its whole value as a snapshot
every 100 updates. Stored as one blob each, the snapshots of a 600-turn thread were most of
its bytes: each one repeats every message of the ones before it (measured: 7.7 MB, 32x the
messages' text). Here a list snapshot of at least :data:`CHUNK_ITEMS` items is cut at
fixed positions (items 0-31, 32-63, ...) into chunks, each a blob field named by the hash of
its bytes; the snapshot's own blob is the list of its chunks' fields. A later snapshot of the
same list, grown at the end, cuts the same first chunks to the same bytes and so the same
fields: only the chunks after the old end are new bytes. The chunk fields are in the
checkpoint's refs like any blob, so reads (one ``HMGET``), copies, TTLs and the deletes that
keep a blob while a checkpoint holds it need nothing new. A snapshot after an edit in the
middle of the list (``RemoveMessage``) cuts other chunks and stores them: correct, only
larger for that one snapshot.

Decoded chunks are cached by their bytes (``checkpoint/cache.py``) as every value is, so a
new snapshot decodes only its new chunks.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import ormsgpack
from langgraph.checkpoint.base import SerializerProtocol
from langgraph.checkpoint.serde.types import _DeltaSnapshot

__all__ = ["CHUNKED", "CHUNK_ITEMS", "Chunked", "is_chunk_field", "join", "split"]

# Items per chunk. The last chunk of each snapshot is partial and stored anew by the next
# one, so a larger chunk repeats more; a smaller one names more fields per snapshot.
CHUNK_ITEMS = 32
# The type tag of a snapshot blob that lists chunk fields instead of holding the value.
CHUNKED = "tm-chunks"
# A chunk's field: "<ns>\0<channel>\0" then this mark and the hash; a version never
# starts with it (versions are digits or a letter and base-36 digits).
MARK = "#"


class Chunked(NamedTuple):
    """A snapshot as stored: its own blob (the chunk fields, packed) and the chunks."""

    blob: bytes
    chunks: list[tuple[str, bytes]]


def is_chunk_field(field: str) -> bool:
    """Whether a blob field names a chunk (its third part starts with :data:`MARK`)."""
    return field.rsplit("\x00", 1)[-1].startswith(MARK)


def split(serde: SerializerProtocol, prefix: str, value: Any) -> Chunked | None:
    """The chunked form of a ``_DeltaSnapshot`` of a long list, or ``None`` (store whole).

    Args:
        serde: the saver's serializer; each chunk is its typed form of a list.
        prefix: the blob field's ``"<ns>\\0<channel>\\0"``; chunk fields share it.
        value: the channel value about to be stored.

    Example:
        >>> from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
        >>> from langgraph.checkpoint.serde.types import _DeltaSnapshot
        >>> done = split(JsonPlusSerializer(), "\\x00m\\x00", _DeltaSnapshot(list(range(70))))
        >>> len(done.chunks), split(JsonPlusSerializer(), "", _DeltaSnapshot([1]))
        (3, None)
    """
    if not isinstance(value, _DeltaSnapshot) or not isinstance(value.value, list):
        return None
    items = value.value
    if len(items) < CHUNK_ITEMS:
        return None
    chunks: list[tuple[str, bytes]] = []
    for start in range(0, len(items), CHUNK_ITEMS):
        packed = ormsgpack.packb(list(serde.dumps_typed(items[start : start + CHUNK_ITEMS])))
        digest = hashlib.blake2b(packed, digest_size=10).hexdigest()
        chunks.append((f"{prefix}{MARK}{digest}", packed))
    blob = ormsgpack.packb([CHUNKED, ormsgpack.packb([field for field, _ in chunks])])
    return Chunked(blob, chunks)


def join(
    vbytes: bytes,
    blobs: Mapping[str, bytes | None],
    decode: Callable[[str, bytes], Any],
    missing: Callable[[str], Exception],
) -> _DeltaSnapshot:
    """The snapshot a :data:`CHUNKED` blob's bytes name, from the loaded ``blobs``.

    Args:
        vbytes: the snapshot blob's value bytes (the packed chunk fields).
        blobs: the checkpoint's loaded blob fields -> stored bytes.
        decode: ``(type, bytes) -> value``, the saver's cached decoder.
        missing: the error to raise for a chunk field that is not loaded.
    """
    items: list[Any] = []
    for field in ormsgpack.unpackb(vbytes):
        stored = blobs.get(field)
        if stored is None:
            raise missing(field)
        ctype, cbytes = ormsgpack.unpackb(stored)
        items.extend(decode(ctype, cbytes))
    return _DeltaSnapshot(items)

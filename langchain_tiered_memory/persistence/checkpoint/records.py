"""The stored form of a checkpoint record: msgpack, zlib-compressed with a preset dictionary.

A record is LangGraph's bookkeeping (each channel's version in ``channel_versions`` and
again per node in ``versions_seen``, the metadata's counters) plus the small inline values:
most of its bytes are the same names in every record of a graph. zlib alone halves it
(measured: 1,050 -> 500 bytes, 45 us to compress, 12 to expand); with a preset dictionary
that already holds those names (:data:`DICTIONARY`, a record of the prebuilt graph) a
record of the prebuilt graph is about 200 bytes instead of 430, the largest share of a
thread's bytes per turn (five records a turn). A graph with other names gains less, never
loses: LangGraph's own keys are in the dictionary too.

Reading tells the forms apart by their first bytes: a msgpack array of five fields starts
with 0x95, a zlib stream with 0x78; a stream made with a dictionary names it by its
Adler-32 in its header, so records written before the dictionary (plain zlib) still read,
and a later dictionary can be added beside this one (never change one: records name it).
"""

from __future__ import annotations

import base64
import zlib
from typing import Any

import ormsgpack

__all__ = ["DICTIONARY", "pack_record", "unpack_record"]

# A record shorter than this is stored as it is: compressing it would save nothing.
COMPRESS_OVER = 256

# ormsgpack.packb(["msgpack", packb(checkpoint), "msgpack", packb(metadata), parent id]) of
# one checkpoint of the prebuilt graph (load_memory, model, save_memory: its channels,
# versions_seen, counters_since_delta_snapshot). Frozen: records name it by its Adler-32.
DICTIONARY = base64.b64decode(
    "ladtc2dwYWNrxQJ4h6F2BKJ0c9kgMjAyNi0xMi0wM1QwNjowMzowNi4xMDUyMTMrMDA6MDCiaWTZJDFmMWVlZGYz"
    "LTUxNzktNjc3NS04MDBhLWFmNjk4OTFiY2Q1Zq5jaGFubmVsX3ZhbHVlc4StbWVtb3J5X3Byb21wdKCucmVjZW50"
    "X2hpc3RvcnmQq3NhdmVkX2NvdW50BLVicmFuY2g6dG86bG9hZF9tZW1vcnnAsGNoYW5uZWxfdmVyc2lvbnOJqV9f"
    "c3RhcnRfX6lhOC54N2lhcHSobWVzc2FnZXOpYTgueDdpYXB0tWJyYW5jaDp0bzpsb2FkX21lbW9yealhOC54N2lh"
    "cHStbWVtb3J5X3Byb21wdKlhOC54N2lhcHSucmVjZW50X2hpc3RvcnmpYTgueDdpYXB0r2JyYW5jaDp0bzptb2Rl"
    "bKlhOC54N2lhcHS1YnJhbmNoOnRvOnNhdmVfbWVtb3J5qWE4Lng3aWFwdKtzYXZlZF9jb3VudKlhOC54N2lhcHSp"
    "c2F2ZWRfaWRzqWE4Lng3aWFwdK12ZXJzaW9uc19zZWVuhalfX2lucHV0X1+AqV9fc3RhcnRfX4GpX19zdGFydF9f"
    "qWFiLnhxZ214eqtsb2FkX21lbW9yeYG1YnJhbmNoOnRvOmxvYWRfbWVtb3J5qWE3LnNkNTU4a6Vtb2RlbIGvYnJh"
    "bmNoOnRvOm1vZGVsqWE4Lng3aWFwdKtzYXZlX21lbW9yeYG1YnJhbmNoOnRvOnNhdmVfbWVtb3J5qWE5Ljh2NzU3"
    "Y7B1cGRhdGVkX2NoYW5uZWxzkrVicmFuY2g6dG86bG9hZF9tZW1vcnmobWVzc2FnZXOnbXNncGFja8RHhKZzb3Vy"
    "Y2WkbG9vcKRzdGVwCqdwYXJlbnRzgL1jb3VudGVyc19zaW5jZV9kZWx0YV9zbmFwc2hvdIGobWVzc2FnZXOSBQzZ"
    "JDFmMWVlZGYzLTUxNzktNjc3NS04MDBhLWFmNjk4OTFiY2Q1Zg=="
)
_DICTIONARIES = {319303474: DICTIONARY}
_FDICT = 0x20  # the zlib header's "preset dictionary" flag (RFC 1950)


def pack_record(fields: list[Any]) -> bytes:
    """A record's stored bytes.

    Example:
        >>> fields = ["msgpack", b"x" * 300, "msgpack", b"{}", ""]
        >>> unpack_record(pack_record(fields)) == fields
        True
    """
    packed = ormsgpack.packb(fields)
    if len(packed) <= COMPRESS_OVER:
        return packed
    compressor = zlib.compressobj(1, zdict=DICTIONARY)
    return compressor.compress(packed) + compressor.flush()


def unpack_record(record: bytes) -> Any:
    """A record's fields, from any form this package wrote."""
    if record[:1] == b"\x78":
        if record[1] & _FDICT:
            dictionary = _DICTIONARIES.get(int.from_bytes(record[2:6], "big"))
            if dictionary is None:
                raise ValueError("the record names a compression dictionary this version lacks")
            expander = zlib.decompressobj(zdict=dictionary)
            record = expander.decompress(record) + expander.flush()
        else:
            record = zlib.decompress(record)
    return ormsgpack.unpackb(record)

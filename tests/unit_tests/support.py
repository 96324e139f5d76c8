"""Small helpers shared by the unit test modules (fixtures live in tests/conftest.py)."""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from langchain_tiered_memory import TieredMemory

# The type of the ``memory_factory`` fixture: keyword arguments go to the constructor.
MemoryFactory = Callable[..., TieredMemory]


def raw_client(url: str) -> redis.Redis:
    """A plain redis-py client on ``url``, to look at the keys behind the API."""
    return redis.Redis.from_url(url, retry=Retry(NoBackoff(), 0))


def all_keys(memory: TieredMemory) -> set[str]:
    """Every key in the memory's Redis, found with SCAN (never KEYS)."""
    assert memory.redis_url is not None
    client = raw_client(memory.redis_url)
    try:
        return {k.decode() for k in client.scan_iter(count=1000)}
    finally:
        client.close()


def data_keys(memory: TieredMemory) -> set[str]:
    """:func:`all_keys` without the keys all users share: the summarization queue's shard
    keys (a shard's sorted sets vanish when their last member leaves), the console's
    directory (:func:`directory_members` says whose entries it holds) and the memory's
    own records (``{meta:}``: the stored format, the attachments)."""
    shared = (":{wq:", ":{dir:}", ":{meta:}")
    return {k for k in all_keys(memory) if not any(s in k for s in shared)}


def directory_members(memory: TieredMemory) -> set[str]:
    """The users in the console directory's index."""
    assert memory.redis_url is not None
    client = raw_client(memory.redis_url)
    try:
        key = memory.history.keys.directory_key()  # type: ignore[attr-defined]
        return {unquote(m.decode()) for m, _ in client.zscan_iter(key)}
    finally:
        client.close()


def queue_members(memory: TieredMemory) -> set[str]:
    """Every user named in the summarization queue (pending, watermarks, entries, owners)."""
    assert memory.redis_url is not None
    client = raw_client(memory.redis_url)
    try:
        members: set[str] = set()
        for key in client.scan_iter(match="*:{wq:*}:wq:*", count=1000):
            kind = key.decode().rsplit(":", 1)[1]
            found: Any = ()
            if kind in ("pending", "wm"):
                found = client.zrange(key, 0, -1)
            elif kind == "queued":  # pre-0.2 entries
                found = client.smembers(key)
            elif kind == "entries":
                found = client.hkeys(key)
            elif kind == "owners":
                found = client.hvals(key)
            members |= {m.decode() if isinstance(m, bytes) else str(m) for m in found}
        return members
    finally:
        client.close()


def _expanded(value: bytes) -> bytes:
    """A stored value with a checkpoint record's zlib compression undone (the text inside
    a compressed record is invisible to a plain search of DUMP's bytes)."""
    from langchain_tiered_memory.persistence.checkpoint.records import DICTIONARY

    if value[:1] != b"\x78":
        return value
    try:
        expander = zlib.decompressobj(zdict=DICTIONARY) if value[1] & 0x20 else zlib.decompressobj()
        return expander.decompress(value) + expander.flush()
    except zlib.error:
        return value


def stored_bytes(sync: Any, key: Any) -> list[bytes]:
    """A key's DUMP and each of its values, a compressed checkpoint record expanded (the
    text inside one is invisible in DUMP's bytes); DUMP's own compression needs
    ``CONFIG SET rdbcompression no`` first."""
    kind = sync.type(key)
    kind = kind.decode() if isinstance(kind, bytes) else kind
    values: list[Any] = [sync.dump(key) or b""]
    if kind == "string":
        values.append(sync.get(key) or b"")
    elif kind == "hash":
        values += list(sync.hgetall(key).values())
    elif kind == "list":
        values += sync.lrange(key, 0, -1)
    elif kind == "set":
        values += list(sync.smembers(key))
    elif kind == "zset":
        values += sync.zrange(key, 0, -1)
    return [_expanded(v) for v in values if isinstance(v, bytes)]


def keys_holding(memory: TieredMemory, needle: str) -> list[str]:
    """SCAN + DUMP, records decoded: every key of the memory's Redis whose value holds
    ``needle``."""
    assert memory.connection is not None
    sync = memory.connection.sync
    sync.config_set("rdbcompression", "no")
    wanted = needle.encode()
    return sorted(
        key.decode() if isinstance(key, bytes) else key
        for key in sync.scan_iter(count=1000)
        if any(wanted in v for v in stored_bytes(sync, key))
    )

"""Which stored format a memory's data is in, checked once per connection before its first
command.

Every release that changes what it stores raises :data:`FORMAT` and gives an upgrade
(``langchain_tiered_memory.upgrade``, ``tiered-memory upgrade``). The data records its
format in one key beside it (``<prefix>:{meta:}:format``): a new, empty memory gets the
package's; data with no record was written before formats were recorded (0.1.x: 1).
Opening data of a newer format than the package knows fails before anything is read or
written, with one line that names both; data of an older format is read as before and
the log says which command upgrades it.

Example:
    >>> FORMAT
    2
"""

from __future__ import annotations

import logging
from typing import Any

from langchain_tiered_memory._steps import Plan, call
from langchain_tiered_memory.backend.keys import KeyBuilder
from langchain_tiered_memory.errors import DataFormatError

__all__ = ["FORMAT", "FORMAT_BEFORE_RECORDS", "check_format", "read_format", "write_format"]

logger = logging.getLogger(__name__)

# 2: 0.2.x (the owner stamp on checkpoints, search results by reference, retracted
# messages; no persisted memory section or carried history in checkpoints)
FORMAT = 2
# what data with no record is: written by 0.1.x
FORMAT_BEFORE_RECORDS = 1


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("langchain-tiered-memory")
    except PackageNotFoundError:
        return "unknown"


def _get(client: Any, key: str) -> Any:
    return client.get(key)


async def _aget(client: Any, key: str) -> Any:
    return await client.get(key)


def _any_key(client: Any, pattern: str) -> Any:
    return next(iter(client.scan_iter(match=pattern, count=1000)), None)


async def _aany_key(client: Any, pattern: str) -> Any:
    async for key in client.scan_iter(match=pattern, count=1000):
        return key
    return None


def _set(client: Any, key: str, value: int, nx: bool) -> Any:
    return client.set(key, value, nx=nx)


async def _aset(client: Any, key: str, value: int, nx: bool) -> Any:
    return await client.set(key, value, nx=nx)


def read_format(client: Any, keys: KeyBuilder) -> Plan[int | None]:
    """The format the data records (``client``: a sync or an asyncio client, as the plan
    is driven): ``None`` when there is no data at all, :data:`FORMAT_BEFORE_RECORDS` for
    data with no record.
    """
    stored = yield call(_get, _aget, client, keys.format_key())
    if stored is not None:
        try:
            return int(stored)
        except ValueError:
            raise DataFormatError(
                f"{keys.format_key()} holds {stored!r}, not a format number: restore it "
                f"(this package writes {FORMAT}) or delete it and run tiered-memory upgrade."
            ) from None
    found = yield call(_any_key, _aany_key, client, f"{keys.prefix}:*")
    return None if found is None else FORMAT_BEFORE_RECORDS


def write_format(client: Any, keys: KeyBuilder, *, only_if_new: bool = False) -> Plan[None]:
    """Record the package's :data:`FORMAT` (``only_if_new``: unless one is recorded)."""
    yield call(_set, _aset, client, keys.format_key(), FORMAT, only_if_new)


def check_format(client: Any, keys: KeyBuilder, where: str) -> Plan[None]:
    """Refuse data of a newer format; record the format of a new memory; say how to
    upgrade data of an older one (``where``: the URL, for the messages).

    Raises:
        DataFormatError: the data is in a newer format than this package knows.
    """
    found = yield from read_format(client, keys)
    if found is None:
        yield from write_format(client, keys, only_if_new=True)
    elif found > FORMAT:
        raise DataFormatError(
            f"the memory at {where} (key prefix {keys.prefix!r}) is in format {found}, newer "
            f"than format {FORMAT} of langchain-tiered-memory {_version()}: upgrade the "
            "package in this process; nothing was read or written."
        )
    elif found < FORMAT:
        logger.warning(
            "the memory at %s (key prefix %r) is in format %d, written by an earlier "
            "release: it is read as before, but run `tiered-memory upgrade` (or "
            "langchain_tiered_memory.upgrade.upgrade(memory)) so that every guarantee "
            "holds on it",
            where,
            keys.prefix,
            found,
        )

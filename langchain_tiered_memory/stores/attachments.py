"""What an app attached to a memory, kept beside the data for every process's erasure.

An app calls ``memory.attach(store=memory.store(), store_namespaces=[("{user_id}",)])``
once, in its own process; ``tiered-memory forget`` in another process, the console and the
MCP server open the same data and must erase the same namespaces. So each attachment is
recorded in Redis (a set of small JSON entries, merged across processes): the namespace
templates of the memory's own store, which any process can erase, and the other savers
and stores by class name, which only a process holding them can reach: an erasure from
one that does not hold them says so instead of reporting a complete erasure.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from langchain_tiered_memory._steps import Plan, call, paired
from langchain_tiered_memory.backend.connection import RedisConnection, as_text
from langchain_tiered_memory.backend.keys import KeyBuilder

__all__ = ["Attachments", "AttachmentRecord"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Attachments:
    """What the record holds: the own store's templates, and the others by description
    (``"checkpointer PostgresSaver"``, ``"store PostgresStore"``).
    """

    own_store_namespaces: tuple[tuple[str, ...], ...] = ()
    others: frozenset[str] = field(default_factory=frozenset)


def _entries(own_namespaces: Sequence[tuple[str, ...]], others: Iterable[str]) -> list[str]:
    own = [json.dumps({"own_store": list(t)}, ensure_ascii=False) for t in own_namespaces]
    return own + [json.dumps({"other": o}) for o in others]


def _parsed(raw: Iterable[bytes | str], key: str) -> Attachments:
    own: list[tuple[str, ...]] = []
    others: set[str] = set()
    for member in raw:
        try:
            entry = json.loads(as_text(member))
            if "own_store" in entry:
                own.append(tuple(str(part) for part in entry["own_store"]))
            else:
                others.add(str(entry["other"]))
        except (ValueError, TypeError, KeyError, UnicodeDecodeError):
            logger.warning("%s: skipped an entry this package did not write: %r", key, member)
    return Attachments(tuple(sorted(set(own))), frozenset(others))


class AttachmentRecord:
    """The attachments of the memory on one Redis key prefix.

    Example:
        >>> record = AttachmentRecord(RedisConnection("redis://localhost"), KeyBuilder("tm"))
        >>> record.add([("{user_id}",)], ["checkpointer PostgresSaver"])  # doctest: +SKIP
        >>> record.read().others  # doctest: +SKIP
        frozenset({'checkpointer PostgresSaver'})
    """

    def __init__(self, connection: RedisConnection, keys: KeyBuilder) -> None:
        self.connection = connection
        self.key = keys.attachments_key()

    def add(self, own_namespaces: Sequence[tuple[str, ...]], others: Iterable[str]) -> None:
        """Record these (merged with what any process recorded)."""
        entries = _entries(own_namespaces, others)
        if entries:
            with self.connection.errors():
                self.connection.sync.sadd(self.key, *entries)

    def clear(self) -> int:
        """Forget what every process recorded (an operator's ``tiered-memory attachments
        --clear``: the apps record again what they still attach); returns how many
        entries there were.
        """
        with self.connection.errors():
            found = int(self.connection.sync.scard(self.key))
            self.connection.sync.delete(self.key)
        return found

    @paired
    def read(self) -> Plan[Attachments]:
        """What every process recorded."""
        c = self.connection
        return _parsed((yield call(c.command, c.acommand, "SMEMBERS", self.key)), self.key)

    aread = read.aio

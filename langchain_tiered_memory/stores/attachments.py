"""What an app attached to a memory, kept beside the data for every process's erasure.

An app calls ``memory.attach(store=memory.store(), store_namespaces=[("{user_id}",)])``
once, in its own process; ``tiered-memory forget`` in another process, the console and the
MCP server open the same data and must erase the same namespaces. So each attachment is
recorded in Redis (a set of small JSON entries, merged across processes): the namespace
templates of the memory's own store, which any process can erase, and the other savers
and stores (:class:`Attached`: their class and, where it can be known, where they keep
their data), which only a process holding them can reach: an erasure from one that does
not hold them says so instead of reporting a complete erasure.

An entry of an earlier version names the class alone (``{"other": "checkpointer
SqliteSaver"}``) and is still read, as one that any saver of that class reaches; an
earlier version reads an entry of this one by its class (``"other"``), as it always did.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from langchain_tiered_memory._steps import Plan, call, paired
from langchain_tiered_memory.backend.connection import RedisConnection, ScriptCall, as_text
from langchain_tiered_memory.backend.keys import KeyBuilder

__all__ = ["Attached", "AttachmentRecord", "Attachments", "entries"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, order=True)
class Attached:
    """One saver or store an app attached, as erasure tells it from another: its kind
    (``"checkpointer SqliteSaver"``) and where it keeps its data (a SQLite file's path, a
    PostgreSQL connection string without its password), or, where that cannot be known,
    which instance of this process it is (``instance``: never recorded, as another process
    cannot tell its instances apart; the record then names the class alone).

    Example:
        >>> str(Attached("checkpointer SqliteSaver", "/srv/app/threads.db"))
        'checkpointer SqliteSaver at /srv/app/threads.db'
    """

    kind: str
    where: str | None = None
    instance: int | None = None

    def __str__(self) -> str:
        if self.where is not None:
            return f"{self.kind} at {self.where}"
        if self.instance is not None:
            return f"{self.kind} (instance {self.instance} of this process)"
        return self.kind

    @property
    def by_class(self) -> bool:
        """Whether this names a class only (an entry of an earlier version, or a saver
        whose storage could not be known): any saver of the class reaches it.
        """
        return self.where is None and self.instance is None

    def reached_by(self, held: Attached) -> bool:
        """Whether ``held`` (a saver or store this process holds open) reaches this one's
        data: the same kind, and the same storage unless this names a class only.
        """
        if held.kind != self.kind:
            return False
        return self.by_class or (self.where, self.instance) == (held.where, held.instance)

    def recorded(self) -> Attached:
        """What the record beside the data keeps of it (no instance of this process)."""
        return Attached(self.kind, self.where)


@dataclass(frozen=True)
class Attachments:
    """What the record holds: the own store's templates, and the others (:class:`Attached`)."""

    own_store_namespaces: tuple[tuple[str, ...], ...] = ()
    attached: frozenset[Attached] = field(default_factory=frozenset)

    @property
    def others(self) -> frozenset[str]:
        """The others as text (``"checkpointer SqliteSaver at /srv/app/threads.db"``)."""
        return frozenset(str(a) for a in self.attached)


def entries(own_namespaces: Sequence[tuple[str, ...]], others: Iterable[Attached]) -> list[str]:
    """The record's JSON entries for these attachments (what :meth:`AttachmentRecord.add`
    adds): ``"other"`` is the class, as an earlier version wrote and reads it.
    """
    own = [json.dumps({"own_store": list(t)}, ensure_ascii=False) for t in own_namespaces]
    for other in sorted({o.recorded() for o in others}):
        entry = {"other": other.kind} | ({"where": other.where} if other.where else {})
        own.append(json.dumps(entry, ensure_ascii=False))
    return own


def _parsed(raw: Iterable[bytes | str], key: str) -> Attachments:
    own: list[tuple[str, ...]] = []
    others: set[Attached] = set()
    for member in raw:
        try:
            entry = json.loads(as_text(member))
            if "own_store" in entry:
                own.append(tuple(str(part) for part in entry["own_store"]))
            else:
                where = entry.get("where")  # absent in an earlier version's entries
                others.add(Attached(str(entry["other"]), None if where is None else str(where)))
        except (ValueError, TypeError, KeyError, AttributeError, UnicodeDecodeError):
            logger.warning("%s: skipped an entry this package did not write: %r", key, member)
    return Attachments(tuple(sorted(set(own))), frozenset(others))


# SADD that never fails the round trip it rides in (a turn's write): a key of another type
# (not this package's) is left alone. KEYS: the record. ARGV: the entries.
_ADD_LUA = """
local kind = redis.call('TYPE', KEYS[1]).ok
if kind ~= 'set' and kind ~= 'none' then return 0 end
return redis.call('SADD', KEYS[1], unpack(ARGV))
"""


class AttachmentRecord:
    """The attachments of the memory on one Redis key prefix.

    Example:
        >>> record = AttachmentRecord(RedisConnection("redis://localhost"), KeyBuilder("tm"))
        >>> record.add([("{user_id}",)], [Attached("checkpointer PostgresSaver")])  # doctest: +SKIP
        >>> record.read().others  # doctest: +SKIP
        frozenset({'checkpointer PostgresSaver'})
    """

    def __init__(self, connection: RedisConnection, keys: KeyBuilder) -> None:
        self.connection = connection
        self.key = keys.attachments_key()

    def add(self, own_namespaces: Sequence[tuple[str, ...]], others: Iterable[Attached]) -> None:
        """Record these (merged with what any process recorded)."""
        found = entries(own_namespaces, others)
        if found:
            with self.connection.errors():
                self.connection.sync.sadd(self.key, *found)

    def add_call(self, found: Sequence[str]) -> ScriptCall:
        """The script call that adds ``found`` (:func:`entries`, at least one), for a
        caller that sends it with others: adding what is there already changes nothing.
        """
        return ScriptCall(_ADD_LUA, 1, (self.key, *found))

    def clear(self) -> int:
        """Forget what every process recorded (an operator's ``tiered-memory attachments
        --clear``: a running app records again what it still holds open on its next
        turn's write, or when it attaches one); returns how many entries there were.
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

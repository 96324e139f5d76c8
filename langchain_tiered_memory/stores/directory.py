"""The directory of users: who has memory under a key prefix, a page at a time, with each
user's counts per tier and last activity. What the console lists.

Users are indexed by last activity in one sorted set (``KeyBuilder.directory_key``): each
turn's save adds a ``ZADD`` to its round trip, and a user's erasure removes their member.
From it a page is exact (``ZREVRANGE``: the recently active first, at any offset), the
total is ``ZCARD``, and a search reads the index in batches (``ZSCAN``) and matches the
user id or any tag value, the tags of a batch in one pipelined round trip. A member whose
user has no key left (expired by ``user_ttl``) is dropped when a page meets it.

Data written before the index existed is listed with ``SCAN`` until :meth:`reindex` has
run (never ``KEYS``): a user is listed once, from the first of their keys in this order:
history, tags, summary items; search there is a ``SCAN MATCH`` on the escaped user id.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import unquote

from langchain_tiered_memory._steps import Plan, call, paired
from langchain_tiered_memory.backend.connection import RedisConnection, ScriptCall, as_text
from langchain_tiered_memory.backend.keys import KeyBuilder, KeyKind, escape_user_id

__all__ = [
    "PAGE_SIZE",
    "RedisUserDirectory",
    "UserPage",
    "UserRow",
    "activity_call",
    "index_tags",
    "listing_kinds",
    "tag_value_commands",
]

# The indexes are an aid (the console's): a write into one that another writer replaced
# with a key of another type is skipped (-1), never a failed turn, tag write or erasure;
# the console lists by SCAN and says so (``RedisUserDirectory.damaged``).
_ACTIVE_LUA = """
local kind = redis.call('TYPE', KEYS[1]).ok
if kind ~= 'zset' and kind ~= 'none' then return -1 end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
if ARGV[3] then
  local gone = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[3], 'LIMIT', 0, 16)
  if #gone > 0 then
    redis.call('ZREM', KEYS[1], unpack(gone))
    if redis.call('TYPE', KEYS[2]).ok == 'zset' then
      for _, m in ipairs(gone) do
        redis.call('ZREMRANGEBYLEX', KEYS[2], '[' .. m .. '\\31', '[' .. m .. '\\31\\255')
      end
    end
  end
end
return 0
"""
# ARGV: how many members go out, those members, then the members that come in
_VALUES_LUA = """
local kind = redis.call('TYPE', KEYS[1]).ok
if kind ~= 'zset' and kind ~= 'none' then return -1 end
local out = tonumber(ARGV[1])
if out > 0 then redis.call('ZREM', KEYS[1], unpack(ARGV, 2, 1 + out)) end
for i = 2 + out, #ARGV do redis.call('ZADD', KEYS[1], 0, ARGV[i]) end
return 0
"""
# KEYS: the activity index, the values index; ARGV: how many users, their escaped ids, then
# a (low, high) range of the values index per user
_UNLIST_LUA = """
local n = tonumber(ARGV[1])
if redis.call('TYPE', KEYS[1]).ok == 'zset' then
  redis.call('ZREM', KEYS[1], unpack(ARGV, 2, 1 + n))
end
if redis.call('TYPE', KEYS[2]).ok == 'zset' then
  for i = 2 + n, #ARGV, 2 do redis.call('ZREMRANGEBYLEX', KEYS[2], ARGV[i], ARGV[i + 1]) end
end
return 0
"""


_ZSET = (b"zset", "zset")
_OK = ("zset", "none")


def _member(raw: Any, where: str) -> str | None:
    """An index member as text, ``None`` (logged) for one this package did not write."""
    try:
        return as_text(raw)
    except UnicodeDecodeError:
        logger.warning("%s: skipped a member that is not UTF-8: %r", where, raw)
        return None


def _users(raw: Sequence[Any], where: str) -> list[str]:
    return [unquote(t) for t in (_member(m, where) for m in raw) if t is not None]


logger = logging.getLogger(__name__)

_SEP = "\x1f"  # between the parts of a values-index member
# index members a search step reads (ZSCAN COUNT): Redis matches them and returns only
# candidates; at 100k users a 20k step took 180 ms p50 for a whole search, a 2k one 312 ms
# (bench/console.py), and one step holds the server a few milliseconds
_FIND_BATCH = 20_000


def activity_call(
    keys: KeyBuilder, user_id: str, at: float, *, expired_before: float | None = None
) -> ScriptCall:
    """The index write of a turn: ``user_id`` was active at ``at`` (epoch seconds), sent
    in the turn's own round trip. With ``expired_before`` (``user_ttl``: the time before
    which a user's keys have all expired), up to 16 users last active before it leave both
    indexes with it: an expired user's tag values leave the values index with no worker.

    Example:
        >>> activity_call(KeyBuilder("tm"), "ann", 5.0).args
        ('tm:{dir:}:dir:active', 'tm:{dir:}:dir:values', 5.0, 'ann')
    """
    index = (keys.directory_key(), keys.directory_key("values"))
    sweep = () if expired_before is None else (expired_before,)
    return ScriptCall(_ACTIVE_LUA, 2, (*index, at, escape_user_id(user_id), *sweep))


PAGE_SIZE = 50
# the passes of a listing, in order: a user is listed by the first kind of key they have
# ("threads" last: a user whose every turn failed, the provider down, has only that)
_PASSES: tuple[KeyKind, ...] = ("history", "tags", "sum:items", "threads")
_SCAN_COUNT = 1000


def listing_kinds() -> tuple[KeyKind, ...]:
    """The kinds of key that make a user appear in the directory, in listing order."""
    return _PASSES


@dataclass(frozen=True)
class UserRow:
    """One user in a listing: counts per tier, the last write time (epoch seconds) and
    the ``name`` tag, if any (what a person looks for).
    """

    user_id: str
    messages: int
    tags: int
    items: int
    threads: int
    last_active: float | None
    name: str | None = None


@dataclass(frozen=True)
class UserPage:
    """A page of users and the cursor of the next page (``None``: this was the last)."""

    users: list[UserRow]
    next_cursor: str | None
    total: int | None = None  # every user of the index (None: not known without a scan)
    indexed: bool = False  # from the index (recently active first), not a SCAN
    damaged: tuple[str, ...] = ()  # index keys another writer replaced (see damaged())


class RedisUserDirectory:
    """Pages through the users of one key prefix on a Redis (standalone or Cluster).

    The cursor is opaque text: ``<pass>.<node>.<scan cursor>``.

    Example:
        >>> directory = RedisUserDirectory(RedisConnection("redis://localhost:6379"))
        >>> page = directory.page(count=20)  # doctest: +SKIP
        >>> [row.user_id for row in page.users]  # doctest: +SKIP
        ['alice', 'bob']
    """

    def __init__(self, connection: RedisConnection, *, keys: KeyBuilder | None = None) -> None:
        self.connection = connection
        self.keys = keys or KeyBuilder()

    @classmethod
    def of(cls, store: object) -> RedisUserDirectory | None:
        """The directory a Redis store writes to (its connection and prefix), or ``None``
        for a store off Redis.
        """
        connection, keys = getattr(store, "connection", None), getattr(store, "keys", None)
        if isinstance(connection, RedisConnection) and isinstance(keys, KeyBuilder):
            return cls(connection, keys=keys)
        return None

    def _nodes(self) -> list[Any]:
        client = self.connection.sync
        if self.connection.is_cluster:
            return sorted(client.get_primaries(), key=lambda n: n.name)  # type: ignore[union-attr]
        return [None]

    def _scan(self, node: Any, cursor: int, pattern: str) -> tuple[int, list[Any]]:
        client = self.connection.sync
        if node is None:
            found = client.scan(cursor=cursor, match=pattern, count=_SCAN_COUNT)
            return int(found[0]), list(found[1])
        reply = client.scan(cursor=cursor, match=pattern, count=_SCAN_COUNT, target_nodes=node)
        next_cursor, keys = reply[node.name] if isinstance(reply, dict) else reply
        return int(next_cursor), list(keys)

    def page(
        self, cursor: str | None = None, *, count: int = PAGE_SIZE, contains: str | None = None
    ) -> UserPage:
        """A page of users from ``cursor`` (``None``: the first page): from the index, the
        recently active first, exactly ``count`` (fewer on the last page), or the users
        whose id or a tag value holds ``contains``; without an index, at least ``count``
        users of a ``SCAN`` (a SCAN step may give a few more).

        Raises:
            ValueError: ``cursor`` is not one this directory handed out.
        """
        if cursor is not None and cursor[:1] in ("r", "f"):
            indexed = True
        elif cursor:
            indexed = False  # a SCAN cursor: that listing goes on
        else:
            with self.connection.errors():  # a damaged index: listed by SCAN instead
                indexed = self.connection.sync.type(self.keys.directory_key()) in _ZSET
        if not indexed:
            page = self._scan_page(cursor, count, contains)
            return replace(page, damaged=tuple(self.damaged())) if not cursor else page
        with self.connection.errors():
            if contains:
                return self._find(cursor or "f0.0", count, contains)
            return self._recent(_position(cursor, "r."), count)

    def _recent(self, offset: int, count: int) -> UserPage:
        client = self.connection.sync
        key = self.keys.directory_key()
        rows: list[UserRow] = []
        while len(rows) < count:
            members = client.zrevrange(key, offset, offset + count - len(rows) - 1)
            if not members:
                break
            offset += len(members)
            rows += self._live(_users(members, key))
        total = int(client.zcard(key))
        more = offset < total
        return UserPage(rows, f"r.{offset}" if more else None, total=total, indexed=True)

    def _find(self, cursor: str, count: int, contains: str) -> UserPage:
        """Users whose id holds ``contains`` (a ``ZSCAN MATCH`` of the activity index), then
        users whose tag value does (of the values index): Redis filters, only candidates
        cross the wire, and each is checked against the user's own id and tags (the index
        may hold a value a racing write replaced). Cursor ``<pass>.<ZSCAN cursor>``.
        """
        phase, scan = _find_cursor(cursor)
        client = self.connection.sync
        needle = contains.casefold()
        found: set[str] = set()
        while phase < 2 and len(found) < count:
            if phase == 0:
                pattern = f"*{self.keys.id_pattern(contains)}*"
                scan, batch = client.zscan(self.keys.directory_key(), scan, pattern, _FIND_BATCH)
                found |= {
                    u
                    for u in _users([m for m, _ in batch], "the activity index")
                    if needle in u.casefold()
                }
            else:
                pattern = f"*{_glob(needle)}*"
                key = self.keys.directory_key("values")
                if client.type(key) not in _ZSET:  # damaged: no tag value is found
                    phase, scan = 2, 0
                    break
                scan, batch = client.zscan(key, scan, pattern, _FIND_BATCH)
                held = {u.split(_SEP, 1)[0] for u in _users([m for m, _ in batch], key)}
                found |= self._holding(held - found, needle)
            if scan == 0:
                phase, scan = phase + 1, 0
        listed = sorted(found)
        times = (
            client.zmscore(self.keys.directory_key(), [escape_user_id(u) for u in listed])
            if listed
            else []
        )
        order = sorted(zip(listed, times, strict=True), key=lambda pair: -(pair[1] or 0.0))
        rows = self._live([user for user, _ in order])
        total = int(client.zcard(self.keys.directory_key()))
        return UserPage(rows, None if phase >= 2 else f"f{phase}.{scan}", total=total, indexed=True)

    def _holding(self, users: set[str], needle: str) -> set[str]:
        """Those of ``users`` whose id does not hold ``needle`` (pass 0 lists them) and one
        of whose tag values does, read in one pipelined round trip.
        """
        users = {u for u in users if needle not in u.casefold()}
        if not users:
            return set()
        ordered = sorted(users)
        values = self.connection.pipelined([("HVALS", self.keys.key(u, "tags")) for u in ordered])
        return {
            user
            for user, tags in zip(ordered, values, strict=True)
            if any(needle in as_text(v).casefold() for v in tags)
        }

    def damaged(self) -> list[str]:
        """The index keys that hold another type than this package writes (another writer):
        their writes are skipped, the console lists by SCAN and says so. Deleting them and
        running ``tiered-memory reindex`` rebuilds them.
        """
        keys = [self.keys.directory_key(), self.keys.directory_key("values")]
        with self.connection.errors():
            kinds = self.connection.pipelined([("TYPE", key) for key in keys])
        return [key for key, kind in zip(keys, kinds, strict=True) if as_text(kind) not in _OK]

    def _live(self, users: list[str]) -> list[UserRow]:
        """The rows of ``users``; a user with no key left (expired by ``user_ttl``) leaves
        the index instead.
        """
        rows = self.rows(users)
        gone = [r.user_id for r in rows if not (r.messages or r.tags or r.items or r.threads)]
        if gone:
            self.connection.pipelined(self._unlist(gone))
        return [r for r in rows if r.user_id not in gone]

    def _unlist(self, users: Sequence[str]) -> list[tuple[Any, ...]]:
        """The command that takes ``users`` out of both indexes (an index of another type
        is left alone: it never blocks an erasure).
        """
        escaped = [escape_user_id(u) for u in users]
        ranges = [bound for e in escaped for bound in _range(e)]
        keys = (self.keys.directory_key(), self.keys.directory_key("values"))
        return [("EVAL", _UNLIST_LUA, 2, *keys, len(escaped), *escaped, *ranges)]

    def reindex(self) -> int:
        """Index every user a ``SCAN`` finds (data written before the index existed), at
        their last activity (0 if unknown); returns how many. Safe to run again.
        """
        added, cursor = 0, None
        key = self.keys.directory_key()
        while True:
            page = self._scan_page(cursor, PAGE_SIZE, None)
            if page.users:
                scores = {escape_user_id(r.user_id): r.last_active or 0.0 for r in page.users}
                with self.connection.errors():
                    # NX: a turn that indexed the user meanwhile has the newer time
                    added += int(self.connection.sync.zadd(key, scores, nx=True) or 0)
                    self._index_values([r.user_id for r in page.users])
            if page.next_cursor is None:
                return added
            cursor = page.next_cursor

    @paired
    def expire(self, before: float) -> Plan[int]:
        """Take out the users last active before ``before`` (epoch seconds): with
        ``user_ttl``, users whose keys have expired. Returns how many.
        """
        c, index = self.connection, self.keys.directory_key()
        stale = yield call(c.command, c.acommand, "ZRANGEBYSCORE", index, "-inf", f"({before}")
        users = _users(stale, "the activity index")
        if users:
            yield call(c.pipelined, c.apipelined, self._unlist(users))
        return len(users)

    aexpire = expire.aio

    def _index_values(self, users: list[str]) -> None:
        """Put ``users``' tag values into the values index (for :meth:`reindex`)."""
        every = self.connection.pipelined([("HGETALL", self.keys.key(u, "tags")) for u in users])
        commands = []
        for user, tags in zip(users, every, strict=True):
            changes = [(as_text(n), None, as_text(v)) for n, v in tags.items()]
            commands += tag_value_commands(self.keys, user, changes)
        self.connection.pipelined(commands)

    @paired
    def forget(self, user_id: str) -> Plan[None]:
        """Take ``user_id`` out of both indexes (their erasure)."""
        c = self.connection
        yield call(c.pipelined, c.apipelined, self._unlist([user_id]))

    aforget = forget.aio

    def _scan_page(self, cursor: str | None, count: int, contains: str | None) -> UserPage:
        phase, node_index, scan_cursor = _parse_cursor(cursor)
        nodes = self._nodes()
        found: list[str] = []
        seen: set[str] = set()
        with self.connection.errors():
            while phase < len(_PASSES) and len(found) < count:
                if node_index >= len(nodes):
                    phase, node_index, scan_cursor = phase + 1, 0, 0
                    continue
                kind = _PASSES[phase]
                pattern = self.keys.user_search_pattern(kind, contains)
                scan_cursor, keys = self._scan(nodes[node_index], scan_cursor, pattern)
                users = [u for u in map(self.keys.user_from_key, keys) if u and u not in seen]
                if contains:  # the pattern can match inside an escape: check the ids
                    users = [u for u in users if contains.casefold() in u.casefold()]
                users = self._first_listed(users, phase)
                seen.update(users)
                found.extend(users)
                if scan_cursor == 0:
                    node_index, scan_cursor = node_index + 1, 0
            rows = self.rows(found)
        done = phase >= len(_PASSES)
        return UserPage(rows, None if done else f"{phase}.{node_index}.{scan_cursor}")

    def _first_listed(self, users: list[str], phase: int) -> list[str]:
        """``users`` found by pass ``phase`` that no earlier pass lists."""
        if phase == 0 or not users:
            return users
        flags = self.connection.pipelined(
            [("EXISTS", self.keys.key(user, kind)) for user in users for kind in _PASSES[:phase]]
        )
        return [u for i, u in enumerate(users) if not any(flags[i * phase : (i + 1) * phase])]

    def rows(self, users: Sequence[str]) -> list[UserRow]:
        """Each user's counts per tier, last activity and name tag, in one pipelined round
        trip.
        """
        if not users:
            return []
        key = self.keys.key
        replies = self.connection.pipelined(
            [
                command
                for user in users
                for command in (
                    ("LLEN", key(user, "history")),
                    ("HLEN", key(user, "tags")),
                    ("HLEN", key(user, "sum:items")),
                    ("SCARD", key(user, "threads")),
                    ("HGET", key(user, "meta"), "last_at"),
                    ("HGET", key(user, "tags"), "name"),
                )
            ]
        )
        rows = []
        for i, user in enumerate(users):
            messages, tags, items, threads, last, name = replies[i * 6 : i * 6 + 6]
            rows.append(
                UserRow(
                    user_id=user,
                    messages=int(messages),
                    tags=int(tags),
                    items=int(items),
                    threads=int(threads),
                    last_active=float(as_text(last)) if last is not None else None,
                    name=as_text(name) if name is not None else None,
                )
            )
        return rows


def tag_value_commands(
    keys: KeyBuilder, user_id: str, changes: Sequence[tuple[str, str | None, str | None]]
) -> list[tuple[Any, ...]]:
    """The values-index commands for tag ``changes`` (name, old value, new value; ``None``:
    none), sent after the tag write: the old values out, the new ones in.

    Example:
        >>> tag_value_commands(KeyBuilder("tm"), "ann", [("name", None, "Ann Lee")])[0][3:]
        ('tm:{dir:}:dir:values', 0, 'ann\\x1fname\\x1fann lee')
    """
    key, escaped = keys.directory_key("values"), escape_user_id(user_id)
    old = [f"{escaped}{_SEP}{n}{_SEP}{v.casefold()}" for n, v, _ in changes if v is not None]
    new = [f"{escaped}{_SEP}{n}{_SEP}{v.casefold()}" for n, _, v in changes if v is not None]
    if not old and not new:
        return []
    return [("EVAL", _VALUES_LUA, 1, key, len(old), *old, *new)]


# a tag write's change: the name, its old value and its new one (None: none)
_Change = tuple[str, "str | None", "str | None"]


def _changes(reply: Any, values: Mapping[str, str] | None) -> list[_Change]:
    """A tag script's ``[name, old, ...]`` reply as changes to ``values`` (else deletions)."""
    flat = [as_text(x) for x in reply or []]
    pairs = zip(flat[0::2], flat[1::2], strict=True)
    return [(n, old or None, values.get(n) if values else None) for n, old in pairs]


def index_tags(
    connection: RedisConnection,
    keys: KeyBuilder,
    user_id: str,
    reply: Any,
    values: Mapping[str, str] | None = None,
) -> Plan[int]:
    """After a tag write: its changes (the tag script's reply) into the values index, in
    one pipelined round trip. Returns how many tags changed.
    """
    changes = _changes(reply, values)
    commands = tag_value_commands(keys, user_id, changes)
    yield call(connection.pipelined, connection.apipelined, commands)
    return len(changes)


def _range(escaped: str) -> tuple[bytes, bytes]:
    """The lexicographic range of one user's members in the values index (no UTF-8 byte
    is 0xFF, so it ends every member that starts with the id and the separator).
    """
    head = (escaped + _SEP).encode()
    return b"[" + head, b"[" + head + b"\xff"


def _glob(text: str) -> str:
    """``text`` matched literally by a Redis glob."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)


def _find_cursor(cursor: str) -> tuple[int, int]:
    try:
        phase, scan = (int(part) for part in cursor[1:].split("."))
    except ValueError:
        raise ValueError(
            f"cursor {cursor[:40]!r} is not a directory cursor; start again without one."
        ) from None
    if phase not in (0, 1, 2) or scan < 0:
        raise ValueError(f"cursor {cursor[:40]!r} is out of range; start again without one.")
    return phase, scan


def _position(cursor: str | None, head: str) -> int:
    """The number in an index cursor (``r.<offset>``, ``f.<ZSCAN cursor>``)."""
    if not cursor:
        return 0
    if not cursor.startswith(head) or not cursor[2:].isdigit():
        raise ValueError(
            f"cursor {cursor[:40]!r} is not a directory cursor; start again without one."
        )
    return int(cursor[2:])


def _parse_cursor(cursor: str | None) -> tuple[int, int, int]:
    if not cursor:
        return 0, 0, 0
    try:
        phase, node, scan = (int(part) for part in cursor.split("."))
    except ValueError:
        raise ValueError(
            f"cursor {cursor[:40]!r} is not a directory cursor; start again without one."
        ) from None
    if not (0 <= phase <= len(_PASSES) and node >= 0 and scan >= 0):
        raise ValueError(f"cursor {cursor[:40]!r} is out of range; start again without one.")
    return phase, node, scan

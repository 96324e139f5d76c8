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

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from langchain_tiered_memory.backend.connection import RedisConnection, ScriptCall, as_text
from langchain_tiered_memory.backend.keys import KeyBuilder, KeyKind, escape_user_id

__all__ = [
    "PAGE_SIZE",
    "RedisUserDirectory",
    "UserPage",
    "UserRow",
    "activity_call",
    "listing_kinds",
]

_ACTIVE_LUA = "return redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])"
# members a search reads per round trip (with their tags, pipelined)
_FIND_BATCH = 2000


def activity_call(keys: KeyBuilder, user_id: str, at: float) -> ScriptCall:
    """The index write of a turn: ``user_id`` was active at ``at`` (epoch seconds), sent
    in the turn's own round trip.

    Example:
        >>> activity_call(KeyBuilder("tm"), "ann", 5.0).args
        ('tm:{dir:}:dir:active', 5.0, 'ann')
    """
    return ScriptCall(_ACTIVE_LUA, 1, (keys.directory_key(), at, escape_user_id(user_id)))


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
        if cursor is not None and cursor[:2] in ("r.", "f."):
            indexed = True
        elif cursor:
            indexed = False  # a SCAN cursor: that listing goes on
        else:
            with self.connection.errors():
                indexed = bool(self.connection.sync.exists(self.keys.directory_key()))
        if not indexed:
            return self._scan_page(cursor, count, contains)
        with self.connection.errors():
            if contains:
                return self._find(_position(cursor, "f."), count, contains)
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
            rows += self._live(key, [unquote(as_text(m)) for m in members])
        total = int(client.zcard(key))
        more = offset < total
        return UserPage(rows, f"r.{offset}" if more else None, total=total, indexed=True)

    def _find(self, scan: int, count: int, contains: str) -> UserPage:
        """Users whose id or a tag value holds ``contains`` (case-folded), from ``ZSCAN``
        cursor ``scan``; each batch's tags are read in one pipelined round trip.
        """
        client = self.connection.sync
        key = self.keys.directory_key()
        needle = contains.casefold()
        found: list[tuple[float, str]] = []
        while True:
            scan, batch = client.zscan(key, scan, count=_FIND_BATCH)
            users = [(float(at), unquote(as_text(m))) for m, at in batch]
            pipe = client.pipeline(transaction=False)
            for _, user in users:
                pipe.hvals(self.keys.key(user, "tags"))
            values = pipe.execute() if users else []
            for (at, user), tags in zip(users, values, strict=True):
                texts = [user, *(as_text(v) for v in tags)]
                if any(needle in t.casefold() for t in texts):
                    found.append((at, user))
            if scan == 0 or len(found) >= count:
                break
        found.sort(key=lambda pair: -pair[0])  # the recently active first, in a page
        rows = self._live(key, [user for _, user in found])
        total = int(client.zcard(key))
        return UserPage(rows, None if scan == 0 else f"f.{scan}", total=total, indexed=True)

    def _live(self, key: str, users: list[str]) -> list[UserRow]:
        """The rows of ``users``; a member whose user has no key left (expired by
        ``user_ttl``) leaves the index instead.
        """
        rows = self.rows(users)
        gone = [r.user_id for r in rows if not (r.messages or r.tags or r.items or r.threads)]
        if gone:
            self.connection.sync.zrem(key, *(escape_user_id(u) for u in gone))
        return [r for r in rows if r.user_id not in gone]

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
            if page.next_cursor is None:
                return added
            cursor = page.next_cursor

    def expire(self, before: float) -> int:
        """Drop the entries last active before ``before`` (epoch seconds): with
        ``user_ttl``, users whose keys have expired. Returns how many.
        """
        with self.connection.errors():
            return int(
                self.connection.sync.zremrangebyscore(
                    self.keys.directory_key(), "-inf", f"({before}"
                )
            )

    async def aexpire(self, before: float) -> int:
        """Async :meth:`expire`."""
        with self.connection.errors():
            client = await self.connection.aclient()
            return int(
                await client.zremrangebyscore(self.keys.directory_key(), "-inf", f"({before}")
            )

    def forget(self, user_id: str) -> None:
        """Remove ``user_id`` from the index (their erasure)."""
        with self.connection.errors():
            self.connection.sync.zrem(self.keys.directory_key(), escape_user_id(user_id))

    async def aforget(self, user_id: str) -> None:
        """Async :meth:`forget`."""
        with self.connection.errors():
            client = await self.connection.aclient()
            await client.zrem(self.keys.directory_key(), escape_user_id(user_id))

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
        pipe = self.connection.sync.pipeline(transaction=False)
        for user in users:
            for kind in _PASSES[:phase]:
                pipe.exists(self.keys.key(user, kind))
        flags = pipe.execute()
        return [u for i, u in enumerate(users) if not any(flags[i * phase : (i + 1) * phase])]

    def rows(self, users: Sequence[str]) -> list[UserRow]:
        """Each user's counts per tier, last activity and name tag, in one pipelined round
        trip.
        """
        if not users:
            return []
        key = self.keys.key
        pipe = self.connection.sync.pipeline(transaction=False)
        for user in users:
            pipe.llen(key(user, "history"))
            pipe.hlen(key(user, "tags"))
            pipe.hlen(key(user, "sum:items"))
            pipe.scard(key(user, "threads"))
            pipe.hget(key(user, "meta"), "last_at")
            pipe.hget(key(user, "tags"), "name")
        with self.connection.errors():
            replies = pipe.execute()
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

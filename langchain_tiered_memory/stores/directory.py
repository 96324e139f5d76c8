"""The directory of users: who has memory under a key prefix, a page at a time, with each
user's counts per tier and last activity. What the console lists.

On Redis it pages with ``SCAN`` (never ``KEYS``), so a page costs the same at 100 users or
100,000 and nothing is written to keep an index: no extra write per turn, and erasing a
user leaves no entry behind in a shared key. A user is listed once, from the first of their
keys in this order: history, tags, summary items (a tag-only user is found by the tags pass
and skipped by the others). Search is a SCAN MATCH on the escaped user id, ASCII letters
matched in either case.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_tiered_memory.backend.connection import RedisConnection, as_text
from langchain_tiered_memory.backend.keys import KeyBuilder, KeyKind

__all__ = ["PAGE_SIZE", "RedisUserDirectory", "UserPage", "UserRow", "listing_kinds"]

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
        """At least ``count`` users (fewer on the last page; a SCAN step may give a few
        more), from ``cursor`` (``None``: the first page).

        Raises:
            ValueError: ``cursor`` is not one this directory handed out.
        """
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

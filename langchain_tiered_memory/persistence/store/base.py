"""What the sync and async Redis stores share: the layout, the batch plan, the codec.

Layout (core commands only; one hash slot per namespace):

- ``{st:}:st:ns`` (sorted set, scores 0): every namespace with items, encoded so that a
  namespace prefix is a lexical range
  (:func:`~langchain_tiered_memory.backend.keys.encode_namespace`).
  A put registers its namespace *before* writing the item (a killed batch cannot leave an
  item that searches never see); a delete that empties a namespace unregisters it, unless
  a put came meanwhile (``{st:}:st:nsv``: namespace -> write count, checked by a script);
- ``{st:<ns>}:st:items`` (hash): key -> JSON ``{"v": value, "c": created, "u": updated,
  "e": expiry epoch or null, "t": ttl minutes or null}``;
- ``{st:<ns>}:st:vecs`` (hash): key -> msgpack ``{path: float32 bytes}`` (only with an index).

A batch runs as a plan (``_steps``): a generator that yields the steps it needs (a
pipeline of reads, a pipeline of writes, texts to embed, a SCAN) and gets the replies back,
so the sync and the async store run the same plan through ``drive`` and ``adrive`` and
differ only in their I/O methods.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable
from datetime import datetime, timezone
from typing import Any, Literal

import numpy as np
import ormsgpack
from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchOp,
    TTLConfig,
    validate_op_namespace,
)
from langgraph.store.base.embed import ensure_embeddings, get_text_at_path, tokenize_path

from langchain_tiered_memory._steps import Plan, Step, call
from langchain_tiered_memory.backend.connection import RedisConnection, as_text
from langchain_tiered_memory.backend.keys import (
    DEFAULT_PREFIX,
    KeyBuilder,
    decode_namespace,
    encode_namespace,
)
from langchain_tiered_memory.errors import CorruptMemoryError
from langchain_tiered_memory.persistence.store.query import (
    MAX_VALUE_DEPTH,
    Stored,
    filter_ok,
    fixed_prefix,
    hit,
    lex_range,
    load_vectors,
    matches_all,
    unit,
    value_depth,
    vector_search,
)

__all__ = ["BaseRedisStore"]

logger = logging.getLogger(__name__)

_MAX_TTL_MINUTES = 100 * 365.25 * 24 * 60
# One command of a pipeline: (redis-py method name, args...).
Command = tuple[Any, ...]


# KEYS: registry, versions. ARGV: (encoded namespace, write count at the check) pairs:
# unregister each namespace found empty, unless a put has counted a write since.
_PRUNE = r"""
local n = 0
for i = 1, #ARGV, 2 do
  if (redis.call('HGET', KEYS[2], ARGV[i]) or '') == ARGV[i + 1] then
    n = n + redis.call('ZREM', KEYS[1], ARGV[i])
    redis.call('HDEL', KEYS[2], ARGV[i])
  end
end
return n
"""


def _now() -> datetime:
    return datetime.now(timezone.utc)


class BaseRedisStore(BaseStore):
    """The layout, batch plan and codec of :class:`RedisStore` and :class:`AsyncRedisStore`."""

    supports_ttl = True

    def __init__(
        self,
        connection: RedisConnection,
        *,
        key_prefix: str = DEFAULT_PREFIX,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
    ) -> None:
        self.connection = connection
        self.keys = KeyBuilder(key_prefix)
        self.ttl_config = ttl
        self.index_config: IndexConfig | None = IndexConfig(**index) if index else None
        self.embeddings: Embeddings | None = None
        self._fields: list[tuple[str, Any]] = []
        if index:
            if not isinstance(index.get("dims"), int):
                raise ValueError('index needs "dims": the embeddings\' dimension (e.g. 384).')
            distance = index.get("distance_type", "cosine")
            if distance != "cosine":
                raise ValueError(
                    f"index distance_type {distance!r} is not supported: RedisStore ranks by "
                    "cosine similarity. Leave distance_type out (or 'cosine'); for inner "
                    "product, normalized embeddings rank the same under cosine."
                )
            self.embeddings = ensure_embeddings(index.get("embed"))
            self._fields = [
                (p, tokenize_path(p) if p != "$" else p) for p in (index.get("fields") or ["$"])
            ]
        self._owns_connection = False
        self._sweeper: tuple[Any, Any] | None = None  # RedisStore's TTL thread
        self._task: Any = None  # AsyncRedisStore's TTL task

    # ----- the plan -----

    # ----- the I/O the plans ask for (``_steps``): the store's own, sync and async -----

    def _pipe(self, commands: list[Command]) -> Step:
        """A step: run ``commands`` (``("HGET", key, field)``) in one pipelined round trip
        (the connection's), reply with their results.
        """
        return call(self.connection.pipelined, self.connection.apipelined, commands)

    def _scan_step(self, pattern: str) -> Step:
        """A step: the keys matching a SCAN ``pattern`` (every node)."""
        return call(self.connection.scan, self.connection.ascan, pattern)

    def _embed(self, texts: list[str], kind: Literal["documents", "queries"]) -> list[Any]:
        raise NotImplementedError

    async def _aembed(self, texts: list[str], kind: Literal["documents", "queries"]) -> list[Any]:
        raise NotImplementedError

    def _plan(self, ops: Iterable[Op]) -> Plan[list[Result]]:
        ops = list(ops)
        for op in ops:
            validate_op_namespace(op)
        results: list[Result] = [None] * len(ops)
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:
            if isinstance(op, PutOp):
                puts[(op.namespace, op.key)] = op  # the last put of a key wins
            elif not isinstance(op, (GetOp, SearchOp, ListNamespacesOp)):
                raise ValueError(f"Unknown operation type: {type(op).__name__}")
        # Encode every value first: a value that is not JSON fails the batch before any write.
        encoded = {k: self._dump_value(op) for k, op in puts.items() if op.value is not None}

        # 1. the registry (for searches and listings) and the items asked for by key
        reads: list[Command] = []
        registry = self.keys.store_registry_key()
        for op in ops:
            if isinstance(op, GetOp):
                reads.append(("HGET", self.keys.store_key(op.namespace, "items"), op.key))
            elif isinstance(op, SearchOp):
                reads.append(("ZRANGEBYLEX", registry, *lex_range(op.namespace_prefix)))
            elif isinstance(op, ListNamespacesOp):
                reads.append(("ZRANGEBYLEX", registry, *lex_range(fixed_prefix(op))))
        replies = iter((yield self._pipe(reads)) if reads else [])

        # 2. the namespaces searches and listings touch
        now = time.time()
        second: list[Command] = []
        pending: list[tuple[int, Any, list[tuple[str, ...]]]] = []
        refresh: list[Command] = []
        for i, op in enumerate(ops):
            if isinstance(op, GetOp):
                raw = next(replies)
                stored = None if raw is None else self._parse(op.namespace, op.key, raw, now)
                results[i] = stored.item if stored else None
                if stored is not None and op.refresh_ttl:
                    refresh += self._refresh(stored, now)
            elif isinstance(op, (SearchOp, ListNamespacesOp)):
                namespaces = [decode_namespace(as_text(m)) for m in next(replies)]
                if isinstance(op, ListNamespacesOp):
                    namespaces = [n for n in namespaces if matches_all(op.match_conditions, n)]
                    pending.append((i, op, namespaces))  # listed below, items unread
                    continue
                for namespace in namespaces:
                    second.append(("HGETALL", self.keys.store_key(namespace, "items")))
                    if op.query and self.embeddings:
                        second.append(("HGETALL", self.keys.store_key(namespace, "vecs")))
                pending.append((i, op, namespaces))
        contents = iter((yield self._pipe(second)) if second else [])

        # 3. queries to embed, then searches and listings answered
        queries = sorted(
            {op.query for _, op, _ in pending if isinstance(op, SearchOp) and op.query}
        )
        vectors: dict[str, np.ndarray] = {}
        if queries and self.embeddings:
            embedded = yield call(self._embed, self._aembed, queries, "queries")
            vectors = {q: unit(v) for q, v in zip(queries, embedded, strict=True)}
        for i, op, namespaces in pending:
            if isinstance(op, ListNamespacesOp):
                results[i] = yield from self._list_plan(op, namespaces)
                continue
            candidates: list[tuple[Stored, dict[str, np.ndarray]]] = []
            for namespace in namespaces:
                items = self._live_items(namespace, next(contents), now)
                vecs = next(contents) if op.query and self.embeddings else {}
                for stored in items:
                    if filter_ok(stored.item.value, op.filter):
                        raw = vecs.get(stored.item.key.encode()) if vecs else None
                        candidates.append((stored, load_vectors(raw)))
            # newest first (as PostgresStore lists without a query); ranking is stable
            candidates.sort(
                key=lambda c: (c[0].item.updated_at, c[0].item.namespace, c[0].item.key),
                reverse=True,
            )
            ranked = vector_search(op, candidates, vectors.get(op.query or ""))
            results[i] = [hit(stored.item, score) for stored, score in ranked]
            if op.refresh_ttl:
                for stored, _ in ranked:
                    refresh += self._refresh(stored, now)

        # 4. writes (and TTL refreshes) in one pipeline; vectors embedded first
        texts: list[str] = []
        where: list[tuple[tuple[tuple[str, ...], str], str]] = []
        if self.embeddings:
            for k, op in puts.items():
                if op.value is None or op.index is False:
                    continue
                paths = (
                    self._fields if op.index is None else [(p, tokenize_path(p)) for p in op.index]
                )
                for path, tokens in paths:
                    found = get_text_at_path(op.value, tokens)
                    for n, text in enumerate(found):
                        texts.append(text)
                        where.append((k, f"{path}.{n}" if len(found) > 1 else path))
        by_key: dict[tuple[tuple[str, ...], str], dict[str, bytes]] = {}
        if texts:
            embedded = yield call(self._embed, self._aembed, texts, "documents")
            if len(embedded) != len(texts):
                raise ValueError(
                    f"the embeddings returned {len(embedded)} vectors for {len(texts)} texts."
                )
            for (k, path), vector in zip(where, embedded, strict=True):
                by_key.setdefault(k, {})[path] = np.asarray(vector, dtype=np.float32).tobytes()
        # registered (and counted) before any item is written: see the module docstring
        writes: list[Command] = []
        versions = self.keys.store_versions_key()
        for namespace in dict.fromkeys(op.namespace for op in puts.values() if op.value):
            member = encode_namespace(namespace)
            writes += [("HINCRBY", versions, member, 1), ("ZADD", registry, 0, member)]
        writes += refresh
        emptied: list[tuple[str, ...]] = []
        for k, op in puts.items():
            items_key = self.keys.store_key(op.namespace, "items")
            vecs_key = self.keys.store_key(op.namespace, "vecs")
            if op.value is None:
                writes += [("HDEL", items_key, op.key), ("HDEL", vecs_key, op.key)]
                emptied.append(op.namespace)
                continue
            writes.append(("HSET", items_key, op.key, encoded[k]))
            if k in by_key:
                writes.append(("HSET", vecs_key, op.key, ormsgpack.packb(by_key[k])))
            else:
                writes.append(("HDEL", vecs_key, op.key))
        if writes:
            yield self._pipe(writes)
        if emptied:
            yield from self._prune_plan(list(dict.fromkeys(emptied)))
        return results

    def _list_plan(
        self, op: ListNamespacesOp, registered: list[tuple[str, ...]]
    ) -> Plan[list[Any]]:
        """One page of ``list_namespaces``: the registered namespaces in order, each checked
        to hold an item (``HLEN``; a registry entry can outlive its items for a moment) in
        growing chunks until the page is full: O(registry) names, O(page) keys read.
        """
        ordered = sorted(set(registered))
        want = op.offset + op.limit
        found: list[tuple[str, ...]] = []
        at, chunk = 0, max(2 * want, 64)
        while at < len(ordered) and len(found) < want:
            part = ordered[at : at + chunk]
            at, chunk = at + chunk, chunk * 2
            sizes = yield self._pipe([("HLEN", self.keys.store_key(n, "items")) for n in part])
            for namespace, size in zip(part, sizes, strict=True):
                if int(size) > 0:
                    # sorted namespaces give sorted, consecutive truncations: dedup in order
                    shown = namespace[: op.max_depth] if op.max_depth is not None else namespace
                    if not found or found[-1] != shown:
                        found.append(shown)
        return found[op.offset : want]

    def _prune_plan(self, namespaces: list[tuple[str, ...]]) -> Plan[int]:
        """Unregister those of ``namespaces`` that are empty; return how many. The write
        count is read *before* the emptiness, so a put racing this check keeps its
        namespace registered.
        """
        versions = self.keys.store_versions_key()
        members = [encode_namespace(n) for n in namespaces]
        counts = yield self._pipe([("HGET", versions, m) for m in members])
        sizes = yield self._pipe([("HLEN", self.keys.store_key(n, "items")) for n in namespaces])
        args: list[str] = []
        for member, count, size in zip(members, counts, sizes, strict=True):
            if int(size) == 0:
                args += [member, as_text(count) if count is not None else ""]
        if not args:
            return 0
        registry = self.keys.store_registry_key()
        (pruned,) = yield self._pipe([("EVAL", _PRUNE, 2, registry, versions, *args)])
        return int(pruned)

    def _purge_plan(self, prefix: tuple[str, ...]) -> Plan[int]:
        """Delete every namespace under ``prefix`` by key, without reading a value (an
        unreadable item cannot stop an erasure); return the items removed, expired ones
        included. The registry is read and the keyspace scanned (for items an older
        version wrote before registering them).
        """
        registry = self.keys.store_registry_key()
        (members,) = yield self._pipe([("ZRANGEBYLEX", registry, *lex_range(prefix))])
        found = {decode_namespace(as_text(m)) for m in members}
        for key in (yield self._scan_step(self.keys.store_scan_pattern(prefix))):
            namespace = self.keys.store_namespace_from_key(key)
            if namespace is not None and namespace[: len(prefix)] == prefix:
                found.add(namespace)
        namespaces = sorted(found)
        if not namespaces:
            return 0
        commands: list[Command] = []
        for namespace in namespaces:
            items_key = self.keys.store_key(namespace, "items")
            commands += [("HLEN", items_key), ("DEL", items_key)]
            commands.append(("DEL", self.keys.store_key(namespace, "vecs")))
        replies = yield self._pipe(commands)
        yield from self._prune_plan(namespaces)  # the emptied ones leave the registry
        return sum(int(r) for r in replies[0::3])

    # ----- codec -----

    def _dump_value(self, op: PutOp) -> str:
        if not isinstance(op.value, dict):
            raise TypeError(
                f"store values must be dicts, got {type(op.value).__name__} for key {op.key!r}."
            )
        now = _now().isoformat()
        ttl = op.ttl if isinstance(op.ttl, (int, float)) else None
        if ttl is not None and not (0 < ttl < _MAX_TTL_MINUTES):
            raise ValueError(
                f"ttl of key {op.key!r} must be a positive number of minutes below "
                f"{_MAX_TTL_MINUTES:.0f} (100 years), or None for no expiry; got {ttl!r}."
            )
        if value_depth(op.value) > MAX_VALUE_DEPTH:
            raise ValueError(
                f"store value of key {op.key!r} nests deeper than {MAX_VALUE_DEPTH} levels; "
                "flatten it (a value that deep could not be read back)."
            )
        record = {
            "v": op.value,
            "c": now,
            "u": now,
            "t": ttl,
            "e": time.time() + ttl * 60 if ttl else None,
        }
        try:
            return json.dumps(record, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"store value of key {op.key!r} is not JSON-serializable ({exc}); store "
                "plain dicts of str, numbers, bools, lists and dicts."
            ) from exc

    def _parse(self, namespace: tuple[str, ...], key: str, raw: Any, now: float) -> Stored | None:
        try:
            record = json.loads(raw)
            if record.get("e") is not None and record["e"] <= now:
                return None  # expired; the next sweep deletes it
            item = Item(
                value=record["v"],
                key=key,
                namespace=namespace,
                created_at=datetime.fromisoformat(record["c"]),
                updated_at=datetime.fromisoformat(record["u"]),
            )
            return Stored(item, record.get("t"))
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
            where = self.keys.store_key(namespace, "items")
            raise CorruptMemoryError(
                f"store item {key!r} of namespace {namespace!r} (field {key!r} of {where}) "
                f"is not a record this store wrote ({type(exc).__name__}: {exc}). Delete "
                "it (store.delete(namespace, key)); forget_user erases it without reading it."
            ) from exc

    def _live_items(
        self, namespace: tuple[str, ...], raw: dict[Any, Any], now: float
    ) -> list[Stored]:
        found = (self._parse(namespace, as_text(k), v, now) for k, v in raw.items())
        return [stored for stored in found if stored is not None]

    def _refresh(self, stored: Stored, now: float) -> list[Command]:
        item, ttl = stored
        if not ttl:
            return []
        record = {
            "v": item.value,
            "c": item.created_at.isoformat(),
            "u": item.updated_at.isoformat(),
            "t": ttl,
            "e": now + ttl * 60,
        }
        encoded = json.dumps(record, ensure_ascii=False)
        return [("HSET", self.keys.store_key(item.namespace, "items"), item.key, encoded)]

    def _sweep_plan(self) -> Plan[int]:
        """Delete expired items of every namespace; return how many."""
        registry = self.keys.store_registry_key()
        (members,) = yield self._pipe([("ZRANGEBYLEX", registry, "-", "+")])
        namespaces = [decode_namespace(as_text(m)) for m in members]
        if not namespaces:
            return 0
        contents = yield self._pipe(
            [("HGETALL", self.keys.store_key(n, "items")) for n in namespaces]
        )
        now = time.time()
        deletes: list[Command] = []
        emptied: list[tuple[str, ...]] = []
        for namespace, raw in zip(namespaces, contents, strict=True):
            for key, value in raw.items():
                try:
                    expired = self._parse(namespace, as_text(key), value, now) is None
                except CorruptMemoryError as exc:
                    logger.warning("the TTL sweep skipped an unreadable item: %s", exc)
                    continue
                if expired:
                    deletes.append(("HDEL", self.keys.store_key(namespace, "items"), key))
                    deletes.append(("HDEL", self.keys.store_key(namespace, "vecs"), key))
                    emptied.append(namespace)
        if deletes:
            yield self._pipe(deletes)
        if emptied:
            yield from self._prune_plan(list(dict.fromkeys(emptied)))
        return len(deletes) // 2

"""Long-term fuzzy memory: short summary items of old conversation, recalled by similarity.

Items live durably in Redis (text, ``created_at``, metadata, embedding as float32 bytes); the
search structure is a per-user FAISS index built from Redis and cached per process. A
version pair in the user's meta hash (``gen`` bumped by deletions, ``next_id`` by additions)
tells a process whether its cache is current, so several processes on one Redis agree: new
items are fetched incrementally, a deletion triggers a rebuild. No pickle anywhere.
"""

from __future__ import annotations

import json
import secrets
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timezone
from typing import Any

import numpy as np
from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict

from langchain_tiered_memory._keys import KeyBuilder, validate_user_id
from langchain_tiered_memory._redis import RedisConnection
from langchain_tiered_memory.errors import (
    CorruptMemoryError,
    InvalidSummaryError,
    SummaryLimitError,
    WatermarkConflict,
)
from langchain_tiered_memory.retrieval import HybridIndex, RetrievalConfig, to_epoch

__all__ = [
    "SummaryStore",
    "RedisSummaryStore",
    "InMemorySummaryStore",
    "SummaryRetriever",
    "MAX_SUMMARY_CHARS",
    "DEDUP_THRESHOLD",
]

MAX_SUMMARY_CHARS = 2000
# Per user: a first recall of 121k items took 11 s and 1 GB; a person's memory of one user
# is far smaller. Raise it per store (max_items=) if a use case needs more.
DEFAULT_MAX_ITEMS = 10_000
# The per-process cache of users' search indexes, bounded by users and by bytes.
DEFAULT_MAX_CACHED_USERS = 256
DEFAULT_MAX_CACHE_BYTES = 256 * 1024 * 1024
_RECORD_OVERHEAD = 400
# Cosine similarity above which a new item counts as a restatement of a stored one.
DEDUP_THRESHOLD = 0.95


def normalize_created_at(value: datetime | date | str | None) -> str:
    """ISO-8601 text for a timestamp; naive datetimes are taken as UTC."""
    if value is None:
        return datetime.now(timezone.utc).isoformat(timespec="seconds")
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        return value.isoformat(timespec="seconds")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, str):
        try:
            return normalize_created_at(datetime.fromisoformat(value))
        except ValueError as exc:
            raise InvalidSummaryError(
                f"created_at {value!r} is not ISO-8601; pass a datetime or '2023-05-08T13:56'."
            ) from exc
    raise InvalidSummaryError(f"created_at must be a datetime, date or ISO string, not {value!r}.")


def validate_items(items: Sequence[str]) -> list[str]:
    """Strip and check summary texts; raise ``InvalidSummaryError`` on the first bad one."""
    if isinstance(items, str):
        raise InvalidSummaryError("items must be a list of strings, not one string.")
    out = []
    for item in items:
        if not isinstance(item, str):
            raise InvalidSummaryError(f"summary items must be strings, got {item!r}.")
        text = item.strip()
        if not text:
            raise InvalidSummaryError("a summary item is empty; drop it before storing.")
        if len(text) > MAX_SUMMARY_CHARS:
            raise InvalidSummaryError(
                f"a summary item is {len(text)} characters; the limit is {MAX_SUMMARY_CHARS}: "
                "split it into short self-contained items."
            )
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidSummaryError("a summary item is not valid UTF-8 text.") from exc
        out.append(text)
    return out


def _json_metadata(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    meta = dict(metadata or {})
    try:
        json.dumps(meta)
    except (TypeError, ValueError) as exc:
        raise InvalidSummaryError(f"metadata must be JSON-serializable: {exc}") from exc
    return meta


def _unit_rows(vectors: Sequence[Sequence[float]]) -> np.ndarray:
    """Rows scaled to unit length.

    Raises:
        InvalidSummaryError: a vector holds NaN or infinity (it would rank first for every
            query and match nothing as a duplicate).

    """
    arr = np.asarray(vectors, dtype=np.float32)
    if arr.size and not np.isfinite(arr).all():
        raise InvalidSummaryError(
            "the embeddings model returned a vector with NaN or infinite values; nothing was "
            "stored. Check the embeddings model."
        )
    if arr.ndim != 2 or arr.shape[0] == 0:
        return arr.reshape(0, arr.shape[-1] if arr.ndim == 2 else 0)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(arr / norms)


@dataclass
class _Record:
    id: str
    text: str
    created_at: str
    metadata: dict[str, Any]

    def to_json(self) -> str:
        return json.dumps(
            {"text": self.text, "created_at": self.created_at, "metadata": self.metadata},
            ensure_ascii=False,
        )

    @classmethod
    def from_json(cls, id_: str, raw: bytes | str, where: str = "summary items") -> _Record:
        try:
            data = json.loads(raw)
            record = cls(id_, data["text"], data["created_at"], data.get("metadata") or {})
            if not (
                isinstance(record.text, str)
                and isinstance(record.created_at, str)
                and isinstance(record.metadata, dict)
            ):
                raise TypeError("text and created_at must be strings, metadata an object")
            return record
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
            raise CorruptMemoryError(
                f"{where}: item {id_} is not a stored summary item ({type(exc).__name__}: "
                f"{str(exc)[:200]}). Delete it (memory.summaries.delete) to recover."
            ) from exc


class _UserIndex:
    """One user's items in search-ready form: a :class:`~langchain_tiered_memory.retrieval.
    HybridIndex` (FAISS + BM25 + timestamps) and the records, position for position.

    Append-only between rebuilds. Adds and searches hold the index's lock, so a search never
    sees half of an added batch; deltas append only ids past those already loaded, so two
    threads applying overlapping deltas never add an item twice.
    """

    def __init__(
        self,
        dim: int,
        gen: int = 0,
        next_id: int = 0,
        config: RetrievalConfig | None = None,
    ) -> None:
        self.dim = dim
        self.gen = gen
        self.next_id = next_id
        self.records: list[_Record] = []
        self.hybrid = HybridIndex(dim, config)
        self.lock = threading.RLock()
        self._loaded_upto = -1  # highest numeric id appended (Redis ids only grow)
        self.nbytes = 0  # estimated memory held (see add)
        # positions of items a newer item superseded: out of default recall
        self.superseded = np.zeros(0, dtype=bool)

    def add(self, records: list[_Record], vectors: np.ndarray) -> None:
        """Append records with their unit vectors."""
        if not records:
            return
        with self.lock:
            self.hybrid.add(
                [r.text for r in records], vectors, [to_epoch(r.created_at) for r in records]
            )
            self.records.extend(records)
            self.superseded = np.concatenate(
                [self.superseded, [bool(r.metadata.get("superseded_by")) for r in records]]
            )
            # Vectors twice (FAISS and the rescoring copy), the text with its lexical
            # postings (about 3x), and a fixed per-record overhead.
            self.nbytes += sum(
                self.dim * 8 + 3 * len(r.text.encode("utf-8")) + _RECORD_OVERHEAD for r in records
            )
            for r in records:
                if r.id.isdigit():
                    self._loaded_upto = max(self._loaded_upto, int(r.id))

    def vectors(self) -> np.ndarray:
        """Every stored vector, in record order (a copy)."""
        with self.lock:
            return self.hybrid.vectors()

    def nearest(self, vectors: np.ndarray) -> np.ndarray:
        """Best cosine similarity of each row against the stored items (-1 if none)."""
        with self.lock:
            return self.hybrid.nearest(vectors)

    def search(
        self,
        vector: np.ndarray,
        k: int,
        *,
        query: str | None = None,
        now: datetime | None = None,
        include_superseded: bool = False,
    ) -> list[Document]:
        """The ``k`` best items for ``query`` and its embedding ``vector``, best first.

        ``metadata["score"]`` is the hybrid relevance in [-1, 1] (see
        :mod:`langchain_tiered_memory.retrieval`), ``metadata["similarity"]`` the plain
        cosine of query and item. Without ``query`` only the embedding ranks. Items a newer
        item superseded are left out unless ``include_superseded``; among near-duplicates
        that are recalled together, the newer comes first.
        """
        if k <= 0:
            return []
        if vector.shape[-1] != self.dim:
            raise InvalidSummaryError(
                f"the query embedding has {vector.shape[-1]} dimensions, the stored items "
                f"{self.dim}: recall with the embeddings model the items were stored with."
            )
        with self.lock:
            hidden = None
            if not include_superseded and self.superseded.any():
                hidden = self.superseded.copy()
            hits = self.hybrid.search(query or "", vector, k, now=now, exclude=hidden)
            if len(hits) > 1:
                positions = np.array([h.position for h in hits], dtype=np.int64)
                hits = _newer_first(hits, self.hybrid.vectors(positions), self)
            records = [self.records[h.position] for h in hits]
        out = []
        for hit, record in zip(hits, records):
            doc = _as_document(record)
            doc.metadata["score"] = hit.score
            doc.metadata["similarity"] = hit.similarity
            out.append(doc)
        return out


# Recalled items this similar say the same thing: the newer is the current one.
NEAR_DUPLICATE = 0.85


def _newer_first(hits: list[Any], vectors: np.ndarray, index: _UserIndex) -> list[Any]:
    """``hits`` with every near-duplicate pair ordered newer first, stable otherwise: each
    hit goes before the first older near-duplicate already placed (so no older
    near-duplicate ever precedes it, and placed hits keep their order).
    """
    epochs = [to_epoch(index.records[h.position].created_at) for h in hits]
    order: list[int] = []
    for i in range(len(hits)):
        at = next(
            (
                p
                for p, j in enumerate(order)
                if epochs[i] > epochs[j] and float(vectors[i] @ vectors[j]) >= NEAR_DUPLICATE
            ),
            len(order),
        )
        order.insert(at, i)
    return [hits[i] for i in order]


def _dedup(new: np.ndarray, existing: _UserIndex | None, threshold: float) -> list[int]:
    """Positions of rows in ``new`` that restate neither a stored item nor an earlier row."""
    if existing is not None and len(new) and existing.dim != new.shape[1]:
        raise InvalidSummaryError(
            f"stored items have {existing.dim}-dimensional embeddings, these {new.shape[1]}: "
            "use the same embeddings model, or forget the user's summaries first."
        )
    best = existing.nearest(new) if existing is not None else np.full(len(new), -1.0)
    # Rows restating an earlier kept row: similarities a block of rows at a time, then a
    # greedy pass in order (the same result as comparing each row with every kept one).
    keep: list[int] = []
    kept = np.zeros(len(new), dtype=bool)
    block = 256
    for start in range(0, len(new), block):
        stop = min(start + block, len(new))
        close = (new[start:stop] @ new[:stop].T) >= threshold
        for i in range(start, stop):
            if best[i] >= threshold or bool(np.any(close[i - start, :i] & kept[:i])):
                continue
            keep.append(i)
            kept[i] = True
    return keep


class SummaryStore(ABC):
    """Per-user summary items with embedding search; sync and async pairs.

    A store is given its embeddings model; it never builds one (the package's default is
    :func:`langchain_tiered_memory.defaults.default_embeddings`, which
    :class:`~langchain_tiered_memory.TieredMemory`'s constructors use).
    """

    embeddings: Embeddings
    dedup_threshold: float = DEDUP_THRESHOLD
    max_items: int | None = DEFAULT_MAX_ITEMS
    # How recall ranks items (None: the defaults of RetrievalConfig).
    retrieval: RetrievalConfig | None = None

    def _embedder(self) -> Embeddings:
        return self.embeddings

    def embed_query(self, text: str) -> np.ndarray:
        """Embed a query once (unit length), for callers that search several times."""
        return _unit_rows([self._embedder().embed_query(text)])[0]

    async def aembed_query(self, text: str) -> np.ndarray:
        """Async :meth:`embed_query`."""
        return _unit_rows([await self._embedder().aembed_query(text)])[0]

    def _prepare(
        self,
        items: Sequence[str],
        vectors: Sequence[Sequence[float]],
        created_at: datetime | date | str | None,
        metadata: Mapping[str, Any] | None,
    ) -> tuple[list[_Record], np.ndarray]:
        texts = validate_items(items)
        stamp = normalize_created_at(created_at)
        meta = _json_metadata(metadata)
        vecs = _unit_rows(vectors)
        if len(vecs) != len(texts):
            raise InvalidSummaryError("the embeddings model returned a wrong number of vectors.")
        return [_Record("", t, stamp, meta) for t in texts], vecs

    @abstractmethod
    def add(
        self,
        user_id: str,
        items: Sequence[str],
        *,
        created_at: datetime | date | str | None = None,
        metadata: Mapping[str, Any] | None = None,
        watermark: tuple[int, int] | None = None,
        supersedes: Mapping[int, Sequence[str]] | None = None,
    ) -> list[str]:
        """Store items (near-duplicates of stored ones are skipped); return the new ids.

        ``watermark=(expected, new)`` makes the write conditional: it happens, together
        with moving the user's summarization watermark to ``new``, only if the watermark
        is still ``expected``. ``supersedes={i: [stored ids]}``: ``items[i]`` makes those
        stored items no longer true; they are kept, marked with ``superseded_by`` (the new
        id) and ``valid_until`` (its ``created_at``), in the same write, and left out of
        default recall.

        Raises:
            WatermarkConflict: the watermark moved meanwhile; nothing was written.
            InvalidSummaryError: an item is empty or too long; nothing was written.

        """

    @abstractmethod
    async def aadd(
        self,
        user_id: str,
        items: Sequence[str],
        *,
        created_at: datetime | date | str | None = None,
        metadata: Mapping[str, Any] | None = None,
        watermark: tuple[int, int] | None = None,
        supersedes: Mapping[int, Sequence[str]] | None = None,
    ) -> list[str]:
        """Async :meth:`add`."""

    @abstractmethod
    def search(
        self,
        user_id: str,
        query: str,
        k: int = 3,
        *,
        vector: np.ndarray | None = None,
        include_superseded: bool = False,
    ) -> list[Document]:
        """The ``k`` best items for ``query``, best first, ``metadata["score"]`` set.

        Items a newer item superseded are left out unless ``include_superseded``.
        """

    @abstractmethod
    async def asearch(
        self,
        user_id: str,
        query: str,
        k: int = 3,
        *,
        vector: np.ndarray | None = None,
        include_superseded: bool = False,
    ) -> list[Document]:
        """Async :meth:`search`."""

    @abstractmethod
    def get_watermark(self, user_id: str) -> int:
        """Absolute history position up to which the user's history is summarized."""

    @abstractmethod
    async def aget_watermark(self, user_id: str) -> int:
        """Async :meth:`get_watermark`."""

    @abstractmethod
    def get_all(self, user_id: str) -> list[Document]:
        """Every stored item of the user, oldest first."""

    @abstractmethod
    async def aget_all(self, user_id: str) -> list[Document]:
        """Async :meth:`get_all`."""

    @abstractmethod
    def delete(self, user_id: str, ids: Sequence[str]) -> int:
        """Delete items by id; return how many existed."""

    @abstractmethod
    async def adelete(self, user_id: str, ids: Sequence[str]) -> int:
        """Async :meth:`delete`."""

    @abstractmethod
    def clear(self, user_id: str) -> int:
        """Delete every item, the cached index and the watermark; return the item count."""

    @abstractmethod
    async def aclear(self, user_id: str) -> int:
        """Async :meth:`clear`."""

    def similar(self, user_id: str, texts: Sequence[str], k: int = 3) -> list[list[Document]]:
        """For each text, the ``k`` stored items most like it (current items only): what an
        update step compares new items with. One batch of embeddings.
        """
        if not texts or not self.get_all_count(user_id):
            return [[] for _ in texts]
        vectors = _unit_rows(self._embedder().embed_documents(list(texts)))
        return [self.search(user_id, t, k, vector=v) for t, v in zip(texts, vectors)]

    async def asimilar(
        self, user_id: str, texts: Sequence[str], k: int = 3
    ) -> list[list[Document]]:
        """Async :meth:`similar`."""
        if not texts or not await self.aget_all_count(user_id):
            return [[] for _ in texts]
        vectors = _unit_rows(await self._embedder().aembed_documents(list(texts)))
        return [await self.asearch(user_id, t, k, vector=v) for t, v in zip(texts, vectors)]

    def get_all_count(self, user_id: str) -> int:
        """How many items the user has (superseded ones included)."""
        return len(self.get_all(user_id))

    async def aget_all_count(self, user_id: str) -> int:
        """Async :meth:`get_all_count`."""
        return len(await self.aget_all(user_id))

    def as_retriever(self, user_id: str, *, k: int = 3, **kwargs: Any) -> SummaryRetriever:
        """A LangChain retriever over one user's items.

        Example:
            >>> retriever = memory.summaries.as_retriever("alice", k=3)  # doctest: +SKIP
            >>> retriever.invoke("when is her birthday?")  # doctest: +SKIP

        """
        return SummaryRetriever(store=self, user_id=validate_user_id(user_id), k=k, **kwargs)


class SummaryRetriever(BaseRetriever):
    """``BaseRetriever`` over one user's summary items."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: SummaryStore
    user_id: str
    k: int = 3

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        return self.store.search(self.user_id, query, self.k if k is None else k)

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
    ) -> list[Document]:
        return await self.store.asearch(self.user_id, query, self.k if k is None else k)


# Conditional, atomic add: check the watermark and the embedding size, allocate ids, write
# texts and vectors, move the watermark. Readers see all of it or none of it.
_ADD_LUA = """
if ARGV[1] ~= '' then
  local wm = redis.call('HGET', KEYS[3], 'watermark') or '0'
  if wm ~= ARGV[1] then return {-1, wm} end
end
local m = tonumber(ARGV[6])
local off = 6 + 2 * m
local n = (#ARGV - off) / 2
if n > 0 then
  if ARGV[5] ~= '' then
    local have = redis.call('HLEN', KEYS[1])
    if have + n > tonumber(ARGV[5]) then return {-3, tostring(have)} end
  end
  local d = redis.call('HGET', KEYS[3], 'dim')
  if d and d ~= ARGV[3] and redis.call('HLEN', KEYS[2]) > 0 then return {-2, d} end
  redis.call('HSET', KEYS[3], 'dim', ARGV[3])
  redis.call('HSETNX', KEYS[3], 'gen', ARGV[4])
end
local first = redis.call('HINCRBY', KEYS[3], 'next_id', n) - n
for i = 0, n - 1 do
  redis.call('HSET', KEYS[1], first + i, ARGV[off + 1 + 2 * i])
  redis.call('HSET', KEYS[2], first + i, ARGV[off + 2 + 2 * i])
end
-- superseded items: their new JSON names the new item as @@NEW<k>@@ (k: its batch index)
local changed = false
for j = 0, m - 1 do
  local id = ARGV[7 + 2 * j]
  if redis.call('HEXISTS', KEYS[1], id) == 1 then
    local json = string.gsub(ARGV[8 + 2 * j], '@@NEW(%d+)@@', function(k)
      return tostring(first + tonumber(k))
    end)
    redis.call('HSET', KEYS[1], id, json)
    changed = true
  end
end
if changed then redis.call('HINCRBY', KEYS[3], 'gen', 1) end
if ARGV[2] ~= '' then redis.call('HSET', KEYS[3], 'watermark', ARGV[2]) end
return {first, ''}
"""

_DELETE_LUA = """
local n = 0
for i = 1, #ARGV do
  n = n + redis.call('HDEL', KEYS[1], ARGV[i])
  redis.call('HDEL', KEYS[2], ARGV[i])
end
if n > 0 then redis.call('HINCRBY', KEYS[3], 'gen', 1) end
return n
"""

_CLEAR_LUA = """
local n = redis.call('HLEN', KEYS[1])
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('HDEL', KEYS[3], 'watermark', 'dim')
redis.call('HSETNX', KEYS[3], 'gen', ARGV[1])
redis.call('HINCRBY', KEYS[3], 'gen', 1)
return n
"""


def _superseded(
    existing: _UserIndex | None,
    records: list[_Record],
    keep: list[int],
    supersedes: Mapping[int, Sequence[str]] | None,
) -> list[tuple[_Record, int]]:
    """``(stored record with its new metadata, k)`` for each stored item that the ``k``-th
    kept new item supersedes; ``superseded_by`` is set once the new ids are known.
    """
    if not supersedes or existing is None:
        return []
    with existing.lock:
        stored = {r.id: r for r in existing.records}
    out: list[tuple[_Record, int]] = []
    for k, i in enumerate(keep):
        for stored_id in supersedes.get(i, ()):
            old = stored.get(str(stored_id))
            if old is None or old.metadata.get("superseded_by"):
                continue
            meta = {**old.metadata, "valid_until": records[i].created_at}
            out.append((_Record(old.id, old.text, old.created_at, meta), k))
    return out


def _superseding_json(updates: list[tuple[_Record, int]]) -> list[tuple[str, str]]:
    """The add script's form: the new item's id is not known before the write, so the JSON
    names it ``@@NEW<k>@@``, which the script replaces.
    """
    out = []
    for record, k in updates:
        meta = {**record.metadata, "superseded_by": f"@@NEW{k}@@"}
        out.append((record.id, _Record(record.id, record.text, record.created_at, meta).to_json()))
    return out


def _limit_error(have: int, adding: int, limit: int | None) -> SummaryLimitError:
    return SummaryLimitError(
        f"the user has {have} summary items and {adding} more would pass the limit of "
        f"{limit} (max_items); nothing was stored. Delete old items "
        "(memory.summaries.delete) or raise max_items."
    )


def _int(raw: bytes | str | None, where: str = "a summary meta hash") -> int:
    try:
        return int(raw) if raw is not None else 0
    except ValueError as exc:
        raise CorruptMemoryError(f"{where} holds {raw!r} where a number belongs.") from exc


def _new_gen() -> str:
    """A random first ``gen`` for a user's items.

    ``forget_user`` deletes the meta hash, so counters restart; a random start keeps another
    process's cached index of the forgotten items from matching the new items' version.
    """
    return str(secrets.randbelow(1 << 52) + (1 << 20))


class RedisSummaryStore(SummaryStore):
    """Summary items in Redis hashes, searched through a per-process FAISS cache.

    Example:
        >>> conn = RedisConnection("redis://localhost")
        >>> store = RedisSummaryStore(conn, embeddings=emb)  # doctest: +SKIP
        >>> store.add("alice", ["Alice's birthday is on May 8."])  # doctest: +SKIP
        ['0']

    """

    def __init__(
        self,
        connection: RedisConnection,
        *,
        embeddings: Embeddings,
        keys: KeyBuilder | None = None,
        max_cached_users: int = DEFAULT_MAX_CACHED_USERS,
        max_cache_bytes: int = DEFAULT_MAX_CACHE_BYTES,
        max_items: int | None = DEFAULT_MAX_ITEMS,
        dedup_threshold: float = DEDUP_THRESHOLD,
        retrieval: RetrievalConfig | None = None,
    ) -> None:
        self.connection = connection
        self.max_cache_bytes = max_cache_bytes
        self.max_items = max_items
        self.retrieval = retrieval
        self.embeddings = embeddings
        self.keys = keys or KeyBuilder()
        self.max_cached_users = max_cached_users
        self.dedup_threshold = dedup_threshold
        self._cache: OrderedDict[str, _UserIndex] = OrderedDict()
        self._lock = threading.Lock()

    def _k(self, user_id: str) -> tuple[str, str, str]:
        return (
            self.keys.key(user_id, "sum:items"),
            self.keys.key(user_id, "sum:vecs"),
            self.keys.key(user_id, "meta"),
        )

    # ----- cache: shared by the sync and async paths; only the Redis I/O differs -----

    def version_command(self, user_id: str) -> tuple[str, str, str, str, str]:
        """The ``HMGET`` that reads the cache version, for callers batching a pipeline."""
        return ("HMGET", self._k(user_id)[2], "gen", "next_id", "dim")

    def where(self, user_id: str) -> str:
        """How errors name the user's items: the user id and the Redis keys."""
        items, vecs, meta = self._k(user_id)
        return f"the summary items of user {user_id!r} (keys {items}, {vecs}, {meta})"

    def _version(self, user_id: str, version: Sequence[Any]) -> tuple[int, int, int]:
        where = self.where(user_id)
        return _int(version[0], where), _int(version[1], where), _int(version[2], where)

    def _cached(self, user_id: str, version: Sequence[Any]) -> tuple[_UserIndex | None, str]:
        """Return (index, what to fetch): '' if current, 'delta' or 'full'."""
        gen, next_id, dim = self._version(user_id, version)
        with self._lock:
            if not next_id and not gen:  # nothing stored (e.g. forgotten): drop stale index
                self._cache.pop(user_id, None)
                return None, ""
            cached = self._cache.get(user_id)
            if cached is not None:
                self._cache.move_to_end(user_id)
                if cached.gen == gen and cached.next_id == next_id:
                    return cached, ""
                if cached.gen == gen and cached.next_id < next_id and cached.dim == dim:
                    return cached, "delta"
        return None, "full" if next_id or gen else ""

    def _store_cache(self, user_id: str, index: _UserIndex) -> None:
        with self._lock:
            self._cache[user_id] = index
            self._cache.move_to_end(user_id)
        self._evict()

    def _evict(self) -> None:
        """Drop least recently used indexes past ``max_cached_users`` or ``max_cache_bytes``
        (the most recent one stays, whatever its size: it is being searched).
        """
        with self._lock:
            total = sum(index.nbytes for index in self._cache.values())
            while len(self._cache) > 1 and (
                len(self._cache) > self.max_cached_users or total > self.max_cache_bytes
            ):
                _, dropped = self._cache.popitem(last=False)
                total -= dropped.nbytes

    def cached_bytes(self) -> int:
        """Estimated memory held by this process's cached indexes."""
        with self._lock:
            return sum(index.nbytes for index in self._cache.values())

    def _build(
        self,
        gen: int,
        next_id: int,
        dim: int,
        items: Mapping[bytes, bytes],
        vecs: Mapping[bytes, bytes],
        where: str,
    ) -> _UserIndex:
        index = _UserIndex(dim=dim, gen=gen, next_id=next_id, config=self.retrieval)
        # Items added after the version was read belong to the next delta, not this build.
        current = {k: v for k, v in items.items() if _item_id(k, where) < next_id}
        _extend(index, current, vecs, where=where)
        return index

    def _after_fetch(
        self, user_id: str, version: Sequence[Any], cached: _UserIndex | None, fetched: Any
    ) -> _UserIndex | None:
        gen, next_id, dim = self._version(user_id, version)
        where = self.where(user_id)
        if cached is not None:  # delta: fetched = (items list, vecs list) for the new ids
            # the ids fetched end at next_id (another thread may have moved cached.next_id)
            ids = range(next_id - len(fetched[0]), next_id)
            items = {str(i).encode(): v for i, v in zip(ids, fetched[0]) if v is not None}
            vecs = {str(i).encode(): v for i, v in zip(ids, fetched[1]) if v is not None}
            # Extended in place under the index's lock (a concurrent search sees the batch
            # whole or not at all); only ids past those already loaded are appended, so
            # overlapping deltas fetched by racing threads never add an item twice.
            _extend(cached, items, vecs, next_id=next_id, where=where)
            self._evict()
            return cached
        if not dim:
            with self._lock:
                self._cache.pop(user_id, None)
            return None
        index = self._build(gen, next_id, dim, fetched[0], fetched[1], where)
        self._store_cache(user_id, index)
        return index

    def _fetch_commands(
        self, user_id: str, version: Sequence[Any], cached: _UserIndex | None
    ) -> list[tuple[Any, ...]]:
        items, vecs, _ = self._k(user_id)
        if cached is not None:
            ids = [str(i) for i in range(cached.next_id, _int(version[1]))]
            return [("HMGET", items, *ids), ("HMGET", vecs, *ids)]
        return [("HGETALL", items), ("HGETALL", vecs)]

    def index_for(self, user_id: str, version: Sequence[Any] | None = None) -> _UserIndex | None:
        """The user's current search index (fetching what changed), or ``None`` if empty."""
        conn = self.connection
        with conn.errors():
            if version is None:
                version = conn.sync.execute_command(*self.version_command(user_id))
            cached, todo = self._cached(user_id, version)
            if not todo:
                return cached
            pipe = conn.sync.pipeline(transaction=False)
            for cmd in self._fetch_commands(user_id, version, cached):
                pipe.execute_command(*cmd)
            fetched = pipe.execute()
        return self._after_fetch(user_id, version, cached, fetched)

    async def aindex_for(
        self, user_id: str, version: Sequence[Any] | None = None
    ) -> _UserIndex | None:
        """Async :meth:`index_for`."""
        conn = self.connection
        with conn.errors():
            if version is None:
                version = await conn.aio.execute_command(*self.version_command(user_id))
            cached, todo = self._cached(user_id, version)
            if not todo:
                return cached
            pipe = conn.aio.pipeline(transaction=False)
            for cmd in self._fetch_commands(user_id, version, cached):
                pipe.execute_command(*cmd)
            fetched = await pipe.execute()
        return self._after_fetch(user_id, version, cached, fetched)

    # ----- writes -----

    def _add_args(
        self,
        records: list[_Record],
        vecs: np.ndarray,
        keep: list[int],
        watermark: tuple[int, int] | None,
        superseding: list[tuple[str, str]],
    ) -> list[Any]:
        args: list[Any] = [
            "" if watermark is None else str(watermark[0]),
            "" if watermark is None else str(watermark[1]),
            str(vecs.shape[1]) if vecs.ndim == 2 and vecs.shape[1] else "0",
            _new_gen(),
            "" if self.max_items is None else str(self.max_items),
            len(superseding),
        ]
        for stored_id, new_json in superseding:
            args += [stored_id, new_json]
        for i in keep:
            args += [records[i].to_json(), vecs[i].astype(np.float32).tobytes()]
        return args

    def _add_result(self, result: Sequence[Any], n: int) -> list[str]:
        first, info = int(result[0]), result[1]
        if first == -1:
            raise WatermarkConflict(
                f"summarization watermark moved to {_int(info)} meanwhile; nothing was stored."
            )
        if first == -2:
            raise InvalidSummaryError(
                f"stored items have {_int(info)}-dimensional embeddings; these have a different "
                "size. Use the same embeddings model, or forget the user's summaries first."
            )
        if first == -3:
            raise _limit_error(_int(info), n, self.max_items)
        return [str(first + i) for i in range(n)]

    def add(
        self,
        user_id: str,
        items: Sequence[str],
        *,
        created_at: datetime | date | str | None = None,
        metadata: Mapping[str, Any] | None = None,
        watermark: tuple[int, int] | None = None,
        supersedes: Mapping[int, Sequence[str]] | None = None,
    ) -> list[str]:
        """Embed, de-duplicate and store items (and mark what they supersede) in one
        atomic script.
        """
        keys = self._k(user_id)
        texts = validate_items(items)
        vectors = self._embedder().embed_documents(texts) if texts else []
        records, vecs = self._prepare(texts, vectors, created_at, metadata)
        existing = self.index_for(user_id) if texts else None
        keep = _dedup(vecs, existing, self.dedup_threshold) if texts else []
        if not keep and watermark is None:
            return []
        superseding = _superseding_json(_superseded(existing, records, keep, supersedes))
        with self.connection.errors():
            result = self.connection.eval(
                _ADD_LUA, 3, *keys, *self._add_args(records, vecs, keep, watermark, superseding)
            )
        return self._add_result(result, len(keep))

    async def aadd(
        self,
        user_id: str,
        items: Sequence[str],
        *,
        created_at: datetime | date | str | None = None,
        metadata: Mapping[str, Any] | None = None,
        watermark: tuple[int, int] | None = None,
        supersedes: Mapping[int, Sequence[str]] | None = None,
    ) -> list[str]:
        """Async :meth:`add`."""
        keys = self._k(user_id)
        texts = validate_items(items)
        vectors = await self._embedder().aembed_documents(texts) if texts else []
        records, vecs = self._prepare(texts, vectors, created_at, metadata)
        existing = await self.aindex_for(user_id) if texts else None
        keep = _dedup(vecs, existing, self.dedup_threshold) if texts else []
        if not keep and watermark is None:
            return []
        superseding = _superseding_json(_superseded(existing, records, keep, supersedes))
        with self.connection.errors():
            result = await self.connection.aeval(
                _ADD_LUA, 3, *keys, *self._add_args(records, vecs, keep, watermark, superseding)
            )
        return self._add_result(result, len(keep))

    # ----- reads -----

    def search(
        self,
        user_id: str,
        query: str,
        k: int = 3,
        *,
        vector: np.ndarray | None = None,
        include_superseded: bool = False,
    ) -> list[Document]:
        """Top-``k`` items by hybrid relevance (see :mod:`langchain_tiered_memory.retrieval`)."""
        index = self.index_for(user_id)
        if index is None or k <= 0:
            return []
        if vector is None:
            vector = self.embed_query(query)
        return index.search(vector, k, query=query, include_superseded=include_superseded)

    async def asearch(
        self,
        user_id: str,
        query: str,
        k: int = 3,
        *,
        vector: np.ndarray | None = None,
        include_superseded: bool = False,
    ) -> list[Document]:
        """Async :meth:`search`."""
        index = await self.aindex_for(user_id)
        if index is None or k <= 0:
            return []
        if vector is None:
            vector = await self.aembed_query(query)
        return index.search(vector, k, query=query, include_superseded=include_superseded)

    def get_watermark(self, user_id: str) -> int:
        """Summarization watermark."""
        with self.connection.errors():
            raw = self.connection.sync.hget(self._k(user_id)[2], "watermark")
        return _int(raw, self.where(user_id))

    async def aget_watermark(self, user_id: str) -> int:
        """Async :meth:`get_watermark`."""
        with self.connection.errors():
            raw = await self.connection.aio.hget(self._k(user_id)[2], "watermark")
        return _int(raw, self.where(user_id))

    def get_all(self, user_id: str) -> list[Document]:
        """Every item, oldest first."""
        with self.connection.errors():
            raw = self.connection.sync.hgetall(self._k(user_id)[0])
        return _listing(raw, self.where(user_id))

    async def aget_all(self, user_id: str) -> list[Document]:
        """Async :meth:`get_all`."""
        with self.connection.errors():
            raw = await self.connection.aio.hgetall(self._k(user_id)[0])
        return _listing(raw, self.where(user_id))

    def get_all_count(self, user_id: str) -> int:
        """How many items the user has (``HLEN``)."""
        with self.connection.errors():
            return int(self.connection.sync.hlen(self._k(user_id)[0]))

    async def aget_all_count(self, user_id: str) -> int:
        """Async :meth:`get_all_count`."""
        with self.connection.errors():
            return int(await self.connection.aio.hlen(self._k(user_id)[0]))

    def delete(self, user_id: str, ids: Sequence[str]) -> int:
        """Delete items by id."""
        if not ids:
            return 0
        with self.connection.errors():
            return int(self.connection.eval(_DELETE_LUA, 3, *self._k(user_id), *ids))

    async def adelete(self, user_id: str, ids: Sequence[str]) -> int:
        """Async :meth:`delete`."""
        if not ids:
            return 0
        with self.connection.errors():
            return int(await self.connection.aeval(_DELETE_LUA, 3, *self._k(user_id), *ids))

    def clear(self, user_id: str) -> int:
        """Delete every item and the watermark; drop the cached index."""
        keys = self._k(user_id)
        with self.connection.errors():
            n = int(self.connection.eval(_CLEAR_LUA, 3, *keys, _new_gen()))
        with self._lock:
            self._cache.pop(user_id, None)
        return n

    async def aclear(self, user_id: str) -> int:
        """Async :meth:`clear`."""
        keys = self._k(user_id)
        with self.connection.errors():
            n = int(await self.connection.aeval(_CLEAR_LUA, 3, *keys, _new_gen()))
        with self._lock:
            self._cache.pop(user_id, None)
        return n

    def cached_users(self) -> int:
        """How many users' indexes this process holds (bounded by ``max_cached_users``)."""
        with self._lock:
            return len(self._cache)


def _as_document(record: _Record) -> Document:
    meta = {**record.metadata, "id": record.id, "created_at": record.created_at}
    return Document(page_content=record.text, id=record.id, metadata=meta)


def _item_id(key: bytes | str, where: str) -> int:
    try:
        return int(key)
    except ValueError as exc:
        raise CorruptMemoryError(f"{where} holds a field {key!r} that is not an item id.") from exc


def _listing(raw: Mapping[Any, Any], where: str = "summary items") -> list[Document]:
    records = [_Record.from_json(str(_item_id(k, where)), v, where) for k, v in raw.items()]
    return [_as_document(r) for r in sorted(records, key=lambda r: int(r.id))]


def _extend(
    index: _UserIndex,
    items: Mapping[bytes, bytes],
    vecs: Mapping[bytes, bytes],
    *,
    next_id: int | None = None,
    where: str = "summary items",
) -> None:
    """Append fetched items (id -> JSON, id -> float32 bytes) not yet in ``index``.

    Raises:
        CorruptMemoryError: an item or vector is not what this package writes (wrong
            size, NaN, not JSON); nothing is added.

    """
    with index.lock:
        start = index._loaded_upto
        pairs = sorted(
            (
                (i, v, vecs[k])
                for k, v in items.items()
                if k in vecs and (i := _item_id(k, where)) > start
            ),
            key=lambda t: t[0],
        )
        if pairs:
            records = [_Record.from_json(str(i), raw, where) for i, raw, _ in pairs]
            width = index.dim * 4
            bad = next((i for i, _, v in pairs if len(v) != width), None)
            if bad is not None:
                raise CorruptMemoryError(
                    f"{where}: the vector of item {bad} is not {index.dim} float32 values; "
                    "delete the item (memory.summaries.delete) to recover."
                )
            matrix = np.frombuffer(b"".join(v for _, _, v in pairs), dtype=np.float32)
            matrix = matrix.reshape(len(pairs), index.dim)
            finite = np.isfinite(matrix).all(axis=1)
            if not finite.all():
                bad = pairs[int(np.argmin(finite))][0]
                raise CorruptMemoryError(
                    f"{where}: the vector of item {bad} holds NaN or infinity; delete the "
                    "item (memory.summaries.delete) to recover."
                )
            index.add(records, matrix)
        if next_id is not None:
            index.next_id = max(index.next_id, next_id)


class InMemorySummaryStore(SummaryStore):
    """Process-local summary items with the same semantics as :class:`RedisSummaryStore`."""

    def __init__(
        self,
        *,
        embeddings: Embeddings,
        max_items: int | None = DEFAULT_MAX_ITEMS,
        dedup_threshold: float = DEDUP_THRESHOLD,
        retrieval: RetrievalConfig | None = None,
    ) -> None:
        self.embeddings = embeddings
        self.max_items = max_items
        self.dedup_threshold = dedup_threshold
        self.retrieval = retrieval
        self._indexes: dict[str, _UserIndex] = {}
        self._watermarks: dict[str, int] = {}
        self._lock = threading.Lock()

    def _write(
        self,
        user_id: str,
        records: list[_Record],
        vecs: np.ndarray,
        watermark: tuple[int, int] | None,
        supersedes: Mapping[int, Sequence[str]] | None = None,
    ) -> list[str]:
        with self._lock:
            if watermark is not None:
                current = self._watermarks.get(user_id, 0)
                if current != watermark[0]:
                    raise WatermarkConflict(
                        f"summarization watermark moved to {current}; nothing was stored."
                    )
            index = self._indexes.get(user_id)
            if index is not None and records and index.dim != vecs.shape[1]:
                raise InvalidSummaryError("embedding size differs from the stored items'.")
            keep = _dedup(vecs, index, self.dedup_threshold) if records else []
            have = len(index.records) if index is not None else 0
            if keep and self.max_items is not None and have + len(keep) > self.max_items:
                raise _limit_error(have, len(keep), self.max_items)
            if keep:
                if index is None:
                    index = self._indexes[user_id] = _UserIndex(
                        dim=vecs.shape[1], config=self.retrieval
                    )
                updates = _superseded(index, records, keep, supersedes)
                kept = []
                for i in keep:
                    records[i].id = str(index.next_id)
                    index.next_id += 1
                    kept.append(records[i])
                index.add(kept, vecs[keep])
                positions = {r.id: pos for pos, r in enumerate(index.records)}
                for record, k in updates:
                    pos = positions[record.id]
                    index.records[pos].metadata = {**record.metadata, "superseded_by": kept[k].id}
                    index.superseded[pos] = True
            if watermark is not None:
                self._watermarks[user_id] = watermark[1]
            return [records[i].id for i in keep]

    def add(
        self,
        user_id: str,
        items: Sequence[str],
        *,
        created_at: datetime | date | str | None = None,
        metadata: Mapping[str, Any] | None = None,
        watermark: tuple[int, int] | None = None,
        supersedes: Mapping[int, Sequence[str]] | None = None,
    ) -> list[str]:
        """Embed, de-duplicate and store items."""
        validate_user_id(user_id)
        texts = validate_items(items)
        vectors = self._embedder().embed_documents(texts) if texts else []
        records, vecs = self._prepare(texts, vectors, created_at, metadata)
        return self._write(user_id, records, vecs, watermark, supersedes)

    async def aadd(
        self,
        user_id: str,
        items: Sequence[str],
        *,
        created_at: datetime | date | str | None = None,
        metadata: Mapping[str, Any] | None = None,
        watermark: tuple[int, int] | None = None,
        supersedes: Mapping[int, Sequence[str]] | None = None,
    ) -> list[str]:
        """Async :meth:`add`."""
        validate_user_id(user_id)
        texts = validate_items(items)
        vectors = await self._embedder().aembed_documents(texts) if texts else []
        records, vecs = self._prepare(texts, vectors, created_at, metadata)
        return self._write(user_id, records, vecs, watermark, supersedes)

    def search(
        self,
        user_id: str,
        query: str,
        k: int = 3,
        *,
        vector: np.ndarray | None = None,
        include_superseded: bool = False,
    ) -> list[Document]:
        """Top-``k`` items by hybrid relevance (see :mod:`langchain_tiered_memory.retrieval`)."""
        index = self._indexes.get(user_id)
        if index is None or k <= 0:
            return []
        if vector is None:
            vector = self.embed_query(query)
        with self._lock:
            return index.search(vector, k, query=query, include_superseded=include_superseded)

    async def asearch(
        self,
        user_id: str,
        query: str,
        k: int = 3,
        *,
        vector: np.ndarray | None = None,
        include_superseded: bool = False,
    ) -> list[Document]:
        """Async :meth:`search`."""
        if user_id in self._indexes and vector is None:
            vector = await self.aembed_query(query)
        return self.search(user_id, query, k, vector=vector, include_superseded=include_superseded)

    def get_watermark(self, user_id: str) -> int:
        """Summarization watermark."""
        return self._watermarks.get(user_id, 0)

    async def aget_watermark(self, user_id: str) -> int:
        """Async :meth:`get_watermark`."""
        return self.get_watermark(user_id)

    def get_all(self, user_id: str) -> list[Document]:
        """Every item, oldest first."""
        with self._lock:
            index = self._indexes.get(user_id)
            return [_as_document(r) for r in index.records] if index else []

    async def aget_all(self, user_id: str) -> list[Document]:
        """Async :meth:`get_all`."""
        return self.get_all(user_id)

    def delete(self, user_id: str, ids: Sequence[str]) -> int:
        """Delete items by id (rebuilds the user's index)."""
        with self._lock:
            index = self._indexes.get(user_id)
            if index is None or not index.records:
                return 0
            wanted = set(ids)
            keep = [i for i, r in enumerate(index.records) if r.id not in wanted]
            removed = len(index.records) - len(keep)
            if removed:
                vectors = index.vectors()
                rebuilt = _UserIndex(dim=index.dim, next_id=index.next_id, config=self.retrieval)
                rebuilt.add([index.records[i] for i in keep], vectors[keep])
                self._indexes[user_id] = rebuilt
            return removed

    async def adelete(self, user_id: str, ids: Sequence[str]) -> int:
        """Async :meth:`delete`."""
        return self.delete(user_id, ids)

    def clear(self, user_id: str) -> int:
        """Delete every item and the watermark."""
        with self._lock:
            self._watermarks.pop(user_id, None)
            index = self._indexes.pop(user_id, None)
            return len(index.records) if index else 0

    async def aclear(self, user_id: str) -> int:
        """Async :meth:`clear`."""
        return self.clear(user_id)

    def users(self) -> list[str]:
        """Users with summary state."""
        with self._lock:
            return sorted(set(self._indexes) | set(self._watermarks))

"""The search side of summary items: records, the per-user index, de-duplication."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timezone
from typing import Any, Literal

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from langchain_tiered_memory.embeddings import embeddings_model_id
from langchain_tiered_memory.errors import (
    CorruptMemoryError,
    EmbeddingsMismatchError,
    InvalidSummaryError,
    SummaryLimitError,
)
from langchain_tiered_memory.language.text import restatement_key
from langchain_tiered_memory.retrieval import HybridIndex, RetrievalConfig, to_epoch

MAX_SUMMARY_CHARS = 2000
# Per user: a first recall of 121k items took 11 s and 1 GB; a person's memory of one user
# is far smaller. Raise it per store (max_items=) if a use case needs more.
DEFAULT_MAX_ITEMS = 10_000
# The per-process cache of users' search indexes, bounded by users and by bytes.
DEFAULT_MAX_CACHED_USERS = 256
DEFAULT_MAX_CACHE_BYTES = 256 * 1024 * 1024
_RECORD_OVERHEAD = 400
# Cosine similarity from which a new item saying the same words as a stored one (see dedup)
# counts as a restatement of it.
DEDUP_THRESHOLD = 0.95

__all__ = [
    "DEDUP_THRESHOLD",
    "DEFAULT_MAX_CACHED_USERS",
    "DEFAULT_MAX_CACHE_BYTES",
    "DEFAULT_MAX_ITEMS",
    "MAX_SUMMARY_CHARS",
    "kept_items",
    "limit_error",
    "normalize_created_at",
    "validate_items",
]


ERASED_MEANWHILE = (
    "the user's memory was erased (forget_user / forget_thread) since this summarization "
    "read it; nothing was stored."
)


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


def check_embeddings_model(stored: str, embeddings: Embeddings, where: str) -> None:
    """Raise :class:`EmbeddingsMismatchError` unless ``embeddings`` is the model that
    embedded the stored items (``stored``, as :func:`embeddings_model_id` named it).
    """
    current = embeddings_model_id(embeddings)
    if stored and stored != current:
        raise EmbeddingsMismatchError(
            f"{where} were embedded by {stored!r}, this store embeds with {current!r}: "
            "their vectors cannot be compared. Open the store with the model the items were "
            "stored with, or convert them: `tiered-memory reembed` (TieredMemory.reembed) "
            "re-embeds every user's items with the configured model."
        )


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
        if any((ord(c) < 32 and c not in "\t\n") or ord(c) == 127 for c in text):
            raise InvalidSummaryError(
                f"a summary item contains control characters (NUL, ESC, ...): {text[:60]!r}; "
                "remove them before storing."
            )
        out.append(text)
    return out


def json_metadata(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    meta = dict(metadata or {})
    try:
        json.dumps(meta, allow_nan=False)  # NaN and infinities are no JSON
    except (TypeError, ValueError) as exc:
        raise InvalidSummaryError(f"metadata must be JSON-serializable: {exc}") from exc
    return meta


VectorDtype = Literal["float16", "float32", "int8"]


def encode_vector(vector: np.ndarray, dtype: VectorDtype) -> bytes:
    """A unit vector as stored: float16/float32 values, or int8 values and their float32
    scale (the largest magnitude over 127) after them: a quarter of float32's bytes.

    Example:
        >>> len(encode_vector(np.ones(8, dtype=np.float32) / 8**0.5, "int8"))
        12
    """
    if dtype != "int8":
        return vector.astype(dtype).tobytes()
    top = float(np.abs(vector).max()) or 1.0
    scale = np.float32(top / 127.0)
    return np.round(vector / scale).astype(np.int8).tobytes() + scale.tobytes()


def decode_vectors(raw: Sequence[bytes], dim: int) -> np.ndarray | None:
    """Stored vectors back as float32 rows (any mix of the three forms), or ``None`` if
    one has a length none of them has (told apart by length; ``dim`` 4 has no int8).
    """
    rows = []
    for v in raw:
        if len(v) == 4 * dim:
            rows.append(np.frombuffer(v, dtype=np.float32))
        elif len(v) == 2 * dim:
            rows.append(np.frombuffer(v, dtype=np.float16).astype(np.float32))
        elif len(v) == dim + 4:
            scale = np.frombuffer(v[dim:], dtype=np.float32)[0]
            rows.append(np.frombuffer(v[:dim], dtype=np.int8).astype(np.float32) * scale)
        else:
            return None
    return np.vstack(rows) if rows else np.zeros((0, dim), dtype=np.float32)


def unit_rows(vectors: Sequence[Sequence[float]]) -> np.ndarray:
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


# earlier texts an item keeps after edits (the console shows them on the item)
MAX_EDITS = 20


def edited_record(old: Record, text: str) -> Record:
    """``old`` with ``text``: the same id, date and metadata (provenance, supersession),
    and the earlier text added to ``metadata["edits"]`` (the newest ``MAX_EDITS``).
    """
    edits = [e for e in old.metadata.get("edits") or [] if isinstance(e, dict)]
    edits.append({"text": old.text, "replaced_at": normalize_created_at(None)})
    return Record(old.id, text, old.created_at, {**old.metadata, "edits": edits[-MAX_EDITS:]})


@dataclass
class Record:
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
    def from_json(cls, id_: str, raw: bytes | str, where: str = "summary items") -> Record:
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


class UserIndex:
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
        dense_scripts: frozenset[str] | None = None,
        model: str = "",
    ) -> None:
        self.dim = dim
        self.model = model  # the embeddings model of the vectors ("": not recorded)
        self.gen = gen
        self.next_id = next_id
        self.records: list[Record] = []
        self.hybrid = HybridIndex(dim, config, dense_scripts=dense_scripts)
        self.lock = threading.RLock()
        self._loaded_upto = -1  # highest numeric id appended (Redis ids only grow)
        self.nbytes = 0  # estimated memory held (see add)
        # positions of items a newer item superseded: out of default recall
        self.superseded = np.zeros(0, dtype=bool)

    def add(self, records: list[Record], vectors: np.ndarray) -> None:
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

    def configure(self, config: RetrievalConfig | None) -> UserIndex:
        """Rank with ``config`` from now on (the store's ``retrieval`` at each read: a
        store whose ``retrieval`` an app changed ranks with it, cached index or not): a
        knob read at search time is swapped; a change of the index's structure (BM25's k1
        and b, the exact limit) rebuilds it. Returns the index.
        """
        with self.lock:
            self._configure(config or RetrievalConfig())
        return self

    def _configure(self, config: RetrievalConfig) -> None:
        old = self.hybrid.config
        if config == old:
            return
        same = (old.bm25_k1, old.bm25_b, old.exact_limit)
        if same == (config.bm25_k1, config.bm25_b, config.exact_limit):
            self.hybrid.config = config
            return
        rebuilt = HybridIndex(self.dim, config, dense_scripts=self.hybrid.dense_scripts)
        rebuilt.add(
            [r.text for r in self.records],
            self.hybrid.vectors(),
            [to_epoch(r.created_at) for r in self.records],
        )
        self.hybrid = rebuilt

    def superseded_texts(self) -> list[str]:
        """The texts of the items a newer item superseded (what no longer holds)."""
        with self.lock:
            return [r.text for r, old in zip(self.records, self.superseded) if old]

    def vectors(self) -> np.ndarray:
        """Every stored vector, in record order (a copy)."""
        with self.lock:
            return self.hybrid.vectors()

    def nearest(self, vectors: np.ndarray, k: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` most similar stored items of each row: (cosines, positions)."""
        with self.lock:
            return self.hybrid.nearest(vectors, k)

    def search(
        self,
        vector: np.ndarray,
        k: int,
        *,
        query: str | None = None,
        now: datetime | None = None,
        include_superseded: bool = False,
        dates_from: str | None = None,
    ) -> list[Document]:
        """The ``k`` best items for ``query`` and its embedding ``vector``, best first.

        ``metadata["score"]`` is the hybrid relevance in [-1, 1] (see
        :mod:`langchain_tiered_memory.retrieval`), ``metadata["similarity"]`` the plain
        cosine of query and item, ``metadata["score_parts"]`` the score's ``dense``, ``lexical``
        and ``time`` parts. Without ``query`` only the embedding ranks. Items a newer
        item superseded are left out unless ``include_superseded``; among near-duplicates
        that are recalled together, the newer comes first. Dates are read from
        ``dates_from`` if given, else from ``query``.
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
            hits = self.hybrid.search(
                query or "", vector, k, now=now, exclude=hidden, dates_from=dates_from
            )
            hits = self.hybrid.newer_first(hits, query or "")
            records = [self.records[h.position] for h in hits]
        out = []
        for hit, record in zip(hits, records):
            doc = as_document(record)
            doc.metadata["score"] = hit.score
            doc.metadata["similarity"] = hit.similarity
            # the score's parts, for a person asking why an item came up (the console)
            doc.metadata["score_parts"] = {
                "dense": hit.dense,
                "lexical": hit.lexical,
                "time": hit.time,
            }
            out.append(doc)
        return out

    def search_words(
        self, query: str, k: int, *, include_superseded: bool = False
    ) -> list[Document]:
        """The ``k`` items sharing most of ``query``'s words (BM25), best first, none that
        shares no word (:meth:`SummaryStore.search_words`): no embedding.
        ``metadata["score"]`` is the BM25 score relative to a match of the whole query, the
        hybrid's lexical part.
        """
        with self.lock:
            hidden = None if include_superseded else self.superseded
            hits = self.hybrid.search_words(query, k, exclude=hidden)
            found = [(self.records[i], score) for i, score in hits]
        out = []
        for record, score in found:
            doc = as_document(record)
            doc.metadata["score"] = score
            doc.metadata["score_parts"] = {"dense": 0.0, "lexical": score, "time": 0.0}
            out.append(doc)
        return out


def kept_items(
    texts: Sequence[str],
    vectors: np.ndarray,
    neighbours: Sequence[Sequence[tuple[str, float]]] | None = None,
    *,
    threshold: float = DEDUP_THRESHOLD,
) -> list[int]:
    """Positions of the new items a :meth:`SummaryStore.add` stores: those that restate
    neither a stored item nor an earlier new one. What every store does, so an app's
    own store calls it rather than writing the rule again.

    A restatement is as similar as ``threshold`` (cosine) *and* says the same words
    (:func:`~langchain_tiered_memory.language.text.restatement_key`): the cosine alone merges facts
    that differ in one word, the more so for models whose cosines are all high (the
    multilingual-e5 vectors of "用户的妈妈住在杭州" and "用户的爸爸住在杭州": 0.99).

    Args:
        texts: the new items.
        vectors: their embeddings, one unit row each.
        neighbours: for each new item, ``(text, cosine)`` of the stored items nearest it
            (a few are enough; none for an empty store).
        threshold: the cosine from which the same words count as a restatement.

    Example:
        >>> import numpy as np
        >>> rows = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]])
        >>> said = ["Mom lives in Hangzhou.", "Dad lives in Hangzhou.", "Mom lives in Hangzhou"]
        >>> kept_items(said, rows)  # the same vector; only the third says the same words
        [0, 1]
        >>> kept_items(["Dad lives in Hangzhou."], rows[:1], [[("Dad lives in Hangzhou!", 0.99)]])
        []
    """
    keys = [restatement_key(t) for t in texts]
    stored = [
        {restatement_key(text) for text, score in near if score >= threshold}
        for near in (neighbours or [()] * len(texts))
    ]
    # Rows restating an earlier kept row: similarities a block of rows at a time, then a
    # greedy pass in order (the same result as comparing each row with every kept one).
    keep: list[int] = []
    kept = np.zeros(len(vectors), dtype=bool)
    block = 256
    for start in range(0, len(vectors), block):
        stop = min(start + block, len(vectors))
        close = (vectors[start:stop] @ vectors[:stop].T) >= threshold
        for i in range(start, stop):
            if keys[i] in stored[i]:
                continue
            earlier = np.flatnonzero(close[i - start, :i] & kept[:i])
            if any(keys[int(j)] == keys[i] for j in earlier):
                continue
            keep.append(i)
            kept[i] = True
    return keep


# How many stored neighbours of a new item are checked for a restatement.
_DEDUP_NEIGHBOURS = 4


def dedup(
    new: np.ndarray, texts: Sequence[str], existing: UserIndex | None, threshold: float
) -> list[int]:
    """:func:`kept_items` against a user's index (its nearest few items to each row)."""
    if existing is not None and len(new) and existing.dim != new.shape[1]:
        raise EmbeddingsMismatchError(
            f"stored items have {existing.dim}-dimensional embeddings, these {new.shape[1]}: "
            "use the same embeddings model, or forget the user's summaries first."
        )
    neighbours: list[list[tuple[str, float]]] | None = None
    if existing is not None and len(existing.records):
        scores, positions = existing.nearest(new, min(_DEDUP_NEIGHBOURS, len(existing.records)))
        neighbours = [
            [(existing.records[int(p)].text, float(s)) for s, p in zip(row, at) if p >= 0]
            for row, at in zip(scores, positions)
        ]
    return kept_items(texts, new, neighbours, threshold=threshold)


def as_document(record: Record) -> Document:
    meta = {**record.metadata, "id": record.id, "created_at": record.created_at}
    return Document(page_content=record.text, id=record.id, metadata=meta)


def extend_index(
    index: UserIndex,
    items: Mapping[bytes, bytes],
    vecs: Mapping[bytes, bytes],
    *,
    next_id: int | None = None,
    where: str = "summary items",
) -> None:
    """Append fetched items (id -> JSON, id -> vector bytes, see :func:`encode_vector`) not
    yet in ``index``.

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
                if k in vecs and (i := parse_item_id(k, where)) > start
            ),
            key=lambda t: t[0],
        )
        if pairs:
            records = [Record.from_json(str(i), raw, where) for i, raw, _ in pairs]
            widths = {index.dim * 2, index.dim * 4, index.dim + 4}
            bad = next((i for i, _, v in pairs if len(v) not in widths), None)
            matrix = decode_vectors([v for _, _, v in pairs], index.dim)
            if bad is not None or matrix is None:
                raise CorruptMemoryError(
                    f"{where}: the vector of item {bad} is not {index.dim} float16, float32 "
                    "or int8 values; delete the item (memory.summaries.delete) to recover."
                )
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


def superseded(
    existing: UserIndex | None,
    records: list[Record],
    keep: list[int],
    supersedes: Mapping[int, Sequence[str]] | None,
) -> list[tuple[Record, int]]:
    """``(stored record with its new metadata, k)`` for each stored item that the ``k``-th
    kept new item supersedes; ``superseded_by`` is set once the new ids are known.
    """
    if not supersedes or existing is None:
        return []
    with existing.lock:
        stored = {r.id: r for r in existing.records}
    out: list[tuple[Record, int]] = []
    for k, i in enumerate(keep):
        for stored_id in supersedes.get(i, ()):
            old = stored.get(str(stored_id))
            if old is None or old.metadata.get("superseded_by"):
                continue
            meta = {**old.metadata, "valid_until": records[i].created_at}
            out.append((Record(old.id, old.text, old.created_at, meta), k))
    return out


def superseding_json(updates: list[tuple[Record, int]]) -> list[tuple[str, str]]:
    """The add script's form: the new item's id is not known before the write, so the JSON
    names it ``@@NEW<k>@@``, which the script replaces.
    """
    out = []
    for record, k in updates:
        meta = {**record.metadata, "superseded_by": f"@@NEW{k}@@"}
        out.append((record.id, Record(record.id, record.text, record.created_at, meta).to_json()))
    return out


def limit_error(have: int, adding: int, limit: int | None) -> SummaryLimitError:
    """The error an ``add`` raises when ``adding`` items would take the user's ``have``
    past ``limit`` (a store's ``max_items``): nothing is stored.
    """
    return SummaryLimitError(
        f"the user has {have} summary items and {adding} more would pass the limit of "
        f"{limit} (max_items); nothing was stored. Delete old items "
        "(memory.summaries.delete) or raise max_items."
    )


def parse_item_id(key: bytes | str, where: str) -> int:
    try:
        return int(key)
    except ValueError as exc:
        raise CorruptMemoryError(f"{where} holds a field {key!r} that is not an item id.") from exc


def stored_int(raw: bytes | str | None, where: str = "a summary meta hash") -> int:
    """A counter read from Redis (absent: 0); anything else is corrupt data, said so."""
    try:
        return int(raw) if raw is not None else 0
    except ValueError as exc:
        raise CorruptMemoryError(f"{where} holds {raw!r} where a number belongs.") from exc


def superseded_of(index: UserIndex | None) -> list[str]:
    """:meth:`UserIndex.superseded_texts`, none without an index."""
    return index.superseded_texts() if index is not None else []

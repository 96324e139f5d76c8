"""A third store family, on SQLite, written against the store contract as a third party
would: the three bases' docstrings, the helpers the package exports and the conformance
suite (issue 69 item 7). It is the proof that the contract is complete, not a supported
backend: one ``sqlite3`` connection per store, every method under one lock, each write in
one transaction; sync methods only (the bases' async twins run them in worker threads).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import date, datetime, timezone
from typing import Any

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.messages import BaseMessage
from pydantic import BaseModel

from langchain_tiered_memory.errors import InvalidSummaryError, WatermarkConflict
from langchain_tiered_memory.stores import DefaultTags, HistoryStore, SummaryStore, TagStore
from langchain_tiered_memory.stores.history import (
    TOMBSTONE,
    Appended,
    OnInvalid,
    message_ids,
    owned_elsewhere,
    parse_tail,
    positioned,
    revisions,
    thread_append,
    thread_edits,
)
from langchain_tiered_memory.stores.summaries import (
    kept_items,
    limit_error,
    metadata_without_thread,
    normalize_created_at,
    validate_items,
)
from langchain_tiered_memory.stores.tags import TagChange

__all__ = ["SQLiteHistoryStore", "SQLiteSummaryStore", "SQLiteTagStore"]


class _Db:
    """One connection, one lock; ``write()`` is one transaction."""

    def __init__(self, path: str, schema: str) -> None:
        self.conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self.conn.executescript(schema)
        self.lock = threading.RLock()

    def rows(self, sql: str, *args: Any) -> list[Any]:
        with self.lock:
            return self.conn.execute(sql, args).fetchall()

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        with self.lock:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


# ----------------------------------------------------------------------------- tags


class SQLiteTagStore(TagStore):
    """Tags in two tables: the values, and the log of changes."""

    def __init__(self, path: str = ":memory:", *, schema: type[BaseModel] = DefaultTags) -> None:
        self.schema = schema
        self.db = _Db(
            path,
            "CREATE TABLE IF NOT EXISTS tags (user TEXT, name TEXT, value TEXT,"
            " PRIMARY KEY (user, name));"
            "CREATE TABLE IF NOT EXISTS tag_log (seq INTEGER PRIMARY KEY AUTOINCREMENT,"
            " user TEXT, change TEXT);",
        )

    def get(self, user_id: str, tag: str) -> str | None:
        found = self.db.rows("SELECT value FROM tags WHERE user=? AND name=?", user_id, tag)
        return found[0][0] if found else None

    def get_all(self, user_id: str) -> dict[str, str]:
        return dict(self.db.rows("SELECT name, value FROM tags WHERE user=?", user_id))

    def _log(self, conn: sqlite3.Connection, user_id: str, change: TagChange) -> None:
        conn.execute(
            "INSERT INTO tag_log (user, change) VALUES (?, ?)", (user_id, json.dumps(change))
        )

    def set(
        self, user_id: str, mapping: Mapping[str, Any], *, thread_id: str | None = None
    ) -> dict[str, str]:
        values = self.validate(mapping)
        with self.db.write() as conn:
            for name, value in values.items():
                row = conn.execute(
                    "SELECT value FROM tags WHERE user=? AND name=?", (user_id, name)
                ).fetchone()
                if row is not None and row[0] == value:
                    continue
                conn.execute("INSERT OR REPLACE INTO tags VALUES (?, ?, ?)", (user_id, name, value))
                previous = row[0] if row else None
                self._log(
                    conn,
                    user_id,
                    TagChange(
                        tag=name,
                        value=value,
                        previous=previous,
                        changed_at=_now(),
                        thread_id=thread_id,
                    ),
                )
        return values

    def history(self, user_id: str, tag: str | None = None) -> list[TagChange]:
        rows = self.db.rows("SELECT change FROM tag_log WHERE user=? ORDER BY seq", user_id)
        changes: list[TagChange] = [json.loads(r[0]) for r in rows]
        return [c for c in changes if tag is None or c["tag"] == tag]

    def delete(self, user_id: str, names: Sequence[str], *, thread_id: str | None = None) -> int:
        names = self._names(names)
        gone = 0
        with self.db.write() as conn:
            for name in names:
                row = conn.execute(
                    "SELECT value FROM tags WHERE user=? AND name=?", (user_id, name)
                ).fetchone()
                if row is None:
                    continue
                conn.execute("DELETE FROM tags WHERE user=? AND name=?", (user_id, name))
                self._log(
                    conn,
                    user_id,
                    TagChange(
                        tag=name, value="", previous=row[0], changed_at=_now(), thread_id=thread_id
                    ),
                )
                gone += 1
        return gone

    def drop_thread(self, user_id: str, thread_id: str) -> int:
        dropped = 0
        with self.db.write() as conn:
            rows = conn.execute("SELECT seq, change FROM tag_log WHERE user=?", (user_id,))
            for seq, raw in rows.fetchall():
                change = json.loads(raw)
                if change.get("thread_id") == thread_id:
                    change["thread_id"] = None
                    conn.execute(
                        "UPDATE tag_log SET change=? WHERE seq=?", (json.dumps(change), seq)
                    )
                    dropped += 1
        return dropped

    def clear(self, user_id: str) -> int:
        with self.db.write() as conn:
            n = conn.execute("DELETE FROM tags WHERE user=?", (user_id,)).rowcount
            conn.execute("DELETE FROM tag_log WHERE user=?", (user_id,))
        return int(n)

    def users(self) -> list[str]:
        rows = self.db.rows("SELECT user FROM tags UNION SELECT user FROM tag_log")
        return sorted(r[0] for r in rows)


# -------------------------------------------------------------------------- history


class SQLiteHistoryStore(HistoryStore):
    """Messages by absolute position; threads, owners, turn spans and per-thread marks."""

    def __init__(self, path: str = ":memory:") -> None:
        self.db = _Db(
            path,
            "CREATE TABLE IF NOT EXISTS msgs (user TEXT, pos INTEGER, entry TEXT,"
            " PRIMARY KEY (user, pos));"
            "CREATE TABLE IF NOT EXISTS lens (user TEXT PRIMARY KEY, length INTEGER, base INTEGER);"
            "CREATE TABLE IF NOT EXISTS threads (user TEXT, thread TEXT,"
            " PRIMARY KEY (user, thread));"
            "CREATE TABLE IF NOT EXISTS owners (thread TEXT PRIMARY KEY, user TEXT);"
            "CREATE TABLE IF NOT EXISTS spans (user TEXT, start INTEGER, end INTEGER, thread TEXT);"
            "CREATE TABLE IF NOT EXISTS marks (user TEXT, thread TEXT, mark TEXT, recent TEXT,"
            " PRIMARY KEY (user, thread));",
        )

    def _len(self, conn: sqlite3.Connection | None, user_id: str) -> tuple[int, int]:
        sql, args = "SELECT length, base FROM lens WHERE user=?", (user_id,)
        row = (
            conn.execute(sql, args).fetchone() if conn else (self.db.rows(sql, *args) or [None])[0]
        )
        return (int(row[0]), int(row[1])) if row else (0, 0)

    def append(
        self,
        user_id: str,
        messages: Sequence[BaseMessage],
        *,
        thread_id: str | None = None,
        thread_position: int | None = None,
        on_invalid: OnInvalid = "raise",
    ) -> int:
        return self.append_turn(
            user_id,
            messages,
            thread_id=thread_id,
            thread_position=thread_position,
            on_invalid=on_invalid,
        ).length

    def append_turn(
        self,
        user_id: str,
        messages: Sequence[BaseMessage],
        *,
        thread_id: str | None = None,
        thread_position: int | None = None,
        on_invalid: OnInvalid = "raise",
    ) -> Appended:
        payload = self._dump_all(messages, on_invalid)
        ids = message_ids(messages)
        with self.db.write() as conn:
            length, base = self._len(conn, user_id)
            mark, recent = None, []
            if thread_id:
                row = conn.execute(
                    "SELECT mark, recent FROM marks WHERE user=? AND thread=?", (user_id, thread_id)
                ).fetchone()
                if row:
                    mark = tuple(json.loads(row[0])) if row[0] else None
                    recent = json.loads(row[1])
            position = thread_position if thread_id is not None else None
            tracked = position is not None
            plan = thread_append(mark if tracked else None, recent, position or 0, ids)
            if plan.stored:
                for k, i in enumerate(plan.stored):
                    conn.execute(
                        "INSERT INTO msgs VALUES (?, ?, ?)",
                        (user_id, length + k, payload[i].decode()),
                    )
                conn.execute(
                    "INSERT OR REPLACE INTO lens VALUES (?, ?, ?)",
                    (user_id, length + len(plan.stored), base),
                )
                if thread_id:
                    conn.execute(
                        "INSERT OR IGNORE INTO threads VALUES (?, ?)", (user_id, thread_id)
                    )
                    conn.execute(
                        "INSERT INTO spans VALUES (?, ?, ?, ?)",
                        (user_id, length, length + len(plan.stored), thread_id),
                    )
                length += len(plan.stored)
            if thread_id and tracked and plan.mark is not None:  # an edit alone moves it too
                conn.execute(
                    "INSERT OR REPLACE INTO marks VALUES (?, ?, ?, ?)",
                    (user_id, thread_id, json.dumps(plan.mark), json.dumps(plan.recent)),
                )
        fork = plan.fork if tracked else None
        if thread_id is None or (fork is None and not plan.revised):
            return Appended(length)
        edits = thread_edits(position or 0, plan.revised, messages, payload)
        changes = revisions.apply_thread_changes(
            self, user_id, thread_id, fork, edits, known=dict(plan.known)
        )
        return Appended(length, changes.left, changes.replaced)

    def record_thread(self, user_id: str, thread_id: str, *, claim: bool = True) -> None:
        with self.db.write() as conn:
            if claim:
                conn.execute("INSERT OR IGNORE INTO owners VALUES (?, ?)", (thread_id, user_id))
                owner = conn.execute(
                    "SELECT user FROM owners WHERE thread=?", (thread_id,)
                ).fetchone()
                if owner[0] != user_id:
                    raise owned_elsewhere(thread_id)
            conn.execute("INSERT OR IGNORE INTO threads VALUES (?, ?)", (user_id, thread_id))

    def thread_record(self, user_id: str, thread_id: str) -> tuple[str | None, bool]:
        owner = self.db.rows("SELECT user FROM owners WHERE thread=?", thread_id)
        mine = self.db.rows("SELECT 1 FROM threads WHERE user=? AND thread=?", user_id, thread_id)
        return (owner[0][0] if owner else None), bool(mine)

    def thread_mark(self, user_id: str, thread_id: str) -> tuple[int, tuple[str, ...]] | None:
        rows = self.db.rows("SELECT mark FROM marks WHERE user=? AND thread=?", user_id, thread_id)
        if not rows or not rows[0][0] or rows[0][0] == "null":
            return None
        saved, entries = json.loads(rows[0][0])
        return int(saved), tuple(entries)

    def threads(self, user_id: str) -> list[str]:
        rows = self.db.rows(
            "SELECT t.thread FROM threads t LEFT JOIN owners o ON o.thread = t.thread"
            " WHERE t.user=? AND (o.user IS NULL OR o.user=?) ORDER BY t.thread",
            user_id,
            user_id,
        )
        return [r[0] for r in rows]

    def release_threads(self, user_id: str, thread_ids: Sequence[str]) -> None:
        with self.db.write() as conn:
            for thread in thread_ids:
                conn.execute("DELETE FROM owners WHERE thread=? AND user=?", (thread, user_id))

    def spans(self, user_id: str) -> list[tuple[int, int, str]]:
        rows = self.db.rows(
            "SELECT start, end, thread FROM spans WHERE user=? ORDER BY start", user_id
        )
        return [(int(a), int(b), str(t)) for a, b, t in rows]

    def forget_thread(self, user_id: str, thread_id: str) -> int:
        removed = 0
        with self.db.write() as conn:
            for start, end in conn.execute(
                "SELECT start, end FROM spans WHERE user=? AND thread=?", (user_id, thread_id)
            ).fetchall():
                removed += conn.execute(
                    "UPDATE msgs SET entry=? WHERE user=? AND pos>=? AND pos<? AND entry<>?",
                    (TOMBSTONE, user_id, start, end, TOMBSTONE),
                ).rowcount
            for table in ("spans", "threads", "marks"):
                conn.execute(f"DELETE FROM {table} WHERE user=? AND thread=?", (user_id, thread_id))  # noqa: S608
        return removed

    def read_at(self, user_id: str, positions: Sequence[int], reach: int = 1) -> list[Any]:
        out = []
        for p in positions:
            for j in range(reach):
                row = self.db.rows("SELECT entry FROM msgs WHERE user=? AND pos=?", user_id, p + j)
                out.append(row[0][0] if row else None)
        return out

    def swap_at(self, user_id: str, swaps: Sequence[tuple[int, Any, str]]) -> int:
        with self.db.write() as conn:
            return sum(
                conn.execute(
                    "UPDATE msgs SET entry=? WHERE user=? AND pos=? AND entry=?",
                    (new, user_id, p, old),
                ).rowcount
                for p, old, new in swaps
            )

    def tail(self, user_id: str, n: int) -> list[BaseMessage]:
        if n <= 0:
            return []
        rows = self.db.rows(
            "SELECT entry FROM msgs WHERE user=? ORDER BY pos DESC LIMIT ?", user_id, n
        )
        return parse_tail([r[0] for r in reversed(rows)])

    def window_positions(
        self, user_id: str, start: int, limit: int | None = None
    ) -> tuple[int, int, list[tuple[int, BaseMessage]]]:
        _, base = self._len(None, user_id)
        first = max(start, base)
        rows = self.db.rows(
            "SELECT entry FROM msgs WHERE user=? AND pos>=? ORDER BY pos LIMIT ?",
            user_id,
            first,
            -1 if limit is None else max(limit, 0),
        )
        raw = [r[0] for r in rows]
        return first, first + len(raw), positioned(first, raw)

    def length(self, user_id: str) -> int:
        return self._len(None, user_id)[0]

    def trim(self, user_id: str, *, keep_last: int, not_after: int) -> int:
        with self.db.write() as conn:
            length, base = self._len(conn, user_id)
            drop = min(length - base - max(keep_last, 0), max(not_after, 0) - base)
            if drop <= 0:
                return 0
            conn.execute("DELETE FROM msgs WHERE user=? AND pos<?", (user_id, base + drop))
            conn.execute("UPDATE lens SET base=? WHERE user=?", (base + drop, user_id))
        return drop

    def users(self) -> list[str]:
        return [r[0] for r in self.db.rows("SELECT DISTINCT user FROM msgs ORDER BY user")]

    def clear(self, user_id: str) -> int:
        return self._cleared(user_id, erase=False)

    def erase(self, user_id: str) -> int:
        return self._cleared(user_id, erase=True)

    def _cleared(self, user_id: str, *, erase: bool) -> int:
        with self.db.write() as conn:
            length, _ = self._len(conn, user_id)
            n = conn.execute(
                "DELETE FROM msgs WHERE user=? AND entry<>?", (user_id, TOMBSTONE)
            ).rowcount
            conn.execute("DELETE FROM msgs WHERE user=?", (user_id,))
            for table in ("spans", "threads", "marks"):
                conn.execute(f"DELETE FROM {table} WHERE user=?", (user_id,))  # noqa: S608
            if erase:  # the counter too: positions start again
                conn.execute("DELETE FROM lens WHERE user=?", (user_id,))
            else:
                conn.execute("UPDATE lens SET base=? WHERE user=?", (length, user_id))
        return int(n)


# ------------------------------------------------------------------------ summaries


class SQLiteSummaryStore(SummaryStore):
    """Items with their vectors (float32 blobs), searched by cosine over the user's items."""

    def __init__(self, path: str = ":memory:", *, embeddings: Embeddings) -> None:
        self.embeddings = embeddings
        self.db = _Db(
            path,
            "CREATE TABLE IF NOT EXISTS items (user TEXT, id INTEGER, text TEXT, created_at TEXT,"
            " meta TEXT, vector BLOB, PRIMARY KEY (user, id));"
            "CREATE TABLE IF NOT EXISTS sums (user TEXT PRIMARY KEY, watermark INTEGER,"
            " era TEXT, next_id INTEGER);",
        )

    def _items(self, conn: sqlite3.Connection | None, user_id: str) -> list[tuple[Any, ...]]:
        sql = "SELECT id, text, created_at, meta, vector FROM items WHERE user=? ORDER BY id"
        return conn.execute(sql, (user_id,)).fetchall() if conn else self.db.rows(sql, user_id)

    @staticmethod
    def _doc(row: tuple[Any, ...], score: float | None = None) -> Document:
        item_id, text, created_at, meta = str(row[0]), row[1], row[2], json.loads(row[3])
        meta = {**meta, "id": item_id, "created_at": created_at}
        if score is not None:
            meta["score"] = score
        return Document(page_content=text, id=item_id, metadata=meta)

    def _state(self, conn: sqlite3.Connection, user_id: str) -> tuple[int, str, int]:
        row = conn.execute(
            "SELECT watermark, era, next_id FROM sums WHERE user=?", (user_id,)
        ).fetchone()
        return (int(row[0]), str(row[1]), int(row[2])) if row else (0, "0", 1)

    def add(
        self,
        user_id: str,
        items: Sequence[str],
        *,
        created_at: datetime | date | str | None = None,
        metadata: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
        watermark: tuple[int, int] | None = None,
        supersedes: Mapping[int, Sequence[str]] | None = None,
        fence: str | None = None,
    ) -> list[str]:
        texts = validate_items(items)
        stamp = normalize_created_at(created_at)
        metas = (
            [dict(metadata or {})] * len(texts)
            if not isinstance(metadata, Sequence)
            else [dict(m) for m in metadata]
        )
        if len(metas) != len(texts):
            raise InvalidSummaryError("metadata needs one mapping for all items, or one per item.")
        vectors = np.asarray(
            self.embeddings.embed_documents(texts) if texts else [], dtype=np.float32
        )
        if len(texts):
            vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        with self.db.write() as conn:
            mark, era, next_id = self._state(conn, user_id)
            if watermark is not None and (
                mark != watermark[0] or (fence is not None and fence != era)
            ):
                raise WatermarkConflict("the watermark moved, or the memory was erased, meanwhile.")
            stored = self._items(conn, user_id)
            neighbours = None
            if stored and len(texts):
                olds = np.stack([np.frombuffer(r[4], dtype=np.float32) for r in stored])
                sims = vectors @ olds.T
                neighbours = [
                    [(stored[j][1], float(s[j])) for j in np.argsort(-s)[:4]] for s in sims
                ]
            keep = (
                kept_items(texts, vectors, neighbours, threshold=self.dedup_threshold)
                if len(texts)
                else []
            )
            if keep and self.max_items is not None and len(stored) + len(keep) > self.max_items:
                raise limit_error(len(stored), len(keep), self.max_items)
            ids = []
            for k, i in enumerate(keep):
                item_id = next_id + k
                conn.execute(
                    "INSERT INTO items VALUES (?, ?, ?, ?, ?, ?)",
                    (user_id, item_id, texts[i], stamp, json.dumps(metas[i]), vectors[i].tobytes()),
                )
                ids.append(str(item_id))
                for old in (supersedes or {}).get(i, ()):
                    row = conn.execute(
                        "SELECT meta FROM items WHERE user=? AND id=?", (user_id, int(old))
                    ).fetchone()
                    if row is None or json.loads(row[0]).get("superseded_by"):
                        continue
                    meta = {
                        **json.loads(row[0]),
                        "superseded_by": str(item_id),
                        "valid_until": stamp,
                    }
                    conn.execute(
                        "UPDATE items SET meta=? WHERE user=? AND id=?",
                        (json.dumps(meta), user_id, int(old)),
                    )
            new_mark = watermark[1] if watermark is not None else mark
            conn.execute(
                "INSERT OR REPLACE INTO sums VALUES (?, ?, ?, ?)",
                (user_id, new_mark, era, next_id + len(keep)),
            )
        return ids

    def search(
        self,
        user_id: str,
        query: str,
        k: int = 3,
        *,
        vector: np.ndarray | None = None,
        include_superseded: bool = False,
        dates_from: str | None = None,
    ) -> list[Document]:
        rows = [
            r
            for r in self._items(None, user_id)
            if (include_superseded or not json.loads(r[3]).get("superseded_by"))
            and (dates_from is None or r[2] >= dates_from)
        ]
        if not rows or k <= 0:
            return []
        q = np.asarray(
            vector if vector is not None else self.embeddings.embed_query(query), dtype=np.float32
        )
        q /= max(float(np.linalg.norm(q)), 1e-12)
        scores = np.stack([np.frombuffer(r[4], dtype=np.float32) for r in rows]) @ q
        return [self._doc(rows[i], float(scores[i])) for i in np.argsort(-scores)[:k]]

    def get_fence(self, user_id: str) -> tuple[int, str]:
        with self.db.write() as conn:
            mark, era, _ = self._state(conn, user_id)
        return mark, era

    def rotate_fence(self, user_id: str) -> None:
        with self.db.write() as conn:
            mark, era, next_id = self._state(conn, user_id)
            conn.execute(
                "INSERT OR REPLACE INTO sums VALUES (?, ?, ?, ?)",
                (user_id, mark, str(int(era) + 1), next_id),
            )

    def get_watermark(self, user_id: str) -> int:
        row = self.db.rows("SELECT watermark FROM sums WHERE user=?", user_id)
        return int(row[0][0]) if row else 0

    def get_all(self, user_id: str) -> list[Document]:
        return [self._doc(r) for r in self._items(None, user_id)]

    def delete(self, user_id: str, ids: Sequence[str]) -> int:
        with self.db.write() as conn:
            return sum(
                conn.execute("DELETE FROM items WHERE user=? AND id=?", (user_id, int(i))).rowcount
                for i in ids
                if str(i).isdigit()
            )

    def update(self, user_id: str, item_id: str, text: str) -> bool:
        (new,) = validate_items([text])
        vector = np.asarray(self.embeddings.embed_documents([new])[0], dtype=np.float32)
        vector /= max(float(np.linalg.norm(vector)), 1e-12)
        with self.db.write() as conn:
            row = conn.execute(
                "SELECT text, meta FROM items WHERE user=? AND id=?",
                (user_id, int(item_id) if str(item_id).isdigit() else -1),
            ).fetchone()
            if row is None:
                raise InvalidSummaryError(f"no item {item_id!r} for this user; it may be deleted.")
            if row[0] == new:
                return False
            meta = json.loads(row[1])
            meta["edits"] = [*meta.get("edits", []), row[0]]
            conn.execute(
                "UPDATE items SET text=?, meta=?, vector=? WHERE user=? AND id=?",
                (new, json.dumps(meta), vector.tobytes(), user_id, int(item_id)),
            )
        return True

    def drop_thread(self, user_id: str, thread_id: str) -> int:
        changed = 0
        with self.db.write() as conn:
            for item_id, _, _, raw, _ in self._items(conn, user_id):
                new = metadata_without_thread(json.loads(raw), thread_id)
                if new is not None:
                    conn.execute(
                        "UPDATE items SET meta=? WHERE user=? AND id=?",
                        (json.dumps(new), user_id, item_id),
                    )
                    changed += 1
        return changed

    def clear(self, user_id: str) -> int:
        with self.db.write() as conn:
            n = conn.execute("DELETE FROM items WHERE user=?", (user_id,)).rowcount
            mark, era, next_id = self._state(conn, user_id)
            # a new era: a summarizer that read before this clear must not write after it
            conn.execute(
                "INSERT OR REPLACE INTO sums VALUES (?, 0, ?, ?)",
                (user_id, str(int(era) + 1), next_id),
            )
        return int(n)

    def users(self) -> list[str]:
        return [
            r[0]
            for r in self.db.rows("SELECT DISTINCT user FROM items UNION SELECT user FROM sums")
        ]

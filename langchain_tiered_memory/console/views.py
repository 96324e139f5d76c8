"""What each console page shows, read from a :class:`TieredMemory` (no HTTP here).

Every function is synchronous and does blocking I/O: the app runs them in a thread pool.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any
from urllib.parse import urlsplit

from langchain_core.documents import Document
from langchain_core.messages import BaseMessage

from langchain_tiered_memory.agent.nodes import DEFAULT_MEMORY_TOKEN_BUDGET
from langchain_tiered_memory.agent.prompt import quote, render_memory_section
from langchain_tiered_memory.capabilities import listed_users
from langchain_tiered_memory.memory import TieredMemory
from langchain_tiered_memory.retrieval.conversation import DEFAULT_CONTEXT_TURNS, recent_user_texts
from langchain_tiered_memory.stores.directory import (
    PAGE_SIZE,
    RedisUserDirectory,
    UserPage,
    UserRow,
)
from langchain_tiered_memory.stores.history import RedisHistoryStore
from langchain_tiered_memory.stores.summaries import RedisSummaryStore
from langchain_tiered_memory.stores.summaries.index import as_document
from langchain_tiered_memory.stores.tags import TagChange

logger = logging.getLogger(__name__)

ITEMS_PER_PAGE = 100
THREADS_PER_PAGE = 50
HISTORY_SHOWN = 40
# what the item table shows in columns of its own: the rest of the metadata is listed
_ITEM_FIELDS = {
    "id",
    "created_at",
    "threads",
    "superseded_by",
    "valid_until",
    "supersedes",
    "source_threads",
    "source_positions",
    "source_basis",
    "source_start",
    "source_end",
    "edits",
}
# recall bookkeeping that is not the item's own metadata
_RECALL_FIELDS = {"score", "similarity", "score_parts", "ranks"}


_STORE_PAGE = 500


def store_users(memory: TieredMemory) -> list[str]:
    """The users whose memory is in a LangGraph store the memory knows (LangMem's
    ``("memories", user)`` layout, or the templates an app attached), and maybe nowhere
    else: export and erasure reach them, so the console lists them too.
    """
    found: set[str] = set()
    for store, templates in memory.tiers.stores:
        for template in templates:
            if "{user_id}" not in template:
                continue
            at, offset = template.index("{user_id}"), 0
            # every page: LangGraph's default limit of 100 hid the 101st user
            while page := store.list_namespaces(
                prefix=template[:at], max_depth=at + 1, limit=_STORE_PAGE, offset=offset
            ):
                found.update(namespace[at] for namespace in page if len(namespace) > at)
                offset += len(page)
    return sorted(found)


def list_users(memory: TieredMemory, cursor: str | None, contains: str | None) -> UserPage:
    """A page of the directory (Redis) or every user of the process-local stores; the
    first page adds the users found only in the memory's LangGraph stores.
    """
    history = memory.history
    if isinstance(history, RedisHistoryStore):
        directory = RedisUserDirectory(history.connection, keys=history.keys)
        page = directory.page(cursor, count=PAGE_SIZE, contains=contains)
        if cursor:
            return page
        listed = {row.user_id for row in page.users}
        extra = [
            UserRow(user_id=u, messages=0, tags=0, items=0, threads=0, last_active=None)
            for u in store_users(memory)
            if u not in listed
            and (not contains or contains.casefold() in u.casefold())
            and not memory.history.length(u)  # a user with history is in the directory
        ]
        return replace(page, users=[*page.users, *extra]) if extra else page
    # stores not on Redis: each lists its own users (an app's tag or summary store may
    # not: Capability.USER_DIRECTORY says whether every user is listed), listed whole
    users = listed_users((history, memory.tags, memory.summaries))
    if contains:  # the id or a tag value, as the Redis directory searches
        needle = contains.casefold()
        users = [
            u
            for u in users
            if any(needle in t.casefold() for t in (u, *memory.tags.get_all(u).values()))
        ]
    start = int(cursor or 0)
    rows = [
        UserRow(
            user_id=u,
            messages=history.length(u),
            tags=len(memory.tags.get_all(u)),
            items=memory.summaries.get_all_count(u),
            threads=len(history.threads(u)),
            last_active=None,
            name=memory.tags.get_all(u).get("name"),
        )
        for u in users[start : start + PAGE_SIZE]
    ]
    more = start + PAGE_SIZE < len(users)
    return UserPage(rows, str(start + PAGE_SIZE) if more else None, total=len(users))


@dataclass
class TagView:
    """One tag: its value (``None`` once deleted) and its logged changes."""

    name: str
    value: str | None
    changes: list[TagChange]


@dataclass
class ItemView:
    """One summary item as the user page shows it."""

    id: str
    text: str
    created_at: str
    threads: list[str]
    superseded_by: str | None
    supersedes: list[str]
    extra: dict[str, Any]
    edits: list[str] = field(default_factory=list)  # earlier texts, oldest first
    found: str = ""  # why a search shows it: "text", "meaning 0.82", or both


MEANING_RESULTS = 20
"""Items a search by meaning shows (the best, with the recall's own ranking)."""


@dataclass(frozen=True)
class ItemQuery:
    """A search of one user's items: ``text`` by text match (case-insensitive) and by
    meaning (the recall's hybrid ranking, superseded items included: a wrong item may be
    one), narrowed to a ``thread`` and to dates ``since``/``until`` (``YYYY-MM-DD``,
    inclusive). Empty fields do not narrow.

    Example:
        >>> bool(ItemQuery()), bool(ItemQuery(text="age"))
        (False, True)
    """

    text: str = ""
    thread: str = ""
    since: str = ""
    until: str = ""

    def __bool__(self) -> bool:
        return any((self.text, self.thread, self.since, self.until))

    def params(self) -> dict[str, str]:
        """The query as link parameters (the pager keeps it)."""
        names = ("find", "thread", "since", "until")
        values = (self.text, self.thread, self.since, self.until)
        return {name: value for name, value in zip(names, values) if value}

    def keeps(self, item: ItemView) -> bool:
        """Whether ``item`` is within the thread and the dates."""
        day = item.created_at[:10]
        return (
            (not self.thread or self.thread in item.threads)
            and (not self.since or day >= self.since)
            and (not self.until or day <= self.until)
        )


def _find(
    memory: TieredMemory, user_id: str, items: list[ItemView], query: ItemQuery
) -> list[ItemView]:
    """``items`` (newest first) that ``query`` finds: text matches first, newest first,
    then the rest of the best by meaning, best first.
    """
    kept = [item for item in items if query.keeps(item)]
    if not query.text:
        return kept
    needle = query.text.casefold()
    by_id = {item.id: item for item in kept}
    meaning = {
        str(doc.id): float(doc.metadata.get("score", 0.0))
        for doc in memory.summaries.search(
            user_id, query.text, MEANING_RESULTS, include_superseded=True
        )
        # a score at or below 0 is no closer than a typical pair of the user's items
        if str(doc.id) in by_id and float(doc.metadata.get("score", 0.0)) > 0
    }
    out = []
    for item in kept:
        if needle in item.text.casefold():
            why = "text" + (f", meaning {meaning[item.id]:.2f}" if item.id in meaning else "")
            out.append(replace(item, found=why))
    shown = {item.id for item in out}
    for item_id, score in meaning.items():
        if item_id not in shown:
            out.append(replace(by_id[item_id], found=f"meaning {score:.2f}"))
    return out


@dataclass
class UserView:
    """Everything the user page shows."""

    user_id: str
    tags: list[TagView]
    tag_names: list[str]
    items: list[ItemView]
    item_count: int
    item_offset: int
    messages: list[tuple[str, str]]
    message_count: int
    kept_count: int
    unsummarized: int
    threads: list[str]  # a page of them
    thread_count: int = 0
    thread_offset: int = 0
    query: ItemQuery = field(default_factory=lambda: ItemQuery())
    store: bool = False  # the user has items in a LangGraph store the memory knows
    found_count: int = 0  # items the query finds (all of them without a query)
    text_count: int = 0  # of them, those that hold the query's words (the rest: by meaning)


def _item_view(doc: Document, supersedes: dict[str, list[str]]) -> ItemView:
    meta = doc.metadata
    item_id = str(doc.id or meta.get("id"))
    # the summarizer's per-item provenance (items an app added itself may say "threads")
    threads = meta.get("source_threads") or meta.get("threads") or []
    return ItemView(
        id=item_id,
        text=doc.page_content,
        created_at=str(meta.get("created_at") or ""),
        threads=[str(t) for t in threads] if isinstance(threads, list) else [str(threads)],
        superseded_by=str(meta["superseded_by"]) if meta.get("superseded_by") else None,
        supersedes=supersedes.get(item_id, []),
        extra={k: v for k, v in meta.items() if k not in _ITEM_FIELDS | _RECALL_FIELDS},
        edits=[str(e.get("text")) for e in meta.get("edits") or [] if isinstance(e, dict)],
    )


def _role(message: BaseMessage) -> str:
    return {"human": "user", "ai": "assistant"}.get(message.type, message.type)


def _shown(message: BaseMessage) -> str:
    calls = getattr(message, "tool_calls", None) or []
    if calls and not message.text.strip():  # a tool call alone: say which
        return "(calls " + ", ".join(str(c.get("name")) for c in calls) + ")"
    return message.text


def _all_items(memory: TieredMemory, user_id: str) -> tuple[list[Any], Callable[[Any], Document]]:
    """Every item of the user, oldest first, and how one becomes a ``Document``. On Redis,
    the records of the store's cached search index (version-checked in one round trip):
    a 10k-item user's page then parses no JSON (reading them all again took 300 ms).
    """
    if isinstance(memory.summaries, RedisSummaryStore):
        index = memory.summaries.index_for(user_id)
        records = list(index.records) if index is not None else []
        return sorted(records, key=lambda r: int(r.id)), as_document
    return memory.summaries.get_all(user_id), lambda doc: doc


def user_view(
    memory: TieredMemory,
    user_id: str,
    item_offset: int = 0,
    thread_offset: int = 0,
    query: ItemQuery | None = None,
) -> UserView:
    """One user: tags with their changes, a page of items (newest first, or what
    ``query`` finds), recent history, a page of threads and how many messages wait for
    summarization.
    """
    query = query or ItemQuery()
    tags = memory.get_user_tags(user_id)
    changes = memory.tags.history(user_id)
    names = sorted(memory.tags.schema.model_fields)
    tag_views = [
        TagView(name, tags.get(name), [c for c in changes if c["tag"] == name])
        for name in sorted(set(names) | set(tags))
        if name in tags or any(c["tag"] == name for c in changes)
    ]
    docs, document = _all_items(memory, user_id)
    supersedes: dict[str, list[str]] = {}
    for doc in docs:
        newer = doc.metadata.get("superseded_by")
        if newer:
            supersedes.setdefault(str(newer), []).append(str(doc.id))
    docs.reverse()  # newest first
    if query:
        views = [_item_view(document(d), supersedes) for d in docs]
        items = _find(memory, user_id, views, query)
        found = len(items)
        by_text = sum(1 for item in items if item.found.startswith("text"))
        items = items[item_offset : item_offset + ITEMS_PER_PAGE]
    else:  # only the page's items are made into rows
        page = docs[item_offset : item_offset + ITEMS_PER_PAGE]
        items, found = [_item_view(document(d), supersedes) for d in page], len(docs)
        by_text = 0
    messages = memory.history.tail(user_id, HISTORY_SHOWN)
    length = memory.history.length(user_id)  # positions: every message ever written
    kept = len(memory.history.since(user_id, 0)[1])  # a forgotten thread's are not kept
    threads = memory.history.threads(user_id)
    return UserView(
        user_id=user_id,
        tags=tag_views,
        tag_names=names,
        items=items,
        item_count=len(docs),
        item_offset=item_offset,
        messages=[(_role(m), _shown(m)) for m in messages],
        message_count=length,
        kept_count=kept,
        unsummarized=max(length - memory.summaries.get_watermark(user_id), 0),
        threads=threads[thread_offset : thread_offset + THREADS_PER_PAGE],
        thread_count=len(threads),
        thread_offset=thread_offset,
        query=query,
        store=user_id in store_users(memory),
        found_count=found,
        text_count=by_text,
    )


def is_empty(view: UserView) -> bool:
    """Whether memory holds nothing of the user (an unknown or mistyped id)."""
    return not (
        view.tags or view.item_count or view.message_count or view.thread_count or view.store
    )


_REMOVED_NAMES = {
    "messages": ("message", "messages"),
    "summaries": ("summary item", "summary items"),
    "checkpoints": ("checkpoint", "checkpoints"),
    "threads": ("thread", "threads"),
    "history": ("message", "messages"),
    "tags": ("tag", "tags"),
    "store_items": ("store item", "store items"),
}


def removed_sentence(removed: dict[str, int]) -> str:
    """``{"messages": 4, "summaries": 1}`` as "4 messages and 1 summary item removed"."""
    parts = []
    for key, n in removed.items():
        one, many = _REMOVED_NAMES.get(key, (key, key))
        parts.append(f"{n} {one if n == 1 else many}")
    if not parts:
        return "nothing removed"
    listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"{listed} removed"


@dataclass
class RecallRow:
    """One recalled item and the parts of its ranking."""

    id: str
    text: str
    created_at: str
    score: float
    dense: float
    lexical: float
    time: float
    ranks: dict[str, int | None]


@dataclass
class Playground:
    """The playground's result: the turns, the memory section, the ranking."""

    turns: list[str]
    section: str
    rows: list[RecallRow]
    recalled: list[Document] = field(default_factory=list)


def playground(memory: TieredMemory, user_id: str, turns: list[str], k: int) -> Playground:
    """The memory section the prebuilt graph would put in the system prompt for a thread
    whose recent user turns are ``turns`` (the last is the current message), with the
    ranking of every recalled item. It reads the graph's own way (:meth:`TieredMemory.load`)
    and renders with the graph's default renderer and token budget.
    """
    # the turns the graph's recall reads (the last DEFAULT_CONTEXT_TURNS user messages):
    # the same function as the graph's load step, so the playground shows a real turn
    turns = recent_user_texts([t.strip() for t in turns], DEFAULT_CONTEXT_TURNS)
    if not turns:
        return Playground([], "", [])
    # an inspection, not the user's activity: the user_ttl clock is left alone
    snap = memory.load(user_id, turns[-1], max_messages=0, k=k, context=turns[:-1], touch=False)
    section = render_memory_section(
        snap.tags, snap.recalled, token_budget=DEFAULT_MEMORY_TOKEN_BUDGET
    )
    rows = []
    for i, doc in enumerate(snap.recalled):
        meta = doc.metadata
        parts = meta.get("score_parts") or {}
        rows.append(
            RecallRow(
                id=str(doc.id),
                text=doc.page_content,
                created_at=str(meta.get("created_at") or ""),
                score=float(meta.get("score", 0.0)),
                dense=float(parts.get("dense", 0.0)),
                lexical=float(parts.get("lexical", 0.0)),
                time=float(parts.get("time", 0.0)),
                # one turn: the conversation's ranking is the latest message's
                ranks=meta.get("ranks") or {"latest": i, "conversation": i},
            )
        )
    return Playground(turns, section, rows, list(snap.recalled))


EXPLAIN_DEPTH = 200
"""How deep the playground reads the rankings to explain an item (an item below is "not
among the best 200")."""


@dataclass
class Explanation:
    """Why one item was or was not recalled for the playground's turns."""

    item_id: str
    text: str
    verdict: str  # one sentence: recalled, or why it was cut
    by_score: int | None = None  # its place by score alone (0 = first), None: below depth
    latest: int | None = None  # its place in the latest message's own ranking
    score: float | None = None
    parts: dict[str, float] = field(default_factory=dict)


def explain(
    memory: TieredMemory, user_id: str, turns: list[str], k: int, item_id: str, shown: Playground
) -> Explanation:
    """Why the item ``item_id`` is or is not in ``shown`` (the playground's result): its
    place by score in the conversation's ranking and in the latest message's, each part
    of its score, and what cut it: superseded, below ``k``, diversity (its score ranked it
    within ``k`` but maximal marginal relevance chose a less redundant item), or the
    memory section's token budget.
    """
    docs = {str(d.id): d for d in memory.summaries.get_all(user_id)}
    doc = docs.get(item_id.strip())
    if doc is None:
        return Explanation(item_id, "", f"{user_id} has no item with id {item_id!r}.")
    item_id = str(doc.id)
    out = Explanation(item_id, doc.page_content, "")
    if doc.metadata.get("superseded_by"):
        out.verdict = (
            f"Superseded by item {doc.metadata['superseded_by']}: recall leaves superseded "
            "items out (the newer one says what holds now)."
        )
        return out
    depth = min(len(docs), EXPLAIN_DEPTH)
    # the query the playground's recall ran: its turns (the graph's), joined
    turns = shown.turns or turns
    joined = " ".join(turns)
    ranking = memory.summaries.search(user_id, joined, depth)
    # the latest message's ranking as recall reads it: by its words (search_words)
    latest = memory.summaries.search_words(user_id, turns[-1], depth)
    by_score = sorted(ranking, key=lambda d: -float(d.metadata.get("score", 0.0)))
    out.by_score = next((i for i, d in enumerate(by_score) if str(d.id) == item_id), None)
    out.latest = next((i for i, d in enumerate(latest) if str(d.id) == item_id), None)
    if out.by_score is not None:
        meta = by_score[out.by_score].metadata
        out.score = float(meta.get("score", 0.0))
        out.parts = {n: float(v) for n, v in (meta.get("score_parts") or {}).items()}
    recalled = [str(d.id) for d in shown.recalled]
    if item_id in recalled:
        rank = recalled.index(item_id) + 1
        if quote(doc.page_content) in shown.section:
            out.verdict = f"Recalled at #{rank} of {k}, and in the memory section."
        else:
            out.verdict = (
                f"Recalled at #{rank} of {k}, but the memory section's token budget "
                f"({DEFAULT_MEMORY_TOKEN_BUDGET}) ran out before it."
            )
    elif out.by_score is None:
        out.verdict = f"Not recalled: not among the best {depth} by score."
    elif out.by_score < k:
        best_latest = str(latest[0].id) if latest else None
        kept = best_latest in recalled and best_latest not in [str(d.id) for d in by_score[:k]]
        out.verdict = (
            f"Not recalled: its score ranks it #{out.by_score + 1}, within {k}, but the "
            f"latest message's own best item ({best_latest}) is kept near the top and took "
            "a place."
            if kept
            else f"Not recalled: its score ranks it #{out.by_score + 1}, within {k}, but "
            "diversity (maximal marginal relevance) chose a less redundant item over it."
        )
    else:
        last = shown.recalled[-1].metadata.get("score") if shown.recalled else None
        cut = f"; the last recalled item scored {float(last):.3f}" if last is not None else ""
        out.verdict = f"Not recalled: below {k}: its score ranks it #{out.by_score + 1}{cut}."
    return out


def item_text(memory: TieredMemory, user_id: str, item_id: str) -> str:
    """The text of one item, for a confirmation ("" if there is none)."""
    for doc in memory.summaries.get_all(user_id):
        if str(doc.id) == item_id:
            return doc.page_content
    return ""


def readable(stamp: str) -> str:
    """An ISO time as a person reads it ("3 Dec 2026, 18:48 UTC"); as given if not one.

    Example:
        >>> readable("2026-12-03T18:48:00+00:00")
        '3 Dec 2026, 18:48 UTC'
    """
    try:
        moment = datetime.fromisoformat(stamp)
    except (TypeError, ValueError):
        return stamp
    if moment.tzinfo is not None:
        moment = moment.astimezone(timezone.utc)
    return f"{moment.day} {moment:%b %Y, %H:%M} UTC"


def store_label(memory: TieredMemory) -> str:
    """Which store the console reads, for its header and start-up line (no password).

    Example:
        >>> store_label(TieredMemory.in_memory())  # doctest: +SKIP
        'this process only (in memory)'
    """
    if memory.data_dir is not None:
        return f"embedded server, data dir {memory.data_dir}"
    connection = memory.tiers.connection
    if connection is not None and connection.url:
        parts = urlsplit(connection.url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
        return f"{parts.scheme}://{host}{port}{parts.path}"
    stores = (memory.history, memory.tags, memory.summaries)
    if all(type(s).__module__.startswith("langchain_tiered_memory.") for s in stores):
        return "this process only (in memory)"
    return "the app's stores (" + ", ".join(dict.fromkeys(type(s).__name__ for s in stores)) + ")"


def when(epoch: float | None) -> str:
    """Epoch seconds as a UTC time for the pages."""
    if epoch is None:
        return "—"
    return datetime.fromtimestamp(epoch, tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC")

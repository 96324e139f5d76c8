"""Recall from the conversation, not only its last message.

A memory is often *associated* with what the conversation is about rather than named by
the last message: "There's a big test on Friday." ... "I keep worrying I'll mess it up
again." should bring up "The user failed their driving test last spring". The query is
built from the last few user turns (:func:`recent_user_texts`); each is embedded once (the
stores keep the vectors of recent query texts, so a turn embeds only its new message) and
the vectors are summed with weights that halve with each older turn (:func:`combine`):
the newest message leads, the earlier ones pull towards the topic. The lexical side reads
the same turns. That ranking is fused with the latest message's own (:func:`fuse`), so a
question that names its fact loses nothing to the turns before it.

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
    "DECAY",
    "QueryVectors",
    "combine",
    "conversation_depth",
    "fuse",
    "recall",
    "recent_user_texts",
]

DEFAULT_CONTEXT_TURNS = 3
"""User turns a recall query reads (the newest included); chosen on the associative dev
set (``bench/recall_associative.py``)."""
DECAY = 0.5
"""Each older turn's weight relative to the next newer one's."""


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


def combine(vectors: np.ndarray, decay: float = DECAY) -> np.ndarray:
    """One unit query vector from the unit vectors of texts, oldest first: the newest has
    weight 1, each older one ``decay`` times the next.

    Example:
        >>> v = combine(np.array([[1.0, 0.0], [0.0, 1.0]]))
        >>> [round(float(x), 3) for x in v]
        [0.447, 0.894]
    """
    n = len(vectors)
    weights = decay ** np.arange(n - 1, -1, -1, dtype=np.float32)
    summed = (weights[:, None] * vectors).sum(axis=0)
    norm = float(np.linalg.norm(summed))
    return (summed / norm if norm else vectors[-1]).astype(np.float32)


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


RRF_K = 60
"""The rank offset of reciprocal rank fusion (the usual constant, not tuned here)."""


def conversation_depth(k: int) -> int:
    """How deep each ranking is read before :func:`fuse`: an item a little below the top
    of both can outrank one at the top of one only.
    """
    return max(2 * k, 10)


def fuse(latest: Sequence[Document], conversation: Sequence[Document], k: int) -> list[Document]:
    """The top ``k`` of two rankings of one store's items, by reciprocal rank fusion: the
    items the latest message alone ranks first and those the conversation does. A tie goes
    to the latest message's ranking, so a question that names its fact keeps its best item
    first ("When is my birthday?" after an introduction that also gave the name), and an
    item only the conversation finds still comes up.

    Example:
        >>> a, b, c = (Document(page_content=t, id=t) for t in "abc")
        >>> [d.id for d in fuse([a, b], [c, a], 2)]
        ['a', 'c']
    """
    scores: dict[str, float] = {}
    first: dict[str, tuple[int, int]] = {}
    docs: dict[str, Document] = {}
    for which, ranking in enumerate((latest, conversation)):
        for rank, doc in enumerate(ranking):
            key = _key(doc)
            scores[key] = scores.get(key, 0.0) + 1.0 / (RRF_K + rank + 1)
            first.setdefault(key, (which, rank))
            docs.setdefault(key, doc)
    order = sorted(scores, key=lambda key: (-scores[key], first[key]))
    out = []
    for key in order[:k]:
        doc = docs[key]
        # why it ranks here: the fused score and the item's rank in each list (0 = first)
        doc.metadata["fused_score"] = scores[key]
        doc.metadata["ranks"] = {
            name: next((r for r, d in enumerate(ranking) if _key(d) == key), None)
            for name, ranking in (("latest", latest), ("conversation", conversation))
        }
        out.append(doc)
    return out


#: ``(query text, depth, its vector or None) -> plan of the ranked items``: one store's
#: search, which embeds the text itself when given no vector.
Search = Callable[[str, int, "np.ndarray | None"], Plan[list[Document]]]


def recall(
    search: Search,
    embed: Callable[[Sequence[str]], Step],
    texts: Sequence[str],
    k: int,
) -> Plan[list[Document]]:
    """The one conversation recall every reader runs (a turn's load, ``recall_summaries``,
    the search tool, the console's playground), for either store family: the latest
    message's ranking and, when there are earlier turns, the conversation's
    (:func:`combine`'d vector, the turns' text), fused (:func:`fuse`).

    Args:
        search: one store's search (its ranking is the store's index's: ``index.py``).
        embed: the step that embeds the conversation's texts into one vector.
        texts: the conversation's user texts, oldest first, the latest message last.
        k: how many items.

    Example:
        >>> from langchain_tiered_memory._steps import call, drive
        >>> docs = {t: Document(page_content=t, id=t) for t in "abc"}
        >>> def search(query, depth, vector):
        ...     return [docs[c] for c in query if c in docs][:depth]
        ...     yield  # a plan with no step
        >>> def embed(texts): return call(len, len, texts)  # doctest: +SKIP
        >>> [d.id for d in drive(recall(search, lambda t: None, ["b"], 2))]
        ['b']
    """
    depth = conversation_depth(k)
    latest = yield from search(texts[-1], depth, None)
    if len(texts) < 2:
        return latest[:k]
    vector = yield embed(texts)
    joined = yield from search(" ".join(texts), depth, vector)
    return fuse(latest, joined, k)


def _key(doc: Document) -> str:
    return str(doc.id if doc.id is not None else doc.page_content)

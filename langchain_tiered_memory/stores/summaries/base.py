"""The summary store interface (:class:`SummaryStore`) and its LangChain retriever."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from datetime import date, datetime
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

from langchain_tiered_memory._steps import Plan, Step, call, paired, threaded
from langchain_tiered_memory.backend.keys import validate_user_id
from langchain_tiered_memory.errors import (
    InvalidSummaryError,
)
from langchain_tiered_memory.retrieval import RetrievalConfig
from langchain_tiered_memory.retrieval.conversation import QueryVectors, recall
from langchain_tiered_memory.stores.summaries.index import (
    DEDUP_THRESHOLD,
    DEFAULT_MAX_ITEMS,
    Record,
    json_metadata,
    normalize_created_at,
    unit_rows,
    validate_items,
)

__all__ = ["ItemMetadata", "SummaryRetriever", "SummaryStore"]

# One mapping for every item of an add, or one mapping per item (in order).
ItemMetadata = Mapping[str, Any] | Sequence[Mapping[str, Any]] | None


class SummaryStore(ABC):
    """Per-user summary items with embedding search; sync and async pairs.

    A backend implements the abstract (sync) methods; each async twin defaults to running
    its sync method in a worker thread, and a backend with async I/O overrides it. So sync
    methods run concurrently, from several threads, and to their end even when the awaiting
    caller is cancelled: a backend locks what needs it and keeps each write atomic.

    A store is given its embeddings model; it never builds one (the package's default is
    :func:`langchain_tiered_memory.defaults.default_embeddings`, which
    :class:`~langchain_tiered_memory.TieredMemory`'s constructors use).

    Example:
        >>> from langchain_tiered_memory import HashingEmbeddings, InMemorySummaryStore
        >>> store = InMemorySummaryStore(embeddings=HashingEmbeddings())
        >>> ids = store.add("alice", ["Alice has a cat named Tom.", "Alice lives in Lyon."])
        >>> store.search("alice", "What is her cat called?", k=1)[0].page_content
        'Alice has a cat named Tom.'
    """

    embeddings: Embeddings
    dedup_threshold: float = DEDUP_THRESHOLD
    max_items: int | None = DEFAULT_MAX_ITEMS
    # How recall ranks items (None: the defaults of RetrievalConfig).
    retrieval: RetrievalConfig | None = None

    def _embedder(self) -> Embeddings:
        return self.embeddings

    def _vectors(self) -> QueryVectors:
        # created on first use: stores are built with no I/O and no required super().__init__
        cache: QueryVectors | None = self.__dict__.get("_query_vectors")
        if cache is None:
            cache = self.__dict__.setdefault("_query_vectors", QueryVectors())
        return cache

    @paired
    def embed_query(self, text: str) -> Plan[np.ndarray]:
        """Embed a query (unit length); recent query texts are embedded once per store."""
        cache, embedder = self._vectors(), self._embedder()
        vector = cache.get(embedder, text)
        if vector is None:
            raw = yield call(embedder.embed_query, embedder.aembed_query, text)
            vector = cache.put(embedder, text, unit_rows([raw])[0])
        return vector

    aembed_query = embed_query.aio

    @paired
    def embed_conversation(self, texts: Sequence[str]) -> Plan[np.ndarray]:
        """One query vector for a conversation's texts, oldest first: their text joined,
        embedded once (:func:`~langchain_tiered_memory.retrieval.conversation.recall`).
        """
        return (yield call(self.embed_query, self.aembed_query, " ".join(texts)))

    aembed_conversation = embed_conversation.aio

    @paired
    def search_conversation(
        self, user_id: str, texts: Sequence[str], k: int = 3, *, include_superseded: bool = False
    ) -> Plan[list[Document]]:
        """Top-``k`` items for a conversation's ``texts`` (oldest first, the latest message
        last): the conversation's ranking, the latest message's best item kept near the top
        (:func:`~langchain_tiered_memory.retrieval.conversation.recall`).
        """
        return (yield from self._recall(user_id, texts, k, include_superseded))

    asearch_conversation = search_conversation.aio

    def _recall(
        self, user_id: str, texts: Sequence[str], k: int, include_superseded: bool
    ) -> Plan[list[Document]]:
        def search(
            query: str, depth: int, vector: np.ndarray | None, dates_from: str | None
        ) -> Plan[list[Document]]:
            return (
                yield call(
                    self.search,
                    self.asearch,
                    user_id,
                    query,
                    depth,
                    vector=vector,
                    include_superseded=include_superseded,
                    dates_from=dates_from,
                )
            )

        def words(query: str) -> Plan[list[Document]]:
            found = yield call(
                self.search_words,
                self.asearch_words,
                user_id,
                query,
                1,
                include_superseded=include_superseded,
            )
            return found  # type: ignore[no-any-return]

        def embed(conversation: Sequence[str]) -> Step:
            return call(self.embed_conversation, self.aembed_conversation, conversation)

        return recall(search, words, embed, texts, k)

    def _prepare(
        self,
        items: Sequence[str],
        vectors: Sequence[Sequence[float]],
        created_at: datetime | date | str | None,
        metadata: ItemMetadata,
    ) -> tuple[list[Record], np.ndarray]:
        texts = validate_items(items)
        stamp = normalize_created_at(created_at)
        if metadata is None or isinstance(metadata, Mapping):
            metas = [json_metadata(metadata)] * len(texts)
        else:  # one mapping per item (the summarizer's per-item provenance)
            metas = [json_metadata(m) for m in metadata]
            if len(metas) != len(texts):
                raise InvalidSummaryError(
                    f"metadata has {len(metas)} entries for {len(texts)} items: give one "
                    "mapping for all items, or one per item."
                )
        vecs = unit_rows(vectors)
        if len(vecs) != len(texts):
            raise InvalidSummaryError("the embeddings model returned a wrong number of vectors.")
        return [Record("", t, stamp, dict(m)) for t, m in zip(texts, metas, strict=True)], vecs

    @abstractmethod
    def add(
        self,
        user_id: str,
        items: Sequence[str],
        *,
        created_at: datetime | date | str | None = None,
        metadata: ItemMetadata = None,
        watermark: tuple[int, int] | None = None,
        supersedes: Mapping[int, Sequence[str]] | None = None,
        fence: str | None = None,
    ) -> list[str]:
        """Store items; return the new ids (in order, one per stored item).

        An item that restates a stored one or an earlier one of the call is skipped: a
        restatement is as similar as ``DEDUP_THRESHOLD`` (cosine 0.95) *and* says the
        same words, never the cosine alone ("My father lives in Hangzhou." and "My
        mother lives in Hangzhou." are two facts). Call
        :func:`~langchain_tiered_memory.stores.summaries.kept_items` rather than writing
        the rule again; check the texts with ``validate_items`` and the user's limit with
        ``limit_error`` (``max_items``) before anything is written.

        ``watermark=(expected, new)`` makes the write conditional: it happens, together
        with moving the user's summarization watermark to ``new``, only if the watermark
        is still ``expected``. ``metadata``: one mapping for every item, or one per item.
        ``supersedes={i: [stored ids]}``: ``items[i]`` makes those
        stored items no longer true; they are kept, marked with ``superseded_by`` (the new
        id) and ``valid_until`` (its ``created_at``), in the same write, and left out of
        default recall. ``fence`` (from :meth:`get_fence`, with ``watermark``): the write
        also requires that no erasure (``forget_user``, ``forget_thread``) happened since
        the fence was read, so a summarizer that read messages before an erasure cannot
        bring them back.

        Raises:
            WatermarkConflict: the watermark moved, or the user's memory was erased,
                meanwhile; nothing was written.
            InvalidSummaryError: an item is empty or too long; nothing was written.
            SummaryLimitError: the items would pass the store's ``max_items``; nothing
                was written.

        """

    aadd = threaded(add)

    @abstractmethod
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
        """The ``k`` best items for ``query``, best first, ``metadata["score"]`` set.

        Items a newer item superseded are left out unless ``include_superseded``. The
        dates ``query`` names ("last May") favour items of that time; ``dates_from`` gives
        another text to read them from (a conversation's query reads its latest message:
        "last time" three turns ago names no date the question asks about).
        """

    asearch = threaded(search)

    @paired
    def search_words(
        self, user_id: str, query: str, k: int = 1, *, include_superseded: bool = False
    ) -> Plan[list[Document]]:
        """The ``k`` items sharing most of ``query``'s words (BM25), best first; an item
        sharing none is left out. A conversation's recall finds its latest message's own
        best item this way, so that a turn embeds one text, not two. This default is
        :meth:`search` (meaning and words: the query is embedded, items sharing no word may
        come); a store with a words index overrides it (both shipped families do).
        """
        found = yield call(
            self.search, self.asearch, user_id, query, k, include_superseded=include_superseded
        )
        return found  # type: ignore[no-any-return]

    asearch_words = search_words.aio

    @abstractmethod
    def get_fence(self, user_id: str) -> tuple[int, str]:
        """The summarization watermark and the user's erasure fence, read together: a
        summarizer passes both to :meth:`add` (``watermark=(it, end)``, ``fence=``).
        """

    aget_fence = threaded(get_fence)

    @abstractmethod
    def rotate_fence(self, user_id: str) -> None:
        """Invalidate every fence read so far (an erasure of part of the user's memory)."""

    arotate_fence = threaded(rotate_fence)

    @abstractmethod
    def get_watermark(self, user_id: str) -> int:
        """Absolute history position up to which the user's history is summarized."""

    aget_watermark = threaded(get_watermark)

    @abstractmethod
    def get_all(self, user_id: str) -> list[Document]:
        """Every stored item of the user, oldest first."""

    aget_all = threaded(get_all)

    @abstractmethod
    def delete(self, user_id: str, ids: Sequence[str]) -> int:
        """Delete items by id; return how many existed."""

    adelete = threaded(delete)

    @abstractmethod
    def update(self, user_id: str, item_id: str, text: str) -> bool:
        """Replace one item's text in place (one write): the new text is embedded, the
        item keeps its id, date, provenance and supersession, and its earlier text is
        kept in ``metadata["edits"]``. No de-duplication: an edit that changes only case
        or punctuation is still an edit. Returns whether the text changed.

        Raises:
            InvalidSummaryError: no item ``item_id``, or ``text`` is not a valid item.
            EmbeddingsMismatchError: the stored vectors are another model's.

        Example:
            >>> store.update("alice", "3", "Alice is 31.")  # doctest: +SKIP
            True
        """

    aupdate = threaded(update)

    @abstractmethod
    def drop_thread(self, user_id: str, thread_id: str) -> int:
        """Remove ``thread_id`` from the threads the items name as their sources
        (``source_threads``; ``threads`` on older items), keeping the items (a forgotten
        thread's trace in what other threads said too); return how many changed.
        """

    adrop_thread = threaded(drop_thread)

    @abstractmethod
    def clear(self, user_id: str) -> int:
        """Delete every item, the cached index and the watermark; return the item count."""

    aclear = threaded(clear)

    @paired
    def similar(self, user_id: str, texts: Sequence[str], k: int = 3) -> Plan[list[list[Document]]]:
        """For each text, the ``k`` stored items most like it (current items only): what an
        update step compares new items with. One batch of embeddings.
        """
        if not texts or not (yield call(self.get_all_count, self.aget_all_count, user_id)):
            return [[] for _ in texts]
        embedder = self._embedder()
        raw = yield call(embedder.embed_documents, embedder.aembed_documents, list(texts))
        found: list[list[Document]] = []
        for text, vector in zip(texts, unit_rows(raw)):
            found.append((yield call(self.search, self.asearch, user_id, text, k, vector=vector)))
        return found

    asimilar = similar.aio

    @paired
    def get_all_count(self, user_id: str) -> Plan[int]:
        """How many items the user has (superseded ones included)."""
        return len((yield call(self.get_all, self.aget_all, user_id)))

    aget_all_count = get_all_count.aio

    @paired
    def superseded_texts(self, user_id: str) -> Plan[list[str]]:
        """The texts of the user's superseded items: what a message carried into a new
        thread may no longer present as current (read on a thread's first turns). This
        default reads every item; a store with an index of its own overrides it (both
        shipped families do).
        """
        items = yield call(self.get_all, self.aget_all, user_id)
        return [d.page_content for d in items if d.metadata.get("superseded_by")]

    asuperseded_texts = superseded_texts.aio

    def as_retriever(self, user_id: str, *, k: int = 3, **kwargs: Any) -> SummaryRetriever:
        """A LangChain retriever over one user's items.

        Example:
            >>> retriever = memory.summaries.as_retriever("alice", k=3)  # doctest: +SKIP
            >>> retriever.invoke("when is her birthday?")  # doctest: +SKIP

        """
        return SummaryRetriever(store=self, user_id=validate_user_id(user_id), k=k, **kwargs)


class SummaryRetriever(BaseRetriever):
    """``BaseRetriever`` over one user's summary items.

    Example:
        >>> from langchain_tiered_memory import HashingEmbeddings, InMemorySummaryStore
        >>> store = InMemorySummaryStore(embeddings=HashingEmbeddings())
        >>> _ = store.add("alice", ["Alice's birthday is on May 8."])
        >>> store.as_retriever("alice", k=1).invoke("birthday")[0].page_content
        "Alice's birthday is on May 8."
    """

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

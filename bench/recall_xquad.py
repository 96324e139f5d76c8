"""Recall@k of summary items in English and Chinese on XQuAD, against single-signal baselines.

    python bench/recall_xquad.py XQUAD_DIR                  # xquad.en.json, xquad.zh.json
    python bench/recall_xquad.py XQUAD_DIR --embeddings e5 minilm --split dev heldout

XQuAD (google-deepmind/xquad, CC BY-SA 4.0; never shipped here: get it with the search
tool's ``fetch github:google-deepmind/xquad`` and ``git show HEAD:xquad.zh.json``): 240
Wikipedia paragraphs with 1,190 questions, professionally translated, so the English and the
Chinese file ask the same questions of the same facts. As a user's memory (``_datasets``):
four articles a user, one item a sentence, paragraphs on consecutive days; a question's
evidence is the sentence its answer is in. ``dev`` (even users) is the only split used to
choose anything in the ranking; ``heldout`` (odd users) is reported, never tuned on.

Everything goes through the public API: ``add_summaries(user, items, created_at=...)`` per
paragraph (de-duplication on, as in production) on an embedded Redis, and
``recall_summaries(user, question, n=k)``. In the same run: dense only (the same vectors in a
bare FAISS flat index, every item kept) and BM25 alone (this package's tokenizer: words,
CJK characters and bigrams). Each text is embedded once per model and reused by every
system.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from typing import Any

warnings.filterwarnings("ignore", category=DeprecationWarning)
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import faiss  # noqa: E402
import numpy as np  # noqa: E402
from _datasets import User, load_xquad  # noqa: E402
from langchain_core.embeddings import Embeddings  # noqa: E402

from langchain_tiered_memory import (  # noqa: E402
    InMemoryHistoryStore,
    InMemoryTagStore,
    RedisConnection,
    RedisSummaryStore,
    TieredMemory,
)
from langchain_tiered_memory.language.text import tokenize  # noqa: E402
from langchain_tiered_memory.retrieval.lexical import LexicalIndex  # noqa: E402

KS = (1, 3, 5, 10)


class CachedEmbeddings(Embeddings):
    """Embeds each distinct text once with ``inner`` and reuses it (queries apart)."""

    def __init__(self, inner: Embeddings) -> None:
        self.inner = inner
        self.model_id = getattr(inner, "model_id", type(inner).__name__)
        self.scripts = getattr(inner, "scripts", None)
        self.docs: dict[str, list[float]] = {}
        self.queries: dict[str, list[float]] = {}

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        missing = list(dict.fromkeys(t for t in texts if t not in self.docs))
        if missing:
            for text, vec in zip(missing, self.inner.embed_documents(missing)):
                self.docs[text] = vec
        return [self.docs[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        if text not in self.queries:
            self.queries[text] = self.inner.embed_query(text)
        return self.queries[text]


def model(name: str) -> Embeddings:
    if name == "e5":
        from langchain_tiered_memory.embeddings import MultilingualE5Embeddings

        return MultilingualE5Embeddings()
    from langchain_tiered_memory.embeddings import OnnxMiniLMEmbeddings

    return OnnxMiniLMEmbeddings()  # also in 0.1, to measure it with this bench


def hit(groups: Sequence[int], evidence: set[int]) -> float:
    return len(set(groups) & evidence) / len(evidence)


def dense_only(users: list[User], emb: Embeddings) -> dict[int, float]:
    out: dict[int, list[float]] = {k: [] for k in KS}
    for user in users:
        matrix = np.asarray(emb.embed_documents(user.items), dtype=np.float32)
        index = faiss.IndexFlatIP(matrix.shape[1])
        index.add(matrix)
        for q in user.questions:
            _, ids = index.search(np.asarray([emb.embed_query(q.text)], dtype=np.float32), 10)
            for k in KS:
                out[k].append(hit([user.groups[i] for i in ids[0][:k] if i >= 0], q.evidence))
    return {k: float(np.mean(v)) for k, v in out.items()}


def bm25_only(users: list[User]) -> dict[int, float]:
    out: dict[int, list[float]] = {k: [] for k in KS}
    for user in users:
        lex = LexicalIndex()
        lex.add(user.items)
        for q in user.questions:
            order = np.argsort(-lex.scores(tokenize(q.text)), kind="stable")
            for k in KS:
                out[k].append(hit([user.groups[i] for i in order[:k]], q.evidence))
    return {k: float(np.mean(v)) for k, v in out.items()}


def library(
    users: list[User], emb: Embeddings, url: str, vector_dtype: str = "int8"
) -> tuple[dict[int, float], Any]:
    connection = RedisConnection(url)
    memory = TieredMemory(
        history=InMemoryHistoryStore(),
        tags=InMemoryTagStore(),
        summaries=RedisSummaryStore(connection, embeddings=emb, vector_dtype=vector_dtype),  # type: ignore[arg-type]
    )
    out: dict[int, list[float]] = {k: [] for k in KS}
    given = kept = 0
    for user in users:
        memory.forget_user(user.user_id)
        # one add per paragraph (a day), as a summarizer would store them
        start = 0
        while start < len(user.items):
            day = user.created[start]
            stop = start
            while stop < len(user.items) and user.created[stop] == day:
                stop += 1
            ids = memory.add_summaries(
                user.user_id,
                user.items[start:stop],
                created_at=day,
                metadata={"groups": user.groups[start:stop]},
            )
            given += stop - start
            kept += len(ids)
            start = stop
        text_group = {t: g for t, g in zip(user.items, user.groups)}
        for q in user.questions:
            for k in KS:  # asked at each k, as an app asks for its fixed n
                docs = memory.recall_summaries(user.user_id, q.text, n=k)
                groups = [text_group[d.page_content] for d in docs]
                out[k].append(hit(groups, q.evidence))
        memory.forget_user(user.user_id)
    connection.close()
    return {k: float(np.mean(v)) for k, v in out.items()}, (given, kept)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("xquad_dir", help="folder with xquad.en.json and xquad.zh.json")
    p.add_argument("--embeddings", nargs="+", default=["e5", "minilm"], choices=["e5", "minilm"])
    p.add_argument("--split", nargs="+", default=["dev", "heldout"], choices=["dev", "heldout"])
    p.add_argument("--redis-url", help="use this Redis instead of an embedded server")
    p.add_argument(
        "--vector-dtype",
        nargs="+",
        choices=["float16", "float32", "int8"],
        default=["int8"],
        help="how the summary store keeps vectors (several: one row each)",
    )
    args = p.parse_args()
    tmp = server = None
    if args.redis_url:
        url = args.redis_url
    else:
        tmp = tempfile.TemporaryDirectory(prefix="tm-xquad-")
        server = TieredMemory.embedded(tmp.name, appendfsync="no")
        assert server.redis_url is not None
        url = server.redis_url
    header = "| split | language | embeddings | system | " + " | ".join(f"@{k}" for k in KS)
    print(header + " |")
    print("|" + "---|" * (4 + len(KS)))
    for split in args.split:
        for lang in ("en", "zh"):
            users = load_xquad(
                os.path.join(args.xquad_dir, f"xquad.{lang}.json"), lang, split=split
            )
            n_q = sum(len(u.questions) for u in users)
            n_items = sum(len(u.items) for u in users)
            bm = bm25_only(users)
            print(
                f"| {split} | {lang} ({n_q} q, {n_items} items) | - | BM25 alone | "
                + " | ".join(f"{bm[k]:.3f}" for k in KS)
                + " |"
            )
            for name in args.embeddings:
                emb = CachedEmbeddings(model(name))
                t0 = time.perf_counter()
                dense = dense_only(users, emb)
                rows = [("dense alone", dense)]
                for dtype in args.vector_dtype:
                    ours, (given, kept) = library(users, emb, url, dtype)
                    rows.append((f"recall_summaries ({dtype})", ours))
                for label, scores in rows:
                    print(
                        f"| {split} | {lang} | {name} | {label} | "
                        + " | ".join(f"{scores[k]:.3f}" for k in KS)
                        + " |"
                    )
                print(
                    f"|  |  | {name} | (kept {kept} of {given} items; "
                    f"{time.perf_counter() - t0:.0f} s) |" + " |" * len(KS),
                    file=sys.stderr,
                )
                sys.stdout.flush()
    if server is not None:
        server.close()
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()

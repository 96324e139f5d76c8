"""Session-level recall@k of recalled summary items on LoCoMo, against simple baselines.

    python bench/recall_locomo.py ../shared/data/locomo/locomo_dev.json
    python bench/recall_locomo.py LOCOMO_JSON --run both --k 1 3 5 10 --limit-conversations 2

LoCoMo (snap-research/LoCoMo, CC BY-NC 4.0; benchmark use only, never shipped here): long
two-person conversations over dated sessions, with questions whose evidence turns are known.
Everything goes through the public API, as an application would use it:

- each conversation is one user; for every session its ``observation`` facts (``--run
  session_summary``: its summary) are stored with ``add_summaries(user, items,
  created_at=<the session's date>, metadata={"session": N, ...})``, as a summarizer would;
- every question of categories 1-4 (multi-hop, temporal, open-domain, single-hop) is asked
  with ``recall_summaries(user, question, n=k)``;
- session-level recall@k = the share of the question's evidence sessions found among the
  sessions of the recalled items (LoCoMo's ``recall_acc``).

Next to the library's default ranking, in the same run: a random baseline (expected value
over random draws of k items), a plain dense baseline (the same MiniLM vectors in a bare
FAISS flat index, top-k by cosine, every item kept), BM25 alone (``rank_bm25``, if
installed) and the library with each ranking signal switched off (the ablation).

Embeddings (``--embeddings``): the library default, multilingual-e5-small (``e5``), or
all-MiniLM-L6-v2 through sentence-transformers (``torch``), ONNX Runtime (``onnx``) or its
int8 weights; each text is embedded once and reused by every system (a caching wrapper).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import tempfile
import time
import warnings
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

warnings.filterwarnings("ignore", category=DeprecationWarning)
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import faiss  # noqa: E402
import numpy as np  # noqa: E402
from _queries import fuse  # noqa: E402  (run from bench/)
from langchain_core.embeddings import Embeddings  # noqa: E402

from langchain_tiered_memory import (  # noqa: E402
    InMemoryHistoryStore,
    InMemoryTagStore,
    RedisConnection,
    RedisSummaryStore,
    TieredMemory,
)
from langchain_tiered_memory.retrieval import RetrievalConfig  # noqa: E402

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


# ----------------------------------------------------------------------------- data


@dataclass
class Conversation:
    sample_id: str
    sessions: dict[int, tuple[datetime, list[str]]]  # session -> (date, items)
    questions: list[tuple[str, set[int], int]] = field(default_factory=list)


def parse_date(text: str) -> datetime:
    """LoCoMo's session date, e.g. "1:56 pm on 8 May, 2023"."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)


def evidence_sessions(evidence: Sequence[str]) -> set[int]:
    """Session numbers of evidence ids ("D3:11"), normalizing the few malformed ones
    ("D8:6; D9:17", "D:11:26", "D30:05"); ids without a session number are dropped."""
    out = set()
    for raw in evidence:
        for part in re.split(r"[;,\s]+", raw):
            m = re.fullmatch(r"D:?(\d+):(\d+)", part.strip())
            if m:
                out.add(int(m.group(1)))
    return out


def load(path: str, run: str, limit: int | None) -> list[Conversation]:
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    out = []
    for conv in data[:limit] if limit else data:
        c = conv["conversation"]
        sessions: dict[int, tuple[datetime, list[str]]] = {}
        source = conv["observation"] if run == "observation" else conv["session_summary"]
        for key, value in source.items():
            n = int(re.search(r"session_(\d+)", key).group(1))  # type: ignore[union-attr]
            when = parse_date(c[f"session_{n}_date_time"])
            if run == "observation":
                items = [fact for facts in value.values() for fact, *_ in facts]
            else:
                items = [value]
            items = [t.strip() for t in items if isinstance(t, str) and t.strip()]
            if items:
                sessions[n] = (when, items)
        result = Conversation(conv["sample_id"], sessions)
        for qa in conv["qa"]:
            if qa.get("category") not in CATEGORIES:
                continue
            ev = evidence_sessions(qa.get("evidence") or [])
            if ev:
                result.questions.append((qa["question"], ev, qa["category"]))
        out.append(result)
    return out


class CachedEmbeddings(Embeddings):
    """Embeds each distinct text once with ``inner`` (the default MiniLM) and reuses it."""

    def __init__(self, inner: Embeddings) -> None:
        self.inner = inner
        # the wrapped model's name and scripts, as the stores read them
        self.model_id = getattr(inner, "model_id", type(inner).__name__)
        self.scripts = getattr(inner, "scripts", None)
        self.cache: dict[str, list[float]] = {}
        self.queries: dict[str, list[float]] = {}
        self.seconds = 0.0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        missing = list(dict.fromkeys(t for t in texts if t not in self.cache))
        if missing:
            t0 = time.perf_counter()
            for text, vec in zip(missing, self.inner.embed_documents(missing)):
                self.cache[text] = vec
            self.seconds += time.perf_counter() - t0
        return [self.cache[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        if text not in self.queries:  # e5 embeds a query with another prefix than a text
            t0 = time.perf_counter()
            self.queries[text] = self.inner.embed_query(text)
            self.seconds += time.perf_counter() - t0
        return self.queries[text]


# ----------------------------------------------------------------------------- scoring


def recall_of(sessions: Sequence[int], evidence: set[int]) -> float:
    return len(set(sessions) & evidence) / len(evidence)


class Scores:
    """recall values per (k, category)."""

    def __init__(self) -> None:
        self.values: dict[tuple[int, int], list[float]] = defaultdict(list)

    def add(self, k: int, category: int, value: float) -> None:
        self.values[(k, category)].append(value)

    def overall(self, k: int) -> float:
        vals = [v for (kk, _), vs in self.values.items() if kk == k for v in vs]
        return float(np.mean(vals)) if vals else float("nan")

    def category(self, k: int, category: int) -> float:
        vals = self.values.get((k, category), [])
        return float(np.mean(vals)) if vals else float("nan")


def library_run(
    convs: list[Conversation],
    emb: CachedEmbeddings,
    url: str,
    prefix: str,
    ks: Sequence[int],
    config: RetrievalConfig | None,
    dedup_threshold: float | None = None,
    vector_dtype: str = "int8",
    second: str | None = None,
) -> tuple[Scores, dict[str, Any]]:
    """Store every conversation through ``add_summaries`` and ask every question."""
    connection = RedisConnection(url)
    kwargs: dict[str, Any] = {"retrieval": config, "vector_dtype": vector_dtype}
    if dedup_threshold is not None:
        kwargs["dedup_threshold"] = dedup_threshold
    summaries = RedisSummaryStore(connection, embeddings=emb, **kwargs)
    memory = TieredMemory(
        history=InMemoryHistoryStore(), tags=InMemoryTagStore(), summaries=summaries
    )
    scores = Scores()
    given = kept = 0
    latencies = []
    for conv in convs:
        user = f"{prefix}-{conv.sample_id}"
        memory.forget_user(user)
        for n, (when, items) in sorted(conv.sessions.items()):
            ids = memory.add_summaries(
                user, items, created_at=when, metadata={"session": n, "sample_id": conv.sample_id}
            )
            given += len(items)
            kept += len(ids)
        for question, evidence, category in conv.questions:
            for k in ks:
                t0 = time.perf_counter()
                docs = memory.recall_summaries(user, question, n=k)
                if second is not None and docs:
                    docs = _second_retrieval(memory, user, question, docs, k, second)
                latencies.append(time.perf_counter() - t0)
                scores.add(k, category, recall_of([d.metadata["session"] for d in docs], evidence))
        memory.forget_user(user)
    connection.close()
    info = {"given": given, "kept": kept, "ms": 1e3 * float(np.median(latencies))}
    return scores, info


def _second_retrieval(
    memory: TieredMemory, user: str, question: str, first: list[Any], k: int, how: str
) -> list[Any]:
    """Issue 70 item 3: a second retrieval with the question and the first result
    (pseudo-relevance feedback), for questions that need two memories. ``"conversation"``:
    the top item and the question as a two-turn conversation (the package's conversation
    recall: joined, the question's own best kept); ``"fused"``: the top item kept first,
    the rest a reciprocal-rank fusion of the first ranking and the question-plus-top one;
    ``"one per date"``: from the best ``3 * k``, the best item of each creation date first
    (items written together tell one episode; note that LoCoMo's session-level recall
    scores a second item of a found session as nothing, which rewards this by construction).
    """
    if how == "one per date":
        deeper = memory.recall_summaries(user, question, n=3 * k)
        seen: set[object] = set()
        lead = []
        for doc in deeper:
            if doc.metadata.get("created_at") not in seen:
                seen.add(doc.metadata.get("created_at"))
                lead.append(doc)
        return (lead + [d for d in deeper if d not in lead])[:k]
    top = first[0]
    if how == "conversation":
        return memory.summaries.search_conversation(user, [top.page_content, question], k)
    again = memory.recall_summaries(user, f"{question} {top.page_content}", n=k + 1)
    rest = fuse(first[1:], [d for d in again if d.id != top.id], k=k - 1)
    return [top, *rest]


SECOND = [
    w for w in os.environ.get("LOCOMO_SECOND", "conversation,fused,one per date").split(",") if w
]


def dense_baseline(convs: list[Conversation], emb: CachedEmbeddings, ks: Sequence[int]) -> Scores:
    """The same vectors in a bare FAISS flat index: top-k by cosine, every item kept."""
    scores = Scores()
    for conv in convs:
        texts, sessions = _flat(conv)
        matrix = np.asarray(emb.embed_documents(texts), dtype=np.float32)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        index = faiss.IndexFlatIP(matrix.shape[1])
        index.add(matrix)
        for question, evidence, category in conv.questions:
            q = np.asarray([emb.embed_query(question)], dtype=np.float32)
            q /= np.linalg.norm(q)
            _, idx = index.search(q, max(ks))
            for k in ks:
                got = [sessions[i] for i in idx[0][:k] if i >= 0]
                scores.add(k, category, recall_of(got, evidence))
    return scores


def bm25_baseline(convs: list[Conversation], ks: Sequence[int]) -> Scores | None:
    """``rank_bm25`` Okapi BM25 over lower-cased word tokens (no stemming, no stop words)."""
    try:
        from rank_bm25 import BM25Okapi
    except ImportError:
        return None
    tok = re.compile(r"\w+")
    scores = Scores()
    for conv in convs:
        texts, sessions = _flat(conv)
        bm25 = BM25Okapi([tok.findall(t.lower()) for t in texts])
        for question, evidence, category in conv.questions:
            s = bm25.get_scores(tok.findall(question.lower()))
            order = np.argsort(-s, kind="stable")
            for k in ks:
                scores.add(k, category, recall_of([sessions[i] for i in order[:k]], evidence))
    return scores


def random_baseline(convs: list[Conversation], ks: Sequence[int], draws: int = 50) -> Scores:
    """Expected recall of k items drawn at random (mean of ``draws`` draws, fixed seed)."""
    rng = random.Random(0)
    scores = Scores()
    for conv in convs:
        _, sessions = _flat(conv)
        for _, evidence, category in conv.questions:
            for k in ks:
                vals = [
                    recall_of(rng.sample(sessions, min(k, len(sessions))), evidence)
                    for _ in range(draws)
                ]
                scores.add(k, category, float(np.mean(vals)))
    return scores


def _flat(conv: Conversation) -> tuple[list[str], list[int]]:
    texts, sessions = [], []
    for n, (_, items) in sorted(conv.sessions.items()):
        texts += items
        sessions += [n] * len(items)
    return texts, sessions


# ----------------------------------------------------------------------------- output


def table(title: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    print(f"\n{title}")
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print(
            "| "
            + r[0].ljust(widths[0])
            + " | "
            + " | ".join(c.rjust(w) for c, w in zip(r[1:], widths[1:]))
            + " |"
        )
    sys.stdout.flush()


def _paired(a: Scores, b: Scores, k: int, categories: Sequence[int], draws: int = 2000) -> str:
    """``a - b`` at ``k`` over the questions of ``categories``, with a 95% interval that
    resamples the questions (both systems answered the same ones, in the same order)."""
    diffs = np.array(
        [x - y for c in categories for x, y in zip(a.values[(k, c)], b.values[(k, c)], strict=True)]
    )
    if not len(diffs):
        return ""
    rng = np.random.default_rng(0)
    means = diffs[rng.integers(0, len(diffs), (draws, len(diffs)))].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return f"{diffs.mean():+.3f} [{lo:+.2f}, {hi:+.2f}]"


def _diff(a: Scores, b: Scores, k: int, category: int) -> str:
    return f"{a.category(k, category) - b.category(k, category):+.3f}"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("locomo_json")
    p.add_argument("--k", type=int, nargs="+", default=[1, 3, 5, 10])
    p.add_argument(
        "--run", choices=["observation", "session_summary", "both"], default="observation"
    )
    p.add_argument("--limit-conversations", type=int, default=None)
    p.add_argument("--redis-url", help="use this Redis instead of an embedded server")
    p.add_argument("--no-ablation", action="store_true", help="skip the per-signal ablation")
    p.add_argument(
        "--embeddings",
        choices=["e5", "torch", "onnx", "onnx-int8"],
        default="e5",
        help="multilingual-e5-small (the default), or MiniLM through sentence-transformers "
        "(torch), ONNX Runtime, or ONNX int8",
    )
    p.add_argument(
        "--vector-dtype",
        choices=["float16", "float32", "int8"],
        default="int8",
        help="how the summary store keeps vectors (default int8, the store's default)",
    )
    args = p.parse_args()
    ks = sorted(set(args.k))

    from langchain_tiered_memory.embeddings import (
        LocalMiniLMEmbeddings,
        MultilingualE5Embeddings,
        OnnxMiniLMEmbeddings,
    )

    model: Embeddings
    if args.embeddings == "e5":
        model = MultilingualE5Embeddings()
    elif args.embeddings == "torch":
        model = LocalMiniLMEmbeddings()
    else:
        model = OnnxMiniLMEmbeddings(quantize=args.embeddings == "onnx-int8")
    emb = CachedEmbeddings(model)
    tmp = None
    if args.redis_url:
        url = args.redis_url
    else:
        tmp = tempfile.TemporaryDirectory(prefix="tm-locomo-")
        server = TieredMemory.embedded(tmp.name, embeddings=emb, appendfsync="no")
        assert server.redis_url is not None
        url = server.redis_url
    runs = ["observation", "session_summary"] if args.run == "both" else [args.run]
    for run in runs:
        convs = load(args.locomo_json, run, args.limit_conversations)
        n_items = sum(len(items) for c in convs for _, items in c.sessions.values())
        n_q = sum(len(c.questions) for c in convs)
        print(
            f"\n# LoCoMo {run}: {len(convs)} conversations, {n_items} items, "
            f"{n_q} questions (categories 1-4); embeddings {args.embeddings}"
        )
        t0 = time.perf_counter()
        systems: list[tuple[str, Scores, str]] = []
        systems.append(("random (expected)", random_baseline(convs, ks), ""))
        bm = bm25_baseline(convs, ks)
        if bm is not None:
            systems.append(("BM25 alone (rank_bm25)", bm, ""))
        systems.append(("dense only: FAISS flat", dense_baseline(convs, emb, ks), ""))
        configs: list[tuple[str, RetrievalConfig | None]] = [("library default", None)]
        if not args.no_ablation:
            d = RetrievalConfig()
            configs += [
                ("  without lexical (BM25)", RetrievalConfig(lexical_weight=0.0)),
                ("  without query centering", RetrievalConfig(centering=0.0)),
                ("  without time awareness", RetrievalConfig(time_weight=0.0)),
                ("  with MMR diversity 0.2 (before)", RetrievalConfig(diversity=0.2)),
                (
                    "  lexical only added to dense",
                    RetrievalConfig(centering=0.0, time_weight=0.0, diversity=0.0),
                ),
                ("library, dense_only() config", RetrievalConfig.dense_only()),
            ]
            assert d == RetrievalConfig()
        info_default: dict[str, Any] = {}
        for i, (name, cfg) in enumerate(configs):
            scores, info = library_run(
                convs, emb, url, f"locomo{i}", ks, cfg, vector_dtype=args.vector_dtype
            )
            systems.append((name, scores, f"{info['ms']:.1f}"))
            if cfg is None:
                info_default = info
        nodedup, _ = library_run(convs, emb, url, "locomo-nodedup", ks, None, dedup_threshold=2.0)
        systems.append(("library default, de-duplication off", nodedup, ""))
        for how in SECOND:
            prf, info = library_run(convs, emb, url, f"locomo-prf-{how}", ks, None, second=how)
            name = f"second retrieval with the top item ({how})"
            systems.append((name, prf, f"{info['ms']:.1f}"))

        rows = [[name] + [f"{s.overall(k):.3f}" for k in ks] + [ms] for name, s, ms in systems]
        table(
            f"## {run}: session-level recall@k, categories 1-4 ({n_q} questions)",
            ["system"] + [f"@{k}" for k in ks] + ["recall ms p50"],
            rows,
        )
        k5 = 5 if 5 in ks else ks[len(ks) // 2]
        rows = [
            [name] + [f"{s.category(k5, c):.3f}" for c in CATEGORIES] + [f"{s.overall(k5):.3f}"]
            for name, s, _ in systems
        ]
        counts = {
            c: sum(1 for conv in convs for q in conv.questions if q[2] == c) for c in CATEGORIES
        }
        table(
            f"## {run}: recall@{k5} per category",
            ["system"] + [f"{c} {CATEGORIES[c]} ({counts[c]})" for c in CATEGORIES] + ["all"],
            rows,
        )
        default = next(s for name, s, _ in systems if name == "library default")
        dense = next(s for name, s, _ in systems if name.startswith("dense only"))
        spans = {"multi-hop": [1], "temporal": [2], "all": list(CATEGORIES)}
        rows = [
            [name.strip()] + [_paired(s, default, k5, cats) for cats in spans.values()]
            for name, s, _ in systems
            if s is not default
        ]
        table(
            f"## {run}: each system minus the library default, recall@{k5} (paired, 95%)",
            ["system", *spans],
            rows,
        )
        rows = [
            [name.strip()]
            + [_paired(s, default, k, [1]) for k in ks]
            + [_paired(s, default, k5, [4])]
            for name, s, _ in systems
            if name.startswith(("second retrieval", "  without query centering"))
        ]
        if rows:
            table(
                f"## {run}: multi-hop at each k and single-hop @{k5}, minus the default "
                "(paired, 95%)",
                ["system"] + [f"multi-hop @{k}" for k in ks] + [f"single-hop @{k5}"],
                rows,
            )
        rows = [
            [f"{c} {CATEGORIES[c]}"]
            + [f"{default.category(k, c):.3f} ({_diff(default, dense, k, c)})" for k in ks]
            for c in CATEGORIES
        ]
        table(
            f"## {run}: library default per category and k (difference to dense only)",
            ["category"] + [f"@{k}" for k in ks],
            rows,
        )
        dropped = info_default["given"] - info_default["kept"]
        print(
            f"\nde-duplication (cosine >= 0.95) kept {info_default['kept']} of "
            f"{info_default['given']} items ({dropped} dropped); recall@{k5} with it off: "
            f"{nodedup.overall(k5):.3f} vs {default.overall(k5):.3f}"
        )
        print(f"time: {time.perf_counter() - t0:.0f} s (embedding {emb.seconds:.0f} s so far)")
    if tmp is not None:
        server.close()
        tmp.cleanup()


if __name__ == "__main__":
    main()

"""Query-embedding latency of the default model's paths, in one run.

    python bench/embeddings.py [--reps 300] [--threads 1]

all-MiniLM-L6-v2 through sentence-transformers (torch), through ONNX Runtime (the default
when installed) and through ONNX Runtime with int8 weights; one short query at a time, as
a turn embeds it. Also the cosine of each path's vectors to the torch ones. Recall on
LoCoMo for each path: ``python bench/recall_locomo.py LOCOMO_JSON --embeddings onnx``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import numpy as np


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--reps", type=int, default=300)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    from langchain_tiered_memory.embeddings import LocalMiniLMEmbeddings, OnnxMiniLMEmbeddings

    queries = [f"What did the user say about topic number {i} last week?" for i in range(args.reps)]
    with tempfile.TemporaryDirectory() as cache:
        paths = {
            "sentence-transformers (torch)": LocalMiniLMEmbeddings(),
            "ONNX Runtime (default)": OnnxMiniLMEmbeddings(cache_dir=cache, threads=args.threads),
            "ONNX Runtime, int8": OnnxMiniLMEmbeddings(
                cache_dir=cache, threads=args.threads, quantize=True
            ),
        }
        reference = np.array(paths["sentence-transformers (torch)"].embed_documents(queries[:50]))
        print("| path | query p50 ms | p95 ms | min cosine to torch (50 queries) |")
        print("|---|---|---|---|")
        base = None
        for name, emb in paths.items():
            vectors = np.array(emb.embed_documents(queries[:50]))  # also loads / exports
            cosine = float((vectors * reference).sum(axis=1).min())
            times = []
            for q in queries:
                t = time.perf_counter()
                emb.embed_query(q)
                times.append(time.perf_counter() - t)
            p50 = statistics.median(times) * 1e3
            base = base or p50
            p95 = sorted(times)[int(0.95 * len(times))] * 1e3
            print(f"| {name} | {p50:.2f} ({base / p50:.1f}x) | {p95:.2f} | {cosine:.4f} |")


if __name__ == "__main__":
    main()

"""The facade's per-call time on a 150-turn thread, for checkouts compared in one run.

    python bench/facade_calls.py [--tree DIR ...] [--reps 300]

Each ``--tree`` (a checkout of the package; default: this one) is timed in a child process
of its own on its own embedded server, the trees taking turns (``--rounds``, default 5) so that a
busy moment of the machine falls on all of them. One user has a 150-turn thread (300
messages), 100 summary items and two tags; timed, sync and async: ``load`` (a turn's read),
``recall_summaries``, ``get_user_tags`` and a turn (``load`` + ``add_session_log``).
HashingEmbeddings: the query embedding, the same in every tree, is not what is compared.
Prints per tree the median over rounds of each round's p50 in microseconds, with the
lowest and highest round's, and the ratio of the last tree to the first.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


def _child(reps: int) -> dict[str, float]:
    from langchain_core.messages import AIMessage, HumanMessage

    from langchain_tiered_memory import HashingEmbeddings, TieredMemory

    results: dict[str, list[float]] = {}

    def timed(name: str, fn: object) -> None:
        samples = results.setdefault(name, [])
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()  # type: ignore[operator]
            samples.append(time.perf_counter() - t0)

    with tempfile.TemporaryDirectory() as tmp:
        memory = TieredMemory.embedded(tmp, embeddings=HashingEmbeddings())
        try:
            for i in range(150):
                memory.add_session_log(
                    "ana",
                    [HumanMessage(f"Turn {i}: I went hiking near lake {i}."), AIMessage("Nice!")],
                    thread_id="t1",
                )
            memory.add_summaries("ana", [f"The user visited lake number {i}." for i in range(100)])
            memory.set_user_tags("ana", {"name": "Ana", "age": 30})
            query = "Which lake did I visit?"
            timed("load", lambda: memory.load("ana", query, thread_id="t1"))
            timed("recall_summaries", lambda: memory.recall_summaries("ana", query))
            timed("get_user_tags", lambda: memory.get_user_tags("ana"))

            turn_no = [150]

            def turn() -> None:
                memory.load("ana", query, thread_id="t1")
                turn_no[0] += 1
                memory.add_session_log(
                    "ana", [HumanMessage(f"Turn {turn_no[0]}"), AIMessage("ok")], thread_id="t1"
                )

            timed("turn", turn)

            async def aio() -> None:
                for name, make in (
                    ("aload", lambda: memory.aload("ana", query, thread_id="t1")),
                    ("aget_user_tags", lambda: memory.aget_user_tags("ana")),
                ):
                    samples = results.setdefault(name, [])
                    for _ in range(reps):
                        t0 = time.perf_counter()
                        await make()
                        samples.append(time.perf_counter() - t0)
                await memory.aclose()

            asyncio.run(aio())
        finally:
            memory.close()
    return {name: statistics.median(s) * 1e6 for name, s in results.items()}


def main() -> None:
    """Run the trees in turns and print the table."""
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--tree", action="append", default=None, help="a checkout (repeatable)")
    p.add_argument("--reps", type=int, default=300)
    p.add_argument("--rounds", type=int, default=5, help="turns each tree takes")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        print(json.dumps(_child(args.reps)))
        return
    trees = [Path(t).resolve() for t in (args.tree or [str(HERE)])]
    runs: dict[Path, list[dict[str, float]]] = {t: [] for t in trees}
    for _ in range(args.rounds):
        for tree in trees:
            env = {**os.environ, "PYTHONPATH": str(tree)}
            out = subprocess.run(
                [sys.executable, __file__, "--child", "--reps", str(args.reps)],
                env=env,
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            runs[tree].append(json.loads(out.strip().splitlines()[-1]))
    names = list(runs[trees[0]][0])
    print("| call | " + " | ".join(f"p50 µs, {t.name} (rounds)" for t in trees) + " | ratio |")
    print("|---|" + "---:|" * (len(trees) + 1))
    for name in names:
        cells, p50 = [], []
        for t in trees:
            rounds = [r[name] for r in runs[t]]
            p50.append(statistics.median(rounds))
            cells.append(f"{p50[-1]:,.0f} ({min(rounds):,.0f}-{max(rounds):,.0f})")
        print(f"| {name} | " + " | ".join(cells) + f" | {p50[-1] / p50[0]:.2f} |")


if __name__ == "__main__":
    main()

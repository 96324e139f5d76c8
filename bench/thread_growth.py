"""What a long thread costs: checkpoint bytes and read/turn latency of the prebuilt graph.

    python bench/thread_growth.py                  # 10, 100 and 600 turns
    python bench/thread_growth.py --turns 10 100   # quicker
    python bench/thread_growth.py --graph plain    # a user's own add_messages graph
    PYTHONPATH=<older checkout> python bench/thread_growth.py   # the same on older code

One thread of the prebuilt memory graph (scripted model, 200-character messages, hashing
embeddings, memory on the embedded Redis), with each saver as its checkpointer:

- bytes: the thread's checkpoints (``MEMORY USAGE`` of its keys on Redis; the file size
  for ``SqliteSaver``), and that over the user's history tier (the same messages, once)
  and over the messages' text (issue 32's measure: at most 20x, flat per turn);
- what the Redis server holds for the thread (``INFO memory`` ``used_memory`` after the
  turns minus before: the thread, the history, the memory, every key's and field's
  overhead; the embedded server, whichever saver), over the messages' text (issue 48 item
  7). Measured after another user's three-turn thread, so what every thread shares (the
  scripts loaded, the connections' buffers, the keyspace's tables) is not counted as this
  thread's; beside it the same from a cold server, which counts them;
- ``get_tuple`` p50 of the latest checkpoint (what every step reads), and the whole-turn
  p50 over the last 10 turns (``invoke``: load, model, save).

``--graph plain`` runs a graph a user writes (LangGraph's ``MessagesState``, whose
``add_messages`` channel is the whole list in every checkpoint, one model node) instead;
its ratio is over the messages' text (it has no history tier).

Savers: the package's ``RedisSaver``, LangGraph's ``SqliteSaver`` (a file) and
``InMemorySaver`` (no bytes reported), in one process on the same turns.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig

from langchain_tiered_memory import HashingEmbeddings, TieredMemory, create_memory_graph
from langchain_tiered_memory.testing import ScriptedChatModel


@contextlib.contextmanager
def saver(name: str, memory: TieredMemory, workdir: Path) -> Iterator[tuple[Any, Any]]:
    """The saver and a function of it returning the thread's bytes (or ``None``)."""
    if name == "RedisSaver":
        redis_saver = memory.checkpointer()
        client = memory.connection.sync  # type: ignore[union-attr]

        def redis_bytes() -> int:
            keys = redis_saver.keys.thread_keys("t")
            return sum(client.memory_usage(k, samples=0) or 0 for k in keys)

        yield redis_saver, redis_bytes
    elif name == "SqliteSaver":
        import sqlite3

        from langgraph.checkpoint.sqlite import SqliteSaver

        path = workdir / "sqlite.db"
        conn = sqlite3.connect(path, check_same_thread=False)
        try:
            yield SqliteSaver(conn), lambda: path.stat().st_size
        finally:
            conn.close()
    else:
        from langgraph.checkpoint.memory import InMemorySaver

        yield InMemorySaver(), lambda: None


def plain_graph(model: Any, checkpointer: Any) -> Any:
    """The graph most LangGraph users write first: messages in, the model's reply out."""
    from langgraph.graph import START, MessagesState, StateGraph

    def call(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"][-20:])]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", call)
    builder.add_edge(START, "model")
    return builder.compile(checkpointer=checkpointer)


def run(name: str, turns: int, graph_kind: str = "prebuilt") -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        memory = TieredMemory.embedded(workdir / "redis", embeddings=HashingEmbeddings())
        with memory, saver(name, memory, workdir) as (checkpointer, size):
            model = ScriptedChatModel(replies=["r" * 200])
            if graph_kind == "plain":
                graph = plain_graph(model, checkpointer)
            else:
                graph = create_memory_graph(model, memory=memory, checkpointer=checkpointer)
            config: RunnableConfig = {"configurable": {"thread_id": "t"}}
            client = memory.connection.sync  # type: ignore[union-attr]
            used_cold = int(client.info("memory")["used_memory"])
            # another user's short thread first: what every thread shares (the scripts
            # loaded, the connections' buffers, the keyspace's tables) is not this thread's
            warm: RunnableConfig = {"configurable": {"thread_id": "warm"}}
            for turn in range(3):
                graph.invoke(
                    {"messages": [("user", f"{turn} " + "w" * 200)]},
                    warm,
                    context={"user_id": "warm"},
                )
            used_before = int(client.info("memory")["used_memory"])
            times = []
            for turn in range(turns):
                started = time.perf_counter()
                graph.invoke(
                    {"messages": [("user", f"{turn} " + "m" * 200)]},
                    config,
                    context={"user_id": "u"},
                )
                times.append(time.perf_counter() - started)
            reads = []
            for _ in range(50):
                started = time.perf_counter()
                checkpointer.get_tuple(config)
                reads.append(time.perf_counter() - started)
            # what Redis holds for all of it (the thread, the history, the memory), not only
            # the serialized bytes: each key and field has its own overhead
            used_after = int(client.info("memory")["used_memory"])
            used = used_after - used_before
            history = 0
            for key in memory.history.keys.all_keys("u"):  # type: ignore[attr-defined]
                history += int(client.memory_usage(key, samples=0) or 0)
            if graph_kind == "plain":  # no history tier: the messages' own text instead
                history = turns * (len(f"{turns} ") + 2 * 200)
            return {
                "saver": name,
                "turns": turns,
                "bytes": size(),
                "used": used,
                "used_cold": used_after - used_cold,
                "history": history,
                "text": turns * (len(f"{turns} ") + 2 * 200),
                "get_tuple": statistics.median(reads) * 1000,
                "turn": statistics.median(times[-10:]) * 1000,
            }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--turns", type=int, nargs="+", default=[10, 100, 600])
    p.add_argument("--savers", nargs="+", default=["RedisSaver", "SqliteSaver", "InMemorySaver"])
    p.add_argument("--graph", choices=["prebuilt", "plain"], default="prebuilt")
    args = p.parse_args()
    rows = []
    for turns in args.turns:
        for name in args.savers:
            rows.append(run(name, turns, args.graph))
            print(f"  {name} at {turns} turns", file=sys.stderr, flush=True)
    print(
        "| saver | turns | thread bytes | x history tier | x text "
        "| Redis used_memory Δ | x text | Δ from a cold server | x text "
        "| get_tuple p50 ms | turn p50 ms |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        size = f"{row['bytes'] / 1e6:.2f} MB" if row["bytes"] is not None else "n/a"
        ratio = f"{row['bytes'] / row['history']:.0f}" if row["bytes"] is not None else "n/a"
        text = f"{row['bytes'] / row['text']:.1f}" if row["bytes"] is not None else "n/a"
        used = f"{row['used'] / 1e6:.2f} MB | {row['used'] / row['text']:.1f}"
        used += f" | {row['used_cold'] / 1e6:.2f} MB | {row['used_cold'] / row['text']:.1f}"
        print(
            f"| {row['saver']} | {row['turns']} | {size} | {ratio} | {text} | {used} | "
            f"{row['get_tuple']:.2f} | {row['turn']:.1f} |"
        )


if __name__ == "__main__":
    main()

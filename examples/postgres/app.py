"""An app whose threads live in PostgreSQL and whose memory lives in Redis.

    pip install -e ".[local]" langgraph-checkpoint-postgres "psycopg[binary]"
    DATABASE_URL=postgresql://localhost/app python examples/postgres/app.py

The graph's checkpointer is LangGraph's ``PostgresSaver``: the package guards it (a run
of one user on another user's thread is refused before anything is written) and attaches
it, so ``forget_user`` erases the user's threads in PostgreSQL too. The memory (history,
tags, summary items) is on the embedded Redis server, or on ``REDIS_URL`` when set.
"""

from __future__ import annotations

import os

from langgraph.checkpoint.postgres import PostgresSaver

from langchain_tiered_memory import TieredMemory, create_memory_graph
from langchain_tiered_memory.defaults import default_chat_model


def main() -> None:
    """Two turns of alice on two threads, then her erasure (threads in PostgreSQL too)."""
    redis_url = os.environ.get("REDIS_URL")
    memory = TieredMemory.from_url(redis_url) if redis_url else TieredMemory.embedded()
    with memory, PostgresSaver.from_conn_string(os.environ["DATABASE_URL"]) as threads:
        threads.setup()  # creates LangGraph's tables once
        graph = create_memory_graph(default_chat_model(), memory=memory, checkpointer=threads)

        def chat(user_id: str, thread_id: str, text: str) -> str:
            config = {"configurable": {"thread_id": thread_id}}
            out = graph.invoke({"messages": [("user", text)]}, config, context={"user_id": user_id})
            return str(out["messages"][-1].content)

        print(chat("alice", "alice-1", "Hi, my name is Alice and I am 30 years old."))
        print(chat("alice", "alice-2", "How old am I?"))  # a new thread: from memory
        removed = memory.forget_user("alice")  # her threads in PostgreSQL too
        print(f"forgot alice: {removed['threads']} threads")


if __name__ == "__main__":
    main()

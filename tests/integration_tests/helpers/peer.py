"""A second app process on the same Redis, driven line by line over stdin/stdout.

Usage: python peer.py REDIS_URL KEY_PREFIX

Each stdin line is a JSON list ``[op, user, *args]``; the reply is one JSON line.
The process keeps one TieredMemory (and so one FAISS cache) for its whole life.
"""

from __future__ import annotations

import json
import sys

from langchain_tiered_memory import HashingEmbeddings, TieredMemory


def main() -> None:
    url, prefix = sys.argv[1], sys.argv[2]
    memory = TieredMemory.from_url(url, key_prefix=prefix, embeddings=HashingEmbeddings())
    for line in sys.stdin:
        op, user, *args = json.loads(line)
        if op == "load":
            snap = memory.load(user, args[0], max_messages=args[1], k=args[2])
            out: object = {
                "tags": snap.tags,
                "history": [m.content for m in snap.history],
                "recalled": [[d.id, d.page_content] for d in snap.recalled],
                "cached_users": len(memory.summaries.index_cache),  # type: ignore[attr-defined]
            }
        elif op == "tag":
            out = memory.set_user_tags(user, args[0])
        elif op == "add":
            out = memory.add_summaries(user, args[0])
        elif op == "delete":
            out = memory.summaries.delete(user, args[0])
        elif op == "forget":
            out = memory.forget_user(user)
        else:
            out = {"error": f"unknown op {op}"}
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()
    memory.close()


if __name__ == "__main__":
    main()

"""Summarizer process for the concurrency tests.

Usage: python summarize_worker.py REDIS_URL KEY_PREFIX USER_ID BATCH

Runs ``summarize_history`` with the echo model until the watermark reaches the history
length, then prints ``done <number of summarize calls that stored something>``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from helpers.fakes import EchoSummarizer, RandomEmbeddings  # noqa: E402
from langchain_tiered_memory import TieredMemory  # noqa: E402


def main() -> None:
    url, prefix, user_id, batch = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    model = EchoSummarizer()
    stored = 0
    with TieredMemory.from_url(url, key_prefix=prefix, embeddings=RandomEmbeddings()) as memory:
        while memory.summaries.get_watermark(user_id) < memory.history.length(user_id):
            if memory.summarize_history(user_id, model, max_messages=batch):
                stored += 1
    print("done", stored, flush=True)


if __name__ == "__main__":
    main()

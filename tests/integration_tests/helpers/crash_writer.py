"""Writer process for the kill -9 tests: appends turns forever, printing each ack.

Usage: python crash_writer.py DATA_DIR USER_ID THREADS FIRST_WRITER APPENDFSYNC

Prints ``ready`` once the embedded server is up, then ``ack <writer> <seq>`` after each
turn's append returned (i.e. was acknowledged by Redis). Never exits on its own.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from helpers.fakes import turn  # noqa: E402
from langchain_tiered_memory import HashingEmbeddings, TieredMemory  # noqa: E402


def main() -> None:
    data_dir, user_id = sys.argv[1], sys.argv[2]
    threads, first, fsync = int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    memory = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings(), appendfsync=fsync)
    out_lock = threading.Lock()
    memory.get_user_tags(user_id)  # connect before announcing readiness
    print("ready", flush=True)

    def write(writer: int) -> None:
        seq = 0
        while True:
            memory.add_session_log(user_id, turn(writer, seq))
            with out_lock:
                sys.stdout.write(f"ack {writer} {seq}\n")
                sys.stdout.flush()
            seq += 1

    workers = [
        threading.Thread(target=write, args=(first + w,), daemon=True) for w in range(threads)
    ]
    for t in workers:
        t.start()
    for t in workers:
        t.join()


if __name__ == "__main__":
    main()

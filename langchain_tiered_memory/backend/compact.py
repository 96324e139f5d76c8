"""Rewriting the embedded server's files (``EmbeddedRedis.compact``): a background
command sent, then waited for until its forked child is done.
"""

from __future__ import annotations

import time

import redis

from langchain_tiered_memory.errors import MemoryBackendError

__all__ = ["run_in_background"]


def run_in_background(client: redis.Redis, command: str, what: str, deadline: float) -> None:
    """Run ``command`` (``BGREWRITEAOF``, ``BGSAVE``) and wait until the forked child is
    done; one of the same kind already running (it may predate an erasure) is waited for
    first, then the command is sent again.

    Raises:
        MemoryBackendError: the child did not finish by ``deadline`` (``time.monotonic``).
    """

    def busy() -> bool:
        info = client.info("persistence")
        return bool(info.get(f"{what}_in_progress") or info.get(f"{what}_scheduled"))

    def wait() -> None:
        while busy():
            if time.monotonic() > deadline:
                raise MemoryBackendError(
                    f"the embedded redis-server did not finish {command} in time; the "
                    "erased data may stay on disk until its next rewrite. Try again."
                )
            time.sleep(0.02)

    wait()  # one already running may have started before the erasure
    try:
        client.execute_command(command)
    except redis.exceptions.ResponseError as exc:
        if "already in progress" not in str(exc) and "scheduled" not in str(exc):
            raise
    time.sleep(0.01)
    wait()

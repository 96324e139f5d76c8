"""The embedded server's watchdog: a server whose owners are all gone shuts itself down.

The embedded redis-server runs in a session of its own, so that a crashed app's
acknowledged writes still reach disk. But an app stopped by SIGTERM (``timeout``, a service
manager) or kill -9 never runs its clean-up, and its server then ran with no client for
good. Every process using the server holds a shared lock on ``.redis.clients`` (the kernel
drops a dead process's locks), so "no owner" is a lock anyone can test. The watchdog, which
:func:`~langchain_tiered_memory.backend.server.spawn_watchdog` starts beside each server,
polls: once no process is attached *and* no client is connected (a console or a script on
the socket URL is a user too) for the grace period, it takes the start lock (so no process
attaches meanwhile), checks again, and shuts the server down with a save. A process that
opens the data dir during the grace reuses the running server. The watchdog ends with its
server, whoever stops it.

Run as ``python -m langchain_tiered_memory.backend.watchdog DATA_DIR GRACE_SECONDS``.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import redis

from langchain_tiered_memory.backend.server import CLIENTS_LOCK, START_LOCK, EmbeddedRedis

__all__ = ["attached", "connected_clients", "shutdown_if_orphaned", "watch"]

logger = logging.getLogger(__name__)

# how long the watchdog waits for the start lock before it looks again later
_LOCK_WAIT = 5.0


def _flock(path: Path, mode: int) -> int | None:
    """An open file locked with ``mode`` (without waiting), or ``None`` if it is held."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def attached(data_dir: Path) -> bool:
    """Whether a live process is attached to the data dir's server (holds its lock)."""
    fd = _flock(data_dir / CLIENTS_LOCK, fcntl.LOCK_EX)
    if fd is None:
        return True
    os.close(fd)
    return False


def connected_clients(client: redis.Redis) -> int:
    """Clients connected to the server, the watchdog's own connection left out."""
    me = client.client_id()
    return sum(1 for c in client.client_list() if int(c.get("id", -1)) != me)


@contextlib.contextmanager
def _start_lock(data_dir: Path) -> Iterator[bool]:
    """The data dir's start lock (``True``), or ``False`` if it stays busy for a while:
    a process attaching or stopping holds it, so no decision is taken meanwhile.
    """
    deadline = time.monotonic() + _LOCK_WAIT
    fd = _flock(data_dir / START_LOCK, fcntl.LOCK_EX)
    while fd is None and time.monotonic() < deadline:
        time.sleep(0.05)
        fd = _flock(data_dir / START_LOCK, fcntl.LOCK_EX)
    try:
        yield fd is not None
    finally:
        if fd is not None:
            os.close(fd)


def shutdown_if_orphaned(server: EmbeddedRedis, client: redis.Redis) -> bool:
    """With the start lock: shut the server down (saving) if still no process is attached
    and no client connected; returns whether it did.
    """
    with _start_lock(server.data_dir) as locked:
        if not locked or attached(server.data_dir) or connected_clients(client):
            return False
        logger.info("embedded redis-server of %s has no owner left: shutting down", server.data_dir)
        with contextlib.suppress(redis.exceptions.ConnectionError):
            client.shutdown(save=True)  # SHUTDOWN closes the connection before replying
        deadline = time.monotonic() + 30.0
        while server.server_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        return True


def watch(data_dir: Path, grace: float) -> None:
    """Poll until the server is gone, shutting it down after ``grace`` orphaned seconds."""
    server = EmbeddedRedis(data_dir)  # probes only: never started or attached here
    client = redis.Redis(unix_socket_path=str(server.socket_path), socket_timeout=10.0)
    try:
        pid = client.info("server").get("process_id")
        orphan_since: float | None = None
        while server.server_alive():
            try:
                if client.info("server").get("process_id") != pid:
                    return  # another server now: it has a watchdog of its own
                busy = attached(data_dir) or connected_clients(client) > 0
            except (redis.exceptions.RedisError, OSError):
                busy = True  # a slow or restarting server: look again later
            now = time.monotonic()
            orphan_since = None if busy else (orphan_since or now)
            if orphan_since is not None and now - orphan_since >= grace:
                if shutdown_if_orphaned(server, client):
                    return
                orphan_since = None
            time.sleep(min(1.0, max(grace / 4, 0.05)))
    except (redis.exceptions.RedisError, OSError):
        return  # the server went away under us: nothing left to watch
    finally:
        client.close()


if __name__ == "__main__":  # pragma: no cover - run as a process by spawn_watchdog
    watch(Path(sys.argv[1]), float(sys.argv[2]))

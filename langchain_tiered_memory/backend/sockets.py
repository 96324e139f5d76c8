"""The sockets under a :class:`~langchain_tiered_memory.backend.connection.RedisConnection`:
every read of one reply shares one deadline (a server that drips bytes cannot hold a caller
past it), and a refused connection to the embedded server restarts it.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable
from typing import Any

import redis
import redis.asyncio as aredis
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import NoBackoff
from redis.retry import Retry

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_SOCKET_TIMEOUT",
    "async_connection_class",
    "client_kwargs",
    "sync_connection_class",
]

# Bounded waits: a dead or unreachable Redis must surface as an error, never as a hang.
DEFAULT_SOCKET_TIMEOUT = 5.0
DEFAULT_CONNECT_TIMEOUT = 2.0


def client_kwargs(client_name: str | None = None, *, aio: bool = False) -> dict[str, Any]:
    """The options every client of the package is made with: bounded waits, no retries.

    Example:
        >>> client_kwargs("app")["socket_timeout"]
        5.0
    """
    retry_class = AsyncRetry if aio else Retry
    return {
        "client_name": client_name,
        "socket_timeout": DEFAULT_SOCKET_TIMEOUT,
        "socket_connect_timeout": DEFAULT_CONNECT_TIMEOUT,
        "health_check_interval": 30,
        # No retries: a command whose reply was lost may have been applied, and sending it
        # again could apply it twice; a retried timeout would also multiply the wait. A
        # stale pooled connection is replaced when redis-py checks it out, and a refused
        # connection to the embedded server restarts it (_Reviving).
        "retry": retry_class(NoBackoff(), 0),
    }


class _DeadlineSocket:
    """A socket proxy whose reads share one deadline, so a reply is bounded as a whole.

    A socket timeout bounds each ``recv``: a server dripping one byte every few seconds
    would hold a call forever. redis-py's parsers read through ``recv``/``recv_into``.
    """

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._timeout = sock.gettimeout()
        self.deadline: float | None = None

    def settimeout(self, timeout: float | None) -> None:
        self._timeout = timeout
        self._sock.settimeout(timeout)

    def gettimeout(self) -> float | None:
        return self._timeout

    def _arm(self) -> None:
        if self.deadline is None:
            return
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the reply did not arrive in time")
        self._sock.settimeout(remaining if self._timeout is None else min(self._timeout, remaining))

    def recv(self, *args: Any) -> bytes:
        self._arm()
        return self._sock.recv(*args)

    def recv_into(self, *args: Any) -> int:
        self._arm()
        return self._sock.recv_into(*args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


class _BoundedReads:
    """Connection mixin: each reply must arrive whole within ``socket_timeout``."""

    socket_timeout: float | None
    _sock: Any

    def _connect(self) -> Any:
        return _DeadlineSocket(super()._connect())  # type: ignore[misc]

    def read_response(self, *args: Any, **kwargs: Any) -> Any:
        sock = self._sock
        budget = kwargs.get("timeout")
        if not isinstance(budget, (int, float)):
            budget = self.socket_timeout
        if isinstance(sock, _DeadlineSocket) and budget:
            sock.deadline = time.monotonic() + budget
        try:
            return super().read_response(*args, **kwargs)  # type: ignore[misc]
        finally:
            if isinstance(sock, _DeadlineSocket):
                sock.deadline = None


class _Reviving:
    """Unix-socket connection mixin: a refused connection asks ``revive`` to restart the
    embedded server once, then connects again. Nothing was sent yet, so nothing repeats.
    """

    revive: Callable[[], bool] | None = None

    def _connect(self) -> Any:
        try:
            return super()._connect()  # type: ignore[misc]
        except (FileNotFoundError, ConnectionRefusedError):
            if self.revive is None or not self.revive():
                raise
            return super()._connect()  # type: ignore[misc]


class _AsyncReviving:
    """The asyncio twin of :class:`_Reviving` (the restart runs in a worker thread).

    Unlike the sync pool, the asyncio pool hands out a connection to a dead server without
    noticing; sending on it fails before the server could apply anything, so that one send
    is repeated on a fresh connection.
    """

    revive: Callable[[], bool] | None = None

    async def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        try:
            await super().send_packed_command(command, check_health)  # type: ignore[misc]
        except redis.exceptions.ConnectionError:
            if self.revive is None:
                raise
            await self.disconnect(nowait=True)  # type: ignore[attr-defined]
            await super().send_packed_command(command, check_health)  # type: ignore[misc]

    async def _connect(self) -> None:
        try:
            await super()._connect()  # type: ignore[misc]
        except (FileNotFoundError, ConnectionRefusedError):
            if self.revive is None or not await asyncio.to_thread(self.revive):
                raise
            await super()._connect()  # type: ignore[misc]


class _BoundedConnection(_BoundedReads, redis.Connection):
    pass


class _BoundedSSLConnection(_BoundedReads, redis.SSLConnection):
    pass


class _BoundedUnixConnection(_BoundedReads, redis.UnixDomainSocketConnection):
    pass


def sync_connection_class(url: str, revive: Callable[[], bool] | None) -> type[Any]:
    """The connection class of a sync client of ``url``: replies bounded as a whole, and
    with ``revive`` (the embedded server's restart), a refused connection restarts it.
    """
    scheme = url.split("://", 1)[0].lower()
    if scheme == "unix":
        if revive is None:
            return _BoundedUnixConnection
        return type(
            "EmbeddedConnection",
            (_Reviving, _BoundedUnixConnection),
            {"revive": staticmethod(revive)},
        )
    return _BoundedSSLConnection if scheme == "rediss" else _BoundedConnection


def async_connection_class(url: str, revive: Callable[[], bool] | None) -> type[Any] | None:
    """The connection class of an asyncio client of the embedded server's ``url`` that
    restarts it when refused; ``None`` (redis-py's own) for any other.
    """
    if revive is None or not url.lower().startswith("unix://"):
        return None  # asyncio replies are already bounded as a whole by socket_timeout
    return type(
        "AsyncEmbeddedConnection",
        (_AsyncReviving, aredis.UnixDomainSocketConnection),
        {"revive": staticmethod(revive)},
    )

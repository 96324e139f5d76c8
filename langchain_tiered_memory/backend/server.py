"""The embedded redis-server: found, started, shared by processes, stopped by the last.

:class:`EmbeddedRedis` supervises one server per data dir (lock files serialize starting
and stopping; the last object attached stops it); the clients that talk to it are
``_redis``'s :class:`~langchain_tiered_memory.backend.connection.RedisConnection`.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import fcntl
import hashlib
import logging
import os
import subprocess
import tempfile
import time
import weakref
from collections.abc import Iterator
from pathlib import Path

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from langchain_tiered_memory.backend.compact import run_in_background
from langchain_tiered_memory.backend.connection import translate_errors
from langchain_tiered_memory.backend.launch import (
    SERVER_ENV,
    log_cause,
    server_command,
    spawn_watchdog,
)
from langchain_tiered_memory.backend.sockets import DEFAULT_CONNECT_TIMEOUT, DEFAULT_SOCKET_TIMEOUT
from langchain_tiered_memory.errors import MemoryBackendError

logger = logging.getLogger(__name__)

__all__ = [
    "CLIENTS_LOCK",
    "DATA_DIR_ENV",
    "EmbeddedRedis",
    "SERVER_ENV",
    "START_LOCK",
    "default_data_dir",
]

DATA_DIR_ENV = "TIERED_MEMORY_HOME"
_UNIX_SOCKET_MAX = 100  # sun_path is 108 bytes on Linux; leave room
_FSYNC_MODES = frozenset({"always", "everysec", "no"})
# Lock files in the data dir (see EmbeddedRedis): start/stop serialization, the server's
# own liveness lock, and the attached objects' shared lock.
START_LOCK = ".redis.lock"
SERVER_LOCK = ".redis.server"
CLIENTS_LOCK = ".redis.clients"

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


def default_data_dir() -> Path:
    """The data directory used when none is given: ``$TIERED_MEMORY_HOME`` or a user dir."""
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(Path.home(), ".local", "share")
    return Path(base) / "langchain-tiered-memory"


def _make_private_dir(data_dir: Path) -> None:
    """Create the data dir (0700); one that cannot be made (a read-only HOME) names where
    else the data can go.
    """
    try:
        data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise OSError(
            exc.errno,
            f"cannot create the embedded server's data dir {data_dir} ({exc.strerror}): "
            f"give a writable one (--data-dir, TieredMemory.embedded(data_dir=...), or "
            f"${DATA_DIR_ENV})",
        ) from exc


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

    ``appendfsync`` is the durability window: ``"always"`` (the default for a new server:
    each write is on disk before it is acknowledged, and the server exits rather than
    acknowledge a write it could not persist, e.g. on a full disk), ``"everysec"`` (about
    0.3 ms faster per write here; a machine crash, or a full disk followed by a kill, can
    lose the last second of acknowledged writes) or ``"no"``.
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
        if not (self.data_dir / SERVER_LOCK).exists():
            return False
        fd = self._lock_file(SERVER_LOCK)
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
        # private, as a database's data dir is: the append-only and snapshot files hold
        # every user's memory (another local account read a stored PIN from them)
        _make_private_dir(self.data_dir)
        if self.data_dir.stat().st_uid == os.getuid():
            self.data_dir.chmod(0o700)
        fd = self._lock_file(START_LOCK)
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
                    fd = self._lock_file(CLIENTS_LOCK)
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
        args = server_command(self.socket_path, self.data_dir, log, self.appendfsync)
        offset = log.stat().st_size if log.exists() else 0
        lock_fd = self._lock_file(SERVER_LOCK)
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            # The server inherits the locked file: the lock lives exactly as long as the
            # server process (and its fork children) do, whoever started it.
            # A session of its own: the server must outlive a crashed app (kill -9) so
            # that acknowledged writes reach disk, and must not get the app's Ctrl-C.
            # Errors before the server opens its log file (a bad config, a bad append-only
            # file on some versions) go to stderr: into the same log.
            with open(os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "ab") as early:
                self._proc = subprocess.Popen(
                    args,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=early,
                    start_new_session=True,
                    pass_fds=(lock_fd,),
                    umask=0o077,  # its files (AOF, RDB, log) readable by this account only
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
                spawn_watchdog(self.data_dir)
                return
            time.sleep(0.02)
        self._proc.kill()
        self._proc.wait()
        raise MemoryBackendError(
            f"The embedded redis-server did not start in {self.data_dir}: "
            f"{log_cause(log, offset)}. Check that the directory is writable and not full, "
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
            probe = self._lock_file(CLIENTS_LOCK)
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

    def compact(self, timeout: float = 120.0) -> None:
        """Rewrite the server's files so that deleted data is gone from disk too.

        Redis persists by appending commands (``appendonlydir/*.incr.aof``) and by
        snapshots (``dump.rdb``): a deleted key's values stay readable in both until they
        are rewritten. Erasure (``forget_user``, ``forget_thread``) calls this on the
        package's own server: an AOF rewrite (a new base file; the old files are removed)
        and, if a snapshot exists, a new snapshot. Both run in a forked child; this waits
        for them (a rewrite already running when the erasure happened may predate it, so
        it is waited for and started again).

        Raises:
            MemoryBackendError: the server refused or did not finish in ``timeout``.
        """
        client = self._client(DEFAULT_SOCKET_TIMEOUT)
        deadline = time.monotonic() + timeout
        try:
            with translate_errors(self.url):
                run_in_background(client, "BGREWRITEAOF", "aof_rewrite", deadline)
                if (self.data_dir / "dump.rdb").exists():
                    run_in_background(client, "BGSAVE", "rdb_bgsave", deadline)
        finally:
            client.close()

    async def acompact(self, timeout: float = 120.0) -> None:
        """Async :meth:`compact` (the waiting runs in a worker thread)."""
        await asyncio.to_thread(self.compact, timeout)

    def __enter__(self) -> EmbeddedRedis:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

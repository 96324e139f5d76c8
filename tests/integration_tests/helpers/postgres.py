"""A throwaway PostgreSQL on loopback: the tests' fixture and bench/checkpoint.py use it."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

HOST = "127.0.0.1"
START_TIMEOUT = 30.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _tail(log: Path, n: int = 30) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return "(no log)"


def _pg_bindir() -> Path:
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0,
    )
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    if initdb is None:
        raise FileNotFoundError("PostgreSQL (initdb under /usr/lib/postgresql/*/bin) not found")
    return Path(initdb).parent


@contextlib.contextmanager
def postgres_server() -> Iterator[str]:
    """A throwaway PostgreSQL cluster with database ``test``, trust auth, on loopback.

    Raises:
        FileNotFoundError: PostgreSQL (or, as root, ``runuser``/the ``postgres`` user) is
            not installed.
    """
    bindir = _pg_bindir()
    as_root = os.geteuid() == 0
    if as_root:
        if shutil.which("runuser") is None:
            raise FileNotFoundError("runuser (util-linux) not found")
        try:
            import pwd

            pg_user = pwd.getpwnam("postgres")
        except KeyError as exc:
            raise FileNotFoundError(
                "system user `postgres` (comes with the postgresql package) not found"
            ) from exc

    def run_as_pg(*args: str) -> list[str]:
        return ["runuser", "-u", "postgres", "--", *args] if as_root else list(args)

    # Not under pytest's tmp dir: that is 0700 root, the postgres user could not enter it.
    base = Path(tempfile.mkdtemp(prefix="ltm-pg-"))
    data, sock, log = base / "data", base / "sock", base / "postgres.log"
    sock.mkdir()
    if as_root:
        for p in (base, sock):
            os.chown(p, pg_user.pw_uid, pg_user.pw_gid)
    port = _free_port()
    started = False
    try:
        subprocess.run(
            run_as_pg(
                str(bindir / "initdb"),
                "-D",
                str(data),
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        opts = (
            f"-p {port} -k {sock} -c listen_addresses={HOST} -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=100"
        )
        start = subprocess.run(
            run_as_pg(
                str(bindir / "pg_ctl"),
                "-D",
                str(data),
                "-l",
                str(log),
                "-o",
                opts,
                "-w",
                "-t",
                str(int(START_TIMEOUT)),
                "start",
            ),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=START_TIMEOUT + 10,
        )
        started = True
        if start.returncode != 0:
            raise RuntimeError(f"pg_ctl start failed:\n{start.stdout}\n{_tail(log)}")
        subprocess.run(
            [str(bindir / "createdb"), "-h", HOST, "-p", str(port), "-U", "postgres", "test"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        )
        yield f"postgresql://postgres@{HOST}:{port}/test"
    except subprocess.CalledProcessError as exc:
        raise RuntimeError(f"{exc.cmd} failed:\n{exc.stdout}{exc.stderr}\n{_tail(log)}") from exc
    finally:
        if started:
            _stop_postgres(bindir, data, run_as_pg)
        shutil.rmtree(base, ignore_errors=True)


def _stop_postgres(bindir: Path, data: Path, run_as_pg: Callable[..., list[str]]) -> None:
    pidfile = data / "postmaster.pid"
    pid = int(pidfile.read_text().split()[0]) if pidfile.exists() else None
    stop = subprocess.run(
        run_as_pg(str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
    )
    if stop.returncode != 0 and pid is not None:
        # pg_ctl setsid()s the postmaster, so its pid is also its process group
        for kill in (os.killpg, os.kill):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                kill(pid, signal.SIGKILL)

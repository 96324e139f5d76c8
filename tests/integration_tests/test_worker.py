"""The summarization queue on Redis Streams and its workers, on real servers.

The echo summarizer stores one item per message ("remembered: <text>"), so "summarized
exactly once" is checkable: every message has exactly one item, and none has two.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.fakes import EchoSummarizer, RandomEmbeddings
from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory import EmbeddedRedis, TieredMemory
from langchain_tiered_memory.summarization.worker import SummaryWorker

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def embedded_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server = EmbeddedRedis(tmp_path_factory.mktemp("worker-embedded")).start()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(params=["embedded", "cluster"])
def any_url(request: pytest.FixtureRequest) -> str:
    """The kill -9 and race cases run on the embedded server and on the 3-master Cluster."""
    fixture = {"embedded": "embedded_url", "cluster": "redis_cluster_url"}[request.param]
    return str(request.getfixturevalue(fixture))


def _memory(url: str, prefix: str, **options: Any) -> TieredMemory:
    return TieredMemory.from_url(url, key_prefix=prefix, embeddings=RandomEmbeddings(), **options)


def _talk(memory: TieredMemory, users: list[str], turns: int) -> None:
    for user in users:
        for t in range(turns):
            memory.add_session_log(user, [HumanMessage(f"{user} says {t}"), AIMessage(f"ok {t}")])


def _assert_each_message_summarized_once(
    memory: TieredMemory, users: list[str], turns: int
) -> None:
    for user in users:
        texts = Counter(d.page_content for d in memory.summaries.get_all(user))
        wanted = {f"remembered: {user} says {t}" for t in range(turns)}
        assert {t for t in texts if t.startswith(f"remembered: {user} says")} == wanted, user
        assert max(texts.values()) == 1, f"{user} summarized twice: {texts.most_common(2)}"
        assert memory.summaries.get_watermark(user) == memory.history.length(user)


def _drain(memory: TieredMemory, **options: Any) -> Any:
    async def main() -> Any:
        worker = SummaryWorker(memory, EchoSummarizer(), reconcile=False, **options)
        stats = await worker.run(once=True, poll_interval=0.05)
        queue_stats = await memory.queue.astats()  # type: ignore[union-attr]
        await memory.aclose()
        return stats, queue_stats

    return asyncio.run(main())


def test_turns_enqueue_each_due_user_once_and_a_worker_drains_them(
    embedded_url: str, key_prefix: str
) -> None:
    memory = _memory(embedded_url, key_prefix, summarize_after=4)
    users = [f"u{i}" for i in range(12)]
    _talk(memory, users, 3)  # 6 messages each: due after the 2nd turn, queued once
    _talk(memory, ["idle"], 1)  # 2 messages: not due
    queue = memory.queue
    assert queue is not None
    raw = memory.connection.sync  # type: ignore[union-attr]
    entries = sum(raw.xlen(queue.keys.queue_key(s, "stream")) for s in range(queue.shards))
    assert entries == len(users)  # at most once while pending
    memory.sweep_pending()  # the index now answers pending_users
    assert memory.pending_users(4) == sorted(users)
    assert memory.pending_users(1) == sorted([*users, "idle"])
    stats, after = _drain(memory, concurrency=4)
    assert stats.done == len(users) and stats.failed == 0
    assert after == {"queued": 0, "unacked": 0, "pending_users": 1}  # only "idle" is left
    check = _memory(embedded_url, key_prefix)
    with check:
        _assert_each_message_summarized_once(check, users, 3)
        assert check.pending_users(1) == ["idle"]
        for shard in range(queue.shards):
            assert check.connection.sync.xlen(queue.keys.queue_key(shard, "stream")) == 0  # type: ignore[union-attr]


def test_a_worker_with_a_lower_threshold_summarizes_users_the_app_did_not_queue(
    embedded_url: str, key_prefix: str
) -> None:
    """``tiered-memory worker --once --min-messages 1``: the app queues at 20 messages; a
    user with 4 is indexed but not queued, and the worker's own threshold makes it due.
    """
    app = _memory(embedded_url, key_prefix, summarize_after=20)
    _talk(app, ["dana"], 2)
    app.sweep_pending()  # a sweep ran before (at the app's threshold): none at start now
    assert app.queue is not None and app.queue.indexed_users() == {"dana"}
    app.close()
    worker_memory = _memory(embedded_url, key_prefix, summarize_after=1)
    stats, after = _drain(worker_memory)
    assert stats.done == 1 and after["pending_users"] == 0
    with _memory(embedded_url, key_prefix) as check:
        _assert_each_message_summarized_once(check, ["dana"], 2)


def test_pending_users_reads_the_index_and_touches_no_idle_user(
    embedded_url: str, key_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _memory(embedded_url, key_prefix) as memory:
        _talk(memory, [f"idle{i}" for i in range(30)], 1)
        _talk(memory, ["busy"], 5)
        assert memory.pending_users(10) == ["busy"]  # no sweep yet: the SCAN path
        memory.sweep_pending()

        def no_scan() -> list[str]:
            raise AssertionError("pending_users scanned the users")

        monkeypatch.setattr(memory.history, "users", no_scan)
        assert memory.pending_users(10) == ["busy"]
        memory.summarize_history("busy", EchoSummarizer(), reconcile=False)
        assert memory.pending_users(10) == []  # settled by the in-process summarization


def test_two_workers_racing_summarize_each_message_once(any_url: str, key_prefix: str) -> None:
    memory = _memory(any_url, key_prefix, summarize_after=2)
    users = [f"r{i}" for i in range(40)]
    _talk(memory, users, 2)
    memory.close()
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                str(HERE / "helpers" / "queue_worker.py"),
                any_url,
                key_prefix,
                "4",
                "0.02",
                "--once",
                "--go",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    for proc in procs:  # both connected before either starts: a real race
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    outputs = [p.communicate(timeout=120)[0] for p in procs]
    for p in procs:
        assert p.returncode == 0
    done = [
        int(line.split()[1])
        for out in outputs
        for line in out.splitlines()
        if line.startswith("stats")
    ]
    assert sum(done) >= len(users) and all(d > 0 for d in done), outputs  # both worked
    with _memory(any_url, key_prefix) as check:
        _assert_each_message_summarized_once(check, users, 2)


def test_a_killed_workers_users_are_claimed_and_summarized_once(
    any_url: str, key_prefix: str
) -> None:
    memory = _memory(any_url, key_prefix, summarize_after=2)
    users = [f"k{i}" for i in range(16)]
    _talk(memory, users, 2)
    memory.close()
    victim = subprocess.Popen(
        [
            sys.executable,
            str(HERE / "helpers" / "queue_worker.py"),
            any_url,
            key_prefix,
            "4",
            "0.4",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert victim.stdout is not None and victim.stdout.readline().strip() == "ready"
    time.sleep(1.0)  # it holds users, some summarized, some mid-call
    victim.kill()  # SIGKILL: no ack for the users it held
    victim.wait(10)
    with _memory(any_url, key_prefix) as memory:
        unacked = asyncio.run(memory.queue.astats())["unacked"]  # type: ignore[union-attr]
    assert unacked > 0  # it died holding users
    time.sleep(1.1)  # past claim_after
    rescuer = subprocess.run(
        [
            sys.executable,
            str(HERE / "helpers" / "queue_worker.py"),
            any_url,
            key_prefix,
            "4",
            "0.0",
            "--once",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert rescuer.returncode == 0, rescuer.stderr
    with _memory(any_url, key_prefix) as check:
        _assert_each_message_summarized_once(check, users, 2)
        assert asyncio.run(check.queue.astats()) == {"queued": 0, "unacked": 0, "pending_users": 0}  # type: ignore[union-attr]


def test_user_ttl_expires_every_key_of_an_inactive_user(embedded_url: str, key_prefix: str) -> None:
    from support_keys import user_keys

    # Time is moved on the server (PEXPIRE), not slept through: every assertion holds
    # however long a step takes (issue 47 item 4).
    with _memory(embedded_url, key_prefix, user_ttl=600.0) as memory:
        memory.add_session_log("gone", [HumanMessage("I'm Gone, 40."), AIMessage("Hi")])
        memory.set_user_tags("gone", {"name": "Gone"})
        memory.add_summaries("gone", ["Gone is 40."])
        memory.add_session_log("kept", [HumanMessage("hello"), AIMessage("hi")])
        assert memory.connection is not None
        raw = memory.connection.sync
        gone, kept = user_keys(memory, "gone"), user_keys(memory, "kept")
        assert gone and kept
        assert all(0 < raw.pttl(k) <= 600_000 for k in gone | kept)  # every key has it

        def age(keys: set[str], left_ms: int) -> None:
            for k in keys:
                raw.pexpire(k, left_ms)

        age(gone | kept, 60_000)  # nine of the ten minutes have passed
        memory.load("kept", "hello")  # a load restarts the user's clock
        memory.sweep_pending()  # a sweep restarts nobody's: it only reads
        assert all(raw.pttl(k) > 60_000 for k in kept)
        assert all(raw.pttl(k) <= 60_000 for k in gone)
        age(gone, 1)  # and now all ten, for the one not seen since
        deadline = time.monotonic() + 30
        while user_keys(memory, "gone"):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert user_keys(memory, "kept") == kept
        assert memory.export_user("gone")["tags"] == {}


def test_the_queue_shards_over_the_cluster(redis_cluster_url: str, key_prefix: str) -> None:
    memory = _memory(redis_cluster_url, key_prefix, summarize_after=2)
    users = [f"c{i}" for i in range(24)]
    _talk(memory, users, 1)
    queue = memory.queue
    assert queue is not None
    client = memory.connection.sync  # type: ignore[union-attr]
    nodes = {
        client.get_node_from_key(queue.keys.queue_key(s, "stream")).name  # type: ignore[union-attr]
        for s in range(queue.shards)
        if client.xlen(queue.keys.queue_key(s, "stream"))
    }
    assert len(nodes) >= 2  # the streams live on more than one master
    stats, after = _drain(memory, concurrency=4)
    assert stats.done == len(users) and after["unacked"] == 0
    with _memory(redis_cluster_url, key_prefix) as check:
        _assert_each_message_summarized_once(check, users, 1)


def test_worker_command_drains_once_and_stops_on_sigterm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import signal

    import langchain_tiered_memory.cli.commands as commands
    from langchain_tiered_memory.cli import main

    data_dir = tmp_path / "data"
    memory = TieredMemory.embedded(data_dir, embeddings=RandomEmbeddings(), summarize_after=4)
    with memory:
        _talk(memory, ["w1", "w2"], 3)
    monkeypatch.setattr(commands, "load_chat_model", lambda *a, **k: (EchoSummarizer(), False))
    common = ["--data-dir", str(data_dir), "--embeddings", "hashing"]
    code = main(["worker", "--once", "--min-messages", "4", "--concurrency", "2", *common])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "done 2  failed 0" in " ".join(err.split("\n"))
    with TieredMemory.embedded(data_dir, embeddings=RandomEmbeddings()) as check:
        _assert_each_message_summarized_once(check, ["w1", "w2"], 3)

    # without --once it waits for work until SIGTERM, then exits cleanly
    proc = subprocess.Popen(
        [sys.executable, "-m", "langchain_tiered_memory.cli", "worker", "--model", "fake", *common],
        stderr=subprocess.PIPE,
        text=True,
    )
    # its first progress line comes from the running loop, after the signal handlers are
    # in place (a fixed sleep raced a slow start on a loaded machine: killed, -15)
    assert proc.stderr is not None
    seen: list[str] = []
    while not any(line.startswith("done ") for line in seen):
        line = proc.stderr.readline()
        assert line, f"the worker exited before working: {''.join(seen)}"
        seen.append(line)
    assert proc.poll() is None  # still waiting for work
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, "".join(seen) + err
    assert "done 0  failed 0" in "".join(seen) + err


@pytest.mark.parametrize("bad", ["", "x" * 300])
def test_an_entry_with_an_invalid_user_id_is_dead_lettered_once(
    embedded_url: str, key_prefix: str, bad: str
) -> None:
    """It failed every claim forever; now it is acknowledged, recorded and not retried."""
    memory = _memory(embedded_url, key_prefix, summarize_after=2)
    queue = memory.queue
    assert queue is not None
    _talk(memory, ["good"], 2)
    raw = memory.connection.sync  # type: ignore[union-attr]
    raw.xadd(queue.keys.queue_key(0, "stream"), {"user": bad})  # planted: no turn writes it
    stats, after = _drain(memory, concurrency=2)
    assert stats.done == 1 and stats.failed == 1
    assert after["unacked"] == 0 and after["queued"] == 0
    check = _memory(embedded_url, key_prefix)
    with check:
        conn = check.connection.sync  # type: ignore[union-attr]
        dead: Any = conn.xrange(queue.keys.queue_key(0, "dead"))
        assert [fields[b"user"].decode() for _, fields in dead] == [bad[:300]]
        assert b"user_id" in dead[0][1][b"reason"]
        assert conn.xlen(queue.keys.queue_key(0, "stream")) == 0
    # a second drain finds nothing to do or to claim
    stats, after = _drain(_memory(embedded_url, key_prefix), concurrency=2, claim_after=0.01)
    assert stats.done == 0 and stats.failed == 0 and stats.claimed == 0

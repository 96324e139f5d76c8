"""Reliability of the core API on real servers: concurrent writers, crashes, Redis faults.

Figures (see the module constants): 50 threads and 50 asyncio tasks x 20 turns of 3-5
messages; summarizers racing in threads, asyncio tasks and processes; kill -9 of writer
processes and of the embedded redis-server; an unreachable, stopped, killed, paused and
sleeping Redis. Every check is "nothing acknowledged is lost, nothing is torn or doubled".
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from helpers.fakes import (
    EchoSummarizer,
    RandomEmbeddings,
    assert_each_writer_in_order,
    split_turns,
    turn,
)
from helpers.servers import RedisProcess, free_port, raw_client
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import HumanMessage
from pydantic import BaseModel, Field, create_model

from langchain_tiered_memory import (
    HashingEmbeddings,
    MemoryBackendError,
    SummarizationError,
    TieredMemory,
)
from langchain_tiered_memory.testing import ScriptedChatModel

HELPERS = Path(__file__).resolve().parent / "helpers"
WRITERS = 50
TURNS_PER_WRITER = 20
NO_HANG = 30.0  # seconds: "an error, not a hang"; not a performance bound


def memory_on(url: str, prefix: str, **kwargs: Any) -> TieredMemory:
    kwargs.setdefault("embeddings", RandomEmbeddings())
    return TieredMemory.from_url(url, key_prefix=prefix, **kwargs)


def all_messages(memory: TieredMemory, user: str) -> list[Any]:
    first, messages = memory.history.since(user, 0)
    assert first == 0
    return messages


def expected_turns(writers: range, turns: int) -> set[tuple[int, int]]:
    return {(w, s) for w in writers for s in range(turns)}


# =========================================================================== concurrency


def test_50_threads_append_turns_exactly_once_contiguous_in_order(
    redis_server_url: str, key_prefix: str
) -> None:
    with memory_on(redis_server_url, key_prefix) as memory:
        start = threading.Barrier(WRITERS)

        def writer(w: int) -> None:
            start.wait()
            for s in range(TURNS_PER_WRITER):
                memory.add_session_log("alice", turn(w, s))

        with ThreadPoolExecutor(WRITERS) as pool:
            list(pool.map(writer, range(WRITERS)))

        messages = all_messages(memory, "alice")
        turns = split_turns(messages)
        assert len(turns) == len(set(turns)), "a turn was stored twice"
        assert set(turns) == expected_turns(range(WRITERS), TURNS_PER_WRITER)
        assert_each_writer_in_order(turns)
        assert memory.history.length("alice") == len(messages)
        # the writers really interleaved (otherwise this test proves little)
        assert len({w for w, _ in turns[: TURNS_PER_WRITER * 2]}) > 2
        memory.forget_user("alice")


async def test_50_asyncio_tasks_append_turns_exactly_once_contiguous_in_order(
    redis_server_url: str, key_prefix: str
) -> None:
    memory = memory_on(redis_server_url, key_prefix)
    try:

        async def writer(w: int) -> None:
            for s in range(TURNS_PER_WRITER):
                await memory.aadd_session_log("bob", turn(w, s))
                await asyncio.sleep(0)

        await asyncio.gather(*(writer(w) for w in range(WRITERS)))
        first, messages = await memory.history.asince("bob", 0)
        turns = split_turns(messages)
        assert len(turns) == len(set(turns))
        assert set(turns) == expected_turns(range(WRITERS), TURNS_PER_WRITER)
        assert_each_writer_in_order(turns)
        assert len({w for w, _ in turns[: TURNS_PER_WRITER * 2]}) > 2
        await memory.aforget_user("bob")
    finally:
        await memory.aclose()


def many_tags(n: int) -> type[BaseModel]:
    fields: dict[str, Any] = {f"t{i}": (int | None, Field(default=None, ge=0)) for i in range(n)}
    return create_model("ManyTags", **fields)


def assert_summaries_tile_history(memory: TieredMemory, user: str) -> int:
    """Items cover the history once: ranges tile [0, length), one item per message.

    Returns the number of summarization batches.
    """
    messages = all_messages(memory, user)
    length = memory.history.length(user)
    assert len(messages) == length
    assert memory.summaries.get_watermark(user) == length
    docs = memory.summaries.get_all(user)
    texts = Counter(d.page_content for d in docs)
    doubled = [t for t, c in texts.items() if c > 1]
    assert not doubled, f"items stored twice: {doubled[:3]}"
    ranges = sorted({(d.metadata["source_start"], d.metadata["source_end"]) for d in docs})
    assert ranges, "nothing was summarized"
    # A batch of assistant messages alone stores no item (issue 44: nothing the assistant
    # said becomes a fact), so its stretch has no range: a stretch without a range holds
    # no user message; ranges never overlap. (Which batch ends up assistant-only depends
    # on how the racing summarizers cut the history: the last one did, once, under load.)
    bounds = [(0, 0), *ranges, (length, length)]
    for (_, end), (start, _) in zip(bounds, bounds[1:]):
        assert start >= end, f"overlap between ranges ending {end} and starting {start}"
        skipped = [p for p in range(end, start) if isinstance(messages[p], HumanMessage)]
        assert not skipped, f"user messages {skipped} are in no summarized range"
    # one item per user message; an assistant message's echo only where it is grounded in
    # the user's words of its batch (the summarizer drops assistant-only chatter)
    by_text = {d.page_content: d.metadata for d in docs}
    humans = 0
    for pos, message in enumerate(messages):
        meta = by_text.get(f"remembered: {message.content}")
        if isinstance(message, HumanMessage):
            humans += 1
            assert meta is not None, f"message {pos} ({message.content!r}) has no item"
        if meta is not None:
            assert meta["source_start"] <= pos < meta["source_end"]
    assert humans <= len(docs) <= len(messages)
    return len(ranges)


def test_concurrent_tags_appends_and_summaries_for_one_user(
    redis_server_url: str, key_prefix: str
) -> None:
    """Taggers, appenders and summarizers (threads and asyncio) all at once on one user."""
    n_tags, rounds = 40, 15
    schema = many_tags(n_tags)
    model = EchoSummarizer()
    with memory_on(redis_server_url, key_prefix, tag_schema=schema) as memory:
        appending = threading.Event()
        appending.set()
        stored_batches: list[int] = []
        errors: list[BaseException] = []

        def tagger(i: int) -> None:
            for v in range(rounds):
                memory.set_user_tags("carol", {f"t{i}": v})

        def pair_tagger(i: int) -> None:  # two tags in one call: all or nothing
            for v in range(rounds):
                memory.set_user_tags("carol", {f"t{i}": v, f"t{(i + 1) % n_tags}": v})

        def appender(w: int) -> None:
            for s in range(10):
                memory.add_session_log("carol", turn(w, s))

        def summarizer(seed: int) -> None:
            rng = random.Random(seed)
            try:
                while appending.is_set() or (
                    memory.summaries.get_watermark("carol") < memory.history.length("carol")
                ):
                    ids = memory.summarize_history("carol", model, max_messages=rng.randint(2, 12))
                    stored_batches.append(len(ids))
            except BaseException as exc:  # surfaced below
                errors.append(exc)

        async def async_summarizers() -> None:
            aio = memory_on(redis_server_url, key_prefix, tag_schema=schema)
            try:

                async def one(seed: int) -> None:
                    rng = random.Random(seed)
                    while appending.is_set() or (
                        await aio.summaries.aget_watermark("carol")
                        < await aio.history.alength("carol")
                    ):
                        ids = await aio.asummarize_history(
                            "carol", model, max_messages=rng.randint(2, 12)
                        )
                        stored_batches.append(len(ids))

                await asyncio.gather(*(one(100 + i) for i in range(4)))
            finally:
                await aio.aclose()

        summarizers = [threading.Thread(target=summarizer, args=(i,)) for i in range(4)]
        summarizers.append(threading.Thread(target=lambda: asyncio.run(async_summarizers())))
        for t in summarizers:
            t.start()
        with ThreadPoolExecutor(40) as pool:
            jobs = [pool.submit(tagger, i) for i in range(0, n_tags, 2)]
            jobs += [pool.submit(pair_tagger, i) for i in range(1, n_tags, 2)]
            jobs += [pool.submit(appender, w) for w in range(8)]
            for job in jobs:
                job.result()
        appending.clear()
        for t in summarizers:
            t.join(60)
            assert not t.is_alive()
        assert not errors, errors

        tags = memory.get_user_tags("carol")
        assert tags == {f"t{i}": str(rounds - 1) for i in range(n_tags)}, "a tag was lost"
        turns = split_turns(all_messages(memory, "carol"))
        assert sorted(turns) == sorted(expected_turns(range(8), 10))
        batches = assert_summaries_tile_history(memory, "carol")
        assert batches == sum(1 for n in stored_batches if n)
        memory.forget_user("carol")


def test_summarizer_processes_and_threads_race_without_double_items(
    redis_server_url: str, key_prefix: str
) -> None:
    with memory_on(redis_server_url, key_prefix) as memory:
        for s in range(60):
            memory.add_session_log("dave", turn(s % 7, s))
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    str(HELPERS / "summarize_worker.py"),
                    redis_server_url,
                    key_prefix,
                    "dave",
                    str(batch),
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for batch in (3, 5, 8)
        ]
        model = EchoSummarizer()

        def local(batch: int) -> int:
            stored = 0
            while memory.summaries.get_watermark("dave") < memory.history.length("dave"):
                stored += bool(memory.summarize_history("dave", model, max_messages=batch))
            return stored

        with ThreadPoolExecutor(3) as pool:
            local_stored = sum(pool.map(local, (4, 6, 7)))
        remote_stored = 0
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
            remote_stored += int(out.split()[-1])
        batches = assert_summaries_tile_history(memory, "dave")
        assert batches == local_stored + remote_stored
        memory.forget_user("dave")


# =========================================================================== crashes


def _read_acks(proc: subprocess.Popen[str], until: int) -> set[tuple[int, int]]:
    """Read ``ack w s`` lines until ``until`` acks (or EOF after a kill)."""
    assert proc.stdout is not None
    acks: set[tuple[int, int]] = set()
    for line in proc.stdout:
        parts = line.split()
        if parts[:1] == ["ack"]:
            acks.add((int(parts[1]), int(parts[2])))
            if len(acks) >= until:
                break
    return acks


def _server_pid(memory: TieredMemory) -> int:
    with raw_client(memory.redis_url or "") as r:
        return int(r.info("server")["process_id"])


def _kill_server(memory: TieredMemory) -> int:
    pid = _server_pid(memory)
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        # a zombie child of this process still "exists": reap it if it is ours
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                break
        except ChildProcessError:
            pass
        time.sleep(0.02)
    return pid


def test_kill_9_writer_process_loses_no_acknowledged_turn(tmp_path: Path) -> None:
    """Three writer processes (4 threads each) on one embedded data dir, each kill -9'd
    mid-burst; every acknowledged turn survives and every stored turn is whole."""
    data_dir = tmp_path / "emb"
    threads, rounds = 4, 3
    acked: set[tuple[int, int]] = set()
    for r in range(rounds):
        proc = subprocess.Popen(
            [
                sys.executable,
                str(HELPERS / "crash_writer.py"),
                str(data_dir),
                "erin",
                str(threads),
                str(r * threads),
                "everysec",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            acked |= _read_acks(proc, until=150 + 50 * r)
        finally:
            proc.kill()  # SIGKILL, in the middle of the burst
            proc.wait(10)
        acked |= _read_acks(proc, until=10**9)  # acks printed before the kill
        assert proc.returncode == -signal.SIGKILL
    memory = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings())
    try:
        turns = split_turns(all_messages(memory, "erin"))  # every stored turn is whole
        stored = set(turns)
        assert len(stored) == len(turns), "a turn was stored twice"
        assert acked <= stored, f"acknowledged turns lost: {sorted(acked - stored)[:5]}"
        # at most the turn each writer thread had in flight is stored without an ack
        assert len(stored - acked) <= threads * rounds
        assert_each_writer_in_order(turns)
        for w in range(threads * rounds):  # no writer skips a turn
            seqs = sorted(s for ww, s in stored if ww == w)
            assert seqs == list(range(len(seqs)))
        print(
            f"kill -9 writers: {rounds} kills, {len(acked)} acked, {len(stored)} stored, "
            f"{len(stored - acked)} stored unacked (in flight), 0 lost"
        )
    finally:
        # the server outlived the writers (its own session); this memory only attached
        _kill_server(memory)
        memory.close()


def test_kill_9_embedded_redis_mid_burst_keeps_every_acknowledged_turn(tmp_path: Path) -> None:
    """appendfsync=always: a write is on disk before Redis acknowledges it, so killing the
    server in the middle of a burst (4 writer threads) loses no acknowledged turn. A writer
    whose turn was in flight gets a MemoryBackendError (and stops); the others go on, on
    the server their next connection restarted."""
    data_dir = tmp_path / "emb"
    threads = 4
    proc = subprocess.Popen(
        [
            sys.executable,
            str(HELPERS / "crash_writer.py"),
            str(data_dir),
            "kim",
            str(threads),
            "0",
            "always",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        acked = _read_acks(proc, until=200)
        with raw_client(f"unix://{data_dir.resolve() / 'redis.sock'}") as r:
            pid = int(r.info("server")["process_id"])
        os.kill(pid, signal.SIGKILL)  # the writers are mid-burst
        # until 200 more acks (writers that went on after the restart) or EOF (all died)
        acked |= _read_acks(proc, until=200)
    finally:
        proc.kill()
        proc.wait(10)
    acked |= _read_acks(proc, until=10**9)  # acks printed before the writer was killed
    memory = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings())
    try:
        turns = split_turns(all_messages(memory, "kim"))
        assert len(turns) == len(set(turns))
        assert acked <= set(turns), f"acknowledged turns lost: {sorted(acked - set(turns))[:5]}"
        # in flight, so stored without an ack: a turn per writer at each of the two kills
        assert len(set(turns) - acked) <= 2 * threads
        print(f"kill -9 redis mid-burst: {len(acked)} acked, {len(turns)} stored, 0 lost")
    finally:
        memory.close()


def test_kill_9_embedded_redis_is_restarted_by_the_next_call_with_its_data(
    tmp_path: Path,
) -> None:
    """A process whose embedded server died restarts it on its next call (issue 13.2): no
    hang, no lost data (appendfsync=always), and the restarted server is stopped by the
    last process to close."""
    data_dir = tmp_path / "emb"
    memory = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings(), appendfsync="always")
    for s in range(40):
        memory.add_session_log("frank", turn(1, s))
    memory.set_user_tags("frank", {"name": "Frank", "age": 41})
    ids = memory.add_summaries("frank", ["Frank keeps bees in his garden."])
    old_pid = _kill_server(memory)

    started = time.monotonic()
    turns = split_turns(all_messages(memory, "frank"))  # the first call after the crash
    assert time.monotonic() - started < NO_HANG
    assert turns == [(1, s) for s in range(40)]
    new_pid = _server_pid(memory)
    assert new_pid != old_pid
    assert memory.get_user_tags("frank") == {"name": "Frank", "age": "41"}
    assert [d.id for d in memory.recall_summaries("frank", "bees garden", n=1)] == ids

    async def async_call() -> None:  # the asyncio client reconnects to the new server
        assert await memory.aget_user_tags("frank") == {"name": "Frank", "age": "41"}
        _kill_server(memory)
        assert (await memory.aget_user_tags("frank"))["name"] == "Frank"
        await memory.aclose()

    asyncio.run(async_call())
    assert not (data_dir / "redis.sock").exists(), "the restarted server was not shut down"
    with pytest.raises(MemoryBackendError, match="unreachable"):  # closed: never restarts
        memory.load_context("frank")


# =========================================================================== Redis faults


@pytest.fixture
def own_redis(tmp_path: Path) -> Any:
    """A redis-server only this test uses (it gets stopped, paused and put to sleep)."""
    server = RedisProcess(tmp_path / "redis").start()
    try:
        yield server
    finally:
        server.kill()


def test_wrong_url_is_a_clear_error_within_seconds() -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    memory = TieredMemory.from_url(url, embeddings=HashingEmbeddings())
    calls = [
        lambda: memory.get_user_tags("u"),
        lambda: memory.add_session_log("u", turn(0, 0)),
        lambda: memory.load("u", "q"),
        lambda: memory.set_user_tags("u", {"age": 3}),
    ]
    for call in calls:
        started = time.monotonic()
        with pytest.raises(MemoryBackendError) as info:
            call()
        assert time.monotonic() - started < NO_HANG
        message = str(info.value)
        assert url in message
        assert message.count("unreachable") == 1, f"error wrapped twice: {message}"

    async def async_calls() -> None:
        with pytest.raises(MemoryBackendError):
            await memory.aload_context("u")
        with pytest.raises(MemoryBackendError):
            await memory.aadd_session_log("u", turn(0, 0))

    asyncio.run(async_calls())
    memory.close()


def test_server_stopped_mid_use_then_back_on_same_port(own_redis: RedisProcess) -> None:
    memory = memory_on(own_redis.url, "t")
    for s in range(5):
        memory.add_session_log("gina", turn(0, s))
    memory.set_user_tags("gina", {"name": "Gina"})

    for i, stop in enumerate((own_redis.stop, own_redis.kill)):  # shutdown, then kill -9
        stop()
        started = time.monotonic()
        with pytest.raises(MemoryBackendError):
            memory.add_session_log("gina", turn(0, 99))
        with pytest.raises(MemoryBackendError):
            memory.load("gina", "x")
        assert time.monotonic() - started < NO_HANG

        own_redis.start()  # same port; the AOF (appendfsync always) brings the data back
        memory.add_session_log("gina", turn(0, 100 + i))
        snapshot = memory.load("gina", None, max_messages=1000)
        assert snapshot.tags == {"name": "Gina"}
        assert split_turns(snapshot.history)[:5] == [(0, s) for s in range(5)]

    async def async_after_restart() -> None:
        assert (await memory.aload("gina", None)).tags == {"name": "Gina"}
        own_redis.kill()
        with pytest.raises(MemoryBackendError):
            await memory.aget_user_tags("gina")
        own_redis.start()
        assert (await memory.aload("gina", None)).tags == {"name": "Gina"}
        await memory.aclose()

    asyncio.run(async_after_restart())
    memory.close()


@pytest.mark.parametrize("fault", ["CLIENT PAUSE", "DEBUG SLEEP"])
def test_paused_or_sleeping_server_times_out_without_harm(
    own_redis: RedisProcess, fault: str
) -> None:
    """A server that stops answering for longer than the socket timeout (5 s): a clear
    error in bounded time, sync and async; the turn in flight is whole or absent."""
    pause_s = 7
    memory = memory_on(own_redis.url, "t")
    memory.add_session_log("hana", turn(0, 0))
    memory.get_user_tags("hana")
    results: dict[str, Any] = {}

    def pause() -> None:
        with raw_client(own_redis.url, timeout=pause_s + 5) as r:
            if fault == "CLIENT PAUSE":
                r.execute_command("CLIENT", "PAUSE", pause_s * 1000, "ALL")
            else:
                r.execute_command("DEBUG", "SLEEP", pause_s)

    def sync_call() -> None:
        started = time.monotonic()
        try:
            memory.add_session_log("hana", turn(0, 1))
            results["sync"] = "ok"
        except MemoryBackendError as exc:
            results["sync"] = exc
        results["sync_s"] = time.monotonic() - started

    async def async_call() -> None:
        aio = memory_on(own_redis.url, "t")
        await aio.aget_user_tags("hana")  # connected before the fault
        connected.set()
        ready.wait()
        started = time.monotonic()
        try:
            await aio.aadd_session_log("hana", turn(0, 2))
            results["async"] = "ok"
        except MemoryBackendError as exc:
            results["async"] = exc
        results["async_s"] = time.monotonic() - started
        await aio.aclose()

    ready, connected = threading.Event(), threading.Event()
    async_thread = threading.Thread(target=lambda: asyncio.run(async_call()))
    async_thread.start()
    assert connected.wait(NO_HANG)
    pauser = threading.Thread(target=pause)
    pauser.start()
    time.sleep(0.3)
    ready.set()
    sync_call()
    async_thread.join(NO_HANG)
    pauser.join(NO_HANG)
    assert isinstance(results["sync"], MemoryBackendError), results
    assert isinstance(results["async"], MemoryBackendError), results
    assert "timed out" in str(results["sync"])
    assert results["sync_s"] < NO_HANG and results["async_s"] < NO_HANG

    # The server answers again; the turns that timed out are each whole, at most once.
    time.sleep(0.5)
    turns = split_turns(all_messages(memory, "hana"))
    assert turns[0] == (0, 0)
    assert len(turns) == len(set(turns)) and set(turns) <= {(0, 0), (0, 1), (0, 2)}
    memory.add_session_log("hana", turn(0, 3))
    assert split_turns(all_messages(memory, "hana"))[-1] == (0, 3)
    memory.close()


def test_redis_errors_are_memory_backend_errors_not_raw_redis(own_redis: RedisProcess) -> None:
    """A refused command (here: the server is out of memory) is a MemoryBackendError."""
    memory = memory_on(own_redis.url, "t")
    memory.add_session_log("ivan", turn(0, 0))
    with raw_client(own_redis.url) as r:
        r.config_set("maxmemory", "1")
        r.config_set("maxmemory-policy", "noeviction")
    try:
        with pytest.raises(MemoryBackendError, match="refused"):
            memory.add_session_log("ivan", turn(0, 1))
        with pytest.raises(MemoryBackendError):
            memory.set_user_tags("ivan", {"age": 5})
        assert memory.load_context("ivan", 10)  # reads still work
    finally:
        with raw_client(own_redis.url) as r:
            r.config_set("maxmemory", "0")
    assert split_turns(all_messages(memory, "ivan")) == [(0, 0)]
    memory.close()


@pytest.mark.parametrize(
    "model",
    [
        ScriptedChatModel(replies=[TimeoutError("the model timed out")]),
        ScriptedChatModel(replies=[RuntimeError("provider returned HTTP 500")]),
        FakeListChatModel(responses=["I cannot help with that."]),  # no items at all
        FakeListChatModel(responses=["- Zebras invent quantum toasters."]),  # ungrounded
    ],
    ids=["times out", "raises", "junk", "hallucinates"],
)
def test_a_failing_summarizer_moves_no_watermark_and_stores_nothing(
    redis_server_url: str, key_prefix: str, model: Any
) -> None:
    with memory_on(redis_server_url, key_prefix) as memory:
        for s in range(5):
            memory.add_session_log("jack", turn(0, s))
        memory.summarize_history("jack", EchoSummarizer(), max_messages=4)
        before = memory.export_user("jack")
        with pytest.raises(SummarizationError):
            # grounded: the small-model guard, which refuses the hallucinated item (a
            # capable model's items are trusted and would be stored)
            memory.summarize_history("jack", model, grounded=True)
        assert memory.export_user("jack") == before  # no watermark move, no partial items
        assert memory.summarize_history("jack", EchoSummarizer())  # the next run catches up
        assert_summaries_tile_history(memory, "jack")
        memory.forget_user("jack")

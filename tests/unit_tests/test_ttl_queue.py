"""A user whose data expired (``user_ttl``) leaves no id in the summarization queue
(issue 32, item 10).

Before, ``{wq:N}:wq:pending`` (and the watermark copy, and the queue entry) kept the id
until ``sweep_pending()`` ran. Now each turn's note records when the user's data expires;
the shard's next note and the worker's purge (every few seconds) take the id out. Checked
by SCAN over every key and every member of the queue's structures, on the embedded server.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from support import all_keys, directory_members, queue_members

from langchain_tiered_memory import HashingEmbeddings, TieredMemory
from langchain_tiered_memory.summarization.worker import SummaryWorker
from langchain_tiered_memory.testing import ScriptedChatModel

TTL = 0.6  # seconds


def _turn(memory: TieredMemory, user: str, n: int = 2) -> None:
    for i in range(n):
        memory.add_session_log(user, [HumanMessage(f"{user} says {i}"), AIMessage("ok")])


def _wait_expired(memory: TieredMemory, user: str) -> None:
    deadline = time.monotonic() + 10
    while any(f"{{{user}}}" in k for k in all_keys(memory)):
        assert time.monotonic() < deadline, "the user's keys never expired"
        time.sleep(0.05)


def test_an_expired_users_id_leaves_the_queue_with_the_next_note(data_dir: Path) -> None:
    with TieredMemory.embedded(
        data_dir, embeddings=HashingEmbeddings(), user_ttl=TTL, summarize_after=2
    ) as memory:
        assert memory.queue is not None
        _turn(memory, "ana")  # pending and queued (2 messages per turn, threshold 2)
        assert "ana" in queue_members(memory)
        _wait_expired(memory, "ana")
        assert "ana" in queue_members(memory)  # the user's keys are gone, the id not yet
        # any other user's turn in the same shard takes it out
        other = next(
            u
            for u in (f"u{i}" for i in range(1000))
            if memory.queue.shard_of(u) == memory.queue.shard_of("ana")
        )
        _turn(memory, other, 1)
        assert "ana" not in queue_members(memory)
        assert other in queue_members(memory)


def test_the_worker_purges_expired_users_without_any_turn(data_dir: Path) -> None:
    with TieredMemory.embedded(
        data_dir, embeddings=HashingEmbeddings(), user_ttl=TTL, summarize_after=100
    ) as memory:
        assert memory.queue is not None
        for user in ("bo", "cy", "di"):
            _turn(memory, user)
        _wait_expired(memory, "di")
        assert {"bo", "cy", "di"} <= queue_members(memory)

        async def run_briefly() -> None:
            worker = SummaryWorker(memory, ScriptedChatModel(replies=["- nothing"]))
            task = asyncio.create_task(worker.run(sweep=False, poll_interval=0.05))
            # until it purged (or long past any poll): a fixed half second raced a loaded
            # machine's first poll (issue 47 item 4)
            deadline = time.monotonic() + 30
            while queue_members(memory) and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            worker.stop()
            await task

        asyncio.run(run_briefly())
        assert queue_members(memory) == set()
        assert not any("{wq:" in k and ":wq:expiry" in k for k in all_keys(memory))


def test_without_a_ttl_nothing_is_purged(data_dir: Path) -> None:
    with TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings()) as memory:
        assert memory.queue is not None
        _turn(memory, "ed")
        assert memory.queue.purge_expired() == 0
        assert "ed" in queue_members(memory)


def test_an_expired_user_leaves_the_consoles_directory_and_reads_restart_the_entry(
    data_dir: Path,
) -> None:
    """The directory's entry follows the user's clock: a read restarts both, and a sweep
    (or the worker's purge) drops the entry once the keys expired."""
    import redis

    with TieredMemory.embedded(
        data_dir, embeddings=HashingEmbeddings(), user_ttl=TTL, summarize_after=100
    ) as memory:
        assert memory.redis_url is not None
        client = redis.Redis.from_url(memory.redis_url)
        key = memory.history.keys.directory_key()  # type: ignore[attr-defined]
        _turn(memory, "bo")
        written = client.zscore(key, "bo")
        time.sleep(0.01)
        memory.load("bo", "still here?")  # restarts bo's clock, and the entry with it
        assert (client.zscore(key, "bo") or 0) > (written or 0)
        client.close()

        _turn(memory, "ana")
        _wait_expired(memory, "ana")
        assert "ana" in directory_members(memory)  # the keys are gone, the id not yet
        memory.sweep_pending()
        assert "ana" not in directory_members(memory)


def test_forget_erases_a_pre_0_2_entry_from_both_doors(data_dir: Path) -> None:
    """An entry written before 0.2 names its user in the stream (field ``user``) and in the
    shard's ``queued`` set: ``forget`` and ``aforget`` (one plan) delete both."""
    with TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings(), summarize_after=2) as m:
        queue, connection = m.queue, m.connection
        assert queue is not None and connection is not None
        client: Any = connection.sync
        shards = {}
        for user in ("olda", "oldb", "keep"):
            shard = queue.shard_of(user)
            stream, queued = (queue.keys.queue_key(shard, k) for k in ("stream", "queued"))
            client.xadd(stream, {"user": user})
            client.sadd(queued, user)
            shards[user] = (stream, queued)
        assert queue.forget("olda") == 1
        assert asyncio.run(queue.aforget("oldb")) == 1
        for user, (stream, queued) in shards.items():
            named = [f for _, f in client.xrange(stream) if f[b"user"] == user.encode()]
            assert (len(named), bool(client.sismember(queued, user))) == (
                (1, True) if user == "keep" else (0, False)
            )

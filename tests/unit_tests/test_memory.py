"""The TieredMemory facade: the API of issue 2, on both store families."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from fakes import ScriptedChatModel, echo_facts, summary_call
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
    messages_from_dict,
)
from support import (
    MemoryFactory,
    all_keys,
    data_keys,
    directory_members,
    queue_members,
    raw_client,
)

from langchain_tiered_memory import (
    EmbeddedRedis,
    HashingEmbeddings,
    InMemoryHistoryStore,
    InvalidUserIdError,
    MemoryBackendError,
    MemorySnapshot,
    RedisConnection,
    RedisSummaryStore,
    RedisTagStore,
    SummarizationError,
    TieredMemory,
)
from langchain_tiered_memory.backend.keys import KeyBuilder

TURN: list[BaseMessage] = [
    HumanMessage("My birthday is on May 8 and I live in Lyon."),
    AIMessage("Noted, happy early birthday!"),
]


def tiers_only(removed: dict[str, int]) -> dict[str, int]:
    """What ``forget_user`` removed from the tiers: a memory on Redis also reports its own
    LangGraph store's items (none here)."""
    assert removed.pop("store_items", 0) == 0
    return removed


def turn(i: int) -> list[BaseMessage]:
    return [HumanMessage(f"fact number {i} about gardening"), AIMessage(f"ok {i}")]


def contents(messages: list[BaseMessage]) -> list[Any]:
    return [m.content for m in messages]


# --------------------------------------------------------------------------- the basic API


def test_the_three_tiers_through_the_facade(memory: TieredMemory) -> None:
    memory.add_session_log("alice", TURN)
    memory.add_session_log("alice", turn(1))
    assert memory.load_context("alice") == TURN + turn(1)
    assert memory.load_context("alice", max=2) == turn(1)
    assert memory.load_context("alice", 0) == []

    assert memory.set_user_tags("alice", {"name": "Alice", "age": "30"}) == {
        "name": "Alice",
        "age": "30",
    }
    assert memory.get_user_tags("alice") == {"name": "Alice", "age": "30"}
    assert memory.get_user_tag("alice", "age") == "30"
    assert memory.get_user_tag("alice", "nickname") is None

    ids = memory.add_summaries("alice", ["Alice's birthday is on May 8.", "Alice likes jazz."])
    assert len(ids) == 2
    (best,) = memory.recall_summaries("alice", "when is the birthday", n=1)
    assert best.page_content == "Alice's birthday is on May 8." and best.id == ids[0]

    # nothing leaks to another user
    assert memory.load_context("bob") == []
    assert memory.get_user_tags("bob") == {}
    assert memory.recall_summaries("bob", "birthday") == []


def test_load_context_default_is_the_last_20(memory: TieredMemory) -> None:
    for i in range(15):
        memory.add_session_log("u", turn(i))
    assert memory.load_context("u") == [m for i in range(5, 15) for m in turn(i)]


async def test_async_twins_give_the_same_results(memory_factory: MemoryFactory) -> None:
    a, b = memory_factory(), memory_factory()
    a.add_session_log("u", TURN)
    await b.aadd_session_log("u", TURN)
    a.set_user_tags("u", {"name": "Al"})
    await b.aset_user_tags("u", {"name": "Al"})
    stamp = "2024-01-02T03:04:05+00:00"
    assert a.add_summaries("u", ["Al lives in Lyon."], created_at=stamp, metadata={"x": 1}) == (
        await b.aadd_summaries("u", ["Al lives in Lyon."], created_at=stamp, metadata={"x": 1})
    )
    assert a.load_context("u", 5) == await b.aload_context("u", 5) == TURN
    assert a.get_user_tags("u") == await b.aget_user_tags("u") == {"name": "Al"}
    assert a.get_user_tag("u", "name") == await b.aget_user_tag("u", "name") == "Al"
    recalled = a.recall_summaries("u", "Lyon", 2)
    assert recalled == await b.arecall_summaries("u", "Lyon", 2)
    assert recalled[0].metadata["x"] == 1
    assert a.load("u", "Lyon") == await b.aload("u", "Lyon")
    assert a.export_user("u") == await b.aexport_user("u")
    assert (
        tiers_only(a.forget_user("u"))
        == tiers_only(await b.aforget_user("u"))
        == {
            "threads": 0,
            "history": 2,
            "tags": 1,
            "summaries": 1,
        }
    )


def test_load_snapshot(memory: TieredMemory) -> None:
    memory.add_session_log("u", TURN + turn(1))
    memory.set_user_tags("u", {"name": "Al", "age": 30})
    memory.add_summaries("u", ["Al's birthday is on May 8.", "Al plays chess."])
    snap = memory.load("u", "birthday party", max_messages=3, k=1)
    assert isinstance(snap, MemorySnapshot)
    assert snap.tags == {"name": "Al", "age": "30"}
    assert snap.history == memory.load_context("u", 3)
    assert [d.page_content for d in snap.recalled] == ["Al's birthday is on May 8."]
    assert snap.recalled == memory.recall_summaries("u", "birthday party", 1)

    assert memory.load("u", None).recalled == []
    assert memory.load("u", "birthday", k=0).recalled == []
    assert memory.load("u", "birthday", max_messages=0).history == []
    assert memory.load("nobody", "birthday") == MemorySnapshot()


async def test_aload_snapshot(memory: TieredMemory) -> None:
    await memory.aadd_session_log("u", TURN)
    await memory.aset_user_tags("u", {"name": "Al"})
    await memory.aadd_summaries("u", ["Al's birthday is on May 8.", "Al plays chess."])
    snap = await memory.aload("u", "chess", max_messages=1, k=2)
    assert snap.tags == {"name": "Al"}
    assert snap.history == TURN[1:]
    assert [d.page_content for d in snap.recalled][0] == "Al plays chess."
    assert (await memory.aload("u", None)).recalled == []


def test_load_tail_is_well_formed(memory: TieredMemory) -> None:
    call = AIMessage("", tool_calls=[{"name": "t", "args": {}, "id": "c1"}])
    memory.add_session_log("u", [HumanMessage("q"), call, ToolMessage("r", tool_call_id="c1")])
    memory.add_session_log("u", [AIMessage("a")])
    assert contents(memory.load("u", None, max_messages=2).history) == ["a"]
    memory.add_session_log("u", [HumanMessage("next"), call.model_copy()])  # cut turn
    assert contents(memory.load("u", None, max_messages=3).history) == ["a", "next"]


def test_mixed_stores_work_without_the_single_round_trip(embedded_memory: TieredMemory) -> None:
    assert embedded_memory.redis_url is not None
    connection = RedisConnection(embedded_memory.redis_url)
    keys = KeyBuilder("mixed")
    memory = TieredMemory(
        history=InMemoryHistoryStore(),
        tags=RedisTagStore(connection, keys=keys),
        summaries=RedisSummaryStore(connection, keys=keys, embeddings=HashingEmbeddings()),
    )
    memory.add_session_log("u", TURN)
    memory.set_user_tags("u", {"name": "Al"})
    memory.add_summaries("u", ["Al lives in Lyon."])
    snap = memory.load("u", "Lyon")
    assert snap.history == TURN and snap.tags == {"name": "Al"}
    assert snap.recalled[0].page_content == "Al lives in Lyon."
    connection.close()


@pytest.mark.parametrize("bad", ["", None, 5, "x" * 257], ids=["empty", "none", "int", "long"])
async def test_invalid_user_ids_raise_everywhere(memory: TieredMemory, bad: Any) -> None:
    model = ScriptedChatModel(responses=[summary_call(["never used"])])
    sync_calls = [
        lambda: memory.load_context(bad),
        lambda: memory.add_session_log(bad, TURN),
        lambda: memory.get_user_tag(bad, "name"),
        lambda: memory.get_user_tags(bad),
        lambda: memory.set_user_tags(bad, {"name": "A"}),
        lambda: memory.add_summaries(bad, ["x is y"]),
        lambda: memory.recall_summaries(bad, "x"),
        lambda: memory.load(bad, "x"),
        lambda: memory.summarize_history(bad, model),
        lambda: memory.forget_user(bad),
        lambda: memory.export_user(bad),
    ]
    for call in sync_calls:
        with pytest.raises(InvalidUserIdError):
            call()
    async_calls = [
        lambda: memory.aload_context(bad),
        lambda: memory.aadd_session_log(bad, TURN),
        lambda: memory.aget_user_tags(bad),
        lambda: memory.arecall_summaries(bad, "x"),
        lambda: memory.aload(bad, "x"),
        lambda: memory.asummarize_history(bad, model),
        lambda: memory.aforget_user(bad),
        lambda: memory.aexport_user(bad),
    ]
    for acall in async_calls:
        with pytest.raises(InvalidUserIdError):
            await acall()
    assert model.requests == []


# --------------------------------------------------------------------------- export / forget


def _fill(memory: TieredMemory, user: str) -> None:
    memory.add_session_log(user, TURN)
    call = AIMessage("", tool_calls=[{"name": "t", "args": {"a": 1}, "id": "c1"}])
    memory.add_session_log(user, [HumanMessage("q"), call, ToolMessage("r", tool_call_id="c1")])
    memory.set_user_tags(user, {"name": f"{user}-name", "age": 41})
    memory.add_summaries(
        user, [f"{user} was born on May 8.", f"{user} lives in Lyon."], metadata={"src": "test"}
    )


def test_export_user_is_json_and_complete(memory: TieredMemory) -> None:
    _fill(memory, "alice")
    memory.summarize_history("alice", ScriptedChatModel(responses=[echo_facts]), max_messages=2)
    memory.history.trim("alice", keep_last=0, not_after=1)
    exported = memory.export_user("alice")
    back = json.loads(json.dumps(exported))
    assert back == exported
    assert back["user_id"] == "alice"
    assert back["tags"] == {"name": "alice-name", "age": "41"}
    assert back["history"]["first_position"] == 1
    assert messages_from_dict(back["history"]["messages"]) == memory.history.since("alice", 0)[1]
    assert len(back["history"]["messages"]) == 4
    assert back["watermark"] == 2
    by_text = {s["text"]: s for s in back["summaries"]}
    assert set(by_text) == {
        "alice was born on May 8.",
        "alice lives in Lyon.",
        "The user said: My birthday is on May 8 and I live in Lyon.",
    }
    assert by_text["alice lives in Lyon."]["src"] == "test"
    for item in back["summaries"]:
        assert item["id"] and item["created_at"]
    said = by_text["The user said: My birthday is on May 8 and I live in Lyon."]
    assert (said["source_start"], said["source_end"]) == (0, 2)


def test_export_of_an_unknown_user_is_empty(memory: TieredMemory) -> None:
    exported = memory.export_user("ghost")
    assert exported["tags"] == {} and exported["summaries"] == []
    assert exported["history"]["messages"] == [] and exported["watermark"] == 0
    assert json.loads(json.dumps(exported)) == exported


@pytest.mark.parametrize("victim", ["alice", "a*", "al", "{alice}", "alice:x"])
def test_forget_user_removes_every_key_and_only_those(
    embedded_memory: TieredMemory, victim: str
) -> None:
    memory = embedded_memory
    others = ["alice", "alice2", "al", "a*", "{alice}", "alice:x", "bob"]
    others.remove(victim)
    for user in [victim, *others]:
        _fill(memory, user)
    memory.summarize_history(victim, ScriptedChatModel(responses=[echo_facts]))
    memory.history.trim(victim, keep_last=1, not_after=2)  # hist_base in meta as well
    memory.add_session_log(
        victim, [HumanMessage("from a thread")], thread_id="t-1", thread_position=0
    )
    raw = raw_client(memory.redis_url or "")
    raw.hset(KeyBuilder().key(victim, "sum:revecs"), "0", b"vector")  # a reembed under way
    raw.close()
    keys_before = data_keys(memory)
    exports_before = {u: memory.export_user(u) for u in others}
    victim_keys = set(KeyBuilder().all_keys(victim))
    assert victim_keys <= keys_before  # every kind of key was there to delete

    removed = memory.forget_user(victim)
    # 2 added items + one item per user line of the first 4 messages ("q" included: a
    # capable model's items are validated for form, not for word overlap)
    assert tiers_only(removed) == {"threads": 1, "history": 4, "tags": 2, "summaries": 4}

    assert data_keys(memory) == keys_before - victim_keys
    assert {u: memory.export_user(u) for u in others} == exports_before
    assert victim not in queue_members(memory) and others[0] in queue_members(memory)
    assert victim not in directory_members(memory) and others[0] in directory_members(memory)
    assert memory.load(victim, "Lyon") == MemorySnapshot()
    assert memory.export_user(victim)["watermark"] == 0
    assert tiers_only(memory.forget_user(victim)) == {
        "threads": 0,
        "history": 0,
        "tags": 0,
        "summaries": 0,
    }
    assert data_keys(memory) == keys_before - victim_keys


async def test_aforget_user_removes_every_key(embedded_memory: TieredMemory) -> None:
    _fill(embedded_memory, "alice")
    _fill(embedded_memory, "bob")
    bob_keys = {k for k in all_keys(embedded_memory) if "{bob}" in k}
    assert tiers_only(await embedded_memory.aforget_user("alice")) == {
        "threads": 0,
        "history": 5,
        "tags": 2,
        "summaries": 2,
    }
    assert data_keys(embedded_memory) == bob_keys
    assert queue_members(embedded_memory) == {"bob"}
    assert directory_members(embedded_memory) == {"bob"}


def test_forget_user_in_memory(memory: TieredMemory) -> None:
    _fill(memory, "alice")
    _fill(memory, "bob")
    bob = memory.export_user("bob")
    assert tiers_only(memory.forget_user("alice")) == {
        "threads": 0,
        "history": 5,
        "tags": 2,
        "summaries": 2,
    }
    assert memory.load("alice", "Lyon") == MemorySnapshot()
    assert memory.export_user("bob") == bob
    # a forgotten user starts over
    memory.add_summaries("alice", ["alice lives in Lyon."])
    assert [d.page_content for d in memory.recall_summaries("alice", "Lyon", 5)] == [
        "alice lives in Lyon."
    ]


# --------------------------------------------------------------------------- summarization


def test_summarize_history_stores_items_and_advances_the_watermark(memory: TieredMemory) -> None:
    model = ScriptedChatModel(
        responses=[summary_call(["The user's birthday is on May 8.", "The user lives in Lyon."])]
    )
    memory.add_session_log("alice", TURN)
    ids = memory.summarize_history("alice", model)
    assert len(ids) == 2
    assert memory.summaries.get_watermark("alice") == 2
    docs = memory.summaries.get_all("alice")
    assert [d.page_content for d in docs] == [
        "The user's birthday is on May 8.",
        "The user lives in Lyon.",
    ]
    assert all((d.metadata["source_start"], d.metadata["source_end"]) == (0, 2) for d in docs)
    assert memory.recall_summaries("alice", "birthday", 1)[0].page_content == docs[0].page_content

    # what the model was asked: the conversation, with the SummaryItems tool forced
    (request,) = model.requests
    assert "My birthday is on May 8 and I live in Lyon." in request[-1].text
    assert model.bindings[0]["tool_choice"] == "SummaryItems"
    assert model.bindings[0]["tool_names"] == ["SummaryItems"]

    # nothing new: no model call, nothing stored
    assert memory.summarize_history("alice", model) == []
    assert len(model.requests) == 1


def test_summarize_history_continues_from_the_watermark(memory: TieredMemory) -> None:
    model = ScriptedChatModel(responses=[echo_facts])
    for i in range(5):
        memory.add_session_log("u", turn(i))
    first = memory.summarize_history("u", model, max_messages=4)
    assert memory.summaries.get_watermark("u") == 4
    second = memory.summarize_history("u", model, max_messages=4)
    third = memory.summarize_history("u", model, max_messages=4)
    assert memory.summaries.get_watermark("u") == 10
    ranges = [
        (d.metadata["source_start"], d.metadata["source_end"])
        for d in memory.summaries.get_all("u")
    ]
    assert ranges == [(0, 4), (0, 4), (4, 8), (4, 8), (8, 10)]
    assert [len(first), len(second), len(third)] == [2, 2, 1]
    assert [d.page_content for d in memory.summaries.get_all("u")] == [
        f"The user said: fact number {i} about gardening" for i in range(5)
    ]


async def test_asummarize_history(memory: TieredMemory) -> None:
    model = ScriptedChatModel(responses=[echo_facts])
    await memory.aadd_session_log("u", turn(0) + turn(1))
    ids = await memory.asummarize_history("u", model)
    assert len(ids) == 2 and await memory.summaries.aget_watermark("u") == 4
    assert await memory.asummarize_history("u", model) == []
    assert len(model.requests) == 1


JUNK = [
    RuntimeError("provider down"),
    AIMessage("I cannot help with that."),  # no tool call, no bullet list
    summary_call([]),
    summary_call([42, None]),
    summary_call(["ok"]),  # too short to be a fact
    AIMessage("", tool_calls=[{"name": "SummaryItems", "args": {"items": "x"}, "id": "1"}]),
    AIMessage("", tool_calls=[{"name": "SummaryItems", "args": {}, "id": "1"}]),
]


@pytest.mark.parametrize("answer", JUNK, ids=lambda a: repr(a)[:40])
async def test_failing_or_junk_model_stores_nothing(memory: TieredMemory, answer: Any) -> None:
    memory.add_session_log("alice", TURN)
    memory.summarize_history("alice", ScriptedChatModel(responses=[echo_facts]))
    memory.add_session_log("alice", [HumanMessage("I adopted a dog named Rex."), AIMessage("!")])
    before = memory.export_user("alice")
    with pytest.raises(SummarizationError):
        memory.summarize_history("alice", ScriptedChatModel(responses=[answer]))
    with pytest.raises(SummarizationError):
        await memory.asummarize_history("alice", ScriptedChatModel(responses=[answer]))
    assert memory.export_user("alice") == before
    assert memory.summaries.get_watermark("alice") == 2


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_grounded_mode_stores_nothing_the_user_did_not_say(
    memory: TieredMemory, mode: str
) -> None:
    memory.add_session_log("alice", TURN)
    model = ScriptedChatModel(responses=[summary_call(["Paris is the capital of France."])])
    with pytest.raises(SummarizationError):
        if mode == "sync":
            memory.summarize_history("alice", model, grounded=True)
        else:
            await memory.asummarize_history("alice", model, grounded=True)
    assert memory.summaries.get_all("alice") == []
    assert memory.summaries.get_watermark("alice") == 0
    # nor from a capable model (issue 65: a memory is only what the user said, for every
    # model); the conversation counts as summarized
    assert memory.summarize_history("alice", model) == []
    assert memory.summaries.get_all("alice") == []
    assert memory.summaries.get_watermark("alice") == 2


def test_plain_text_bullets_are_accepted(memory: TieredMemory) -> None:
    memory.add_session_log("alice", TURN)
    model = ScriptedChatModel(
        responses=[
            AIMessage("Facts:\n- The user's birthday is on May 8.\n* The user lives in Lyon.")
        ]
    )
    assert len(memory.summarize_history("alice", model)) == 2
    assert memory.summaries.get_watermark("alice") == 2


def test_history_retention_trims_only_summarized_messages(memory_factory: MemoryFactory) -> None:
    memory = memory_factory(history_retention=3)
    model = ScriptedChatModel(responses=[echo_facts])
    for i in range(5):
        memory.add_session_log("u", turn(i))  # positions 0..9
    memory.summarize_history("u", model, max_messages=6)  # summarizes 0..5
    first, kept = memory.history.since("u", 0)
    # keep_last=3 would keep 7..9, but 6..9 are not summarized yet: only 0..5 go
    assert (first, len(kept)) == (6, 4)
    assert memory.history.length("u") == 10
    memory.summarize_history("u", model)
    first, kept = memory.history.since("u", 0)
    assert (first, kept) == (7, [m for i in (3, 4) for m in turn(i)][1:])
    assert memory.load_context("u") == kept


def test_no_retention_keeps_everything(memory: TieredMemory) -> None:
    for i in range(3):
        memory.add_session_log("u", turn(i))
    memory.summarize_history("u", ScriptedChatModel(responses=[echo_facts]))
    assert memory.history.since("u", 0)[0] == 0
    assert len(memory.load_context("u", 100)) == 6


def test_summarize_pending_over_several_users(memory: TieredMemory) -> None:
    model = ScriptedChatModel(responses=[echo_facts])
    for i in range(3):
        memory.add_session_log("busy", turn(i))  # 6 messages
        memory.add_session_log("broken", [HumanMessage(f"FAIL {i} badly"), AIMessage("x")])
    memory.add_session_log("quiet", turn(9))  # 2 messages
    memory.add_session_log("done", turn(7) + turn(8))
    memory.summarize_history("done", model)
    memory.add_session_log("done", turn(6))  # only 2 pending
    memory.set_user_tags("tags-only", {"name": "T"})

    assert sorted(memory.pending_users(min_messages=4)) == ["broken", "busy"]
    result = memory.summarize_pending(model, min_messages=4)
    assert list(result) == ["busy"]  # "broken" failed, the others go on
    assert len(result["busy"]) == 3
    assert memory.summaries.get_watermark("busy") == 6
    assert memory.summaries.get_watermark("broken") == 0
    assert memory.summaries.get_all("broken") == []
    assert memory.summaries.get_watermark("quiet") == 0
    assert memory.summaries.get_watermark("done") == 4
    assert sorted(memory.pending_users(min_messages=4)) == ["broken"]
    assert sorted(memory.pending_users(min_messages=2)) == ["broken", "done", "quiet"]


async def test_asummarize_pending_matches_the_sync_job(memory: TieredMemory) -> None:
    model = ScriptedChatModel(responses=[echo_facts])
    for i in range(3):
        await memory.aadd_session_log("busy", turn(i))
        await memory.aadd_session_log("broken", [HumanMessage(f"FAIL {i} badly"), AIMessage("x")])
    await memory.aadd_session_log("quiet", turn(9))

    assert sorted(await memory.apending_users(min_messages=4)) == ["broken", "busy"]
    result = await memory.asummarize_pending(model, min_messages=4)
    assert list(result) == ["busy"]
    assert await memory.summaries.aget_watermark("busy") == 6
    assert await memory.summaries.aget_watermark("broken") == 0
    assert sorted(await memory.apending_users(min_messages=1)) == ["broken", "quiet"]


def test_summarizing_tool_traffic_only_moves_the_watermark(
    embedded_memory: TieredMemory,
) -> None:
    model = ScriptedChatModel(responses=[echo_facts])
    embedded_memory.add_session_log("u", TURN)
    embedded_memory.summarize_history("u", model)
    call = AIMessage("", tool_calls=[{"name": "t", "args": {}, "id": "c1"}])
    embedded_memory.add_session_log("u", [call, ToolMessage("r", tool_call_id="c1")])
    assert embedded_memory.summarize_history("u", model) == []
    assert embedded_memory.summaries.get_watermark("u") == 4


def test_clearing_the_chat_history_does_not_skip_later_messages(memory: TieredMemory) -> None:
    model = ScriptedChatModel(responses=[echo_facts])
    memory.add_session_log("u", turn(0) + turn(1))
    memory.summarize_history("u", model)
    memory.history.session("u").clear()  # e.g. a "new conversation" button
    memory.add_session_log("u", turn(2))
    assert len(memory.summarize_history("u", model)) == 1
    assert memory.summaries.get_watermark("u") == 6


# --------------------------------------------------------------------------- embedded server


def test_redis_url_is_shared_by_other_clients(embedded_memory: TieredMemory) -> None:
    url = embedded_memory.redis_url
    assert url is not None and url.startswith("unix://") and url.endswith(".sock")
    embedded_memory.set_user_tags("alice", {"name": "Alice"})
    client = raw_client(url)
    assert client.hget(KeyBuilder().key("alice", "tags"), "name") == b"Alice"
    client.close()
    other = TieredMemory.from_url(url, embeddings=HashingEmbeddings())
    assert other.get_user_tags("alice") == {"name": "Alice"}
    other.close()
    assert TieredMemory.in_memory().redis_url is None


def test_key_prefixes_separate_apps_on_one_server(embedded_memory: TieredMemory) -> None:
    assert embedded_memory.data_dir is not None
    with TieredMemory.embedded(
        embedded_memory.data_dir, key_prefix="other", embeddings=HashingEmbeddings()
    ) as other:
        embedded_memory.set_user_tags("alice", {"name": "A"})
        other.set_user_tags("alice", {"name": "B"})
        embedded_memory.add_session_log("alice", TURN)
        assert other.get_user_tags("alice") == {"name": "B"}
        assert other.load_context("alice") == []
        other.forget_user("alice")
        assert embedded_memory.get_user_tags("alice") == {"name": "A"}
        assert embedded_memory.history.users() == ["alice"]
        assert other.history.users() == []


def test_from_url_needs_a_url_and_does_no_io(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REDIS_URL", raising=False)
    with pytest.raises(ValueError):
        TieredMemory.from_url()
    memory = TieredMemory.from_url("unix:///nonexistent/redis.sock")  # no I/O yet
    with pytest.raises(MemoryBackendError) as info:
        memory.get_user_tags("alice")
    assert isinstance(info.value, ConnectionError)
    assert "/nonexistent/redis.sock" in str(info.value)
    memory.close()


def _server_alive(data_dir: Path) -> bool:
    return EmbeddedRedis(data_dir)._ping()


def test_context_manager_and_attaching_without_owning(data_dir: Path) -> None:
    with TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings()) as owner:
        assert owner.data_dir == data_dir and _server_alive(data_dir)
        owner.set_user_tags("alice", {"name": "Alice"})
        second = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings())
        assert second.redis_url == owner.redis_url
        assert second.get_user_tags("alice") == {"name": "Alice"}
        second.close()  # not its server: it keeps running
        assert _server_alive(data_dir)
        assert owner.get_user_tags("alice") == {"name": "Alice"}
    assert not _server_alive(data_dir)  # the owner stopped it


async def test_async_context_manager(data_dir: Path) -> None:
    async with TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings()) as memory:
        await memory.aset_user_tags("alice", {"age": 3})
        assert await memory.aget_user_tags("alice") == {"age": "3"}
    assert not _server_alive(data_dir)


def test_owner_leaves_the_server_running_for_other_clients(data_dir: Path) -> None:
    owner = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings())
    second = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings())
    second.set_user_tags("alice", {"name": "Alice"})
    owner.close()
    assert second.get_user_tags("alice") == {"name": "Alice"}  # still served
    second.close()


_READ_BACK = textwrap.dedent(
    """
    import json, sys
    from langchain_core.messages import HumanMessage
    from langchain_tiered_memory import HashingEmbeddings, TieredMemory
    with TieredMemory.embedded(sys.argv[1], embeddings=HashingEmbeddings()) as memory:
        assert memory.server._started, "expected to start the server itself"
        out = {
            "export": memory.export_user("alice"),
            "recall": [d.page_content for d in memory.recall_summaries("alice", "born", 1)],
            "context": [m.content for m in memory.load_context("alice", 3)],
        }
        memory.add_session_log("alice", [HumanMessage("written by the child")])
        memory.set_user_tags("alice", {"age": 42})
    print(json.dumps(out))
    """
)


def test_persistence_across_processes(data_dir: Path) -> None:
    with TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings()) as memory:
        _fill(memory, "alice")
        memory.summarize_history("alice", ScriptedChatModel(responses=[echo_facts]))
        expected = memory.export_user("alice")
    assert not _server_alive(data_dir)

    child = subprocess.run(
        [sys.executable, "-c", _READ_BACK, str(data_dir)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == 0, child.stderr
    got = json.loads(child.stdout.strip().splitlines()[-1])
    assert got["export"] == json.loads(json.dumps(expected))
    assert got["recall"] == ["alice was born on May 8."]
    assert got["context"] == ["q", "", "r"]
    assert not _server_alive(data_dir)  # the child stopped the server it started

    with TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings()) as memory:
        assert memory.load_context("alice", 1)[0].content == "written by the child"
        assert memory.get_user_tags("alice") == {"name": "alice-name", "age": "42"}
        assert memory.summaries.get_watermark("alice") == expected["watermark"]


def test_append_only_file_is_on(embedded_memory: TieredMemory) -> None:
    assert embedded_memory.redis_url is not None
    client = raw_client(embedded_memory.redis_url)
    assert client.config_get("appendonly") == {"appendonly": "yes"}
    directory = client.config_get("dir")["dir"]
    assert isinstance(directory, (str, bytes))
    assert Path(os.fsdecode(directory)) == embedded_memory.data_dir.resolve()  # type: ignore[union-attr]
    client.close()


def test_using_memory_after_its_server_stopped_is_a_backend_error(data_dir: Path) -> None:
    memory = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings())
    memory.set_user_tags("alice", {"name": "Alice"})
    memory.close()
    with pytest.raises(MemoryBackendError):
        memory.get_user_tags("alice")


def test_shutdown_leftover_stops_a_server_someone_else_started(data_dir: Path) -> None:
    EmbeddedRedis(data_dir).shutdown_leftover()  # nothing running: a no-op
    started = EmbeddedRedis(data_dir).start()
    attached = EmbeddedRedis(data_dir).start()  # attaches, does not own
    attached.stop()
    assert _server_alive(data_dir)  # stop() leaves a server it did not start
    attached.shutdown_leftover()
    assert not _server_alive(data_dir)
    started.stop()  # the owner finds it gone: no error

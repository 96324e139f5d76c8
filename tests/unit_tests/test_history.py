"""Short-term memory: the per-user chat history stores and their BaseChatMessageHistory."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
import redis
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    message_to_dict,
)
from support import MemoryFactory, raw_client

from langchain_tiered_memory import (
    InvalidMessageError,
    InvalidUserIdError,
    RedisConnection,
    RedisHistoryStore,
    TieredMemory,
    UserChatMessageHistory,
)
from langchain_tiered_memory.stores.history import DEFAULT_MAX_MESSAGE_BYTES, HistoryStore

# --------------------------------------------------------------------------- helpers


def human(i: int | str) -> HumanMessage:
    return HumanMessage(f"message {i}")


def tool_turn(i: int, *, calls: int = 2, answered: int | None = None) -> list[BaseMessage]:
    """A user turn with an AI tool-calling step: Human, AI(calls), Tool x answered, AI."""
    ids = [f"call-{i}-{j}" for j in range(calls)]
    turn: list[BaseMessage] = [
        HumanMessage(f"question {i}"),
        AIMessage("", tool_calls=[{"name": "lookup", "args": {"q": i}, "id": c} for c in ids]),
    ]
    turn += [ToolMessage(f"result {c}", tool_call_id=c) for c in ids[:answered]]
    if answered is None or answered == calls:
        turn.append(AIMessage(f"answer {i}"))
    return turn


def assert_well_formed_window(window: Sequence[BaseMessage]) -> None:
    """What a chat model accepts: no orphan tool result first, no unanswered tool call."""
    assert not window or not isinstance(window[0], ToolMessage)
    for i, m in enumerate(window):
        if isinstance(m, AIMessage) and m.tool_calls:
            later = {x.tool_call_id for x in window[i + 1 :] if isinstance(x, ToolMessage)}
            assert {c["id"] for c in m.tool_calls} <= later, "unanswered tool call"
        if isinstance(m, ToolMessage):
            calls = {c["id"] for x in window[:i] if isinstance(x, AIMessage) for c in x.tool_calls}
            assert m.tool_call_id in calls, "orphan tool result"


def contents(messages: Sequence[BaseMessage]) -> list[Any]:
    return [m.content for m in messages]


# --------------------------------------------------------------------------- append / tail


def test_append_and_tail_keep_order(memory: TieredMemory) -> None:
    store = memory.history
    assert store.append("alice", [human(0), AIMessage("reply 0")]) == 2
    assert store.append("alice", [human(1)]) == 3
    assert contents(store.tail("alice", 10)) == ["message 0", "reply 0", "message 1"]
    assert contents(store.tail("alice", 2)) == ["reply 0", "message 1"]
    assert [type(m) for m in store.tail("alice", 3)] == [HumanMessage, AIMessage, HumanMessage]
    assert store.tail("alice", 0) == [] and store.tail("alice", -3) == []
    assert store.tail("nobody", 5) == []


def test_users_are_isolated(memory: TieredMemory) -> None:
    memory.history.append("alice", [human("a")])
    memory.history.append("bob", [human("b")])
    assert contents(memory.history.tail("alice", 5)) == ["message a"]
    assert contents(memory.history.tail("bob", 5)) == ["message b"]


def test_tail_of_10000_returns_the_20_newest_in_order(memory: TieredMemory) -> None:
    store = memory.history
    for start in range(0, 10_000, 2_500):
        store.append("big", [human(i) for i in range(start, start + 2_500)])
    assert store.length("big") == 10_000
    assert contents(store.tail("big", 20)) == [f"message {i}" for i in range(9_980, 10_000)]


class _RecordingRedis(redis.Redis):
    """A redis-py client that records the commands it sends."""

    sent: list[tuple[Any, ...]]

    def execute_command(self, *args: Any, **options: Any) -> Any:
        self.sent.append(args)
        return super().execute_command(*args, **options)


def test_tail_reads_only_the_tail_with_one_lrange(embedded_memory: TieredMemory) -> None:
    url = embedded_memory.redis_url
    assert url is not None
    client = _RecordingRedis.from_url(url)
    assert isinstance(client, _RecordingRedis)
    client.sent = []
    store = RedisHistoryStore(RedisConnection(client=client))
    store.append("big", [human(i) for i in range(1_000)])
    client.sent.clear()
    assert contents(store.tail("big", 20)) == [f"message {i}" for i in range(980, 1_000)]
    assert [c[0] for c in client.sent] == ["LRANGE"]
    assert client.sent[0][2:] == (-20, -1)
    client.close()


@pytest.mark.parametrize("n", range(1, 16))
def test_tail_never_splits_a_tool_call_from_its_results(memory: TieredMemory, n: int) -> None:
    full = tool_turn(0) + tool_turn(1, calls=3) + [human("last")]
    memory.history.append("u", full)
    window = memory.history.tail("u", n)
    assert_well_formed_window(window)
    # what is returned is the requested window minus the cut-off tool results at its start
    expected = full[-n:]
    while expected and isinstance(expected[0], ToolMessage):
        expected = expected[1:]
    assert window == expected


@pytest.mark.parametrize("answered", [0, 1])
def test_tail_drops_a_trailing_turn_with_unanswered_tool_calls(
    memory: TieredMemory, answered: int
) -> None:
    """A turn cut after the AI asked for tools (e.g. a crash): the request is dropped."""
    done = tool_turn(0)
    memory.history.append("u", done)
    memory.history.append("u", tool_turn(1, calls=2, answered=answered))
    for n in (5, 20):
        window = memory.history.tail("u", n)
        assert_well_formed_window(window)
        assert isinstance(window[-1], HumanMessage)
        assert window[-1].content == "question 1"
    # nothing was deleted: the raw history still has every message
    assert memory.history.length("u") == len(done) + 2 + answered


# A well-formed history is a sequence of turns; tail(n) of it must always be well formed.
turns = st.lists(
    st.one_of(
        st.builds(lambda: [HumanMessage("hi"), AIMessage("hello")]),
        st.builds(lambda c: c, st.integers(1, 3)).map(lambda c: ("tools", c)),
    ),
    max_size=8,
)


@given(turns, st.integers(1, 40))
def test_parse_tail_window_is_always_well_formed(spec: list[Any], n: int) -> None:
    messages: list[BaseMessage] = []
    for i, turn in enumerate(spec):
        messages += tool_turn(i, calls=turn[1]) if isinstance(turn, tuple) else turn
    raw = [json.dumps(message_to_dict(m)) for m in messages[-n:]]
    window = RedisHistoryStore.parse_tail(raw)
    assert_well_formed_window(window)
    assert window == messages[len(messages) - len(window) :]  # a suffix: nothing reordered


# --------------------------------------------------------------------------- positions / trim


def test_since_and_length_use_absolute_positions_across_trim(memory: TieredMemory) -> None:
    store = memory.history
    store.append("u", [human(i) for i in range(10)])
    assert store.since("u", 3, 2) == (3, [human(3), human(4)])
    assert store.since("u", 8) == (8, [human(8), human(9)])
    assert store.since("u", 10) == (10, [])
    assert store.since("u", 0, 0) == (0, [])

    assert store.trim("u", keep_last=4, not_after=100) == 6
    assert store.length("u") == 10  # trimmed messages still count
    assert store.since("u", 7, 2) == (7, [human(7), human(8)])
    # a trimmed start reads from the oldest kept message, and says where that is
    assert store.since("u", 0, 2) == (6, [human(6), human(7)])
    assert store.since("u", 0) == (6, [human(i) for i in range(6, 10)])

    assert store.append("u", [human(10)]) == 11
    assert store.since("u", 10) == (10, [human(10)])
    assert contents(store.tail("u", 2)) == ["message 9", "message 10"]


@pytest.mark.parametrize(
    ("keep_last", "not_after", "dropped"),
    [
        (0, 4, 4),
        (3, 100, 7),
        (3, 5, 5),
        (8, 5, 2),
        (10, 5, 0),
        (0, 0, 0),
        (-1, -1, 0),
        (-5, 99, 10),
    ],
)
def test_trim_never_drops_positions_at_or_after_not_after(
    memory: TieredMemory, keep_last: int, not_after: int, dropped: int
) -> None:
    store = memory.history
    store.append("u", [human(i) for i in range(10)])
    assert store.trim("u", keep_last=keep_last, not_after=not_after) == dropped
    first, kept = store.since("u", 0)
    assert first == dropped
    assert kept == [human(i) for i in range(dropped, 10)]
    assert first <= max(not_after, 0)
    assert len(kept) >= min(max(keep_last, 0), 10)
    assert store.length("u") == 10


def test_trim_twice_keeps_counting(memory: TieredMemory) -> None:
    store = memory.history
    store.append("u", [human(i) for i in range(10)])
    store.trim("u", keep_last=0, not_after=3)
    assert store.trim("u", keep_last=0, not_after=3) == 0  # already gone
    assert store.trim("u", keep_last=0, not_after=6) == 3
    assert store.since("u", 0) == (6, [human(i) for i in range(6, 10)])


def test_clear_removes_messages_but_positions_keep_counting(memory: TieredMemory) -> None:
    store = memory.history
    store.append("u", [human(i) for i in range(5)])
    assert store.clear("u") == 5
    assert store.tail("u", 10) == [] and store.since("u", 0) == (5, [])
    assert store.length("u") == 5
    assert store.append("u", [human(5)]) == 6
    assert store.since("u", 5) == (5, [human(5)])
    assert store.clear("nobody") == 0


def test_users_lists_every_user_with_a_history(memory: TieredMemory) -> None:
    ids = ["alice", "b{o}b", "c:a*r?o[l]", "dä ve\n", "%41"]
    for user in ids:
        memory.history.append(user, [human(user)])
    memory.tags.set("tags-only", {"name": "T"})
    assert sorted(memory.history.users()) == sorted(ids)


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "bad", ["hi", {"type": "human", "content": "hi"}, None, ("human", "hi"), b"hi"]
)
def test_non_message_is_rejected_and_nothing_is_stored(memory: TieredMemory, bad: Any) -> None:
    memory.history.append("u", [human(0)])
    with pytest.raises(InvalidMessageError):
        memory.history.append("u", [human(1), bad])
    assert memory.history.since("u", 0) == (0, [human(0)])


def test_oversize_message_is_rejected_and_nothing_is_stored(memory: TieredMemory) -> None:
    store = memory.history
    store.append("u", [human(0)])
    with pytest.raises(InvalidMessageError, match="limit"):
        store.append("u", [human(1), HumanMessage("x" * (DEFAULT_MAX_MESSAGE_BYTES + 1))])
    # the limit is on the serialized size, multi-byte characters included
    store.max_message_bytes = 10_000
    with pytest.raises(InvalidMessageError):
        store.append("u", [HumanMessage("é" * 5_000)])
    assert store.since("u", 0) == (0, [human(0)])
    assert store.length("u") == 1


def test_unencodable_message_is_rejected(memory: TieredMemory) -> None:
    with pytest.raises(InvalidMessageError):
        memory.history.append("u", [HumanMessage("lone \ud800 surrogate")])
    with pytest.raises(InvalidMessageError):
        memory.history.append("u", [AIMessage("x", additional_kwargs={"obj": object()})])
    assert memory.history.length("u") == 0


@pytest.mark.parametrize("bad", ["", None, 7, "x" * 300], ids=["empty", "none", "int", "long"])
def test_invalid_user_id_raises_on_every_method(memory: TieredMemory, bad: Any) -> None:
    store = memory.history
    calls = [
        lambda: store.append(bad, [human(0)]),
        lambda: store.tail(bad, 5),
        lambda: store.since(bad, 0),
        lambda: store.length(bad),
        lambda: store.trim(bad, keep_last=0, not_after=1),
        lambda: store.clear(bad),
        lambda: store.session(bad).messages,
    ]
    for call in calls:
        with pytest.raises(InvalidUserIdError):
            call()


# --------------------------------------------------------------------------- round trips


def test_one_megabyte_message_round_trips_exactly(memory: TieredMemory) -> None:
    pattern = 'abc é 日本 🎉 "quotes" \\ \n\t{}[]:*?%\x00'
    text = (pattern * (1_048_576 // len(pattern) + 1))[:1_048_576]
    message = HumanMessage(text, id="m-1", name="alice", additional_kwargs={"k": [1, "v"]})
    memory.history.append("u", [message])
    (back,) = memory.history.tail("u", 1)
    assert back == message
    assert back.content == text


def test_content_blocks_and_tool_calls_round_trip(memory: TieredMemory) -> None:
    messages: list[BaseMessage] = [
        SystemMessage("be brief"),
        HumanMessage(
            content=[
                {"type": "text", "text": "what is in this picture?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0K"}},
            ]
        ),
        AIMessage(
            content=[{"type": "text", "text": "let me look"}],
            tool_calls=[{"name": "vision", "args": {"detail": "high", "n": 2}, "id": "c1"}],
            response_metadata={"model": "fake"},
            usage_metadata={"input_tokens": 3, "output_tokens": 4, "total_tokens": 7},
        ),
        ToolMessage(content=[{"type": "text", "text": "a cat"}], tool_call_id="c1"),
        AIMessage("A cat."),
    ]
    memory.history.append("u", messages)
    assert memory.history.since("u", 0) == (0, messages)
    assert memory.history.tail("u", 5) == messages


def test_redis_history_is_a_list_of_langchain_json(embedded_memory: TieredMemory) -> None:
    embedded_memory.history.append("alice", [human(0), AIMessage("hi")])
    assert embedded_memory.redis_url is not None
    client = raw_client(embedded_memory.redis_url)
    key = embedded_memory.history.keys.key("alice", "history")  # type: ignore[attr-defined]
    assert client.type(key) == b"list"
    raw = [json.loads(x) for x in client.lrange(key, 0, -1)]
    assert [r["type"] for r in raw] == ["human", "ai"]
    assert raw[0]["data"]["content"] == "message 0"
    client.close()


def test_entries_leave_out_default_fields_and_load_back_whole(
    embedded_memory: TieredMemory,
) -> None:
    """A stored entry holds what differs from a new message's defaults (a short message
    was half defaults); loading gives the message back equal, and full entries written
    before (``message_to_dict``) still load."""
    messages: list[BaseMessage] = [
        HumanMessage("hi", id="h1"),
        AIMessage("", id="a1", tool_calls=[{"name": "f", "args": {"x": 0}, "id": "c1"}]),
        ToolMessage("0", tool_call_id="c1", status="error"),
        HumanMessage("x", name="bob", additional_kwargs={"k": False}),
    ]
    embedded_memory.history.append("alice", messages)
    assert embedded_memory.redis_url is not None
    client = raw_client(embedded_memory.redis_url)
    key = embedded_memory.history.keys.key("alice", "history")  # type: ignore[attr-defined]
    raw = [json.loads(x) for x in client.lrange(key, 0, -1)]
    assert raw[0] == {"type": "human", "data": {"content": "hi", "id": "h1"}}
    assert "invalid_tool_calls" not in raw[1]["data"] and raw[1]["data"]["tool_calls"]
    assert raw[2]["data"]["status"] == "error"
    assert raw[3]["data"]["additional_kwargs"] == {"k": False}
    assert embedded_memory.history.tail("alice", 10) == messages
    client.rpush(key, json.dumps(message_to_dict(AIMessage("old", id="o1"))))
    assert embedded_memory.history.tail("alice", 1) == [AIMessage("old", id="o1")]
    client.close()


# --------------------------------------------------------------------------- chat history API


def test_session_is_a_base_chat_message_history(memory: TieredMemory) -> None:
    session = memory.history.session("alice")
    assert isinstance(session, BaseChatMessageHistory)
    assert isinstance(session, UserChatMessageHistory)
    session.add_user_message("hi")
    session.add_ai_message("hello")
    session.add_messages([human(1), AIMessage("bye")])
    assert contents(session.messages) == ["hi", "hello", "message 1", "bye"]
    assert contents(memory.history.session("alice").messages) == contents(session.messages)
    assert memory.history.session("bob").messages == []
    session.clear()
    assert session.messages == []
    assert memory.history.tail("alice", 10) == []


async def test_session_async_api(memory: TieredMemory) -> None:
    session = memory.history.session("alice")
    await session.aadd_messages([human(0), AIMessage("a")])
    await session.aadd_messages([human(1)])
    assert contents(await session.aget_messages()) == ["message 0", "a", "message 1"]
    assert contents(session.messages) == ["message 0", "a", "message 1"]
    await session.aclear()
    assert await session.aget_messages() == []


def test_session_add_messages_is_all_or_nothing(memory: TieredMemory) -> None:
    session = memory.history.session("alice")
    with pytest.raises(InvalidMessageError):
        session.add_messages([human(0), "not a message"])  # type: ignore[list-item]
    assert session.messages == []


# --------------------------------------------------------------------------- sync/async parity


def _script(store: HistoryStore) -> list[Any]:
    out: list[Any] = []
    out.append(store.append("p", tool_turn(0)))
    out.append(store.append("p", [human(i) for i in range(6)]))
    out.append(store.tail("p", 7))
    out.append(store.since("p", 2, 3))
    out.append(store.length("p"))
    out.append(store.trim("p", keep_last=3, not_after=5))
    out.append(store.since("p", 0))
    out.append(store.clear("p"))
    out.append(store.length("p"))
    return out


async def _ascript(store: HistoryStore) -> list[Any]:
    out: list[Any] = []
    out.append(await store.aappend("p", tool_turn(0)))
    out.append(await store.aappend("p", [human(i) for i in range(6)]))
    out.append(await store.atail("p", 7))
    out.append(await store.asince("p", 2, 3))
    out.append(await store.alength("p"))
    out.append(await store.atrim("p", keep_last=3, not_after=5))
    out.append(await store.asince("p", 0))
    out.append(await store.aclear("p"))
    out.append(await store.alength("p"))
    return out


async def test_sync_and_async_give_the_same_results(memory_factory: MemoryFactory) -> None:
    sync_result = _script(memory_factory().history)
    async_result = await _ascript(memory_factory().history)
    assert async_result == sync_result
    assert sync_result[0] == 5 and sync_result[6][0] == 5  # the script did something


async def test_async_invalid_input_raises_like_sync(memory: TieredMemory) -> None:
    with pytest.raises(InvalidUserIdError):
        await memory.history.aappend("", [human(0)])
    with pytest.raises(InvalidMessageError):
        await memory.history.aappend("u", ["nope"])  # type: ignore[list-item]
    assert await memory.history.alength("u") == 0


def test_redis_and_in_memory_stores_agree(embedded_memory: TieredMemory) -> None:
    in_memory = TieredMemory.in_memory().history
    assert _script(embedded_memory.history) == _script(in_memory)

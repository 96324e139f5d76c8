"""A model stuck calling tools cannot loop; forced capture keeps user_tag away from guesses."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.agent.graph import create_memory_graph
from langchain_tiered_memory.testing import ScriptedChatModel


def _summarize_call(i: int) -> AIMessage:
    # a new query each round: a call repeated with the same arguments is answered once
    # and ends the loop by itself (issue 44 item 4)
    search = {"name": "search_memory", "args": {"query": f"q{i}"}, "id": f"s{i}"}
    return AIMessage("", tool_calls=[search])


@pytest.mark.parametrize("rounds", [1, 3])
def test_tool_loop_stops_after_max_tool_rounds_and_turn_is_saved(
    memory_factory: Callable[..., TieredMemory], rounds: int
) -> None:
    memory = memory_factory()
    # Always asks for a tool, even when called without tools bound.
    model = ScriptedChatModel(replies=[_summarize_call(i) for i in range(50)])
    graph = create_memory_graph(model, memory=memory, max_tool_rounds=rounds)
    out = graph.invoke({"messages": [HumanMessage("go")]}, context={"user_id": "loopy"})

    last = out["messages"][-1]
    assert isinstance(last, AIMessage) and not last.tool_calls and last.text.strip()
    # past the budget the model is called without tools, and (its calls dropped, its
    # reply empty) asked once more without tools; the reply is then never empty
    assert len(model.prompts) == rounds + 2
    assert all("tool_names" not in b for b in model.bindings[-2:])
    assert all("tool_names" in b for b in model.bindings[:-2])
    assert memory.history.length("loopy") == len(out["messages"])


async def test_tool_loop_limit_async(memory_factory: Callable[..., TieredMemory]) -> None:
    memory = memory_factory()
    model = ScriptedChatModel(replies=[_summarize_call(i) for i in range(50)])
    graph = create_memory_graph(model, memory=memory, max_tool_rounds=2)
    out = await graph.ainvoke({"messages": [HumanMessage("go")]}, context={"user_id": "loopy"})
    assert not out["messages"][-1].tool_calls and out["messages"][-1].text.strip()
    assert len(model.prompts) == 4


def test_force_mode_does_not_offer_user_tag_to_the_free_model(
    memory_factory: Callable[..., TieredMemory],
) -> None:
    memory = memory_factory()
    model = ScriptedChatModel(
        replies=[
            AIMessage("", tool_calls=[{"name": "user_tag", "args": {"age": 30}, "id": "f1"}]),
            "Nice to meet you.",
        ]
    )
    graph = create_memory_graph(model, memory=memory, force_tag_capture=True)
    graph.invoke({"messages": [HumanMessage("I am 30 years old.")]}, context={"user_id": "weak"})
    assert memory.get_user_tags("weak") == {"age": "30"}
    forced, free = model.bindings[0], model.bindings[1]
    assert forced["tool_choice"] == "user_tag"
    assert "user_tag" not in free["tool_names"] and "summarize" in free["tool_names"]


@pytest.mark.parametrize(
    "writes",
    [
        [[HumanMessage("c", id="3")], [AIMessage("b2", id="2"), RemoveMessage(id="1")]],
        [[HumanMessage("c", id="3")], [RemoveMessage(id="3")], HumanMessage("d", id="4")],
        [[HumanMessage("c", id="3")], [AIMessage("c2", id="3")]],
        [
            [HumanMessage("x", id="5")],
            [RemoveMessage(id=REMOVE_ALL_MESSAGES), HumanMessage("y", id="6")],
        ],
    ],
)
def test_the_messages_delta_reducer_is_batching_invariant(writes: list[Any]) -> None:
    """DeltaChannel replays writes in batches: one pass over them joined must equal
    add_messages applied write by write (ids replace, RemoveMessage removes)."""
    from langgraph.graph.message import add_messages

    from langchain_tiered_memory.persistence.messages import (
        add_message_batches as _add_message_batches,
    )

    state: list[Any] = [HumanMessage("a", id="1"), AIMessage("b", id="2")]
    one_by_one: Any = state
    for write in writes:
        one_by_one = add_messages(one_by_one, write)
    batched = _add_message_batches(state, writes)
    assert [(m.id, m.content) for m in batched] == [(m.id, m.content) for m in one_by_one]
    split = _add_message_batches(_add_message_batches(state, writes[:1]), writes[1:])
    assert [(m.id, m.content) for m in split] == [(m.id, m.content) for m in batched]


# ----- the one-pass trim agrees with LangChain's trim_messages -----

from hypothesis import example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from langchain_core.messages import (  # noqa: E402
    BaseMessage,
    SystemMessage,
    ToolMessage,
    trim_messages,
)
from langchain_core.messages.utils import count_tokens_approximately  # noqa: E402

from langchain_tiered_memory.agent.nodes import _newest_within  # noqa: E402


def _message(kind: int, size: int, i: int) -> BaseMessage:
    text = "我" * size if i % 3 == 0 else "w" * size  # Chinese and English lengths
    if kind == 0:
        return HumanMessage(text, id=str(i))
    if kind == 1:
        call = {"name": "user_tag", "args": {"tag": "age", "value": "30"}, "id": f"c{i}"}
        return AIMessage(text, id=str(i), tool_calls=[call] if i % 2 else [])
    return ToolMessage(text, tool_call_id=f"c{i}", id=str(i))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 2), st.integers(0, 400)), max_size=40),
    st.integers(0, 3000),
    st.integers(0, 300),
    st.integers(0, 40),
    st.sampled_from([None, -1, 0, 1]),
)
def test_the_one_pass_trim_keeps_what_trim_messages_keeps(
    shape: list[tuple[int, int]], budget: int, system_size: int, cut: int, slack: int | None
) -> None:
    system = SystemMessage("s" * system_size)
    messages = [_message(kind, size, i) for i, (kind, size) in enumerate(shape)]
    if slack is not None:  # a budget at a message boundary exactly, or one token off it
        budget = max(0, count_tokens_approximately([system, *messages[cut:]]) + slack)
    expected = trim_messages(
        [system, *messages],
        max_tokens=budget,
        token_counter=count_tokens_approximately,
        strategy="last",
        start_on="human",
        include_system=True,
        allow_partial=False,
    )
    assert _newest_within(system, messages, budget) == expected


# ----- the reducer's append-only fast path gives add_messages' result -----


def _write_item(kind: int, ident: int | None) -> Any:
    from langchain_core.messages import AIMessageChunk

    text = f"m{ident}"
    mid = None if ident is None else str(ident)
    if kind == 0:
        return HumanMessage(text, id=mid)
    if kind == 1:
        return AIMessage(text, id=mid)
    if kind == 2:
        return AIMessageChunk(content=text, id=mid)
    if kind == 3:
        return ("user", text)
    return RemoveMessage(id=mid or "0")


def _shape(messages: Sequence[Any]) -> list[tuple[Any, ...]]:
    return [(type(m).__name__, m.content) for m in messages]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(0, 12), max_size=12, unique=True),
    st.lists(
        st.lists(st.tuples(st.integers(0, 4), st.none() | st.integers(0, 15)), max_size=4),
        max_size=5,
    ),
    st.lists(st.integers(0, 5), max_size=3),
)
@example([1], [[(1, 1)]], [])  # an id the thread holds: replaced, not appended
@example([1, 2], [[(0, 3), (1, 3)]], [])  # one id twice in a batch
@example([1], [[(4, 1)], [(0, 5)]], [])  # a removal, then an append
@example([1], [[(4, 1)], [(0, 1)]], [1])  # removed, then re-added: at the end (issue 32)
@example([1, 2], [[(4, None), (0, 3)], [(4, 3)]], [])  # remove-all, then a removal
def test_the_reducer_is_add_messages_write_by_write_however_grouped(
    left_ids: list[int], writes: list[Any], cuts: list[int]
) -> None:
    """Issue 32 item 2: the state rebuilt from a checkpoint must be the state the run saw.
    LangGraph applies a channel's writes one by one; DeltaChannel replays them in batches
    of any grouping. Ids of id-less messages are the same in every grouping and replay."""
    from langgraph.graph.message import add_messages

    from langchain_tiered_memory.persistence.messages import (
        add_message_batches as _add_message_batches,
    )

    def batches() -> list[list[Any]]:  # fresh objects: the reducer gives ids in place
        return [[_write_item(kind, ident) for kind, ident in write] for write in writes]

    state: list[Any] = [HumanMessage(f"s{i}", id=str(i)) for i in left_ids]
    reference: Any = list(state)
    try:
        for write in batches():
            reference = add_messages(reference, write)
    except ValueError:  # removing an id that is not there: the reducer refuses too
        with pytest.raises(ValueError):
            _add_message_batches(list(state), batches())
        return
    whole = _add_message_batches(list(state), batches())
    assert _shape(whole) == _shape(reference)
    assert not any(isinstance(m, RemoveMessage) for m in whole)
    # any grouping of the writes into batches gives the same messages with the same ids
    grouped: Any = list(state)
    points = sorted({min(c, len(writes)) for c in cuts} | {0, len(writes)})
    again = batches()
    for start, end in zip(points, points[1:], strict=False):
        grouped = _add_message_batches(grouped, again[start:end])
    assert [(m.id, *s) for m, s in zip(grouped, _shape(grouped), strict=True)] == [
        (m.id, *s) for m, s in zip(whole, _shape(whole), strict=True)
    ]

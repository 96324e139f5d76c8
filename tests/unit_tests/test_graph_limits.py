"""A model stuck calling tools cannot loop; forced capture keeps user_tag away from guesses."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.graph import create_memory_graph
from langchain_tiered_memory.testing import ScriptedChatModel


def _summarize_call(i: int) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": "summarize", "args": {}, "id": f"s{i}"}])


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
    assert isinstance(last, AIMessage) and not last.tool_calls
    assert len(model.prompts) == rounds + 1
    # the last call was made without tools
    assert "tool_names" not in model.bindings[-1]
    assert all("tool_names" in b for b in model.bindings[:-1])
    assert memory.history.length("loopy") == len(out["messages"])


async def test_tool_loop_limit_async(memory_factory: Callable[..., TieredMemory]) -> None:
    memory = memory_factory()
    model = ScriptedChatModel(replies=[_summarize_call(i) for i in range(50)])
    graph = create_memory_graph(model, memory=memory, max_tool_rounds=2)
    out = await graph.ainvoke({"messages": [HumanMessage("go")]}, context={"user_id": "loopy"})
    assert not out["messages"][-1].tool_calls
    assert len(model.prompts) == 3


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

    from langchain_tiered_memory.graph import _add_message_batches

    state: list[Any] = [HumanMessage("a", id="1"), AIMessage("b", id="2")]
    one_by_one: Any = state
    for write in writes:
        one_by_one = add_messages(one_by_one, write)
    batched = _add_message_batches(state, writes)
    assert [(m.id, m.content) for m in batched] == [(m.id, m.content) for m in one_by_one]
    split = _add_message_batches(_add_message_batches(state, writes[:1]), writes[1:])
    assert [(m.id, m.content) for m in split] == [(m.id, m.content) for m in batched]

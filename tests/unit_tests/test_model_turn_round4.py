"""A real model's turn, round four (issue 65): nothing the user did not say becomes a
memory, whatever the model writes. Qwen2.5-Coder-1.5B's answers, recorded live
(``bench/data/qwen_round4_before.json``), replayed verbatim through the graph and the
middleware with a scripted model.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from langchain_tiered_memory import TieredMemory, create_memory_graph
from langchain_tiered_memory.agent.middleware import TieredMemoryMiddleware
from langchain_tiered_memory.testing import ScriptedChatModel


def _agent(memory: TieredMemory, model: ScriptedChatModel, door: str) -> Any:
    if door == "graph":
        return create_memory_graph(model, memory=memory, checkpointer=InMemorySaver())
    saver = memory.checkpointer(InMemorySaver())
    return create_agent(
        model, tools=[], middleware=[TieredMemoryMiddleware(memory)], checkpointer=saver
    )


def _turn(agent: Any, text: str, thread: str, user: str = "ann") -> dict[str, Any]:
    return agent.invoke(  # type: ignore[no-any-return]
        {"messages": [HumanMessage(text)]},
        {"configurable": {"thread_id": thread}},
        context={"user_id": user},
    )


def _summary(items: list[str]) -> AIMessage:
    call = {"name": "SummaryItems", "args": {"items": items}, "id": "s"}
    return AIMessage(content="", tool_calls=[call])


def _items(memory: TieredMemory, user: str = "ann") -> list[str]:
    return [d.page_content for d in memory.summaries.get_all(user)]


_NOTHING = AIMessage(  # the after-turn extraction: nothing more stated
    content="", tool_calls=[{"name": "user_facts", "args": {"nothing_stated": True}, "id": "x"}]
)


# ----- item 5: a call whose arguments do not fit the tool is refused -----


@pytest.mark.parametrize("door", ["graph", "middleware"])
def test_a_summarize_call_with_search_arguments_is_refused(
    memory: TieredMemory, door: str
) -> None:
    """The model called ``summarize`` with ``query`` and ``k``: a summary ran and the turn
    ended with no answer. Now the tool says why it did nothing and the model answers."""
    memory.add_session_log("ann", [HumanMessage("I live in Lyon."), AIMessage("Nice!")])
    call = {"name": "summarize", "args": {"query": "where the user lives", "k": 3}, "id": "c1"}
    model = ScriptedChatModel(
        replies=[
            AIMessage(content="", tool_calls=[call]),
            "You live in Lyon.",
            _NOTHING,
        ]
    )
    result = _turn(_agent(memory, model, door), "Where do I live?", "t1")
    errors = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert len(errors) == 1 and errors[0].status == "error"
    assert "takes no arguments (got k, query)" in errors[0].text
    assert "search_memory" in errors[0].text
    assert _items(memory) == []  # nothing was summarized
    assert result["messages"][-1].text == "You live in Lyon."

"""The two doors a turn comes through, for the tests that replay a real model's answers:
the prebuilt graph and ``create_agent`` with the middleware, each on an ``InMemorySaver``
the memory guards."""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from langchain_tiered_memory import TieredMemory, TieredMemoryMiddleware, create_memory_graph
from langchain_tiered_memory.testing import ScriptedChatModel

# the after-turn extraction's answer: nothing more stated
NOTHING = AIMessage(
    content="", tool_calls=[{"name": "user_facts", "args": {"nothing_stated": True}, "id": "x"}]
)


def agent_through(memory: TieredMemory, model: ScriptedChatModel, door: str) -> Any:
    """The memory's agent through ``door`` (``"graph"`` or ``"middleware"``)."""
    if door == "graph":
        return create_memory_graph(model, memory=memory, checkpointer=InMemorySaver())
    saver = memory.checkpointer(InMemorySaver())
    return create_agent(
        model, tools=[], middleware=[TieredMemoryMiddleware(memory)], checkpointer=saver
    )


def say(agent: Any, text: str, thread: str, user: str = "ann") -> dict[str, Any]:
    """One turn of ``user`` on ``thread``."""
    return agent.invoke(  # type: ignore[no-any-return]
        {"messages": [HumanMessage(text)]},
        {"configurable": {"thread_id": thread}},
        context={"user_id": user},
    )


def summary(items: list[str]) -> AIMessage:
    """The summarizer's answer: a ``SummaryItems`` call."""
    call = {"name": "SummaryItems", "args": {"items": items}, "id": "s"}
    return AIMessage(content="", tool_calls=[call])

"""A real model's turn (issue 44): what a capable model did in a live run, replayed with a
scripted model that makes the same moves, through the graph and the middleware.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from langchain_tiered_memory import TieredMemory, create_memory_graph
from langchain_tiered_memory.agent.capture import SUMMARIZE_NOTE
from langchain_tiered_memory.agent.middleware import TieredMemoryMiddleware
from langchain_tiered_memory.testing import ScriptedChatModel


def _call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])


def _agent(memory: TieredMemory, model: ScriptedChatModel, door: str) -> Any:
    if door == "graph":
        return create_memory_graph(model, memory=memory, checkpointer=InMemorySaver())
    middleware = [TieredMemoryMiddleware(memory)]
    return create_agent(model, tools=[], middleware=middleware, checkpointer=InMemorySaver())


def _turn(agent: Any, text: str, thread: str) -> dict[str, Any]:
    return agent.invoke(  # type: ignore[no-any-return]
        {"messages": [HumanMessage(text)]},
        {"configurable": {"thread_id": thread}},
        context={"user_id": "ann"},
    )


@pytest.mark.parametrize("door", ["graph", "middleware"])
def test_a_new_thread_carries_the_conversation_not_its_machinery(
    memory: TieredMemory, door: str
) -> None:
    """Item 1: the model saw the earlier thread's refused user_tag call, the refusal, an
    empty reply and the summarize placeholder, and imitated them."""
    model = ScriptedChatModel(
        replies=[
            _call("user_tag", {"name": "John Doe"}, "c1"),  # invented: refused
            "",  # an empty reply
            "I have noted that.",
            "Good luck with your exam!",
        ]
    )
    agent = _agent(memory, model, door)
    _turn(agent, "I failed my driving test in March.", "t-old")
    memory.add_session_log(
        "ann",
        [HumanMessage("Please save this."), AIMessage(SUMMARIZE_NOTE)],
        thread_id="t-old2",
    )
    before = len(model.prompts)
    _turn(agent, "I have an exam tomorrow and I'm so nervous.", "t-new")
    prompt: list[BaseMessage] = model.prompts[before]  # the reply's (an extraction follows)
    carried = prompt[1:-1]
    assert [m.text for m in carried] == [
        "I failed my driving test in March.",
        "Please save this.",
    ]
    assert not any(isinstance(m, ToolMessage) for m in prompt)
    assert not any(getattr(m, "tool_calls", None) for m in prompt)

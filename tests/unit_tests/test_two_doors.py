"""The prebuilt graph and the agent middleware are two doors to one turn (issue 58 item 2):
for a small and for a capable model, the same conversation through each does the same
things: the same prompts, tools and tool choices at every model call, the same thread state
checkpointed, the same tags and items stored.
"""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver

from langchain_tiered_memory import TieredMemory, create_memory_graph
from langchain_tiered_memory.agent.graph import MODEL
from langchain_tiered_memory.agent.middleware import TieredMemoryMiddleware
from langchain_tiered_memory.agent.policy import ModelPolicy
from langchain_tiered_memory.agent.settings import TurnSettings
from langchain_tiered_memory.agent.turn import MemoryTurn
from langchain_tiered_memory.testing import ScriptedChatModel


class SmallScripted(ScriptedChatModel):
    """A scripted model marked as a small local one (as ChatLocalTransformers is)."""

    small_local_model: ClassVar[bool] = True


def _tags(**values: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": "user_tag", "args": values, "id": "t"}])


_NOTHING = AIMessage(
    content="", tool_calls=[{"name": "user_facts", "args": {"nothing_stated": True}, "id": "x"}]
)

_TURNS = [  # (thread, user) : a statement, a question, a new thread's question
    ("t1", "Hi, I'm Ann and I am 30 years old."),
    ("t1", "I failed my driving test in March."),
    ("t2", "How old am I?"),
]


def _script(small: bool) -> list[Any]:
    if small:  # a forced tag pass on a statement, then the reply; the tag question is
        # answered from the tags with no model call
        return [_tags(name="Ann", age="30"), "Nice to meet you, Ann!", AIMessage(""), "Oh no."]
    # the reply, then the after-turn extraction
    return ["Nice to meet you, Ann!", _tags(name="Ann", age="30"), "Oh no.", _NOTHING, "30."]


def _run(memory: TieredMemory, small: bool, door: str) -> tuple[ScriptedChatModel, list[Any]]:
    model = (SmallScripted if small else ScriptedChatModel)(replies=_script(small))
    if door == "graph":
        agent: Any = create_memory_graph(model, memory=memory, checkpointer=InMemorySaver())
    else:
        middleware = TieredMemoryMiddleware(memory)
        saver = memory.checkpointer(InMemorySaver())
        agent = create_agent(model, tools=[], middleware=[middleware], checkpointer=saver)
    states = []
    for thread, text in _TURNS:
        config = {"configurable": {"thread_id": thread}}
        agent.invoke({"messages": [("user", text)]}, config, context={"user_id": "ann"})
        states.append(agent.get_state(config).values)
    if door == "middleware":
        # the settings it adopted from the model are the graph's (create_memory_graph
        # builds them so with no option given): the middleware's defaults had drifted
        # (20 history messages for a small model, the graph 0)
        assert middleware.turn.settings == TurnSettings.of(ModelPolicy.for_model(model))
    return model, states


def _calls(model: ScriptedChatModel) -> list[tuple[str, list[tuple[str, str]], dict[str, Any]]]:
    """Each model call: its system prompt, the other messages (type, text), its binding."""
    out = []
    for prompt, binding in zip(model.prompts, model.bindings, strict=True):
        system = str(prompt[0].text) if isinstance(prompt[0], SystemMessage) else ""
        rest: list[BaseMessage] = prompt[1:] if system else prompt
        out.append((system, [(m.type, str(m.text)) for m in rest], binding))
    return out


def _thread(state: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m.type, m.text) for m in state["messages"]]


@pytest.mark.parametrize("small", [True, False], ids=["small", "capable"])
def test_both_doors_run_the_same_turn(memory_factory: Any, small: bool) -> None:
    by_door = {}
    for door in ("graph", "middleware"):
        memory: TieredMemory = memory_factory()
        model, states = _run(memory, small, door)
        by_door[door] = (
            _calls(model),
            [_thread(s) for s in states],
            memory.get_user_tags("ann"),
            sorted(d.page_content for d in memory.summaries.get_all("ann")),
        )
    graph, middleware = by_door["graph"], by_door["middleware"]
    assert len(graph[0]) == len(middleware[0])
    for n, (g, m) in enumerate(zip(graph[0], middleware[0], strict=True)):
        assert g[0] == m[0], f"call {n}: system prompts differ"
        assert g[1] == m[1], f"call {n}: messages differ"
        assert g[2] == m[2], f"call {n}: bindings differ"
    assert graph[1] == middleware[1]  # the checkpointed threads
    assert graph[2:] == middleware[2:]  # what is stored


def _graph_turn(graph: Any) -> MemoryTurn:
    """The turn a compiled graph's model node runs (its node object's)."""
    return graph.builder.nodes[MODEL].runnable.func.__self__.turn  # type: ignore[no-any-return]


def _turn_values(turn: MemoryTurn) -> dict[str, Any]:
    """What a turn decides, comparable across two builds (tools as their classes and
    switches, the capture as whether there is one)."""
    summarize = turn.summarize_tool
    return {
        "settings": turn.settings,
        "step": turn.step,
        "tools": [t.name for t in turn.tools],
        "summary": (
            summarize.model,
            summarize.extractive_fallback,
            summarize.grounded,
            summarize.reconcile,
        ),
        "capture": turn.capture is not None,
        "nodes": (
            turn.nodes.settings,
            turn.nodes.recall_k,
            turn.nodes.recall_context_turns,
            turn.nodes.memory_token_budget,
            turn.nodes.context_token_budget,
            turn.nodes.auto_summarize_after,
            turn.nodes.summary_model,
            turn.nodes.shared_threads,
            turn.nodes.query_model,
        ),
    }


_OPTIONS: list[dict[str, Any]] = [
    {},
    {"max_context_messages": 4, "tag_capture": "tool", "search_memory": False, "recall_k": 5},
    {
        "tag_capture": "forced",
        "extractive_summary_fallback": True,
        "max_tool_rounds": 2,
        "system_prompt": "Be brief.",
        "auto_summarize_after": 6,
        "memory_query": "note",
    },
]


@pytest.mark.parametrize("small_model", [None, True, False], ids=["detected", "small", "capable"])
@pytest.mark.parametrize("small", [True, False], ids=["small-model", "capable-model"])
@pytest.mark.parametrize("options", _OPTIONS, ids=["defaults", "chosen", "forced"])
def test_both_doors_build_equal_turns(
    small: bool, small_model: bool | None, options: dict[str, Any]
) -> None:
    """Issue 58 item 2: for each kind of model and each way of choosing, the graph and the
    middleware (once it has seen the agent's model) build the same turn from the same
    options, and the middleware replaces its first turn rather than changing it."""
    memory = TieredMemory.in_memory()
    model = (SmallScripted if small else ScriptedChatModel)(replies=["Hello."])
    graph = create_memory_graph(model, memory=memory, small_model=small_model, **options)
    middleware = TieredMemoryMiddleware(memory, small_model=small_model, **options)
    before = middleware.turn
    first = before.settings
    saver = memory.checkpointer(InMemorySaver())
    agent = create_agent(model, tools=[], middleware=[middleware], checkpointer=saver)
    agent.invoke(
        {"messages": [("user", "Hello!")]},
        {"configurable": {"thread_id": "t"}},
        context={"user_id": "ann"},
    )
    assert middleware.turn is not before and before.settings is first  # replaced, not changed
    assert _turn_values(middleware.turn) == _turn_values(_graph_turn(graph))
    # the middleware registered the tools the model is bound with; each call runs the
    # current turn's (a summarize with the agent model's switches)
    registered = {t.name for t in middleware.tools}
    assert {t.name for t in middleware.turn.tools} <= registered

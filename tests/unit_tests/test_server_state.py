"""What a LangGraph server does to a thread, in process (issue 77 items 3, 4 and 6; the real
``langgraph dev``: ``tests/integration_tests/test_langgraph_server_state.py``).

- item 3: a server reads a thread with its checkpointer decoding stored messages to JSON
  dicts (``_msgpack_ext_hook_to_json``, a ``DeltaChannel`` snapshot included): the thread's
  messages reducer rebuilds the same messages from them, after time travel too;
- item 4: a run stopped before its save (a server's rollback cancels the run and deletes
  its checkpoints) has recorded no tag: ``user_tag`` leaves the write to the save;
- item 6: the state a run ends with (what a server stores as the thread's record) holds
  none of the memory the run loaded, through both doors.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import ormsgpack
import pytest
from langchain.agents import create_agent
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import (
    EXT_DELTA_SNAPSHOT,
    JsonPlusSerializer,
    _msgpack_ext_hook_to_json,
)
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from langchain_tiered_memory import TieredMemory, create_memory_graph
from langchain_tiered_memory.agent.middleware import TieredMemoryMiddleware
from langchain_tiered_memory.agent.state import MEMORY_LOADED
from langchain_tiered_memory.agent.tools import UserTagTool
from langchain_tiered_memory.persistence.messages import add_message_batches
from langchain_tiered_memory.testing import ScriptedChatModel

# ----- item 3: the thread as a server reads it -----


def _as_json(code: int, data: bytes) -> Any:
    """The unpack hook of a LangGraph server's thread reads (``langgraph_runtime_inmem``'s
    ``Checkpointer(unpack_hook=...)``): stored objects as their fields, a ``DeltaChannel``
    snapshot kept a snapshot."""
    if code == EXT_DELTA_SNAPSHOT:
        value = ormsgpack.unpackb(data, ext_hook=_as_json, option=ormsgpack.OPT_NON_STR_KEYS)
        return _DeltaSnapshot(value)
    return _msgpack_ext_hook_to_json(code, data)


def _read_as_a_server(saver: InMemorySaver) -> InMemorySaver:
    """A saver on ``saver``'s threads that decodes them as a server's read path does."""
    reader = InMemorySaver(serde=JsonPlusSerializer(__unpack_ext_hook__=_as_json))
    reader.storage, reader.writes, reader.blobs = saver.storage, saver.writes, saver.blobs
    return reader


def _dumped(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    return [m.model_dump() for m in messages]


def test_the_reducer_takes_messages_as_a_server_decodes_them() -> None:
    """Dicts of a message's fields (as a server's JSON read gives them), client dicts,
    tuples and strings rebuild what the messages themselves do; the AI message whole."""
    thread: list[BaseMessage] = [
        SystemMessage("be brief", id="s"),
        HumanMessage("hi", id="h"),
        AIMessage(
            "",
            id="a",
            tool_calls=[{"name": "user_tag", "args": {"age": 30}, "id": "c1"}],
            usage_metadata={"input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
        ),
        ToolMessage("Recorded.", tool_call_id="c1", id="t", status="success"),
    ]
    writes: list[Any] = [
        [HumanMessage("edited", id="h")],
        [RemoveMessage(id="s")],
        [AIMessage("ok", id="b")],
    ]
    expected = add_message_batches(thread, writes)
    as_read = add_message_batches(_dumped(thread), [_dumped(w) for w in writes])
    assert _dumped(as_read) == _dumped(expected)
    ai = next(m for m in as_read if m.id == "a")
    assert isinstance(ai, AIMessage) and ai.usage_metadata == thread[2].usage_metadata  # type: ignore[attr-defined]
    said = add_message_batches(
        _dumped(thread), [{"role": "user", "content": "a"}, ("user", "b"), "c"]
    )
    assert [m.text for m in said[-3:]] == ["a", "b", "c"]
    assert all(isinstance(m, HumanMessage) for m in said[-3:])


@pytest.mark.parametrize("aio", [False, True])
async def test_time_travel_then_a_run_reads_back_as_a_server_reads_it(
    embedded_memory: TieredMemory, aio: bool
) -> None:
    """Issue 77 item 3, in process: ``update_state`` at an earlier checkpoint with a
    client's JSON message, then a run; the thread read as a server reads it (its stored
    snapshot and writes as dicts) is the thread. On the code before: ``AttributeError:
    'dict' object has no attribute 'id'`` in ``add_message_batches``."""
    saver = InMemorySaver()
    graph = create_memory_graph(
        ScriptedChatModel(replies=["ok"]), memory=embedded_memory, checkpointer=saver
    )
    server = create_memory_graph(
        ScriptedChatModel(replies=["ok"]),
        memory=embedded_memory,
        checkpointer=_read_as_a_server(saver),
    )
    config: RunnableConfig = {"configurable": {"thread_id": "t", "user_id": "u"}}
    for text in ("one", "two"):
        await graph.ainvoke({"messages": [{"role": "user", "content": text}]}, config)
    earlier = next(
        s.config for s in graph.get_state_history(config) if len(s.values["messages"]) == 2
    )
    earlier["configurable"]["user_id"] = "u"
    edit = {"messages": [{"role": "user", "content": "edited", "id": "e"}]}
    if aio:
        await graph.aupdate_state(earlier, edit)
    else:
        graph.update_state(earlier, edit)
    await graph.ainvoke({"messages": [{"role": "user", "content": "three"}]}, config)

    thread = graph.get_state(config).values["messages"]
    assert [m.text for m in thread] == ["one", "ok", "edited", "three", "ok"]
    read = (await server.aget_state(config)) if aio else server.get_state(config)
    assert _dumped(read.values["messages"]) == _dumped(thread)
    if aio:
        history = [s async for s in server.aget_state_history(config)]
    else:
        history = list(server.get_state_history(config))
    assert len(history) == len(list(graph.get_state_history(config)))


# ----- item 6: the state a run ends with (a server's thread record) -----


def _leaks(values: dict[str, Any]) -> list[str]:
    """What of another thread or of the memory section ``values`` holds."""
    text = repr(values)
    found = [w for w in ("keep bees", '"name": "Bob"') if w in text]
    return found + [k for k in MEMORY_LOADED if values.get(k)]


def _door(
    memory: TieredMemory, door: str, replies: list[Any], model: ScriptedChatModel | None = None
) -> tuple[Any, ScriptedChatModel]:
    """The prebuilt graph or a ``create_agent`` agent with the middleware, on a guarded
    ``InMemorySaver``, answering with ``replies`` (or ``model``)."""
    model = model or ScriptedChatModel(replies=replies)
    saver = memory.checkpointer(InMemorySaver())
    if door == "graph":
        return create_memory_graph(model, memory=memory, checkpointer=saver), model
    agent = create_agent(
        model, tools=[], middleware=[TieredMemoryMiddleware(memory)], checkpointer=saver
    )
    return agent, model


def _run(runnable: Any, thread: str, text: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The run's last ``"values"`` and its last checkpoint's values (what a LangGraph
    server stores as the thread's record)."""
    values: dict[str, Any] = {}
    checkpoint: dict[str, Any] = {}
    for mode, chunk in runnable.stream(
        {"messages": [HumanMessage(text)]},
        {"configurable": {"thread_id": thread}},
        context={"user_id": "bob"},
        stream_mode=["values", "checkpoints"],
    ):
        if mode == "values":
            values = chunk
        else:
            checkpoint = chunk["values"]
    return values, checkpoint


@pytest.mark.parametrize("door", ["graph", "middleware"])
def test_the_state_a_run_ends_with_holds_no_memory_it_loaded(
    embedded_memory: TieredMemory, door: str
) -> None:
    """Issue 77 item 6, in process: after a run that loaded tags and another thread's
    history, neither its last values nor its last checkpoint's (a server's thread record)
    hold them. On the code before: ``memory_prompt`` with the tags and ``recent_history``
    with the other thread's messages, in both."""
    tag = AIMessage("", tool_calls=[{"name": "user_tag", "args": {"name": "Bob"}, "id": "c1"}])
    runnable, model = _door(embedded_memory, door, [tag, "Noted.", "You are Bob."])
    _run(runnable, "first", "I'm Bob. I keep bees.")
    values, checkpoint = _run(runnable, "second", "Who am I?")
    prompt = "\n".join(m.text for m in model.prompts[-1])
    assert '"name": "Bob"' in prompt and "keep bees" in prompt  # the memory was loaded
    assert [m.text for m in values["messages"]] == ["Who am I?", "You are Bob."]
    assert _leaks(values) == [] and _leaks(checkpoint) == []
    if door == "graph":  # nor the result, nor the state
        result = runnable.invoke(
            {"messages": [HumanMessage("Again?")]},
            {"configurable": {"thread_id": "second"}},
            context={"user_id": "bob"},
        )
        assert set(result) == {"messages", "saved_count", "saved_ids"}


def test_a_failed_graph_run_leaves_no_memory_in_its_last_checkpoint(
    embedded_memory: TieredMemory,
) -> None:
    """The graph keeps the memory out of every step's values, not only the last: a run
    whose model fails after the load ends with a checkpoint a server records as is."""
    embedded_memory.set_user_tags("bob", {"name": "Bob"})
    graph, _ = _door(embedded_memory, "graph", [RuntimeError("the provider is down")])
    checkpoints: list[dict[str, Any]] = []
    with pytest.raises(RuntimeError, match="the provider is down"):
        for chunk in graph.stream(
            {"messages": [HumanMessage("Who am I?")]},
            {"configurable": {"thread_id": "t"}},
            context={"user_id": "bob"},
            stream_mode="checkpoints",
        ):
            checkpoints.append(chunk["values"])
    assert len(checkpoints) >= 2  # the load's step was checkpointed
    assert [_leaks(values) for values in checkpoints] == [[] for _ in checkpoints]


# ----- item 4: a run that never reaches its save -----


class _WaitsAfterATool(ScriptedChatModel):
    """The script; the reply after a tool result waits (asynchronously) until the run is
    cancelled, as a run in flight when a server rolls it back."""

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> Any:
        if messages[-1].type == "tool":
            await asyncio.sleep(3600)
        return self._generate(messages, stop=stop, **kwargs)


def _tag_call(name: str) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": "user_tag", "args": {"name": name}, "id": "c1"}])


@pytest.mark.parametrize("door", ["graph", "middleware"])
async def test_a_run_cancelled_after_its_tag_call_records_no_tag(
    embedded_memory: TieredMemory, door: str
) -> None:
    """Issue 77 item 4, in process: a run cancelled after its ``user_tag`` call and before
    its save (what a server's rollback does, before deleting the run's checkpoints) has
    written no tag and no tag change. On the code before: ``{'name': 'Bob'}``."""
    model = _WaitsAfterATool(replies=[_tag_call("Bob"), "Noted."])
    runnable, _ = _door(embedded_memory, door, [], model)
    config: RunnableConfig = {"configurable": {"thread_id": "t"}}
    run = asyncio.create_task(
        runnable.ainvoke(
            {"messages": [HumanMessage("I'm Bob.")]}, config, context={"user_id": "bob"}
        )
    )
    for _ in range(500):  # until the tool's result is in the thread
        state = await runnable.aget_state(config)
        if any(m.type == "tool" for m in state.values.get("messages", [])):
            break
        await asyncio.sleep(0.01)
    else:
        raise AssertionError("the tool never ran")
    assert "Recorded: name=Bob." in state.values["messages"][-1].text  # what the model read
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert await embedded_memory.aget_user_tags("bob") == {}
    assert await embedded_memory.aget_tag_history("bob", "name") == []


@pytest.mark.parametrize("door", ["graph", "middleware"])
def test_tags_are_recorded_by_the_save_of_the_turn_that_keeps_them(
    embedded_memory: TieredMemory, door: str
) -> None:
    """A completed turn records its tags (with its thread in the tag log); a turn that
    failed after its call keeps the call in the thread, and the thread's next save
    records it: the memory follows the thread's messages."""
    replies: list[Any] = [_tag_call("Bob"), "Noted.", _tag_call("Rob"), RuntimeError("down")]
    runnable, _ = _door(embedded_memory, door, [*replies, "Hello."])
    config: RunnableConfig = {"configurable": {"thread_id": "t"}}
    runnable.invoke({"messages": [HumanMessage("I'm Bob.")]}, config, context={"user_id": "bob"})
    assert embedded_memory.get_user_tags("bob") == {"name": "Bob"}
    assert [c["thread_id"] for c in embedded_memory.get_tag_history("bob", "name")] == ["t"]
    with pytest.raises(RuntimeError, match="down"):
        runnable.invoke(
            {"messages": [HumanMessage("My name is now Rob.")]},
            config,
            context={"user_id": "bob"},
        )
    assert embedded_memory.get_user_tags("bob") == {"name": "Bob"}  # not saved yet
    runnable.invoke({"messages": [HumanMessage("Hi.")]}, config, context={"user_id": "bob"})
    assert embedded_memory.get_user_tags("bob") == {"name": "Rob"}


def test_user_tag_called_by_the_app_records_at_once(embedded_memory: TieredMemory) -> None:
    """Outside a memory turn (the app's own call, or its own graph's ``ToolNode``) there is
    no save step to leave the write to: ``UserTagTool`` records when it is called."""
    tool = UserTagTool(memory=embedded_memory)
    said = tool.invoke({"name": "Ann"}, config={"configurable": {"user_id": "ann"}})
    assert said == "Recorded: name=Ann."
    assert embedded_memory.get_user_tags("ann") == {"name": "Ann"}
    builder: StateGraph[Any, Any, Any, Any] = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode([tool]))
    builder.add_edge(START, "tools")
    builder.compile().invoke(
        {"messages": [HumanMessage("I'm Ann, 33."), _tag_call_args({"age": 33})]},
        config={"configurable": {"user_id": "ann"}},
    )
    assert embedded_memory.get_user_tags("ann") == {"name": "Ann", "age": "33"}


def _tag_call_args(args: dict[str, Any]) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": "user_tag", "args": args, "id": "c2"}])

"""What a LangGraph server does to a thread, in process (issue 77 items 3, 4 and 6; the real
``langgraph dev``: ``tests/integration_tests/test_langgraph_server_state.py``).

- item 3: a server reads a thread with its checkpointer decoding stored messages to JSON
  dicts (``_msgpack_ext_hook_to_json``, a ``DeltaChannel`` snapshot included): the thread's
  messages reducer rebuilds the same messages from them, after time travel too;
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ormsgpack
import pytest
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

from langchain_tiered_memory import TieredMemory, create_memory_graph
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

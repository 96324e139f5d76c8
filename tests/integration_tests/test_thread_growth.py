"""A long thread's checkpoints grow with the thread, not with its square.

300 turns of the prebuilt graph (scripted model, 200-character messages) on
``memory.checkpointer()``: the thread's keys (``MEMORY USAGE``) stay within 40x the user's
history tier, which holds the same messages once (the graph's ``DeltaChannel`` stores what a
step added; before it, every checkpoint held the whole thread: about 600x at 300 turns), and
the last 100 turns add no more than twice what the first 100 did. Old threads, written
before the messages channel was a ``DeltaChannel``, load and go on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

from langchain_tiered_memory import HashingEmbeddings, TieredMemory, create_memory_graph
from langchain_tiered_memory.testing import ScriptedChatModel

TURNS = 300


class OldState(TypedDict):
    """The prebuilt graph's messages before they were a DeltaChannel."""

    messages: Annotated[list[AnyMessage], add_messages]


def reply(state: OldState) -> dict[str, list[AnyMessage]]:
    return {"messages": [AIMessage(f"old reply {len(state['messages'])}")]}


def thread_bytes(memory: TieredMemory, saver: object, thread: str) -> int:
    client = memory.connection.sync  # type: ignore[union-attr]
    keys = saver.keys.thread_keys(thread)  # type: ignore[attr-defined]
    return sum(client.memory_usage(k, samples=0) or 0 for k in keys)


def test_a_300_turn_thread_is_linear_in_its_messages(tmp_path: Path) -> None:
    with TieredMemory.embedded(tmp_path / "data", embeddings=HashingEmbeddings()) as memory:
        saver = memory.checkpointer()
        graph = create_memory_graph(
            ScriptedChatModel(replies=["r" * 200]), memory=memory, checkpointer=saver
        )
        config: RunnableConfig = {"configurable": {"thread_id": "long"}}
        sizes = [0]
        for turn in range(TURNS):
            graph.invoke(
                {"messages": [("user", f"{turn} " + "m" * 200)]}, config, context={"user_id": "u"}
            )
            if (turn + 1) % 100 == 0:
                sizes.append(thread_bytes(memory, saver, "long"))
        client = memory.connection.sync  # type: ignore[union-attr]
        history = 0
        for key in memory.history.keys.all_keys("u"):  # type: ignore[attr-defined]
            history += int(client.memory_usage(key, samples=0) or 0)
        state = graph.get_state(config).values["messages"]
        assert len(state) == 2 * TURNS  # the whole thread is still there
        assert sizes[-1] <= 40 * history, (sizes, history)
        first, last = sizes[1] - sizes[0], sizes[-1] - sizes[-2]
        assert last <= 2 * first, sizes


def shared(saver: Any) -> Any:
    """The memory's saver without its owner check (the storage 0.1 wrote to)."""
    from langchain_tiered_memory.persistence.checkpoint import RedisSaver

    return RedisSaver(saver.connection, key_prefix=saver.keys.prefix)


def test_a_thread_written_before_the_delta_channel_loads_and_goes_on(tmp_path: Path) -> None:
    """A thread whose checkpoints hold the whole messages list (0.1's graph, an
    ``add_messages`` channel) is read by today's graph and continued, history intact.
    """
    with TieredMemory.embedded(tmp_path / "data", embeddings=HashingEmbeddings()) as memory:
        saver = memory.checkpointer()
        builder = StateGraph(OldState)
        builder.add_node("reply", reply)
        builder.add_edge(START, "reply")
        # 0.1's graph wrote with a saver that knew no owners (the same keys)
        old = builder.compile(checkpointer=shared(saver))
        config: RunnableConfig = {"configurable": {"thread_id": "kept"}}
        for turn in range(3):
            old.invoke({"messages": [HumanMessage(f"old {turn}")]}, config)
        # 0.1's graph recorded the thread as the user's, with no owner record yet
        memory.history.record_thread("u", "kept", claim=False)
        graph = create_memory_graph(
            ScriptedChatModel(replies=["new reply"]), memory=memory, checkpointer=saver
        )
        out = graph.invoke({"messages": [("user", "new")]}, config, context={"user_id": "u"})
        texts = [m.content for m in out["messages"]]
        assert texts[:6] == ["old 0", "old reply 1", "old 1", "old reply 3", "old 2", "old reply 5"]
        assert texts[-2:] == ["new", "new reply"]
        assert [m.content for m in graph.get_state(config).values["messages"]] == texts

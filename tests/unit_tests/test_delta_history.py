"""``RedisSaver.get_delta_channel_history`` (batched ancestors, light decoding) returns what
LangGraph's default implementation (one ``get_tuple`` per ancestor) returns, on the same
stored threads: a long linear thread, a fork from an old checkpoint, a namespace of its own.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver

from langchain_tiered_memory import TieredMemory, create_memory_graph
from langchain_tiered_memory.persistence.checkpoint import RedisSaver
from langchain_tiered_memory.persistence.checkpoint.delta import DELTA_BATCH
from langchain_tiered_memory.testing import ScriptedChatModel


def default_history(saver: RedisSaver, config: RunnableConfig, channels: list[str]) -> Any:
    return BaseCheckpointSaver.get_delta_channel_history(saver, config=config, channels=channels)


def shape(history: Any) -> dict[str, Any]:
    """Histories compared by value: writes as (task, channel, message ids or value)."""
    out = {}
    for channel, entry in history.items():
        writes = [
            (task, ch, [getattr(m, "id", m) for m in v] if isinstance(v, list) else v)
            for task, ch, v in entry["writes"]
        ]
        seed = entry.get("seed", "<none>")
        out[channel] = (writes, repr(seed)[:200])
    return out


@pytest.fixture
def saver(embedded_memory: TieredMemory) -> RedisSaver:
    return embedded_memory.checkpointer()


def turns(memory: TieredMemory, saver: RedisSaver, thread: str, n: int) -> RunnableConfig:
    graph = create_memory_graph(
        ScriptedChatModel(replies=["ok"]), memory=memory, checkpointer=saver
    )
    config: RunnableConfig = {"configurable": {"thread_id": thread}}
    for i in range(n):
        graph.invoke(
            {"messages": [HumanMessage(f"{thread} {i}", id=f"{thread}-h{i}")]},
            config,
            context={"user_id": "u"},
        )
    return config


def test_a_thread_longer_than_one_batch_reads_as_the_default_walk(
    embedded_memory: TieredMemory, saver: RedisSaver
) -> None:
    config = turns(embedded_memory, saver, "long", 40)  # 5 checkpoints a turn: > DELTA_BATCH
    assert len(list(saver.list(config))) > DELTA_BATCH
    channels = ["messages", "recent_history"]
    ours = saver.get_delta_channel_history(config=config, channels=channels)
    assert shape(ours) == shape(default_history(saver, config, channels))
    assert ours["messages"]["writes"]  # the walk found writes to replay


def test_a_fork_from_an_old_checkpoint_walks_its_own_parents(
    embedded_memory: TieredMemory, saver: RedisSaver
) -> None:
    config = turns(embedded_memory, saver, "forked", 6)
    history = list(saver.list(config))
    old = history[len(history) // 2].config
    old = {**old, "configurable": {**old["configurable"], "user_id": "u"}}  # the owner's edit
    graph = create_memory_graph(
        ScriptedChatModel(replies=["fork"]), memory=embedded_memory, checkpointer=saver
    )
    forked = graph.update_state(old, {"messages": [AIMessage("edited", id="edit")]})
    graph.invoke(
        {"messages": [HumanMessage("after the fork", id="fork-h")]},
        forked,
        context={"user_id": "u"},
    )
    latest = saver.get_tuple(config)
    assert latest is not None
    ours = saver.get_delta_channel_history(config=latest.config, channels=["messages"])
    assert shape(ours) == shape(default_history(saver, latest.config, ["messages"]))
    for at in (old, forked):
        assert shape(saver.get_delta_channel_history(config=at, channels=["messages"])) == shape(
            default_history(saver, at, ["messages"])
        )


async def test_the_async_walk_matches(embedded_memory: TieredMemory, saver: RedisSaver) -> None:
    config = turns(embedded_memory, saver, "async", 8)
    ours = await saver.aget_delta_channel_history(config=config, channels=["messages"])
    assert shape(ours) == shape(default_history(saver, config, ["messages"]))
    assert await saver.aget_delta_channel_history(config=config, channels=[]) == {}


# --------------------------------------------------------------------------- issue 32, 2 and 8


def _graph(memory: TieredMemory, replies: list[str]) -> Any:
    from langchain_tiered_memory.agent.graph import create_memory_graph
    from langchain_tiered_memory.testing import ScriptedChatModel

    model = ScriptedChatModel(replies=replies)
    return create_memory_graph(model, memory=memory, checkpointer=memory.checkpointer())


def test_messages_given_as_tuples_keep_their_ids_across_reads(
    embedded_memory: TieredMemory,
) -> None:
    config: Any = {"configurable": {"thread_id": "t", "user_id": "u"}}
    graph = _graph(embedded_memory, ["hello"])
    graph.invoke({"messages": [("user", "hi there")]}, config)
    first = [m.id for m in graph.get_state(config).values["messages"]]
    cold = _graph(embedded_memory, ["hello"])  # a new saver: rebuilt from Redis
    assert [m.id for m in cold.get_state(config).values["messages"]] == first
    # the human message can be removed by its id, and an edit by id replaces it
    human_id = first[0]
    cold.update_state(config, {"messages": [HumanMessage("hi (edited)", id=human_id)]})
    edited = _graph(embedded_memory, []).get_state(config).values["messages"]
    assert [m.text for m in edited] == ["hi (edited)", "hello"]
    cold.update_state(config, {"messages": [RemoveMessage(id=human_id)]})
    assert [m.text for m in _graph(embedded_memory, []).get_state(config).values["messages"]] == [
        "hello"
    ]


def test_remove_all_then_a_removal_rebuilds_the_state_the_run_saw(
    embedded_memory: TieredMemory,
) -> None:
    from langgraph.graph.message import REMOVE_ALL_MESSAGES

    config: Any = {"configurable": {"thread_id": "t", "user_id": "u"}}
    graph = _graph(embedded_memory, ["one", "two", "three"])
    for text in ("a", "b"):
        graph.invoke({"messages": [HumanMessage(text)]}, config)
    kept = graph.get_state(config).values["messages"][-2:]  # "b" and "two"
    graph.update_state(config, {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *kept]})
    graph.update_state(config, {"messages": [RemoveMessage(id=kept[0].id)]})
    live = [m.text for m in graph.get_state(config).values["messages"]]
    assert live == ["two"]
    cold = _graph(embedded_memory, ["three"])
    rebuilt = cold.get_state(config).values["messages"]
    assert [m.text for m in rebuilt] == live
    assert not any(isinstance(m, RemoveMessage) for m in rebuilt)
    out = cold.invoke({"messages": [HumanMessage("c")]}, config)  # later turns still work
    assert out["messages"][-1].text == "three"


# --------------------------------------------------------------------------- issue 32, 3


def test_every_turn_reaches_the_history_after_a_message_is_removed(
    embedded_memory: TieredMemory,
) -> None:
    config: Any = {"configurable": {"thread_id": "t", "user_id": "u"}}
    graph = _graph(embedded_memory, ["r1", "r2", "r3", "r4"])
    for text in ("q1", "q2"):
        graph.invoke({"messages": [HumanMessage(text)]}, config)
    first = graph.get_state(config).values["messages"][0]
    graph.update_state(config, {"messages": [RemoveMessage(id=first.id)]})
    for text in ("q3", "q4"):
        graph.invoke({"messages": [HumanMessage(text)]}, config)
    saved = [m.text for m in embedded_memory.load_context("u", max=100)]
    assert saved == ["q1", "r1", "q2", "r2", "q3", "r3", "q4", "r4"]


def test_every_turn_reaches_memory_beside_a_summarizing_middleware(
    embedded_memory: TieredMemory,
) -> None:
    from langchain.agents import create_agent
    from langchain.agents.middleware import SummarizationMiddleware
    from langgraph.checkpoint.memory import InMemorySaver

    from langchain_tiered_memory.agent.middleware import TieredMemoryMiddleware

    model = ScriptedChatModel(replies=[f"r{i}" for i in range(1, 9)])
    summarizer = ScriptedChatModel(replies=["(summary)"])
    middleware: list[Any] = [
        SummarizationMiddleware(summarizer, trigger=("messages", 5), keep=("messages", 2)),
        TieredMemoryMiddleware(embedded_memory, recall_k=0),
    ]
    agent: Any = create_agent(
        model,
        tools=[],
        middleware=middleware,
        checkpointer=embedded_memory.checkpointer(InMemorySaver()),
    )
    options: Any = {"context": {"user_id": "u"}, "config": {"configurable": {"thread_id": "t"}}}
    for i in range(1, 9):
        agent.invoke({"messages": [HumanMessage(f"q{i}")]}, **options)
    texts = [m.text for m in embedded_memory.load_context("u", max=100)]
    for i in range(1, 9):  # every turn, question and answer
        assert f"q{i}" in texts and f"r{i}" in texts, (i, texts)

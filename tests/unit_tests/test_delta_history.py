"""``RedisSaver.get_delta_channel_history`` (batched ancestors, light decoding) returns what
LangGraph's default implementation (one ``get_tuple`` per ancestor) returns, on the same
stored threads: a long linear thread, a fork from an old checkpoint, a namespace of its own.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver

from langchain_tiered_memory import TieredMemory, create_memory_graph
from langchain_tiered_memory.checkpoint import RedisSaver
from langchain_tiered_memory.checkpoint.base import DELTA_BATCH
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

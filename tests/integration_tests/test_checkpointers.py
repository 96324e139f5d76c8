"""The memory graph with real checkpointers and on real Redis servers.

Checkpointers: InMemorySaver, SqliteSaver (state survives reopening the file), PostgresSaver
and AsyncPostgresSaver on a throwaway PostgreSQL. Memory backends: the embedded Redis, a
standalone redis-server and a Redis Cluster.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver

from langchain_tiered_memory import HashingEmbeddings, TieredMemory
from langchain_tiered_memory.agent.graph import create_memory_graph
from langchain_tiered_memory.agent.replies import said_by_model
from langchain_tiered_memory.testing import ScriptedChatModel

BIRTHDAY_ITEM = "The user's birthday is on May 8."
INTRO = "I'm Alice, 30. My birthday is on May 8."


def call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])


def script() -> ScriptedChatModel:
    """Turn 1 tags Alice; turn 2 summarizes (the graph calls the tool for the request);
    turn 3 just answers."""
    return ScriptedChatModel(
        replies=[
            call("user_tag", {"name": "Alice", "age": 30}, "c1"),
            "Hi Alice!",
            call("SummaryItems", {"items": [BIRTHDAY_ITEM]}, "s1"),
            "Summarized.",
            "On May 8.",
        ]
    )


_thread_ns = ""


@pytest.fixture(autouse=True)
def _unique_thread_ids(key_prefix: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Thread ids of their own per test: the PostgreSQL database lives for the session."""
    monkeypatch.setattr(sys.modules[__name__], "_thread_ns", key_prefix)


def cfg(thread: str) -> RunnableConfig:
    return {"configurable": {"thread_id": f"{_thread_ns}-{thread}"}}


TURNS = [
    ("t1", INTRO),
    ("t1", "Please summarize our conversation."),
    ("t2", "When is my birthday?"),
]


def check_memory_after_turns(
    memory: TieredMemory, model: ScriptedChatModel, exported: dict[str, Any] | None = None
) -> None:
    """``exported``: the user's export, when it must be made with ``aexport_user`` (an
    async-only saver is attached: a sync export on the loop's thread cannot reach it)."""
    assert memory.get_user_tags("alice") == {"name": "Alice", "age": "30"}
    exported = memory.export_user("alice") if exported is None else exported
    assert [s["text"] for s in exported["summaries"]] == [BIRTHDAY_ITEM]
    assert memory.history.length("alice") == 4 + 4 + 2
    system = model.prompts[-1][0]
    assert isinstance(system, SystemMessage)
    assert '"name": "Alice"' in system.text and BIRTHDAY_ITEM in system.text
    # t2's first turn: the conversation of t1's first turn once (its text, not the tool
    # calls, results and placeholders: issue 44 item 1; nor the old request to summarize:
    # issue 56 item 1; nor the summarize turn's reply, which quotes the stored items:
    # issue 78 item 4), then the question.
    texts = [m.text for m in model.prompts[-1][1:]]
    assert texts[0] == INTRO and texts[-1] == "When is my birthday?"
    assert "Please summarize our conversation." not in texts
    assert not any("Stored" in t for t in texts)
    assert len(texts) == 2 + 1
    ids = [m.id for m in model.prompts[-1][1:]]
    assert len(ids) == len(set(ids))


def run_turns(graph: Any, turns: list[tuple[str, str]] = TURNS) -> None:
    for thread, text in turns:
        graph.invoke(
            {"messages": [HumanMessage(text)]}, context={"user_id": "alice"}, config=cfg(thread)
        )


async def arun_turns(graph: Any, turns: list[tuple[str, str]] = TURNS) -> None:
    for thread, text in turns:
        await graph.ainvoke(
            {"messages": [HumanMessage(text)]}, context={"user_id": "alice"}, config=cfg(thread)
        )


def thread_texts(graph: Any, thread: str) -> list[str]:
    messages: list[BaseMessage] = graph.get_state(cfg(thread)).values["messages"]
    return [m.text for m in messages]


def check_threads(graph: Any) -> None:
    assert thread_texts(graph, "t1") == [
        INTRO,
        "",
        "Recorded: age=30, name=Alice.",
        "Hi Alice!",
        "Please summarize our conversation.",
        "(saving our conversation to memory)",
        'Stored 1 memory item(s) from the conversation:\n- "The user\'s birthday is on May 8."',
        # the reply names what was stored, whatever the model wrote (issue 44 item 5)
        "Summarized.\n\nStored 1 memory item(s) from the conversation:\n- \"The user's birthday"
        ' is on May 8."',
    ]
    assert thread_texts(graph, "t2") == ["When is my birthday?", "On May 8."]


# --------------------------------------------------------------------------- checkpointers


def test_in_memory_saver(embedded_memory: TieredMemory) -> None:
    model = script()
    graph = create_memory_graph(model, memory=embedded_memory, checkpointer=InMemorySaver())
    run_turns(graph)
    check_threads(graph)
    check_memory_after_turns(embedded_memory, model)


def test_sqlite_saver_thread_state_survives_reopening(
    embedded_memory: TieredMemory, tmp_path: Path
) -> None:
    path = str(tmp_path / "checkpoints.sqlite")
    model = script()
    with SqliteSaver.from_conn_string(path) as saver:
        run_turns(create_memory_graph(model, memory=embedded_memory, checkpointer=saver))
    check_memory_after_turns(embedded_memory, model)
    with SqliteSaver.from_conn_string(path) as saver:
        graph = create_memory_graph(model, memory=embedded_memory, checkpointer=saver)
        check_threads(graph)
        before = thread_texts(graph, "t1")
        # the model's view of the thread: its own words, not the package's report of what
        # its tools stored (which the user reads)
        seen = [
            said_by_model(m) if isinstance(m, AIMessage) else m.text
            for m in graph.get_state(cfg("t1")).values["messages"]
        ]
        # Resuming t1 after the reopen: the restored state supplies the thread's messages.
        run_turns(graph, [("t1", "Still there?")])
        assert thread_texts(graph, "t1") == [*before, "Still there?", "On May 8."]
    prompt = model.prompts[-1]
    assert [m.text for m in prompt[1:]] == [*seen, "Still there?"]
    assert seen != before  # the report was in the thread, restored from SQLite
    ids = [m.id for m in prompt[1:]]
    assert len(ids) == len(set(ids))


@pytest.fixture
def postgres_saver(postgres_url: str) -> Iterator[PostgresSaver]:
    with PostgresSaver.from_conn_string(postgres_url) as saver:
        saver.setup()
        yield saver


def test_postgres_saver(
    embedded_memory: TieredMemory, postgres_saver: PostgresSaver, postgres_url: str
) -> None:
    model = script()
    graph = create_memory_graph(model, memory=embedded_memory, checkpointer=postgres_saver)
    run_turns(graph)
    check_memory_after_turns(embedded_memory, model)
    # A second connection (another app process) reads the same thread state.
    with PostgresSaver.from_conn_string(postgres_url) as other:
        check_threads(create_memory_graph(model, memory=embedded_memory, checkpointer=other))


@pytest.fixture
async def async_postgres_saver(postgres_url: str) -> AsyncIterator[AsyncPostgresSaver]:
    async with AsyncPostgresSaver.from_conn_string(postgres_url) as saver:
        await saver.setup()
        yield saver


async def test_async_postgres_saver(
    embedded_memory: TieredMemory, async_postgres_saver: AsyncPostgresSaver
) -> None:
    model = script()
    graph = create_memory_graph(model, memory=embedded_memory, checkpointer=async_postgres_saver)
    await arun_turns(graph)
    state = await graph.aget_state(cfg("t2"))
    assert [m.text for m in state.values["messages"]] == ["When is my birthday?", "On May 8."]
    exported = await embedded_memory.aexport_user("alice")
    assert "When is my birthday?" in str(exported["thread_states"])  # the graph's saver
    check_memory_after_turns(embedded_memory, model, exported)


# --------------------------------------------------------------------------- Redis servers


@pytest.fixture(params=["standalone", "cluster"])
def server_url(request: pytest.FixtureRequest) -> str:
    name = "redis_server_url" if request.param == "standalone" else "redis_cluster_url"
    return request.getfixturevalue(name)  # type: ignore[no-any-return]


async def test_graph_on_a_redis_server(server_url: str, key_prefix: str) -> None:
    memory = TieredMemory.from_url(
        server_url, key_prefix=key_prefix, embeddings=HashingEmbeddings()
    )
    try:
        model = script()
        graph = create_memory_graph(model, memory=memory, checkpointer=InMemorySaver())
        run_turns(graph, TURNS[:2])
        await arun_turns(graph, TURNS[2:])
        check_threads(graph)
        check_memory_after_turns(memory, model)
        # Another user on the same server and prefix sees none of it.
        other = ScriptedChatModel(replies=["Who are you?"])
        create_memory_graph(other, memory=memory).invoke(
            {"messages": [HumanMessage("When is my birthday?")]}, context={"user_id": "bob"}
        )
        assert (
            "Alice" not in other.prompts[0][0].text
            and BIRTHDAY_ITEM not in other.prompts[0][0].text
        )
        assert [m.text for m in other.prompts[0][1:]] == ["When is my birthday?"]
    finally:
        await memory.aclose()

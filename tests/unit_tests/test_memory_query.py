"""A memory query the model writes before it replies (issue 45 item 3): opt-in, for
capable models only, the same in the graph and the middleware.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.agent.graph import create_memory_graph
from langchain_tiered_memory.agent.memory_query import (
    MemoryQueryKind,
    memory_query_messages,
    parse_memory_query,
    write_memory_query,
)
from langchain_tiered_memory.agent.middleware import TieredMemoryMiddleware
from langchain_tiered_memory.testing import ScriptedChatModel

QUERY_MARK = "You help an assistant remember"


def asked_for_a_query(model: ScriptedChatModel) -> list[Any]:
    return [p for p in model.prompts if QUERY_MARK in p[0].text]


@pytest.mark.parametrize(
    ("raw", "line"),
    [
        # real answers of Qwen2.5-Coder-1.5B (bench/data/model_queries.json)
        (
            "The user is most likely about feeling embarrassed again.",
            "The user is most likely about feeling embarrassed again.",
        ),
        ('"driving test retake nerves"', "driving test retake nerves"),
        ("「用户考驾照没过」\n其他的话", "用户考驾照没过"),
        ("\n\n  The user failed a test.  \n", "The user failed a test."),
        ('{"name": "search_memory", "arguments": {"query": "exam"}}', None),
        ("<tool_call>search_memory</tool_call>", None),
        ("   ", None),
    ],
)
def test_the_line_is_the_first_line_without_quotes_and_never_machinery(
    raw: str, line: str | None
) -> None:
    assert parse_memory_query(AIMessage(raw)) == line


def test_a_tool_call_is_no_line() -> None:
    call = {"name": "user_tag", "args": {"age": 3}, "id": "c"}
    assert parse_memory_query(AIMessage("The user", tool_calls=[call])) is None


def test_a_long_answer_is_cut() -> None:
    assert len(parse_memory_query(AIMessage("x" * 5000)) or "") == 300


def test_the_request_names_the_kind_and_carries_only_the_users_texts() -> None:
    note, query = (memory_query_messages(["a", " ", "b"], k) for k in ("note", "query"))
    assert "The user" in note[0].text and "search query" in query[0].text
    assert note[1].text.endswith("- a\n- b")
    with pytest.raises(ValueError, match="memory query kind"):
        memory_query_messages(["a"], "hope")  # type: ignore[arg-type]


def test_no_texts_no_call() -> None:
    model = ScriptedChatModel(replies=["never"])
    assert write_memory_query(model, ["", " "]) is None
    assert model.prompts == []


def store(memory: TieredMemory) -> None:
    memory.add_summaries(
        "u",
        [
            "The user failed the driving road test in September after stalling.",
            "The user adopted a grey cat called Miso in May.",
            "The user spent a week in Lisbon in April.",
            "The user was promoted to team lead in June.",
        ],
    )


def run_graph(memory: TieredMemory, model: ScriptedChatModel, **options: Any) -> str:
    graph = create_memory_graph(model, memory=memory, checkpointer=InMemorySaver(), **options)
    graph.invoke(
        {"messages": [HumanMessage("Thursday is the retake and I can't sleep.")]},
        {"configurable": {"thread_id": "t"}},
        context={"user_id": "u"},
    )
    replies = [p for p in model.prompts if QUERY_MARK not in p[0].text]
    return str(replies[0][0].text)


def test_the_graph_asks_first_and_recalls_with_the_line(memory: TieredMemory) -> None:
    store(memory)
    # without a line, the conversation alone does not bring up the cat
    assert "Miso" not in run_graph(memory, ScriptedChatModel(replies=["Good luck!"]), recall_k=2)

    model = ScriptedChatModel(replies=["The user adopted a cat.", "Good luck!"])
    prompt = run_graph(memory, model, memory_query="note", recall_k=2)
    (asked,) = asked_for_a_query(model)
    assert asked[1].text.endswith("- Thursday is the retake and I can't sleep.")
    assert model.prompts[0] is asked  # before the reply: its line is in the reply's memory
    # the line's item leads; the latest message's own best item is still kept
    assert "Miso" in prompt and "driving road test" in prompt


def test_off_by_default_and_for_a_small_model(
    memory: TieredMemory, caplog: pytest.LogCaptureFixture
) -> None:
    store(memory)
    model = ScriptedChatModel(replies=["Good luck!"])
    run_graph(memory, model)
    assert asked_for_a_query(model) == []

    model = ScriptedChatModel(replies=["Good luck!"])
    with caplog.at_level(logging.WARNING):
        run_graph(memory, model, memory_query="note", small_model=True)
    assert asked_for_a_query(model) == []
    assert "for capable models" in caplog.text


def test_an_unknown_kind_is_refused_when_the_graph_is_built(memory: TieredMemory) -> None:
    with pytest.raises(ValueError, match="memory_query must be one of"):
        create_memory_graph(ScriptedChatModel(replies=[]), memory=memory, memory_query="hope")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="memory_query must be one of"):
        TieredMemoryMiddleware(memory, memory_query="hope")  # type: ignore[arg-type]


async def test_the_middleware_asks_the_agents_model_from_its_first_call(
    memory: TieredMemory,
) -> None:
    store(memory)
    model = ScriptedChatModel(replies=["Hi!", "The user adopted a cat.", "How is Miso?"])
    agent: Any = create_agent(
        model,
        tools=[],
        middleware=[TieredMemoryMiddleware(memory, memory_query="note", recall_k=2)],
        checkpointer=memory.checkpointer(InMemorySaver()),
    )
    config: Any = {"configurable": {"thread_id": "t"}}
    for text in ("Hello.", "Thursday is the retake and I can't sleep."):
        await agent.ainvoke({"messages": [HumanMessage(text)]}, config, context={"user_id": "u"})
    # the first turn's load ran before the agent's model was seen: no query then
    (asked,) = asked_for_a_query(model)
    reply = [p for p in model.prompts if "<memories>" in p[0].text][-1]
    assert model.prompts.index(asked) < model.prompts.index(reply)
    assert "Miso" in reply[0].text


async def test_the_middleware_warns_once_for_a_small_model(
    memory: TieredMemory, caplog: pytest.LogCaptureFixture
) -> None:
    model = ScriptedChatModel(replies=["Hi!", "Hello again."])
    with caplog.at_level(logging.WARNING):
        middleware = TieredMemoryMiddleware(memory, memory_query="note", small_model=True)
        agent: Any = create_agent(
            model,
            tools=[],
            middleware=[middleware],
            checkpointer=memory.checkpointer(InMemorySaver()),
        )
        config: Any = {"configurable": {"thread_id": "t"}}
        for text in ("Hello.", "Thursday is the retake."):
            await agent.ainvoke(
                {"messages": [HumanMessage(text)]}, config, context={"user_id": "u"}
            )
    assert caplog.text.count("for capable models") == 1  # at the build, not again per call
    assert asked_for_a_query(model) == []


def test_a_chinese_line_recalls_a_chinese_memory(memory: TieredMemory) -> None:
    memory.add_summaries(
        "u",
        [
            "用户去年九月驾照路考没通过。",
            "用户五月领养了一只叫米索的灰猫。",
            "用户四月在里斯本待了一周。",
        ],
    )
    memory.add_summaries("u", ["用户六月升职当了组长。"])
    turn = "星期四补考，我紧张得睡不着。"
    plain = ScriptedChatModel(replies=["好的！"])
    asking = ScriptedChatModel(replies=["用户领养了一只猫。", "好的！"])
    cases: list[tuple[ScriptedChatModel, MemoryQueryKind | None]] = [
        (plain, None),
        (asking, "note"),
    ]
    for model, kind in cases:
        graph = create_memory_graph(
            model,
            memory=memory,
            checkpointer=InMemorySaver(),
            recall_k=2,
            memory_query=kind,
        )
        graph.invoke(
            {"messages": [HumanMessage(turn)]},
            {"configurable": {"thread_id": "t"}},
            context={"user_id": "u"},
        )
    assert "米索" not in plain.prompts[-1][0].text  # the conversation alone: no cat
    (asked,) = asked_for_a_query(asking)
    assert asked[1].text.endswith(f"- {turn}")
    reply = [p for p in asking.prompts if QUERY_MARK not in p[0].text][0]
    assert "米索" in reply[0].text  # the model's line brought the cat

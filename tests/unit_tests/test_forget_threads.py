"""forget_user also deletes the user's checkpointer threads; big turns append atomically."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.agent.graph import create_memory_graph
from langchain_tiered_memory.agent.middleware import TieredMemoryMiddleware
from langchain_tiered_memory.testing import ScriptedChatModel


def _run(graph: Any, user: str, thread: str, text: str) -> None:
    graph.invoke(
        {"messages": [HumanMessage(text)]},
        context={"user_id": user},
        config={"configurable": {"thread_id": thread}},
    )


def test_forget_user_deletes_only_that_users_threads(
    memory_factory: Callable[..., TieredMemory],
) -> None:
    memory = memory_factory()
    saver = InMemorySaver()
    graph = create_memory_graph(
        ScriptedChatModel(replies=["ok"]), memory=memory, checkpointer=saver
    )
    _run(graph, "alice", "a1", "hello")
    _run(graph, "alice", "a2", "hello again")
    _run(graph, "bob", "b1", "hi")

    assert memory.history.threads("alice") == ["a1", "a2"]
    assert memory.export_user("alice")["threads"] == ["a1", "a2"]

    removed = memory.forget_user("alice", checkpointer=saver)

    assert removed["threads"] == 2
    assert removed["history"] == 4
    for thread in ("a1", "a2"):
        assert saver.get_tuple({"configurable": {"thread_id": thread}}) is None
    assert saver.get_tuple({"configurable": {"thread_id": "b1"}}) is not None
    assert memory.history.threads("alice") == []
    assert memory.history.threads("bob") == ["b1"]
    assert len(memory.load_context("bob", 10)) == 2


async def test_aforget_user_deletes_threads(memory_factory: Callable[..., TieredMemory]) -> None:
    memory = memory_factory()
    saver = InMemorySaver()
    graph = create_memory_graph(
        ScriptedChatModel(replies=["ok"]), memory=memory, checkpointer=saver
    )
    await graph.ainvoke(
        {"messages": [HumanMessage("hello")]},
        context={"user_id": "carol"},
        config={"configurable": {"thread_id": "c1"}},
    )
    assert await memory.history.athreads("carol") == ["c1"]
    removed = await memory.aforget_user("carol", checkpointer=saver)
    assert removed["threads"] == 1
    assert saver.get_tuple({"configurable": {"thread_id": "c1"}}) is None


def test_forget_reaches_a_checkpointer_attached_once(
    memory_factory: Callable[..., TieredMemory],
) -> None:
    """A checkpointer handed to the memory once (issue 43; since issue 66 the graph's own
    is attached when the graph is built, and attaching it again adds nothing): a
    forget_user from any door (here without arguments) erases the user's threads there."""
    memory = memory_factory()
    saver = InMemorySaver()
    graph = create_memory_graph(
        ScriptedChatModel(replies=["ok"]), memory=memory, checkpointer=saver
    )
    _run(graph, "dave", "d1", "hello")
    assert "hello" in str(memory.export_user("dave")["thread_states"])
    memory.attach(checkpointer=saver)
    assert len(memory.export_user("dave")["thread_states"]) == 1
    assert memory.forget_user("dave")["threads"] == 1
    assert saver.get_tuple({"configurable": {"thread_id": "d1"}}) is None


def test_the_guarded_checkpointer_is_known_to_erasure(
    memory_factory: Callable[..., TieredMemory],
) -> None:
    """``memory.checkpointer(saver)`` attaches the saver it guards: nothing its threads hold
    is left for a later erasure to chase."""
    memory = memory_factory()
    saver = memory.checkpointer(InMemorySaver())
    agent = create_agent(
        ScriptedChatModel(replies=["ok"]),
        middleware=[TieredMemoryMiddleware(memory)],
        checkpointer=saver,
    )
    _run(agent, "dave", "d1", "hello")
    assert "hello" in str(memory.export_user("dave")["thread_states"])
    assert memory.forget_user("dave")["threads"] == 1
    assert saver.get_tuple({"configurable": {"thread_id": "d1"}}) is None


def test_a_turn_larger_than_luas_stack_appends_whole(
    memory_factory: Callable[..., TieredMemory],
) -> None:
    memory = memory_factory()
    turn = [HumanMessage(f"m{i}") if i % 2 == 0 else AIMessage(f"m{i}") for i in range(12000)]
    memory.add_session_log("erin", turn, thread_id="e1")
    assert memory.history.length("erin") == 12000
    tail = memory.load_context("erin", 3)
    assert [m.content for m in tail] == ["m11997", "m11998", "m11999"]


@pytest.mark.parametrize("bad", ["", 7])
def test_bad_thread_id_is_refused_and_nothing_written(
    memory_factory: Callable[..., TieredMemory], bad: object
) -> None:
    memory = memory_factory()
    with pytest.raises(ValueError):
        memory.add_session_log("fred", [HumanMessage("x")], thread_id=bad)  # type: ignore[arg-type]
    assert memory.history.length("fred") == 0


async def test_forget_thread_deletes_only_a_thread_of_that_user_and_counts_it(
    memory_factory: Callable[..., TieredMemory],
) -> None:
    memory = memory_factory()
    saver = InMemorySaver()
    graph = create_memory_graph(
        ScriptedChatModel(replies=["ok"]), memory=memory, checkpointer=saver
    )
    _run(graph, "alice", "a1", "hello")
    _run(graph, "bob", "b1", "hi")
    written = len(list(saver.list({"configurable": {"thread_id": "a1"}})))
    assert written >= 2
    # bob's thread named by alice: nothing of it is touched, and nothing is claimed
    assert memory.forget_thread("alice", "b1", checkpointer=saver) == {
        "messages": 0,
        "summaries": 0,
        "checkpoints": 0,
    }
    assert saver.get_tuple({"configurable": {"thread_id": "b1"}}) is not None
    assert memory.forget_thread("nobody-here", "zzz", checkpointer=saver)["checkpoints"] == 0
    removed = memory.forget_thread("alice", "a1", checkpointer=saver)
    assert removed["checkpoints"] == written and removed["messages"] == 2
    assert saver.get_tuple({"configurable": {"thread_id": "a1"}}) is None
    _run(graph, "alice", "a2", "again")
    assert (await memory.aforget_thread("bob", "a2", checkpointer=saver))["checkpoints"] == 0
    assert (await memory.aforget_thread("alice", "a2", checkpointer=saver))["checkpoints"] > 0
    assert saver.get_tuple({"configurable": {"thread_id": "a2"}}) is None


@pytest.mark.parametrize("saver", ["redis", "in_memory"])
def test_export_holds_the_threads_messages_from_the_delta_channel(
    embedded_memory: TieredMemory, saver: str
) -> None:
    """Issue 32 item 5: the prebuilt graph keeps its messages in a DeltaChannel, which a
    checkpoint's values do not hold; the export rebuilds them from the saver's writes."""
    from langgraph.checkpoint.memory import InMemorySaver

    from langchain_tiered_memory.agent.graph import create_memory_graph
    from langchain_tiered_memory.testing import ScriptedChatModel

    checkpointer: Any = embedded_memory.checkpointer() if saver == "redis" else InMemorySaver()
    graph = create_memory_graph(
        ScriptedChatModel(replies=["one", "two"]), memory=embedded_memory, checkpointer=checkpointer
    )
    config: Any = {"configurable": {"thread_id": "t1", "user_id": "u"}}
    for text in ("first", "second"):
        graph.invoke({"messages": [HumanMessage(text)]}, config)
    exported = embedded_memory.export_user("u", checkpointer=checkpointer)
    (state,) = exported["thread_states"]
    texts = [m["kwargs"]["content"] for m in state["values"]["messages"]]
    assert texts == ["first", "one", "second", "two"]
    json.dumps(exported)  # still JSON


class _Failing(ScriptedChatModel):
    """A model whose every call raises, as a provider outage would."""

    def _generate(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("provider down")


@pytest.mark.parametrize("driver", ["graph", "middleware"])
def test_a_thread_whose_first_turn_failed_is_still_forgotten(
    memory_factory: Callable[..., TieredMemory], driver: str
) -> None:
    """Issue 32 item 4: the thread is recorded when its turn starts, not at the save."""
    memory = memory_factory()
    saver = InMemorySaver()
    if driver == "graph":
        graph: Any = create_memory_graph(_Failing(), memory=memory, checkpointer=saver)
    else:
        from langchain.agents import create_agent

        from langchain_tiered_memory.agent.middleware import TieredMemoryMiddleware

        graph = create_agent(
            _Failing(),
            middleware=[TieredMemoryMiddleware(memory=memory)],
            checkpointer=memory.checkpointer(saver),
        )
    with pytest.raises(RuntimeError, match="provider down"):
        _run(graph, "erin", "e1", "My passport number is X123.")
    stored = saver.get_tuple({"configurable": {"thread_id": "e1"}})
    assert stored is not None  # the user's text is in the thread's checkpoints
    assert memory.history.threads("erin") == ["e1"]

    removed = memory.forget_user("erin", checkpointer=saver)

    assert removed["threads"] == 1
    assert saver.get_tuple({"configurable": {"thread_id": "e1"}}) is None
    assert list(saver.list(None)) == []


def _summary_call(items: list[str]) -> AIMessage:
    return AIMessage(
        content="", tool_calls=[{"name": "SummaryItems", "args": {"items": items}, "id": "s"}]
    )


@pytest.mark.parametrize(
    ("paris", "cat", "paris_item", "cat_item"),
    [
        (
            "I live in Paris near the river.",
            "I have a cat named Tom.",
            "The user lives in Paris near the river.",
            "The user has a cat named Tom.",
        ),
        (
            "我住在巴黎，靠近塞纳河。",
            "我养了一只叫汤姆的猫。",
            "用户住在巴黎，靠近塞纳河。",
            "用户养了一只叫汤姆的猫。",
        ),
    ],
    ids=["en", "zh"],
)
def test_forget_thread_deletes_the_items_made_only_from_it(
    memory_factory: Callable[..., TieredMemory],
    paris: str,
    cat: str,
    paris_item: str,
    cat_item: str,
) -> None:
    """Issue 43 item 6: one summarization batch read two threads; each item records the
    messages (and threads) it came from, so forgetting one thread deletes its items and
    keeps the other's. Before, every item got the batch's two threads and none went."""
    memory = memory_factory()
    memory.add_session_log("fay", [HumanMessage(paris), AIMessage("Nice.")], thread_id="t-a")
    memory.add_session_log("fay", [HumanMessage(cat), AIMessage("Cute.")], thread_id="t-b")
    model = ScriptedChatModel(replies=[_summary_call([paris_item, cat_item])])
    memory.summarize_history("fay", model, reconcile=False)
    meta = {d.page_content: d.metadata for d in memory.summaries.get_all("fay")}
    assert meta[paris_item]["source_threads"] == ["t-a"]
    assert meta[cat_item]["source_threads"] == ["t-b"]
    assert meta[paris_item]["source_positions"] == [0]
    assert memory.forget_thread("fay", "t-a")["summaries"] == 1
    assert [d.page_content for d in memory.summaries.get_all("fay")] == [cat_item]


def test_an_item_said_in_two_threads_outlives_forgetting_one(
    memory_factory: Callable[..., TieredMemory],
) -> None:
    memory = memory_factory()
    for thread in ("t-a", "t-b"):
        memory.add_session_log(
            "gus", [HumanMessage("My sister Mia lives in Oslo."), AIMessage("ok")], thread_id=thread
        )
    model = ScriptedChatModel(replies=[_summary_call(["The user's sister Mia lives in Oslo."])])
    memory.summarize_history("gus", model, reconcile=False)
    (doc,) = memory.summaries.get_all("gus")
    assert doc.metadata["source_threads"] == ["t-a", "t-b"]
    assert memory.forget_thread("gus", "t-a")["summaries"] == 0
    # kept, without the forgotten thread among its sources (the id was left there before)
    (kept,) = memory.summaries.get_all("gus")
    assert kept.page_content == doc.page_content and kept.id == doc.id
    assert kept.metadata["source_threads"] == ["t-b"]
    assert "t-a" not in str(memory.export_user("gus")["summaries"])
    assert [d.page_content for d in memory.recall_summaries("gus", "Where does Mia live?")] == [
        doc.page_content
    ]


def test_one_thread_id_check_from_every_door(embedded_memory: TieredMemory) -> None:
    """Issue 48 item 5: a thread id was checked three ways with three errors; now the
    graph's config, the history, the erasure and the saver's keys give one error."""
    from langchain_tiered_memory.errors import InvalidArgumentError

    memory = embedded_memory
    too_long = "t" * 1025
    message = "thread_id must be a non-empty string of at most 1024 characters"
    graph = create_memory_graph(
        ScriptedChatModel(replies=["ok"]), memory=memory, checkpointer=memory.checkpointer()
    )
    doors = [
        lambda: _run(graph, "gus", too_long, "hello"),
        lambda: memory.add_session_log("gus", [HumanMessage("x")], thread_id=too_long),
        lambda: memory.forget_thread("gus", too_long),
        lambda: memory.checkpointer().get_tuple({"configurable": {"thread_id": too_long}}),
    ]
    for door in doors:
        with pytest.raises(InvalidArgumentError, match=message):
            door()
    assert memory.history.length("gus") == 0


@pytest.mark.parametrize(
    ("said", "paraphrase", "other", "kept"),
    [
        (
            "I don't eat meat.",
            "The user avoids meat.",
            "I went hiking in the Alps last summer.",
            "The user went hiking in the Alps last summer.",
        ),
        (
            "我不吃肉。",
            "用户从不吃荤，不吃肉类。",
            "我去年夏天去阿尔卑斯山徒步了。",
            "用户去年夏天去阿尔卑斯山徒步了。",
        ),
    ],
)
def test_forget_thread_takes_the_items_the_model_paraphrased_from_it(
    memory_factory: Callable[..., TieredMemory], said: str, paraphrase: str, other: str, kept: str
) -> None:
    """Issue 55 item 10: an item no message carries (the model's paraphrase, in words
    enough of the user's to be kept: issue 65) was the
    whole batch's, and survived forgetting the only thread that said it. Now forgetting
    any thread of its batch deletes it; the item carried by the other thread stays."""
    memory = memory_factory()
    memory.add_session_log("ann", [HumanMessage(said), AIMessage("Noted.")], thread_id="a")
    memory.add_session_log("ann", [HumanMessage(other), AIMessage("Nice!")], thread_id="b")
    call = {"name": "SummaryItems", "args": {"items": [paraphrase, kept]}, "id": "s"}
    model = ScriptedChatModel(replies=[AIMessage(content="", tool_calls=[call])])
    memory.summarize_history("ann", model, reconcile=False)
    assert {d.page_content for d in memory.summaries.get_all("ann")} == {paraphrase, kept}
    memory.forget_thread("ann", "a")
    assert [d.page_content for d in memory.summaries.get_all("ann")] == [kept]


def test_an_item_the_console_shows_from_a_thread_goes_with_it(
    memory_factory: Callable[..., TieredMemory],
) -> None:
    """Issue 55 item 12: items an app tagged with a ``threads`` key showed in the console
    as coming from that thread but survived ``forget_thread``."""
    memory = memory_factory()
    memory.add_session_log("ann", [HumanMessage("hello")], thread_id="t1")
    memory.add_summaries("ann", ["Ann's note from t1."], metadata={"threads": ["t1"]})
    memory.add_summaries("ann", ["Ann's note from t2."], metadata={"threads": ["t2"]})
    memory.forget_thread("ann", "t1")
    assert [d.page_content for d in memory.summaries.get_all("ann")] == ["Ann's note from t2."]

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
    saver = memory.checkpointer(InMemorySaver())
    return create_agent(model, tools=[], middleware=middleware, checkpointer=saver)


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
        "I have noted that.",  # the empty reply was asked again (item 4)
        "Please save this.",
    ]
    assert not any(isinstance(m, ToolMessage) for m in prompt)
    assert not any(getattr(m, "tool_calls", None) for m in prompt)


@pytest.mark.parametrize("door", ["graph", "middleware"])
def test_a_repeated_call_is_answered_once_and_the_reply_is_never_empty(
    memory: TieredMemory, door: str
) -> None:
    """Item 4: the model called user_tag with the same arguments again and again, then,
    tools withdrawn, answered with an empty string, which became the reply."""
    again = [_call("user_tag", {"age": 30}, f"c{i}") for i in range(5)]
    model = ScriptedChatModel(replies=[*again, "", "", AIMessage(content="", tool_calls=[])])
    agent = _agent(memory, model, door)
    result = _turn(agent, "I'm 30 years old.", "t1")
    tools = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert len(tools) == 1  # the repeat was not run again
    reply = result["messages"][-1]
    assert isinstance(reply, AIMessage) and not reply.tool_calls
    assert reply.text.strip() and "Recorded: age=30" in reply.text  # what was done
    assert memory.get_user_tags("ann") == {"age": "30"}


@pytest.mark.parametrize("door", ["graph", "middleware"])
def test_an_empty_reply_is_asked_again_without_tools(memory: TieredMemory, door: str) -> None:
    model = ScriptedChatModel(replies=["", "Hello Ann!"])
    agent = _agent(memory, model, door)
    result = _turn(agent, "Hello there.", "t1")
    assert result["messages"][-1].text == "Hello Ann!"
    asked_again = model.bindings[1]
    assert not asked_again.get("tool_names")  # the second time with no tools


@pytest.mark.parametrize("door", ["graph", "middleware"])
def test_the_user_sees_what_was_stored_whatever_the_model_writes(
    memory: TieredMemory, door: str
) -> None:
    """Item 5: after "Please summarize" the items were only in the tool message."""
    items = ["The user failed the driving test in March.", "The user has an exam tomorrow."]
    summary = AIMessage(
        content="", tool_calls=[{"name": "SummaryItems", "args": {"items": items}, "id": "s"}]
    )
    nothing = AIMessage(  # the after-turn extraction of the first turn: no name, no age
        content="",
        tool_calls=[{"name": "user_facts", "args": {"nothing_stated": True}, "id": "x"}],
    )
    model = ScriptedChatModel(replies=["Good luck!", nothing, summary, "Anything else?"])
    agent = _agent(memory, model, door)
    _turn(agent, "I failed my driving test in March and have an exam tomorrow.", "t1")
    result = _turn(agent, "Please summarize our conversation.", "t1")
    reply = result["messages"][-1].text
    assert reply.startswith("Anything else?")
    assert all(item in reply for item in items)
    assert sorted(d.page_content for d in memory.summaries.get_all("ann")) == sorted(items)


def _summary(items: list[str]) -> AIMessage:
    return AIMessage(
        content="", tool_calls=[{"name": "SummaryItems", "args": {"items": items}, "id": "s"}]
    )


@pytest.mark.parametrize(
    ("turn", "items", "kept"),
    [
        (
            ["I failed my driving test in March.", "Oh no, John Doe! Better luck next time."],
            [
                "John Doe failed their driving test in March.",
                "The user failed their driving test in March.",
            ],
            ["The user failed their driving test in March."],
        ),
        (
            ["I'm thirty and I live in Lyon.", "Lyon is lovely; Paris is nicer, at 45 minutes."],
            ["The user is 30 and lives in Lyon.", "The user lives 45 minutes from Paris."],
            ["The user is 30 and lives in Lyon."],
        ),
        (
            ["我三月份驾照考试没过。", "别难过！你最喜欢的颜色是蓝色，对吧？"],
            ["用户三月份驾照考试没过。", "用户最喜欢的颜色是蓝色。"],
            ["用户三月份驾照考试没过。"],
        ),
    ],
    ids=["assistants-name", "assistants-number", "zh-assistant-alone"],
)
def test_nothing_the_assistant_said_becomes_a_fact(
    memory: TieredMemory, turn: list[str], items: list[str], kept: list[str]
) -> None:
    """Item 2: the only item of a past conversation read "John Doe failed their driving
    test in March": the name came from the assistant's own reply."""
    memory.add_session_log("ann", [HumanMessage(turn[0]), AIMessage(turn[1])], thread_id="t")
    memory.summarize_history("ann", ScriptedChatModel(replies=[_summary(items)]), reconcile=False)
    assert [d.page_content for d in memory.summaries.get_all("ann")] == kept
    assert memory.summaries.get_watermark("ann") == 2  # the window is done either way


def test_a_name_the_user_gave_in_an_earlier_conversation_may_be_used(
    memory: TieredMemory,
) -> None:
    memory.set_user_tags("ann", {"name": "Ann"})
    memory.add_session_log("ann", [HumanMessage("I love sailing."), AIMessage("Nice!")])
    model = ScriptedChatModel(replies=[_summary(["Ann loves sailing."])])
    memory.summarize_history("ann", model, reconcile=False)
    assert [d.page_content for d in memory.summaries.get_all("ann")] == ["Ann loves sailing."]


def _decision(action: str, stored_id: str | None = None) -> AIMessage:
    decision = {"note": 0, "action": action, "stored_id": stored_id}
    return AIMessage(
        content="",
        tool_calls=[{"name": "NoteDecisions", "args": {"decisions": [decision]}, "id": "d"}],
    )


@pytest.mark.parametrize(
    ("old", "new", "question"),
    [
        ("The user lives in Paris.", "The user moved to Berlin last month.", "Where do I live?"),
        ("用户住在巴黎。", "用户上个月搬到了柏林。", "我住在哪里？"),
        ("The user eats meat every day.", "The user is vegetarian now.", "What do I eat?"),
    ],
    ids=["moved", "zh-moved", "now"],
)
@pytest.mark.parametrize("judge", ["model says new", "no update step"])
def test_a_clear_update_supersedes_whatever_the_model_judged(
    memory: TieredMemory, old: str, new: str, question: str, judge: str
) -> None:
    """Item 3: the update step of a real model judged "moved to Berlin" new, both notes
    stayed current and "Where do I live?" was answered from the stale one."""
    memory.add_summaries("ann", [old], created_at="2026-10-01T09:00:00+00:00")
    memory.add_session_log("ann", [HumanMessage(new.replace("The user", "I")), AIMessage("OK!")])
    reconcile = judge == "model says new"
    model = ScriptedChatModel(replies=[_summary([new]), _decision("new")])
    memory.summarize_history("ann", model, reconcile=reconcile)
    every = {d.page_content: d for d in memory.summaries.get_all("ann")}
    assert every[old].metadata.get("superseded_by") == every[new].id
    assert [d.page_content for d in memory.recall_summaries("ann", question)] == [new]
    assert len(model.prompts) == (2 if reconcile else 1)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("The user lives in Paris.", "The user's sister moved to Berlin."),
        ("The user lives in Paris.", "The user is planning to move to Berlin next year."),
        ("The user has a dog named Rex.", "The user now has a cat too."),
        ("The user works at Google as an engineer.", "The user now works remotely on Fridays."),
        ("用户住在巴黎。", "用户上个月去柏林旅游了。"),
    ],
    ids=["sister", "plan", "a-second-pet", "same-job", "zh-visit"],
)
def test_what_does_not_clearly_update_leaves_the_stored_item_current(
    memory: TieredMemory, old: str, new: str
) -> None:
    memory.add_summaries("ann", [old], created_at="2026-10-01T09:00:00+00:00")
    memory.add_session_log("ann", [HumanMessage(new.replace("The user", "I")), AIMessage("OK!")])
    memory.summarize_history("ann", ScriptedChatModel(replies=[_summary([new])]), reconcile=False)
    assert not any(d.metadata.get("superseded_by") for d in memory.summaries.get_all("ann"))


def test_the_models_duplicate_still_drops_a_restated_item(memory: TieredMemory) -> None:
    """The words only ever add a supersession: the model's "duplicate" is kept."""
    memory.add_summaries("ann", ["The user moved to Berlin."], created_at="2026-10-01T09:00:00Z")
    stored = memory.summaries.get_all("ann")[0]
    memory.add_session_log("ann", [HumanMessage("I moved to Berlin."), AIMessage("OK!")])
    model = ScriptedChatModel(
        replies=[_summary(["The user moved to Berlin."]), _decision("duplicate", stored.id)]
    )
    memory.summarize_history("ann", model)
    assert [
        (d.page_content, d.metadata.get("superseded_by")) for d in memory.summaries.get_all("ann")
    ] == [("The user moved to Berlin.", None)]

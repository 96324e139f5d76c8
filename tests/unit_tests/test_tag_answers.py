"""A small model's question about a recorded name or age is answered from the tag, in the
user's script (issue 33 item 3); a capable model is never answered for; a window of
questions holds nothing to summarize and is passed, not failed."""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from langchain_tiered_memory import TieredMemory, create_memory_graph
from langchain_tiered_memory.agent.capture import asked_tag, tag_answer
from langchain_tiered_memory.agent.middleware import TieredMemoryMiddleware
from langchain_tiered_memory.testing import ScriptedChatModel


def tag_call(**args: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": "user_tag", "args": args, "id": "c1"}])


def ask(graph: Any, text: str, thread: str = "t1") -> str:
    result = graph.invoke(
        {"messages": [HumanMessage(text)]},
        context={"user_id": "liming"},
        config={"configurable": {"thread_id": thread}},
    )
    return str(result["messages"][-1].content)


@pytest.mark.parametrize(
    ("text", "tag"),
    [
        ("我多大了？", "age"),
        ("我今年几岁？", "age"),
        ("How old am I?", "age"),
        ("what is my age", "age"),
        ("我叫什么名字？", "name"),
        ("What's my name?", "name"),
        ("你记得我叫什么吗？", "name"),
        ("我叫李明，今年28岁。", None),  # statements are not questions
        ("My name is Alice.", None),
        ("How old is my sister?", None),
        ("我的生日是哪天？", None),  # not a tag: the model answers from memory
    ],
)
def test_which_tag_a_message_asks_about(text: str, tag: str | None) -> None:
    assert asked_tag(text) == tag


def test_an_unrecorded_tag_is_not_answered() -> None:
    assert tag_answer([HumanMessage("我多大了？")], {"name": "李明"}) is None
    assert tag_answer([HumanMessage("What's my name?")], {}) is None


def test_a_small_model_is_answered_from_the_tag_in_the_users_script(
    memory_factory: Any,
) -> None:
    memory: TieredMemory = memory_factory()
    model = ScriptedChatModel(replies=[tag_call(name="李明", age=28)])
    graph = create_memory_graph(
        model, memory=memory, small_model=True, checkpointer=InMemorySaver()
    )
    assert ask(graph, "你好，我叫李明，今年28岁。") == "好的，我记住了（年龄：28，名字：李明）。"
    calls = len(model.prompts)
    # a new thread (a restart): the tags come from memory, the model is not asked
    assert ask(graph, "我多大了？", thread="t2") == "你28岁。"
    assert ask(graph, "我叫什么名字？", thread="t2") == "你叫李明。"
    assert ask(graph, "How old am I?", thread="t2") == "You are 28."
    assert len(model.prompts) == calls
    # a corrected tag is what the next answer says
    memory.set_user_tags("liming", {"age": 29})
    assert ask(graph, "我多大了？", thread="t2") == "你29岁。"


def test_a_capable_model_answers_itself_and_its_state_keeps_no_tags(memory_factory: Any) -> None:
    memory: TieredMemory = memory_factory()
    memory.set_user_tags("liming", {"name": "李明", "age": 28})
    model = ScriptedChatModel(replies=["你今年28岁。"])
    saver = InMemorySaver()
    graph = create_memory_graph(model, memory=memory, checkpointer=saver)
    assert ask(graph, "我多大了？") == "你今年28岁。"
    assert len(model.prompts) == 1
    state = graph.get_state({"configurable": {"thread_id": "t1"}})
    assert "memory_tags" not in state.values


def test_the_middleware_answers_a_small_model_from_the_tag_too(memory_factory: Any) -> None:
    memory: TieredMemory = memory_factory()
    memory.set_user_tags("liming", {"name": "李明", "age": 28})
    model = ScriptedChatModel(replies=["The user is a 28-year-old male."])
    agent: Any = create_agent(
        model,
        tools=[],
        middleware=[TieredMemoryMiddleware(memory, small_model=True)],
        checkpointer=memory.checkpointer(InMemorySaver()),
    )
    result = agent.invoke(
        {"messages": [HumanMessage("我多大了？")]},
        context={"user_id": "liming"},
        config={"configurable": {"thread_id": "t"}},
    )
    assert result["messages"][-1].content == "你28岁。"
    assert model.prompts == []


def test_a_window_of_questions_is_summarized_to_nothing_not_failed(memory_factory: Any) -> None:
    memory: TieredMemory = memory_factory()
    memory.add_session_log(
        "liming", [HumanMessage("我多大了？"), AIMessage("你28岁。"), HumanMessage("谢谢！")]
    )
    model = ScriptedChatModel(replies=["I cannot summarize that."])  # no usable items
    stored = memory.summarize_history(
        "liming", model, extractive_fallback=True, grounded=True, reconcile=False
    )
    assert stored == []
    assert memory.summaries.get_watermark("liming") == 3  # passed: not tried again
    with pytest.raises(Exception, match="no usable items"):  # a capable model's nothing is
        memory.add_session_log("liming", [HumanMessage("My sister lives in Lyon.")])
        memory.summarize_history("liming", model)  # still an error


def test_a_small_models_summary_report_is_in_the_users_script() -> None:
    from langchain_core.messages import ToolMessage

    from langchain_tiered_memory.agent.capture import SUMMARIZE_NOTE, summary_reply

    call = AIMessage(SUMMARIZE_NOTE, tool_calls=[{"name": "summarize", "args": {}, "id": "s"}])
    stored = "Stored 1 memory item(s) from the conversation:\n- 用户说：我的生日是3月5日。"
    for request, expected in [
        ("请总结一下我们的对话。", "好的，我记下了1条记忆：\n- 用户说：我的生日是3月5日。"),
        ("Please summarize our conversation.", stored),
    ]:
        thread = [HumanMessage(request), call, ToolMessage(stored, tool_call_id="s")]
        reply = summary_reply(thread)
        assert reply is not None and reply.content == expected
    nothing = "Nothing new to summarize: the memory is up to date."
    thread = [HumanMessage("请总结一下。"), call, ToolMessage(nothing, tool_call_id="s")]
    reply = summary_reply(thread)
    assert reply is not None and reply.content == "没有新的内容需要记下：记忆已是最新的。"


def test_a_templated_answer_is_marked_as_the_packages() -> None:
    """Issue 47 item 1: with a small model, "How old am I?" is answered from the tag by a
    template; the reply says so (the demo prints who wrote it), and a model is never shown
    it as its own words."""
    from langchain_core.messages import AIMessage, HumanMessage

    from langchain_tiered_memory.agent.capture import tag_answer
    from langchain_tiered_memory.agent.replies import written_by_package

    reply = tag_answer([HumanMessage("How old am I?")], {"age": "30"})
    assert reply is not None and "30" in reply.text
    assert written_by_package(reply)
    assert not written_by_package(AIMessage("You are 30."))
    assert not written_by_package(AIMessage(""))  # no mark: not the package's

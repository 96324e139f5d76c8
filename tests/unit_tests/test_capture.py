"""Facts and summaries that do not depend on the model choosing a tool.

``tag_capture="after_turn"`` (the default for capable models): a turn whose message states
a fact and got no ``user_tag`` call is followed by one forced extraction; the same for a
request to summarize that got no ``summarize`` call. Small models: a request to summarize
runs the tool directly, and the reply names what was stored.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.agent.graph import create_memory_graph
from langchain_tiered_memory.testing import ScriptedChatModel

ALICE = "Hi, my name is Alice and I am 30 years old."


def ask(graph: Any, text: str, thread: str = "t1") -> dict[str, Any]:
    return graph.invoke(
        {"messages": [HumanMessage(text)]},
        context={"user_id": "alice"},
        config={"configurable": {"thread_id": thread}},
    )


def tag_call(**args: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": "user_tag", "args": args, "id": "c1"}])


def forced(model: ScriptedChatModel) -> list[dict[str, Any]]:
    return [b for b in model.bindings if b.get("tool_choice") == "user_facts"]


async def test_a_capable_model_that_never_calls_a_tool_still_gets_the_facts_stored(
    memory: TieredMemory,
) -> None:
    # the free reply ignores the tool; the after-turn extraction is forced to call it
    model = ScriptedChatModel(replies=["Nice to meet you, Alice!", tag_call(name="Alice", age=30)])
    graph = create_memory_graph(model, memory=memory)  # capable: after_turn by default
    result = ask(graph, ALICE)
    assert result["messages"][-1].content == "Nice to meet you, Alice!"
    assert memory.get_user_tags("alice") == {"name": "Alice", "age": "30"}
    assert len(forced(model)) == 1
    # a capable model's values are not grounded: "thirty" would be kept as the model wrote it
    assert memory.get_tag_history("alice", "age")[0]["thread_id"] == "t1"
    # async too, and a question states nothing: no extraction
    model.replies += ["You are 30.", "You are 30."]
    await graph.ainvoke(
        {"messages": [HumanMessage("How old am I?")]},
        context={"user_id": "alice"},
        config={"configurable": {"thread_id": "t1"}},
    )
    assert len(forced(model)) == 1


def test_no_extraction_when_the_model_called_the_tool_itself(memory: TieredMemory) -> None:
    model = ScriptedChatModel(replies=[tag_call(name="Alice", age=30), "Noted, Alice."])
    graph = create_memory_graph(model, memory=memory)
    ask(graph, ALICE)
    assert memory.get_user_tags("alice") == {"name": "Alice", "age": "30"}
    assert forced(model) == []  # the extraction costs a call only when no call came


def test_tool_mode_keeps_the_old_behaviour(memory: TieredMemory) -> None:
    model = ScriptedChatModel(replies=["Nice to meet you!"])
    graph = create_memory_graph(model, memory=memory, tag_capture="tool")
    ask(graph, ALICE)
    assert memory.get_user_tags("alice") == {} and forced(model) == []
    with pytest.raises(ValueError, match="tag_capture"):
        create_memory_graph(model, memory=memory, tag_capture="sometimes")  # type: ignore[arg-type]


def test_a_small_models_extraction_keeps_only_what_the_user_said(memory: TieredMemory) -> None:
    # a small model asked for after_turn explicitly: its guesses are dropped by grounding
    model = ScriptedChatModel(replies=["Hello!", tag_call(name="Alice", age=31)])
    graph = create_memory_graph(model, memory=memory, small_model=True, tag_capture="after_turn")
    ask(graph, ALICE)
    # 31 is not in the message; the 30 it states ("I am 30 years old") is read off it
    assert memory.get_user_tags("alice") == {"name": "Alice", "age": "30"}


def test_a_request_to_summarize_runs_the_tool_before_a_capable_models_reply(
    memory: TieredMemory,
) -> None:
    # issue 33 item 4: Qwen2.5-Coder answered "Please summarize our conversation." with
    # text alone; its items were stored after the turn and its reply said nothing of them
    from langchain_tiered_memory.summarization.summarizer import SummaryItems

    summary = AIMessage(
        content="",
        tool_calls=[
            {
                "name": SummaryItems.__name__,
                "args": {"items": ["The user is Alice, 30 years old."]},
                "id": "s1",
            }
        ],
    )
    model = ScriptedChatModel(replies=["Nice to meet you!", tag_call(name="Alice", age=30)])
    graph = create_memory_graph(model, memory=memory)
    ask(graph, ALICE)
    model.replies += [summary, "I kept that you are Alice, 30."]
    result = ask(graph, "Please summarize our conversation.")
    items = [d.page_content for d in memory.summaries.get_all("alice")]
    assert items == ["The user is Alice, 30 years old."]
    # the model's words, then what was stored (issue 44 item 5: whatever it writes)
    reply = result["messages"][-1].text
    assert reply.startswith("I kept that you are Alice, 30.")
    assert "The user is Alice, 30 years old." in reply
    # the reply was written with the tool's report in view
    report = model.prompts[-1][-1]
    assert report.type == "tool" and "The user is Alice, 30 years old." in report.text


def test_a_small_model_asked_to_summarize_stores_items_and_the_reply_names_them(
    memory: TieredMemory,
) -> None:
    # SmolLM2-like: its free text is nonsense and its structured output empty, so the
    # extractive fallback stores the user's own statements; the reply is the tool's report
    model = ScriptedChatModel(replies=["I'm excited to share a moment in my career with you."])
    graph = create_memory_graph(model, memory=memory, small_model=True)
    ask(graph, "My birthday is on May 8. I live in Lyon.")
    calls_before = len(model.prompts)
    result = ask(graph, "Please summarize our conversation.")
    stored = [d.page_content for d in memory.summaries.get_all("alice")]
    assert stored, "nothing was stored"
    reply = result["messages"][-1]
    assert isinstance(reply, AIMessage) and "career" not in reply.text
    assert reply.text.startswith(f"Stored {len(stored)} memory item(s)")
    assert all(item in reply.text for item in stored)
    # the summarize call was made by the graph, not by the model's free text
    tool_calls = [m for m in result["messages"] if isinstance(m, AIMessage) and m.tool_calls]
    assert tool_calls and tool_calls[-1].tool_calls[0]["name"] == "summarize"
    assert len(model.prompts) > calls_before  # the summarizer ran on the model


@pytest.mark.parametrize(
    ("message", "name", "age"),
    [
        ("我叫李明，今年28岁，我的生日是十月三日。", "李明", "28"),
        ("我叫李明，我二十八岁了。", "李明", "28"),
        ("Hi, my name is Alice and I am 30 years old.", "Alice", "30"),
    ],
)
def test_a_small_models_forced_capture_adds_the_stated_age_it_left_out(
    memory: TieredMemory, message: str, name: str, age: str
) -> None:
    # SmolLM2 on the Chinese message: user_tag(name='李明') only, the age lost
    model = ScriptedChatModel(replies=[tag_call(name=name), "你好！"])
    graph = create_memory_graph(model, memory=memory, small_model=True)
    ask(graph, message)
    assert memory.get_user_tags("alice") == {"name": name, "age": age}


def test_an_age_that_is_someone_elses_is_not_the_users(memory: TieredMemory) -> None:
    model = ScriptedChatModel(replies=[tag_call(), "好的。"])
    graph = create_memory_graph(model, memory=memory, small_model=True)
    ask(graph, "我的儿子今年5岁。")
    ask(graph, "My son is 5 years old and I am tired.")
    assert memory.get_user_tags("alice") == {}


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (ALICE, "Got it, I'll remember that (age: 30, name: Alice)."),
        ("我叫李明，今年28岁。", "好的，我记住了（年龄：28，名字：李明）。"),
    ],
)
def test_a_small_model_acknowledges_what_it_recorded(
    memory: TieredMemory, message: str, expected: str
) -> None:
    """SmolLM2's free reply to a statement of facts was "I'm a helpful assistant ...": the
    forced capture's result is the reply instead, in the user's script."""
    name = "Alice" if "Alice" in message else "李明"
    model = ScriptedChatModel(replies=[tag_call(name=name), "I'm a helpful assistant."])
    graph = create_memory_graph(model, memory=memory, small_model=True)
    result = ask(graph, message)
    assert result["messages"][-1].content == expected
    assert len(model.prompts) == 1  # the forced call only: no free generation


def test_a_capable_model_still_answers_in_its_own_words(memory: TieredMemory) -> None:
    model = ScriptedChatModel(replies=[tag_call(name="Alice", age=30), "Nice to meet you, Alice!"])
    graph = create_memory_graph(model, memory=memory)
    assert ask(graph, ALICE)["messages"][-1].content == "Nice to meet you, Alice!"


NOT_SELF_STATEMENTS = [
    "Don't call me Bob.",
    'My friend told me: "my name is Bob".',
    "My name is Bob, said my brother.",
    "他说我叫王芳。",
    "Er sagt: mein Name ist Max.",
    "I'm French.",
    "I'm Bob's sister.",
    "By the time I'm 40, I want a house.",
    "I'm 3 years into my PhD.",
    "Translate to French: my name is Bob",
    'print("my name is Bob")',
    "I'm not sure my name is Bob",
    "别叫我小明。",
    "call me maybe",
    "我是王芳的妹妹。",
    "如果我叫小明就好了。",
]


def abstains() -> AIMessage:
    return AIMessage(
        content="", tool_calls=[{"name": "user_facts", "args": {"nothing_stated": True}, "id": "x"}]
    )


@pytest.mark.parametrize("text", NOT_SELF_STATEMENTS)
def test_cue_reading_stores_nothing_the_user_did_not_state_of_themself(
    memory: TieredMemory, text: str
) -> None:
    """Issue 43 item 5: negation, quotation, reported speech, hypotheticals, durations,
    possessives, code and requests, in the languages of the rules; the extraction
    abstained, and the cues alone do not overrule it."""
    model = ScriptedChatModel(replies=["OK.", abstains()])
    graph = create_memory_graph(model, memory=memory, tag_capture="after_turn")
    ask(graph, text)
    assert memory.get_user_tags("alice") == {}


def test_a_negated_name_does_not_overwrite_the_stored_one(memory: TieredMemory) -> None:
    memory.set_user_tags("alice", {"name": "Ann"})
    model = ScriptedChatModel(replies=["OK.", tag_call(name="Bob")])
    graph = create_memory_graph(model, memory=memory, tag_capture="after_turn")
    ask(graph, "Don't call me Bob anymore.")
    assert memory.get_user_tags("alice") == {"name": "Ann"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hi, my name is Alice and I'm 30.", {"name": "Alice", "age": "30"}),
        ("我叫王芳，今年28岁。", {"name": "王芳", "age": "28"}),
        ("I'm not 30, I'm 31.", {"age": "31"}),
        ("我不叫小明，我叫小红。", {"name": "小红"}),
        ("I told you, my name is Bob.", {"name": "Bob"}),
    ],
)
def test_an_unambiguous_self_statement_is_still_read_when_the_model_abstains(
    memory: TieredMemory, text: str, expected: dict[str, str]
) -> None:
    model = ScriptedChatModel(replies=["OK.", abstains()])
    graph = create_memory_graph(model, memory=memory, tag_capture="after_turn")
    ask(graph, text)
    assert memory.get_user_tags("alice") == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I turned 53 in May.", {"age": "53"}),
        ("I just turned 53.", {"age": "53"}),
        ("我刚满53岁。", {"age": "53"}),
        ("My name is actually Noah.", {"name": "Noah"}),
    ],
)
def test_age_and_name_phrasings_a_real_model_met_are_read(
    memory: TieredMemory, text: str, expected: dict[str, str]
) -> None:
    """Issue 44 item 6: "I turned 53 in May." was refused while the model told the user
    "Recorded: age=53"; the held-out "my name is actually Noah" too."""
    model = ScriptedChatModel(replies=["OK.", abstains()])
    graph = create_memory_graph(model, memory=memory, tag_capture="after_turn")
    ask(graph, text)
    assert memory.get_user_tags("alice") == expected


@pytest.mark.parametrize(
    "text", ["Recommend a restaurant near me.", "Suggest a gift for my sister.", "Find me a hotel."]
)
def test_a_request_runs_no_forced_extraction(memory: TieredMemory, text: str) -> None:
    """Issue 44 item 7: a forced extraction on "Recommend a restaurant near me" took 50 s
    with a real model and states nothing."""
    model = ScriptedChatModel(replies=["Sure."])
    graph = create_memory_graph(model, memory=memory, tag_capture="after_turn")
    ask(graph, text)
    assert forced(model) == [] and len(model.prompts) == 1

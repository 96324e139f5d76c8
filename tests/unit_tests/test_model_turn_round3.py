"""A real model's turn, round three (issue 56): what Qwen2.5-Coder-1.5B did through the
graph and the middleware, replayed with a scripted model that gives its answers verbatim.
"""

from __future__ import annotations

import pytest
from doors import NOTHING, agent_through, say, summary
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory._said import MEMORY_TOOLS, REPORT, SUMMARIZE_NOTE
from langchain_tiered_memory.agent.capture import asked_tag, tag_answer
from langchain_tiered_memory.agent.replies import is_empty, with_stored_items
from langchain_tiered_memory.agent.shown import conversation_only
from langchain_tiered_memory.agent.tools import (
    SEARCH_MEMORY_TOOL,
    SUMMARIZE_TOOL,
    USER_TAG_TOOL,
)
from langchain_tiered_memory.summarization.summarizer import clean_items, render_transcript
from langchain_tiered_memory.testing import ScriptedChatModel


def test_the_memory_tool_names_are_the_tools() -> None:
    assert {USER_TAG_TOOL, SUMMARIZE_TOOL, SEARCH_MEMORY_TOOL} == MEMORY_TOOLS


# ----- item 2: the package's placeholder never becomes the answer, nor is carried -----


def test_a_placeholder_with_the_packages_report_is_not_carried() -> None:
    """The summarize placeholder's message with the report appended was carried into 4 of
    7 new threads (its whole text was compared with the placeholder)."""
    report = 'Stored 1 memory item(s) from the conversation:\n- "The user lives in Paris."'
    call = {"name": "summarize", "args": {}, "id": "s1"}
    placeholder = AIMessage(
        content=f"{SUMMARIZE_NOTE}\n\n{report}",
        tool_calls=[call],
        response_metadata={REPORT: report},
    )
    kept = conversation_only([HumanMessage("I live in Lyon."), placeholder])
    assert [m.text for m in kept] == ["I live in Lyon."]


@pytest.mark.parametrize("door", ["graph", "middleware"])
def test_a_reply_that_is_a_placeholder_is_no_reply(memory: TieredMemory, door: str) -> None:
    """The model answered "I have another exam tomorrow and I'm so nervous." with a copy of
    the placeholder; nothing was saved. Asked again, it answered."""
    memory.add_summaries("ann", ["The user failed the driving test in March."])
    model = ScriptedChatModel(
        replies=[SUMMARIZE_NOTE, "Good luck! Last time the driving test went wrong.", NOTHING]
    )
    result = say(
        agent_through(memory, model, door), "I have another exam tomorrow and I'm so nervous.", "t"
    )
    assert result["messages"][-1].text == "Good luck! Last time the driving test went wrong."


# ----- item 3: "please summarize" in the same turn as the facts -----


@pytest.mark.parametrize("door", ["graph", "middleware"])
def test_summarize_sees_the_turn_it_is_called_in(memory: TieredMemory, door: str) -> None:
    text = "Hi! My name is Ann Lee and I'm 30. My birthday is on March 5. Please summarize."
    item = "The user's birthday is on March 5."
    model = ScriptedChatModel(replies=[summary([item]), "Done, Ann!", NOTHING, NOTHING])
    agent = agent_through(memory, model, door)
    result = say(agent, text, "t1")
    assert [d.page_content for d in memory.summaries.get_all("ann")] == [item]
    reply = result["messages"][-1].text
    assert "Nothing new to summarize" not in reply and item in reply
    # the turn is in the history once, the save step's write a replay
    texts = [str(m.text) for m in memory.load_context("ann", max=50)]
    assert texts.count(text) == 1
    say(agent, "Thanks.", "t1")
    assert [str(m.text) for m in memory.load_context("ann", max=50)].count(text) == 1


# ----- item 4: the summarizer is shown the conversation, not the package's words -----


def test_the_summarizer_transcript_holds_no_report_or_placeholder() -> None:
    report = 'Stored 1 memory item(s) from the conversation:\n- "The user lives in Paris."'
    messages: list[BaseMessage] = [
        HumanMessage("I moved to Berlin last month."),
        AIMessage(SUMMARIZE_NOTE, tool_calls=[{"name": "summarize", "args": {}, "id": "s"}]),
        ToolMessage(report, tool_call_id="s"),
        AIMessage(f"Got it.\n\n{report}", response_metadata={REPORT: report}),
    ]
    assert render_transcript(messages) == "User: I moved to Berlin last month.\nAssistant: Got it."


# ----- item 5: the user is told what was stored, whatever the reply says -----


def test_a_reply_that_restates_the_item_still_gets_the_report() -> None:
    report = 'Stored 1 memory item(s) from the conversation:\n- "I moved to Berlin last month."'
    turn: list[BaseMessage] = [
        HumanMessage("I moved to Berlin last month. Please summarize."),
        AIMessage("", tool_calls=[{"name": "summarize", "args": {}, "id": "s"}]),
        ToolMessage(report, tool_call_id="s", name="summarize"),
    ]
    reply = with_stored_items(AIMessage("I moved to Berlin last month."), turn)
    assert report in reply.text and reply.response_metadata[REPORT] == report


@pytest.mark.parametrize("door", ["graph", "middleware"])
def test_an_item_in_the_first_person_is_stored_as_the_users_words(
    memory: TieredMemory, door: str
) -> None:
    """Qwen2.5-Coder-1.5B's SummaryItems answer held the user's sentence verbatim, "I moved
    to Berlin last month.": in a later prompt that "I" reads as the assistant's."""
    text = "I moved to Berlin last month. Please summarize."
    model = ScriptedChatModel(
        replies=[summary(["I moved to Berlin last month."]), "Noted!", NOTHING]
    )
    result = say(agent_through(memory, model, door), text, "t1")
    stored = "The user said: I moved to Berlin last month."
    assert [d.page_content for d in memory.summaries.get_all("ann")] == [stored]
    assert stored in result["messages"][-1].text  # and the user is told so


@pytest.mark.parametrize("door", ["graph", "middleware"])
def test_an_item_opening_with_a_pronoun_keeps_whom_it_stands_for(
    memory: TieredMemory, door: str
) -> None:
    """Recorded live (zh seed): the items ["王芳今年28岁", "她的生日是十月三日"]; alone, the
    second is "her birthday is October 3" for nobody, and the user never said 她."""
    text = "你好，我叫王芳，今年28岁。我的生日是十月三日。请总结一下我们的对话。"
    model = ScriptedChatModel(
        replies=[summary(["王芳今年28岁", "她的生日是十月三日"]), "好的。", NOTHING]
    )
    say(agent_through(memory, model, door), text, "t1")
    items = [d.page_content for d in memory.summaries.get_all("ann")]
    assert items == ["王芳今年28岁。她的生日是十月三日"]


def test_a_pronoun_the_user_used_is_left_as_the_user_said_it() -> None:
    transcript = "User: My mom is 60. She lives in Lyon."
    kept = clean_items(["The user's mother is 60.", "She lives in Lyon."], transcript=transcript)
    assert kept == ["The user's mother is 60.", "She lives in Lyon."]


def test_an_item_in_the_first_person_the_user_never_said_is_not_theirs() -> None:
    transcript = "User: Any dinner ideas?\nAssistant: I recommend the tasting menu."
    assert clean_items(["I recommend the tasting menu."], transcript=transcript) == []


def test_a_true_item_in_the_prompts_words_is_not_a_copy_of_the_instructions() -> None:
    """Dropped live: "The user's age is 30." shares 8 of its 9 n-grams with the
    summarizer's prompt."""
    transcript = "User: Hi! My name is Ann Lee and I'm 30."
    assert clean_items(["The user's age is 30."], transcript=transcript) == [
        "The user's age is 30."
    ]
    copy = "Only facts the user stated about themselves."
    assert clean_items([copy], transcript=transcript) == []


# ----- item 7: real answers about tool calls are answers -----


@pytest.mark.parametrize(
    "answer",
    [
        # recorded answers to "How does Qwen format a tool call?", "Show me the JSON an
        # OpenAI-style function call has.", "What's the opening tag Hermes-format models use?"
        'Qwen wraps each call in <tool_call></tool_call> tags holding JSON: {"name": ..., '
        '"arguments": {...}}.',
        '{"name": "get_weather", "arguments": {"city": "Paris"}}',
        "Hermes-format models open a call with <tool_call>.",
    ],
)
def test_an_answer_that_mentions_tool_calls_is_a_reply(answer: str) -> None:
    assert not is_empty(AIMessage(answer))


@pytest.mark.parametrize(
    "machinery",
    [
        "<tool_response>\nRecorded: birthday=March 5.\n</tool_response>",
        '{"name": "user_tag", "arguments": {"age": 30}}',
        '```json\n{"name": "summarize", "arguments": {}}\n```',
        '<tool_call>\n{"name": "user_tag", "arguments": {"age": 30}}\n</tool_call>',
        SUMMARIZE_NOTE,
        "",
    ],
)
def test_a_reply_that_is_only_machinery_is_none(machinery: str) -> None:
    assert is_empty(AIMessage(machinery))


# ----- item 8: the small model's tag template answers only the question for the value -----


@pytest.mark.parametrize(
    "question",
    [
        "How old am I going to be in 2040?",
        "How old am I in dog years?",
        "What is my name in Japanese katakana?",
        "我叫什么名字用英文怎么说？",
        "到2040年我多大了？",
        "¿Cuántos años tengo en años de perro?",
        "My name is Ann. How old will I be next year?",
    ],
)
def test_the_tag_template_leaves_other_questions_to_the_model(question: str) -> None:
    assert asked_tag(question) is None
    assert tag_answer([HumanMessage(question)], {"age": "30", "name": "Ann"}) is None


@pytest.mark.parametrize(
    ("question", "tag"),
    [
        ("How old am I?", "age"),
        ("Hi, what's my name?", "name"),
        ("Hello! How old am I again?", "age"),
        ("我多大了？", "age"),
        ("我叫什么名字？", "name"),
        ("请问我今年多大了？", "age"),
        ("¿Cómo me llamo?", "name"),
        ("Oye, ¿cuántos años tengo?", "age"),
    ],
)
def test_the_tag_template_answers_the_question_for_the_value(question: str, tag: str) -> None:
    assert asked_tag(question) == tag


# ----- item 1: a new thread does not carry as current what the memory holds superseded -----


@pytest.mark.parametrize(
    ("old_said", "old_item", "new_said", "new_item", "question"),
    [
        (
            "I live in Paris.",
            "The user lives in Paris.",
            "I moved to Berlin last month.",
            "The user moved to Berlin last month.",
            "Where do I live?",
        ),
        ("我住在上海。", "用户住在上海。", "我搬到北京了。", "用户搬到北京了。", "我住在哪里？"),
    ],
    ids=["en", "zh"],
)
@pytest.mark.parametrize("door", ["graph", "middleware"])
def test_a_new_thread_does_not_carry_what_the_memory_holds_superseded(
    memory: TieredMemory,
    door: str,
    old_said: str,
    old_item: str,
    new_said: str,
    new_item: str,
    question: str,
) -> None:
    """A new thread's memory section held only Berlin, but the prompt also carried the
    earlier thread's plain "I live in Paris." and the old "Please summarize" request; the
    real model answered "Where do I live?" with Paris (recorded), and with Berlin when that
    one message was left out."""
    memory.add_session_log(
        "ann",
        [HumanMessage(old_said), AIMessage("Noted."), HumanMessage("Please summarize.")],
        thread_id="t1",
    )
    memory.summarize_history("ann", ScriptedChatModel(replies=[summary([old_item])]))
    memory.add_session_log("ann", [HumanMessage(new_said), AIMessage("Congrats!")], thread_id="t2")
    memory.summarize_history(
        "ann", ScriptedChatModel(replies=[summary([new_item])]), reconcile=False
    )
    every = {d.page_content: d for d in memory.summaries.get_all("ann")}
    assert every[old_item].metadata.get("superseded_by") == every[new_item].id
    model = ScriptedChatModel(replies=["You live in Berlin.", NOTHING])
    say(agent_through(memory, model, door), question, "t3")
    carried = [m.text for m in model.prompts[0][1:-1]]
    assert old_said not in carried and new_said in carried
    assert "Please summarize." not in carried


# ----- item 6: words that supersede must speak of the user's own value, in one clause -----


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("The user lives in Paris.", "The user moved the meeting to Friday."),
        ("The user lives in Paris.", "The user said their sister now lives in Rome."),
        ("The user is vegetarian.", "The user went to a vegan restaurant again."),
        ("The user drinks coffee every morning.", "The user now has a cat named Coffee."),
        ("The user lives in Paris.", "The user moved on from the argument with their landlord."),
        (
            "The user lives in Paris.",
            "The user no longer remembers the street they lived on as a child.",
        ),
        ("The user is married to Sam.", "The user is married and now has two kids."),
        ("用户在银行工作。", "用户目前在读一本关于工作的书。"),
        ("用户住在上海。", "用户帮朋友搬家到了北京。"),
        # the kinds of line that still fired on ordinary conversation (bench/update_rules.py
        # --ordinary): a denied cue, and a job that is nobody's
        ("The user said: Let's keep going!", "The user said: I won't quit, I keep going!"),
        ("The user plays tennis.", "The user never quit tennis."),
        ("The user helped at a career fair.", "The user said: I'm enjoying my new job now."),
        ("用户在银行工作。", "用户没有辞职，还在银行工作。"),
    ],
)
def test_words_that_are_no_update_supersede_nothing(old: str, new: str) -> None:
    """A false supersession is memory lost: each of these superseded a true fact."""
    from langchain_core.documents import Document

    from langchain_tiered_memory.summarization.updates import clear_updates

    assert clear_updates([new], [[Document(old, id="o")]]) == {}


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("The user lives in Paris.", "The user moved to Berlin last month."),
        ("The user lives in Paris.", "The user now lives in Berlin."),
        ("The user works at Google.", "The user quit Google and now works as a teacher."),
        ("The user loves steak and eats meat every day.", "The user is vegetarian now."),
        ("用户住在上海。", "用户上个月搬到了北京。"),
        ("用户在银行工作。", "用户现在在谷歌工作。"),
    ],
)
def test_a_clear_update_still_supersedes(old: str, new: str) -> None:
    from langchain_core.documents import Document

    from langchain_tiered_memory.summarization.updates import clear_updates

    assert clear_updates([new], [[Document(old, id="o")]]) == {0: ["o"]}


def test_a_copied_placeholder_with_the_report_appended_is_no_reply() -> None:
    """Recorded live (zh seed, this round): the reply to "请总结一下我们的对话。" was the
    summarize placeholder copied, the stored items' report appended after it, and counted
    as a reply."""
    report = '存了2条记忆：\n- "王芳今年28岁"'
    copied = AIMessage(f"{SUMMARIZE_NOTE}\n\n{report}", response_metadata={REPORT: report})
    assert is_empty(copied)
    assert not is_empty(AIMessage(f"好的。\n\n{report}", response_metadata={REPORT: report}))


@pytest.mark.parametrize("door", ["graph", "middleware"])
def test_an_item_about_the_conversation_is_no_memory(memory: TieredMemory, door: str) -> None:
    """Recorded live (update, en): SummaryItems ["The user lives in Paris.", "The
    conversation was about the user's location.", "The conversation was brief."]."""
    answer = [
        "The user lives in Paris.",
        "The conversation was about the user's location.",
        "The conversation was brief.",
    ]
    model = ScriptedChatModel(replies=[summary(answer), "Noted.", NOTHING])
    say(agent_through(memory, model, door), "I live in Paris. Please summarize.", "t1")
    assert [d.page_content for d in memory.summaries.get_all("ann")] == [answer[0]]


def test_an_item_about_the_conversation_is_no_memory_in_chinese() -> None:
    kept = clean_items(["用户住在上海。", "对话很简短。", "我们聊了搬家的事。"])
    assert kept == ["用户住在上海。"]


@pytest.mark.parametrize("door", ["graph", "middleware"])
@pytest.mark.parametrize(
    ("said", "echo"),
    [
        # recorded live (update, en): the reply was the user's message itself
        ("I live in Paris.", "I live in Paris."),
        ("我住在上海，离公司很远。", "我住在上海，离公司很远"),
    ],
)
def test_a_reply_that_copies_the_users_message_is_asked_again(
    memory: TieredMemory, door: str, said: str, echo: str
) -> None:
    model = ScriptedChatModel(replies=[echo, "Got it: Paris.", NOTHING])
    result = say(agent_through(memory, model, door), said, "t1")
    assert result["messages"][-1].text == "Got it: Paris."


@pytest.mark.parametrize("door", ["graph", "middleware"])
def test_a_short_reply_like_the_message_is_an_answer(memory: TieredMemory, door: str) -> None:
    model = ScriptedChatModel(replies=["Thank you!", NOTHING])
    result = say(agent_through(memory, model, door), "Thank you!", "t1")
    assert result["messages"][-1].text == "Thank you!"

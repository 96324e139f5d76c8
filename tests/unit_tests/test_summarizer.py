"""The summarizer's salvage paths for weak models, and the extractive fallback."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory.errors import SummarizationError
from langchain_tiered_memory.summarization.summarizer import (
    MAX_ITEM_CHARS,
    MAX_ITEMS,
    clean_items,
    extract_user_statements,
    states_a_fact,
    summarize_messages,
)
from langchain_tiered_memory.testing import ScriptedChatModel

CONVERSATION = [
    HumanMessage("Hi, my name is Alice and I am 30 years old. My birthday is on May 8."),
    AIMessage("Nice to meet you, Alice!"),
    HumanMessage("Please summarize our conversation."),
]


def _cut_off_call() -> AIMessage:
    # What a small model produces when max_tokens cuts its list short.
    args = '{"items": ["The user\'s birthday is on May 8.", "The user is 30 years", "The us'
    return AIMessage(
        "", invalid_tool_calls=[{"name": "SummaryItems", "args": args, "id": "x", "error": None}]
    )


def test_cut_off_tool_call_keeps_complete_grounded_items() -> None:
    model = ScriptedChatModel(replies=[_cut_off_call()])
    items = summarize_messages(model, CONVERSATION)
    assert "The user's birthday is on May 8." in items
    assert len(model.prompts) == 1


def test_plain_text_bullets_are_a_second_attempt() -> None:
    model = ScriptedChatModel(
        replies=[AIMessage(""), "- The user's birthday is on May 8.\n- Alice is 30 years old."]
    )
    items = summarize_messages(model, CONVERSATION)
    assert items == ["The user's birthday is on May 8.", "Alice is 30 years old."]
    assert len(model.prompts) == 2
    assert model.bindings[0]["tool_choice"] == "SummaryItems"
    assert "tool_names" not in model.bindings[1]


def test_ungrounded_items_raise_in_small_model_mode() -> None:
    model = ScriptedChatModel(replies=[AIMessage(""), "- The weather on Mars is cold today."])
    with pytest.raises(SummarizationError):
        summarize_messages(model, CONVERSATION, grounded=True)


def test_junk_with_extractive_fallback_keeps_the_users_own_statements() -> None:
    model = ScriptedChatModel(replies=[AIMessage(""), "The user: The user: The user:"])
    items = summarize_messages(model, CONVERSATION, extractive_fallback=True)
    assert items == [
        "The user said: Hi, my name is Alice and I am 30 years old.",
        "The user said: My birthday is on May 8.",
    ]


def test_a_raising_model_is_never_papered_over_by_the_fallback() -> None:
    def boom(_: list) -> AIMessage:
        raise TimeoutError("model timed out")

    with pytest.raises(SummarizationError, match="timed out"):
        summarize_messages(
            ScriptedChatModel(replies=[boom]), CONVERSATION, extractive_fallback=True
        )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I am 30 years old.", True),
        ("My birthday is on May 8", True),
        ("How old am I?", False),
        ("Please summarize our conversation.", False),
        ("", False),
    ],
)
def test_states_a_fact(text: str, expected: bool) -> None:
    assert states_a_fact(text) is expected


def test_extract_ignores_assistant_text_and_dedupes() -> None:
    messages = [
        HumanMessage("I live in Lyon."),
        AIMessage("I live in the cloud."),
        HumanMessage("I live in Lyon."),
    ]
    assert extract_user_statements(messages) == ["The user said: I live in Lyon."]


@pytest.mark.parametrize(
    ("said", "item"),
    [
        ("I am 30 years old.", "The user said: I am 30 years old."),
        ("我叫李明，今年28岁。", "用户说：我叫李明，今年28岁。"),
        ("私は東京に住んでいます。", "ユーザーは言った：私は東京に住んでいます。"),
        ("Я живу в Москве.", "Пользователь сказал: Я живу в Москве."),
    ],
)
def test_extractive_items_have_one_form_in_the_users_language(said: str, item: str) -> None:
    assert extract_user_statements([HumanMessage(said)]) == [item]


def test_a_labelled_copy_of_the_users_words_takes_the_same_form() -> None:
    """A small model's "The user: <the user's sentence>" is the quoted-statement form."""
    assert clean_items(["The user: Alice, I am 30 years old and my birthday is on May 8."]) == [
        "The user said: Alice, I am 30 years old and my birthday is on May 8."
    ]
    assert clean_items(["The user: 我今年28岁。"]) == ["用户说：我今年28岁。"]
    assert clean_items(["The user is a nurse."]) == ["The user is a nurse."]  # a statement


def test_assistant_chatter_sharing_one_word_with_the_user_is_not_memory() -> None:
    # Seen with SmolLM2: its own earlier reply came back as a "fact".
    chatter = "- The user_tag tool is not currently available. Please try again later."
    model = ScriptedChatModel(replies=[AIMessage(""), chatter])
    with pytest.raises(SummarizationError):
        summarize_messages(model, CONVERSATION, grounded=True)


def test_paraphrase_of_the_user_is_kept() -> None:
    model = ScriptedChatModel(replies=[AIMessage(""), "- The user likes hiking in the Alps."])
    said = [HumanMessage("I like hiking, mostly in the Alps.")]
    # the grounding guard alone (with it, "mostly", in no item, keeps the user's sentence:
    # test_summary_said)
    kept = summarize_messages(model, said, grounded=True, keep_said=False)
    assert kept == ["The user likes hiking in the Alps."]


def test_items_past_the_length_bound_are_dropped() -> None:
    source = "I like green tea. " * 30
    at_bound = "The user likes green tea" + " tea" * 69
    past_bound = at_bound + "s"  # "teas" is still the user's word
    assert (len(at_bound), len(past_bound)) == (MAX_ITEM_CHARS, MAX_ITEM_CHARS + 1)
    for guard in (source, None):
        assert clean_items([at_bound], guard) == [at_bound]
        assert clean_items([past_bound], guard) == []


@pytest.mark.parametrize(
    ("question", "statement"),
    [
        ("¿Cuántos años tengo?", "Mi cumpleaños es el 8 de mayo."),
        ("How old am I?", "My birthday is on May 8."),
        ("我多大了？", "我的生日是5月8日。"),
    ],
)
def test_a_question_is_not_a_memory(question: str, statement: str) -> None:
    """Issue 59 item 3: a small model's items were the user's question, and the statement
    with the birthday was stored nowhere. The question is dropped; with no item left the
    extractive fallback keeps the statement."""
    from langchain_core.messages import AIMessage, HumanMessage

    from langchain_tiered_memory.summarization.summarizer import summarize_messages
    from langchain_tiered_memory.testing import ScriptedChatModel

    call = {"name": "SummaryItems", "args": {"items": [question]}, "id": "s"}
    model = ScriptedChatModel(replies=[AIMessage(content="", tool_calls=[call])])
    messages = [HumanMessage(statement), AIMessage("Ok."), HumanMessage(question)]
    items = summarize_messages(model, messages, extractive_fallback=True, grounded=True)
    assert items and all("?" not in i and "？" not in i for i in items)
    assert any(("8" in i or "May 8" in i) for i in items), items


def test_a_summary_over_the_item_limit_keeps_the_first_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The batch's messages count as summarized whatever is kept: dropping items past
    MAX_ITEMS is logged, never silent (the property test's 21-line batch lost one)."""
    items = [f"The user visited city number {n} in {1990 + n}." for n in range(MAX_ITEMS + 1)]
    with caplog.at_level("WARNING"):
        kept = clean_items(items)
    assert kept == items[:MAX_ITEMS]
    assert f"the summary has {MAX_ITEMS + 1} items; the first {MAX_ITEMS} are kept" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING"):
        assert clean_items(items[:MAX_ITEMS]) == items[:MAX_ITEMS]
    assert "items; the first" not in caplog.text

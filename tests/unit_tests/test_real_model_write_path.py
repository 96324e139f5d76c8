"""The write path on the replies a real model gave (issue 25's Qwen2.5-Coder-1.5B behind an
OpenAI-compatible server), replayed from ``data/qwen_write_path.json``: integer and missing
ids in update decisions, a decision written as text, the assistant's promises, a sister
taken for the user, a Chinese conversation summarized in English, HTML entities.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.testing import ScriptedChatModel

FIXTURES = json.loads((Path(__file__).parent / "data" / "qwen_write_path.json").read_text())


def reply(recorded: dict[str, Any]) -> AIMessage:
    calls = [{**call, "id": f"call-{i}"} for i, call in enumerate(recorded.get("tool_calls", []))]
    return AIMessage(recorded.get("content", ""), tool_calls=calls)


def conversation(case: dict[str, Any]) -> list[BaseMessage]:
    return [HumanMessage(t) if who == "human" else AIMessage(t) for who, t in case["conversation"]]


def summarize(memory: TieredMemory, case: dict[str, Any], *replies: AIMessage) -> list[str]:
    memory.add_session_log("u", conversation(case))
    model = ScriptedChatModel(replies=list(replies))
    memory.summarize_history("u", model, reconcile=False)
    return [d.page_content for d in memory.summaries.get_all("u")]


def update(memory: TieredMemory, name: str) -> dict[str, Any]:
    """Store the case's old note, then summarize a move with the recorded decision."""
    case = FIXTURES[name]
    (old,) = memory.add_summaries("u", case["stored"], created_at="2026-11-30T09:00:00+00:00")
    memory.add_session_log("u", [HumanMessage("I moved to Berlin."), AIMessage("Nice!")])
    items = AIMessage(
        "", tool_calls=[{"name": "SummaryItems", "args": {"items": case["new"]}, "id": "s"}]
    )
    model = ScriptedChatModel(replies=[items, reply(case["reply"])])
    memory.summarize_history("u", model)
    every = {d.page_content: d for d in memory.summaries.get_all("u")}
    return {"old": every[case["stored"][0]], "new": every[case["new"][0]], "old_id": old}


@pytest.mark.parametrize("name", ["decision_integer_id", "decision_null_id", "decision_as_text"])
def test_a_real_models_update_decision_supersedes(memory: TieredMemory, name: str) -> None:
    got = update(memory, name)
    assert got["old"].metadata.get("superseded_by") == got["new"].id
    recalled = [d.page_content for d in memory.recall_summaries("u", "Where do I live?")]
    assert recalled[0] == "The user lives in Berlin." and "The user lives in Paris." not in recalled


def test_a_supersedes_without_an_id_among_several_is_new_and_logged(
    memory: TieredMemory, caplog: pytest.LogCaptureFixture
) -> None:
    memory.add_summaries("u", ["The user lives in Paris.", "The user lives near Paris."])
    memory.add_session_log("u", [HumanMessage("I moved to Berlin."), AIMessage("Nice!")])
    items = AIMessage(
        "",
        tool_calls=[
            {"name": "SummaryItems", "args": {"items": ["The user lives in Berlin."]}, "id": "s"}
        ],
    )
    model = ScriptedChatModel(replies=[items, reply(FIXTURES["decision_null_id"]["reply"])])
    with caplog.at_level(
        logging.WARNING, logger="langchain_tiered_memory.summarization.summarizer"
    ):
        memory.summarize_history("u", model)
    assert not any(d.metadata.get("superseded_by") for d in memory.summaries.get_all("u"))
    assert "supersedes of id None" in caplog.text  # said once, with the reason


def test_the_assistants_promises_are_not_facts_about_the_user(memory: TieredMemory) -> None:
    case = FIXTURES["summary_assistant_promise"]
    assert summarize(memory, case, reply(case["reply"])) == ["The user is allergic to peanuts."]


def test_a_sister_is_not_the_user_and_keeps_her_relation(memory: TieredMemory) -> None:
    case = FIXTURES["summary_sister"]
    assert summarize(memory, case, reply(case["reply"])) == [
        "The user's sister Emma lives in Lyon."
    ]


def test_a_chinese_conversation_is_summarized_in_chinese(memory: TieredMemory) -> None:
    case = FIXTURES["summary_chinese"]
    model_items = summarize(memory, case, reply(case["reply"]), reply(case["rewrite_scripted"]))
    assert model_items == ["用户名叫李明。", "用户今年28岁。", "用户的生日是十月三日。"]


def test_a_model_that_will_not_write_chinese_leaves_the_users_own_words(
    memory: TieredMemory,
) -> None:
    """Recorded: asked again in Chinese, Qwen wrote the same English items. The user's
    own statement is stored instead, in the user's language, the name as written.
    """
    case = FIXTURES["summary_chinese"]
    first, again = (reply(r) for r in FIXTURES["recorded"]["items/chinese user"])
    assert summarize(memory, case, first, again) == [
        "用户说：我叫李明，今年28岁，我的生日是十月三日。"
    ]


@pytest.mark.parametrize(
    ("case", "stored"),
    [
        ("apostrophe", ["Alice is the user", "Alice's birthday is on May 8"]),
        ("sister", ["The user does not eat meat.", "The user's sister Emma lives in Lyon."]),
        ("assistant promise", ["The user is allergic to peanuts."]),
    ],
)
def test_recorded_summaries_are_stored_as_the_user_would_read_them(
    memory: TieredMemory, case: str, stored: list[str]
) -> None:
    said = {
        "apostrophe": FIXTURES["summary_entity"],
        "sister": FIXTURES["summary_sister"],
        "assistant promise": FIXTURES["summary_assistant_promise"],
    }[case]
    replies = [reply(r) for r in FIXTURES["recorded"][f"items/{case}"]]
    assert summarize(memory, said, *replies) == stored


def test_the_request_names_the_users_language() -> None:
    from langchain_tiered_memory.summarization.summarizer import build_request, user_language

    messages = conversation(FIXTURES["summary_chinese"])
    assert user_language(messages) == "Chinese"
    assert "write every fact in Chinese" in build_request("User: ...", "Chinese")[-1].text


def test_html_entities_a_server_added_are_decoded(memory: TieredMemory) -> None:
    case = FIXTURES["summary_entity"]
    assert summarize(memory, case, reply(case["reply"])) == ["Alice's birthday is on May 8"]


@pytest.mark.parametrize(
    ("name", "kept"),
    [
        ("one fact once", ["The user is a software engineer", "The user works in Shanghai"]),
        ("apostrophe", ["Alice is the user.", "Alice's birthday is on May 8."]),
    ],
)
def test_the_prompts_example_copied_into_a_summary_is_dropped(
    memory: TieredMemory, name: str, kept: list[str]
) -> None:
    """Issue 44 item 2: the summarizer's example "The user does not eat meat." came back
    as a fact of two conversations that never mentioned meat (recorded answers)."""
    case = FIXTURES["example_copied"][name]
    assert summarize(memory, case, reply(case["reply"])) == kept


def test_an_example_the_user_did_say_is_kept(memory: TieredMemory) -> None:
    case = {"conversation": [["human", "I don't eat meat."], ["ai", "Noted!"]]}
    items = reply(
        {
            "tool_calls": [
                {"name": "SummaryItems", "args": {"items": ["The user does not eat meat."]}}
            ]
        }
    )
    assert summarize(memory, case, items) == ["The user does not eat meat."]

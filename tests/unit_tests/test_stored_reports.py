"""What the package wrote about stored items is not conversation (issue 78 item 4): after
``delete_summaries`` the reply of the turn that stored "The user's secret code is
ALPHA-123." ("Done. Stored 1 memory item(s) ...: - "The user's secret code is ALPHA-123."")
stayed in the carried history, and the next new thread's prompt held the deleted item.
"""

from __future__ import annotations

from typing import Any

import pytest
from doors import agent_through, say, summary
from langchain_core.messages import AIMessage, BaseMessage

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.testing import ScriptedChatModel

SAID = "My secret code is ALPHA-123."
ITEM = "The user's secret code is ALPHA-123."
CODE = "ALPHA-123"
REPORT = f'Stored 1 memory item(s) from the conversation:\n- "{ITEM}"'


def _summarize() -> AIMessage:
    return AIMessage("", tool_calls=[{"name": "summarize", "args": {}, "id": "s1"}])


def _no_tag() -> AIMessage:
    """The after-turn extraction's answer: nothing stated (a capable model's turn)."""
    call = {"name": "user_facts", "args": {"nothing_stated": True}, "id": "x"}
    return AIMessage("", tool_calls=[call])


# what a model answers after the summarize tool's report: a word (the package adds the
# report), the report copied (real models do: the report is the tool's result), or the
# item in its own words
REPLIES = {
    "word": "Done.",
    "copied": f"Done. {REPORT}",
    "own words": f"Done: I saved that your secret code is {CODE}.",
}


def _prompt_text(prompt: list[BaseMessage]) -> str:
    return "\n".join(m.text for m in prompt)


@pytest.mark.parametrize("door", ["graph", "middleware"])
@pytest.mark.parametrize("reply", sorted(REPLIES))
def test_a_deleted_item_is_not_carried_by_the_reply_that_stored_it(
    embedded_memory: TieredMemory, door: str, reply: str
) -> None:
    memory = embedded_memory
    model = ScriptedChatModel(
        replies=[
            "Noted.",
            _no_tag(),
            _summarize(),
            summary([ITEM]),
            REPLIES[reply],
            "Hello!",
        ]
    )
    agent = agent_through(memory, model, door)
    say(agent, SAID, "t1")
    say(agent, "Save that to your memory.", "t1")
    items = memory.summaries.get_all("ann")
    assert [d.page_content for d in items] == [ITEM]
    assert memory.delete_summaries("ann", [str(items[0].id)]) == 1

    model.prompts.clear()
    say(agent, "Hello again.", "t2")
    assert "Hello again." in _prompt_text(model.prompts[0])
    assert CODE not in _prompt_text(model.prompts[0])  # before: the stored items' report


def test_the_scenario_ran_as_scripted(embedded_memory: TieredMemory) -> None:
    """The turn stored the item through the tool (the report is in the thread)."""
    model = ScriptedChatModel(replies=["Noted.", _no_tag(), _summarize(), summary([ITEM]), "Done."])
    agent = agent_through(embedded_memory, model, "graph")
    say(agent, SAID, "t1")
    result: dict[str, Any] = say(agent, "Save that to your memory.", "t1")
    assert REPORT in result["messages"][-1].text

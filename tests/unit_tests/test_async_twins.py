"""The async twins of the stores and the summarizer give the same results as the sync ones.

Each test drives one scenario through the async API and checks concrete values (the sync
paths have their own tests); on both store families.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from support import MemoryFactory

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.errors import SummarizationError
from langchain_tiered_memory.stores.history import placeholder_for
from langchain_tiered_memory.summarization.summarizer import asummarize_messages, summarize_messages
from langchain_tiered_memory.testing import ScriptedChatModel


async def test_async_history_twins(memory_factory: MemoryFactory) -> None:
    memory: TieredMemory = memory_factory()
    h = memory.history
    a, b, c = (HumanMessage(t, id=t) for t in "abc")
    assert await h.aappend("u", [a, b], thread_id="t", thread_position=0) == 2
    assert await h.aappend("u", [a, b], thread_id="t", thread_position=0) == 2  # replay
    assert await h.aappend("u", [c]) == 3
    assert await h.aappend("u", []) == 3
    assert [m.text for m in await h.atail("u", 2)] == ["b", "c"]
    assert await h.atail("u", 0) == []
    assert await h.asince("u", 1) == (1, [b, c]) or [
        m.text for m in (await h.asince("u", 1))[1]
    ] == ["b", "c"]
    first, msgs = await h.asince("u", 1, 1)
    assert first == 1 and [m.text for m in msgs] == ["b"]
    first, end, msgs = await h.awindow("u", 0, 2)
    assert (first, end, [m.text for m in msgs]) == (0, 2, ["a", "b"])
    assert await h.alength("u") == 3
    assert await h.athreads("u") == ["t"]
    assert await h.aspans("u") == [(0, 2, "t")]
    assert await h.ausers() == ["u"]  # each test has a key prefix of its own
    assert await h.atrim("u", keep_last=1, not_after=2) == 2
    assert await h.alength("u") == 3
    assert [m.text for m in (await h.asince("u", 0))[1]] == ["c"]
    assert await h.aforget_thread("u", "t") == 0  # its messages were trimmed already
    assert await h.aclear("u") == 1
    assert await h.alength("u") == 3 and await h.atail("u", 5) == []
    assert await h.athreads("u") == []


async def test_async_tag_and_summary_twins(memory_factory: MemoryFactory) -> None:
    memory: TieredMemory = memory_factory()
    assert await memory.aset_user_tags("u", {"name": "Ann"}) == {"name": "Ann"}
    assert await memory.aget_user_tag("u", "name") == "Ann"
    assert await memory.aget_user_tag("u", "age") is None
    assert await memory.aget_user_tags("u") == {"name": "Ann"}
    assert await memory.tags.aclear("u") == 1
    assert await memory.aget_user_tags("u") == {}

    ids = await memory.aadd_summaries("u", ["Ann likes green tea.", "Ann has a cat named Tom."])
    assert ids == ["0", "1"]
    hits = await memory.arecall_summaries("u", "green tea", n=1)
    assert [d.page_content for d in hits] == ["Ann likes green tea."]
    assert [d.page_content for d in await memory.summaries.aget_all("u")] == [
        "Ann likes green tea.",
        "Ann has a cat named Tom.",
    ]
    assert await memory.summaries.aget_watermark("u") == 0
    assert await memory.summaries.adelete("u", ["0", "nope"]) == 1
    assert [d.id for d in await memory.summaries.aget_all("u")] == ["1"]
    assert await memory.summaries.adelete("u", []) == 0
    retriever = memory.summaries.as_retriever("u", k=1)
    assert [d.id for d in await retriever.ainvoke("cat")] == ["1"]
    assert [d.id for d in await retriever.ainvoke("cat", k=0)] == []
    assert await memory.summaries.aclear("u") == 1
    assert await memory.summaries.aget_all("u") == []
    assert await memory.arecall_summaries("u", "cat") == []


CONVERSATION = [
    HumanMessage("Hi, my name is Alice and I am 30 years old. My birthday is on May 8."),
    AIMessage("Nice to meet you, Alice!"),
]


def _call(*items: Any) -> AIMessage:
    return AIMessage(
        "", tool_calls=[{"name": "SummaryItems", "args": {"items": list(items)}, "id": "s"}]
    )


@pytest.mark.parametrize(
    ("replies", "kwargs", "expected", "calls"),
    [
        (
            [_call("The user's birthday is on May 8.")],
            {},
            ["The user's birthday is on May 8."],
            1,
        ),
        ([AIMessage(""), "- Alice is 30 years old."], {}, ["Alice is 30 years old."], 2),
        ([AIMessage(""), "- The weather on Mars is cold."], {"grounded": True}, None, 2),
        (
            [AIMessage(""), "The user: The user:"],
            {"extractive_fallback": True},
            [
                "The user said: Hi, my name is Alice and I am 30 years old.",
                "The user said: My birthday is on May 8.",
            ],
            2,
        ),
        ([RuntimeError("down")], {"extractive_fallback": True}, None, 1),
    ],
    ids=["tool-call", "plain-text", "grounded-junk", "fallback", "raises"],
)
async def test_sync_and_async_summarizers_agree(
    replies: list[Any], kwargs: dict[str, Any], expected: list[str] | None, calls: int
) -> None:
    for run in ("sync", "async"):
        model = ScriptedChatModel(replies=list(replies))
        if expected is None:
            with pytest.raises(SummarizationError):
                if run == "sync":
                    summarize_messages(model, CONVERSATION, **kwargs)
                else:
                    await asummarize_messages(model, CONVERSATION, **kwargs)
            continue
        if run == "sync":
            got = summarize_messages(model, CONVERSATION, **kwargs)
        else:
            got = await asummarize_messages(model, CONVERSATION, **kwargs)
        assert got == expected, run
        assert (
            len(model.prompts) == (1 if replies[0].tool_calls else 2)
            if isinstance(replies[0], AIMessage)
            else True
        )
    assert await asummarize_messages(ScriptedChatModel(replies=["x"]), []) == []


# --------------------------------------------------------------------------- placeholders


def test_placeholders_keep_type_ids_and_tool_call_ids() -> None:
    reason = "r" * 400
    tool = placeholder_for(
        ToolMessage("x", tool_call_id="call-1", id="m1", name="fetch"), "too big"
    )
    assert isinstance(tool, ToolMessage)
    assert (tool.text, tool.tool_call_id, tool.id, tool.status) == (
        "[not stored: too big]",
        "call-1",
        "m1",
        "error",
    )
    ai = placeholder_for(
        AIMessage("x", id="m2", tool_calls=[{"name": "f", "args": {"a": 1}, "id": "c9"}]), reason
    )
    assert isinstance(ai, AIMessage) and ai.id == "m2"
    assert ai.text == f"[not stored: {'r' * 300}]"
    assert [(c["id"], c["name"], c["args"]) for c in ai.tool_calls] == [("c9", "f", {})]
    human = placeholder_for(HumanMessage("x", id="m3"), "deep")
    assert isinstance(human, HumanMessage) and (human.text, human.id) == (
        "[not stored: deep]",
        "m3",
    )
    long_id = placeholder_for(HumanMessage("x", id="i" * 201), "deep")
    assert long_id.id is None  # an id that is itself huge is not kept
    assert placeholder_for(HumanMessage("x", id="i" * 200), "deep").id == "i" * 200
    other = placeholder_for(SystemMessage("x"), "odd")
    assert isinstance(other, AIMessage) and other.text == "[not stored: odd]"
    assert isinstance(placeholder_for(object(), "odd"), AIMessage)


def test_sync_clear_and_delete_edges(memory_factory: MemoryFactory) -> None:
    # survivors of the mutation run: clear must drop the thread records, delete on a
    # user without items is 0, not an error
    memory: TieredMemory = memory_factory()
    memory.add_session_log("u", [HumanMessage("a", id="a")], thread_id="t", thread_position=0)
    assert memory.history.clear("u") == 1
    assert memory.history.threads("u") == [] and memory.history.spans("u") == []
    assert memory.summaries.delete("ghost", ["1"]) == 0
    assert memory.tags.clear("ghost") == 0
    memory.set_user_tags("u", {"name": "Ann"})
    assert memory.get_user_tag("u", "name") == "Ann"
    assert memory.tags.clear("u") == 1 and memory.get_tag_history("u", "name") == []

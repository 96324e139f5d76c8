"""Memory follows what its owner changes (issue 67): a deleted or edited item leaves no
copy in what the package wrote from it, through the graph and the middleware.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from support import keys_holding

from langchain_tiered_memory import TieredMemory, TieredMemoryMiddleware, create_memory_graph
from langchain_tiered_memory.mcp_server import create_mcp_server
from langchain_tiered_memory.testing import ScriptedChatModel

# an item no message says: only the search's result could carry it
ITEM = "The user takes Zyrtexa for a heart condition."
OLD = "Zyrtexa"


def _search() -> AIMessage:
    call = {"name": "search_memory", "args": {"query": "medication"}, "id": "s1"}
    return AIMessage("", tool_calls=[call])


def _agent(memory: TieredMemory, model: ScriptedChatModel, door: str) -> Any:
    """The agent through ``door``, on the memory's own saver (SCAN sees its checkpoints)."""
    if door == "graph":
        return create_memory_graph(model, memory=memory, checkpointer=memory.checkpointer())
    return create_agent(
        model,
        tools=[],
        middleware=[TieredMemoryMiddleware(memory, search_memory=True)],
        checkpointer=memory.checkpointer(),
    )


async def _say(agent: Any, text: str, thread: str) -> None:
    await agent.ainvoke(
        {"messages": [HumanMessage(text)]},
        {"configurable": {"thread_id": thread}},
        context={"user_id": "ann"},
    )


def _prompt_text(prompt: list[Any]) -> str:
    return "\n".join(str(m.content) for m in prompt)


@pytest.mark.parametrize("door", ["graph", "middleware"])
@pytest.mark.parametrize("change", ["delete", "edit", "mcp_delete"])
async def test_a_search_result_leaves_no_copy_of_a_changed_item(
    embedded_memory: TieredMemory, door: str, change: str
) -> None:
    """Item 2: an item the model recalled with ``search_memory`` was quoted in the
    ToolMessage, checkpointed and saved to history: after a delete or an edit the old text
    stayed in the keys and in the thread's next prompt. The thread keeps the items' ids;
    their text is shown in the run that found them only."""
    memory = embedded_memory
    (item_id,) = await memory.aadd_summaries("ann", [ITEM])
    model = ScriptedChatModel(replies=[_search(), "Noted.", "Sure."])
    agent = _agent(memory, model, door)
    await _say(agent, "Remind me what I should not forget.", "t1")
    assert OLD in _prompt_text(model.prompts[1])  # the model was shown what it found
    if change == "delete":
        assert await memory.adelete_summaries("ann", [item_id]) == 1
    elif change == "edit":
        assert await memory.aupdate_summary("ann", item_id, "The user stopped all medication.")
    else:
        server = create_mcp_server(memory, user_id="ann")
        await server.call_tool("delete_memory", {"id": item_id})
    holding = keys_holding(memory, OLD)
    if change == "edit":  # the item itself keeps its earlier texts (metadata["edits"])
        holding = [k for k in holding if not k.endswith(":sum:items")]
    assert holding == []  # before: the history and the thread's checkpoints held it
    model.prompts.clear()
    await _say(agent, "And what else?", "t1")
    assert OLD not in _prompt_text(model.prompts[0])  # before: the old result, quoted
    assert "not kept" in _prompt_text(model.prompts[0])


async def test_a_direct_call_of_search_memory_returns_the_text(
    embedded_memory: TieredMemory,
) -> None:
    """Outside a turn the tool answers with the items' text, as documented."""
    from langchain_tiered_memory.agent.tools import SearchMemoryTool

    await embedded_memory.aadd_summaries("ann", [ITEM])
    tool = SearchMemoryTool(memory=embedded_memory)
    found = await tool.ainvoke({"query": "medication"}, config={"configurable": {"user_id": "ann"}})
    assert found == f'1. "{ITEM}"' or found.endswith(f'"{ITEM}"')


_EN = ("My secret code is ALPHA-123.", "The user's secret code is ALPHA-123.", "ALPHA-123")


def _summary(items: list[str]) -> AIMessage:
    call = {"name": "SummaryItems", "args": {"items": items}, "id": "s"}
    return AIMessage(content="", tool_calls=[call])


@pytest.mark.parametrize("door", ["graph", "middleware"])
@pytest.mark.parametrize(
    ("said", "item", "code", "change"),
    [
        (
            "My secret code is ALPHA-123.",
            "The user's secret code is ALPHA-123.",
            "ALPHA-123",
            "delete",
        ),
        (
            "My secret code is ALPHA-123.",
            "The user's secret code is ALPHA-123.",
            "ALPHA-123",
            "edit",
        ),
        ("我的门禁密码是ALPHA-123。", "用户的门禁密码是ALPHA-123。", "ALPHA-123", "mcp_delete"),
    ],
)
async def test_a_changed_item_is_no_longer_carried_into_new_threads(
    memory: TieredMemory, door: str, said: str, item: str, code: str, change: str
) -> None:
    """Item 1: after the user deleted "The user's secret code is ALPHA-123." (the console's
    and MCP's delete call the same), the next new thread's model input still held the
    message "My secret code is ALPHA-123." as carried history, and the reply that echoed
    it. The messages the item came from stop being carried; said again, it is carried."""
    model = ScriptedChatModel(replies=["Noted, ALPHA-123.", "Hello!", "Noted.", "Hi."])
    agent = _agent_on(memory, model, door)
    await _say(agent, said, "t1")
    ids = await memory.asummarize_history(
        "ann", ScriptedChatModel(replies=[_summary([item])]), reconcile=False
    )
    (item_id,) = [str(d.id) for d in await memory.summaries.aget_all("ann")]
    assert ids and (await memory.summaries.aget_all("ann"))[0].metadata["source_positions"]
    if change == "delete":
        await memory.adelete_summaries("ann", [item_id])
    elif change == "edit":
        await memory.aupdate_summary("ann", item_id, "The user has a secret code.")
    else:
        server = create_mcp_server(memory, user_id="ann")
        await server.call_tool("delete_memory", {"id": item_id})
    model.prompts.clear()
    await _say(agent, "Hello again.", "t2")
    assert code not in _prompt_text(model.prompts[0])  # before: carried from t1
    assert "Hello again." in _prompt_text(model.prompts[0])
    # said again: the new message is carried like any other
    await _say(agent, said, "t3")
    model.prompts.clear()
    await _say(agent, "Hello once more.", "t4")
    assert code in _prompt_text(model.prompts[0])
    assert len(await memory.aload_context("ann", max=100)) >= 8  # the history kept them all


def _agent_on(memory: TieredMemory, model: ScriptedChatModel, door: str) -> Any:
    from langgraph.checkpoint.memory import InMemorySaver

    if door == "graph":
        return create_memory_graph(model, memory=memory, checkpointer=InMemorySaver())
    return create_agent(
        model,
        tools=[],
        middleware=[TieredMemoryMiddleware(memory)],
        checkpointer=memory.checkpointer(InMemorySaver()),
    )


def _noted(prompt: list[Any]) -> AIMessage:
    return AIMessage("Noted.")


@pytest.mark.parametrize("door", ["graph", "middleware"])
async def test_a_fork_leaves_the_branch_it_abandoned_out_of_memory(
    memory: TieredMemory, door: str
) -> None:
    """Item 4: editing a message as a fork (a new message at the parent checkpoint, as
    agent-chat-ui does), ALPHA-123 -> BRAVO-456, then summarizing stored both as current
    notes and a new thread showed both. The history marks the branch the thread left:
    kept, neither summarized nor carried."""
    model = ScriptedChatModel(replies=[_noted])
    agent = _agent_on(memory, model, door)
    await _say(agent, "Hello.", "t1")
    await _say(agent, "My secret code is ALPHA-123.", "t1")
    history = [s async for s in agent.aget_state_history(_as_ann("t1"))]
    parent = next(s for s in history if len(s.values.get("messages", [])) == 2 and not s.next)
    await agent.ainvoke(
        {"messages": [HumanMessage("My secret code is BRAVO-456.")]},
        parent.config,
        context={"user_id": "ann"},
    )
    current = (await agent.aget_state(_as_ann("t1"))).values["messages"]
    assert "ALPHA" not in _prompt_text(current)  # the thread's own branch
    summarizer = ScriptedChatModel(replies=[_summary(["The user's secret code is BRAVO-456."])])
    await memory.asummarize_history("ann", summarizer, reconcile=False)
    assert "BRAVO-456" in _prompt_text(summarizer.prompts[0])
    assert "ALPHA-123" not in _prompt_text(summarizer.prompts[0])  # before: summarized too
    model.prompts.clear()
    await _say(agent, "Hello again.", "t2")
    assert "ALPHA-123" not in _prompt_text(model.prompts[0])  # before: carried as current
    assert "BRAVO-456" in _prompt_text(model.prompts[0])
    kept = [m.text for m in await memory.aload_context("ann", max=100)]
    assert "My secret code is ALPHA-123." in kept  # the history keeps what was said


@pytest.mark.parametrize("door", ["graph", "middleware"])
@pytest.mark.parametrize(
    ("said", "item", "fixed", "code"),
    [
        (
            "My secret code is ALPHA-123.",
            "The user's secret code is ALPHA-123.",
            "My secret code is BRAVO-456.",
            "ALPHA-123",
        ),
        (
            "我的门禁密码是ALPHA-123。",
            "用户的门禁密码是ALPHA-123。",
            "我的门禁密码是BRAVO-456。",
            "ALPHA-123",
        ),
    ],
)
async def test_a_fork_unmakes_the_items_made_from_the_branch_it_left(
    memory: TieredMemory, door: str, said: str, item: str, fixed: str, code: str
) -> None:
    """Item 4, summarized before the fork: the item made from the message the fork
    replaced stayed current (recalled and listed beside the new one). The fork unmakes
    it and moves the summarization back, so the items are made again from the branch the
    thread now has."""
    model = ScriptedChatModel(replies=[_noted])
    agent = _agent_on(memory, model, door)
    await _say(agent, "Hello.", "t1")
    await _say(agent, said, "t1")
    first = ScriptedChatModel(replies=[_summary([item])])
    await memory.asummarize_history("ann", first, reconcile=False)
    assert [d.page_content for d in await memory.summaries.aget_all("ann")] == [item]
    history = [s async for s in agent.aget_state_history(_as_ann("t1"))]
    parent = next(s for s in history if len(s.values.get("messages", [])) == 2 and not s.next)
    await agent.ainvoke(
        {"messages": [HumanMessage(fixed)]}, parent.config, context={"user_id": "ann"}
    )
    assert await memory.summaries.aget_all("ann") == []  # before: the ALPHA item stayed
    again = ScriptedChatModel(replies=[_summary([item.replace(code, "BRAVO-456")])])
    await memory.asummarize_history("ann", again, reconcile=False)
    assert "BRAVO-456" in _prompt_text(again.prompts[0]) and code not in _prompt_text(
        again.prompts[0]
    )
    model.prompts.clear()
    await _say(agent, fixed, "t2")
    assert code not in _prompt_text(model.prompts[0])  # neither recalled nor carried
    assert "BRAVO-456" in _prompt_text(model.prompts[0])


def _as_ann(thread: str) -> Any:
    return {"configurable": {"thread_id": thread, "user_id": "ann"}}


def _tag(**args: Any) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": "user_tag", "args": args, "id": "t1"}])


@pytest.mark.parametrize("door", ["graph", "middleware"])
async def test_an_edit_in_place_is_followed_by_the_memory(memory: TieredMemory, door: str) -> None:
    """Item 3: ``update_state`` with the same message id ("I am 30 years old." -> "I am 31
    years old.") was never saved: the history kept 30, the tag stayed 30 and a new thread
    answered from it. Now the history holds the edit, the item made from the old words
    goes and is made again from the new ones, and the tag the old words stated and the
    new ones do not is dropped (its change log keeps it)."""
    model = ScriptedChatModel(replies=[_tag(age=30), "Noted.", "Hello!", "Hi."])
    agent = _agent_on(memory, model, door)
    await _say(agent, "I am 30 years old.", "t1")
    assert (await memory.aget_user_tags("ann")).get("age") == "30"
    summarizer = ScriptedChatModel(replies=[_summary(["The user is 30 years old."])])
    await memory.asummarize_history("ann", summarizer, reconcile=False)
    thread = (await agent.aget_state(_as_ann("t1"))).values["messages"]
    said = next(m for m in thread if m.type == "human")
    await agent.aupdate_state(
        _as_ann("t1"), {"messages": [HumanMessage("I am 31 years old.", id=said.id)]}
    )
    await _say(agent, "Hello.", "t1")  # the turn after the edit saves it
    kept = [m.text for m in await memory.aload_context("ann", max=100)]
    assert "I am 31 years old." in kept and "I am 30 years old." not in kept  # before: 30
    assert "age" not in await memory.aget_user_tags("ann")  # before: age=30
    assert [d.page_content for d in await memory.summaries.aget_all("ann")] == []
    again = ScriptedChatModel(replies=[_summary(["The user is 31 years old."])])
    await memory.asummarize_history("ann", again, reconcile=False)
    assert "I am 31 years old." in _prompt_text(again.prompts[0])  # made again, from the edit
    assert "30 years" not in _prompt_text(again.prompts[0])
    model.prompts.clear()
    await _say(agent, "How old am I?", "t2")
    assert "30" not in _prompt_text(model.prompts[0])  # before: the tag and the history


def test_a_rewind_that_meets_a_moving_watermark_reads_it_again() -> None:
    """An edit's or a fork's rewind is a compare-and-set on the summarization watermark: a
    summarizer moving it meanwhile raised ``WatermarkConflict`` out of the turn's save."""
    from langchain_tiered_memory import HashingEmbeddings
    from langchain_tiered_memory._steps import drive
    from langchain_tiered_memory.errors import WatermarkConflict
    from langchain_tiered_memory.stores import InMemorySummaryStore

    class Racing(InMemorySummaryStore):
        raced = False

        def add(self, user_id: str, items: Any, **kwargs: Any) -> list[str]:  # type: ignore[override]
            if kwargs.get("watermark") and not self.raced:  # a summarizer got there first
                self.raced = True
                super().add(user_id, [], watermark=(self.get_watermark(user_id), 9))
                raise WatermarkConflict("moved")
            return super().add(user_id, items, **kwargs)

    memory = TieredMemory.in_memory(embeddings=HashingEmbeddings())
    memory.summaries = store = Racing(embeddings=HashingEmbeddings())
    store.raced = True  # the item made from positions 2-3, with the watermark at 6
    store.add("ann", ["The user is 30."], watermark=(0, 6), metadata={"source_positions": [2]})
    store.raced = False
    drive(memory.tiers._unmade("ann", [2, 3]))  # before: WatermarkConflict
    assert memory.summaries.get_watermark("ann") == 2
    assert memory.summaries.get_all("ann") == []

"""What a thread's history holds, one table (issue 78): every defect the house rounds
found in it, each a row run through both doors and both store families, all decided by
one rule (``stores.history.base.thread_append``; ``agent.unsaved`` says where a batch
starts): the history holds every message of the thread's current branch, once, with its
latest text; what a fork or time travel left stays, marked, and is neither carried nor
summarized; removing messages from the thread removes nothing from the history; a client's
reused id is a new message.

Rows and the defect each was (the issue and item that found it):

- ``reset``: after ``RemoveMessage(REMOVE_ALL_MESSAGES)`` the next turns were lost (65);
- ``removal``: after removing a saved message the later turns were skipped (66);
- ``double submit``: the same message submitted twice was stored twice (66);
- ``fork``: a fork (a new message at an earlier checkpoint) kept both branches (67);
- ``edit in place``: ``update_state`` with the same id was never saved (67);
- ``time travel edit``: LangGraph's documented edit, at the checkpoint before the turn
  then ``invoke(None)``, kept "I am 30 years old." and the age 30 (78 item 1);
- ``fork is not shown what it left``: the fork's own run was shown the item made from
  the message it replaced, and answered from it (78 item 2);
- ``reused id after remove-all``, ``reused id after keep-last``: a client numbering its
  messages overwrote turn one's entry, or its message was dropped as seen (78 item 3);
  ``same text again after remove-all``, ``fork back before an edit``: found by the
  model-based run (``test_thread_history_model.py``);
- ``deleted item's report``: the reply that stored an item quoted it after the item was
  deleted (78 item 4); ``internal channel``: ``{"saved_count": -1}`` in the input broke
  every later turn (78 item 5).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from doors import NOTHING, agent_through, summary
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.stores.history.codec import RETRACTED
from langchain_tiered_memory.testing import ScriptedChatModel

USER = "ann"


def _config(thread: str = "t1") -> Any:
    return {"configurable": {"thread_id": thread, "user_id": USER}}


class Thread:
    """One scripted conversation through a door, and what the memory then holds."""

    def __init__(self, memory: TieredMemory, door: str, replies: list[Any] | None = None) -> None:
        self.memory, self.door = memory, door
        self.model = ScriptedChatModel(replies=replies or [self._reply])
        self.agent = agent_through(memory, self.model, door)

    @staticmethod
    def _reply(prompt: list[BaseMessage]) -> AIMessage:
        # by the message it answers: the capture's extraction may ask the model too
        said = [m.text for m in prompt if m.type == "human"]
        return AIMessage(f"Re: {said[-1]}" if said else "Hi.")

    async def say(self, text: str, msg_id: str | None = None, config: Any = None) -> None:
        await self.agent.ainvoke(
            {"messages": [HumanMessage(text, id=msg_id)]},
            config or _config(),
            context={"user_id": USER},
        )

    async def state(self) -> list[BaseMessage]:
        return list((await self.agent.aget_state(_config())).values["messages"])

    async def update(self, messages: list[Any], config: Any = None) -> Any:
        config = config or _config()
        config = {**config, "configurable": {**config["configurable"], "user_id": USER}}
        return await self.agent.aupdate_state(config, {"messages": messages})

    async def current(self) -> list[str]:
        """The user's history as current: what a fork left or a deletion retracted is not."""
        kept = await self.memory.aload_context(USER, max=500)
        return [m.text for m in kept if not m.response_metadata.get(RETRACTED)]

    async def all(self) -> list[str]:
        return [m.text for m in await self.memory.aload_context(USER, max=500)]

    async def new_thread_prompt(self, text: str = "Hello again.") -> str:
        self.model.prompts.clear()
        await self.say(text, config=_config("t-new"))
        return "\n".join(m.text for m in self.model.prompts[0])

    @staticmethod
    def ran(*texts: str) -> list[str]:
        """The history of turns that said ``texts``: each, then the reply to it."""
        return [m for text in texts for m in (text, f"Re: {text}")]

    async def checkpoint_before(self, text: str) -> Any:
        """The checkpoint right after the input ``text`` was written, before the run went on
        (LangGraph's time travel starts from it)."""
        history = [s async for s in self.agent.aget_state_history(_config())]
        for snapshot in reversed(history):  # oldest first
            messages = snapshot.values.get("messages") or []
            if messages and messages[-1].text == text and snapshot.next:
                return snapshot
        raise AssertionError(f"no checkpoint before {text!r}")

    async def checkpoint_after(self, turns: int) -> Any:
        """The checkpoint where the thread's ``turns``-th run ended."""
        history = [s async for s in self.agent.aget_state_history(_config())]
        for snapshot in history:
            messages = snapshot.values.get("messages") or []
            if not snapshot.next and sum(m.type == "human" for m in messages) == turns:
                return snapshot
        raise AssertionError(f"no end of run {turns}")


async def _reset(t: Thread) -> None:
    await t.say("My name is Ann.")
    await t.update([RemoveMessage(id=REMOVE_ALL_MESSAGES)])
    await t.say("I live in Lyon.")
    await t.say("I work as a nurse.")
    assert await t.current() == t.ran("My name is Ann.", "I live in Lyon.", "I work as a nurse.")


async def _removal(t: Thread) -> None:
    await t.say("My name is Ann.")
    await t.say("I live in Lyon.")
    first = (await t.state())[0]
    await t.update([RemoveMessage(id=str(first.id))])
    await t.say("I work as a nurse.")
    assert (await t.current())[-2:] == t.ran("I work as a nurse.")
    assert len(await t.current()) == 6  # the removed message stays in the history


async def _double_submit(t: Thread) -> None:
    await t.say("My name is Ann.", msg_id="m1")
    await t.say("My name is Ann.", msg_id="m1")  # the same message again: LangGraph replaces it
    assert (await t.current()).count("My name is Ann.") == 1


async def _fork(t: Thread) -> None:
    await t.say("Hello.")
    await t.say("My secret code is ALPHA-123.")
    parent = await t.checkpoint_after(1)
    await t.say("My secret code is BRAVO-456.", config=parent.config)
    assert await t.current() == t.ran("Hello.", "My secret code is BRAVO-456.")
    assert "My secret code is ALPHA-123." in await t.all()  # kept, marked
    prompt = await t.new_thread_prompt()
    assert "BRAVO-456" in prompt and "ALPHA-123" not in prompt


async def _edit_in_place(t: Thread) -> None:
    await t.say("I am 30 years old.")
    said = (await t.state())[0]
    await t.update([HumanMessage("I am 31 years old.", id=said.id)])
    await t.say("Hello.")
    expected = ["I am 31 years old.", "Re: I am 30 years old.", *t.ran("Hello.")]
    assert await t.current() == expected
    assert "I am 30 years old." not in await t.all()  # replaced, as the thread's message


async def _time_travel_edit(t: Thread) -> None:
    await t.memory.aset_user_tags(USER, {"name": "Ann"})
    await t.say("Hello.")
    await t.say("I am 30 years old.")
    await t.memory.aset_user_tags(USER, {"age": "30"})  # what the turn recorded
    before = await t.checkpoint_before("I am 30 years old.")
    said = before.values["messages"][-1]
    edited = await t.update([HumanMessage("I am 31 years old.", id=said.id)], before.config)
    await t.agent.ainvoke(None, edited, context={"user_id": USER})
    thread = [m.text for m in await t.state()]
    assert thread == t.ran("Hello.", "I am 31 years old.")
    assert await t.current() == thread  # before: "I am 30 years old." and its reply
    assert "I am 30 years old." not in await t.all()
    # the age 30 is taken back; the run's own capture may record 31 from the new words
    assert (await t.memory.aget_user_tags(USER)).get("age") in (None, "31")  # before: 30
    prompt = await t.new_thread_prompt("How old am I?")
    assert "31" in prompt and "30" not in prompt


async def _fork_is_not_shown_what_it_left(t: Thread) -> None:
    await t.say("Hello.")
    await t.say("My birthday is May 5.")
    items = ScriptedChatModel(replies=[summary(["The user's birthday is May 5."])])
    await t.memory.asummarize_history(USER, items, reconcile=False)
    parent = await t.checkpoint_after(1)
    t.model.prompts.clear()
    await t.say("My birthday is June 9. When is my birthday?", config=parent.config)
    shown = "\n".join(m.text for m in t.model.prompts[0])
    assert "May 5" not in shown  # before: the item made from the branch the fork left
    assert await t.memory.summaries.aget_all(USER) == []


async def _reused_id_after_remove_all(t: Thread) -> None:
    await t.say("My name is Ann.", msg_id="m1")
    await t.update([RemoveMessage(id=REMOVE_ALL_MESSAGES)])
    await t.say("I live in Lyon.", msg_id="m1")  # the client counts from its empty list
    assert await t.current() == t.ran("My name is Ann.", "I live in Lyon.")


async def _same_text_again_after_remove_all(t: Thread) -> None:
    await t.say("Hi there.", msg_id="m1")
    await t.update([RemoveMessage(id=REMOVE_ALL_MESSAGES)])
    await t.say("Hi there.", msg_id="m1")  # the same id and words: said again
    assert await t.current() == t.ran("Hi there.", "Hi there.")


async def _fork_back_before_an_edit(t: Thread) -> None:
    await t.say("I am 30 years old.")
    await t.say("Hello.")
    end_of_first = await t.checkpoint_after(1)
    said = (await t.state())[0]
    await t.update([HumanMessage("I am 31 years old.", id=said.id)])
    await t.say("Hi.")
    await t.say("I live in Lyon.", config=end_of_first.config)  # the branch before the edit
    assert await t.current() == t.ran("I am 30 years old.", "I live in Lyon.")


async def _reused_id_after_keep_last(t: Thread) -> None:
    await t.say("My name is Ann.", msg_id="m1")
    await t.say("I live in Lyon.", msg_id="m3")
    oldest = (await t.state())[:2]
    await t.update([RemoveMessage(id=str(m.id)) for m in oldest])  # keep the last 2
    await t.say("I work as a nurse.", msg_id="m1")  # numbered from the list the client has
    assert await t.current() == t.ran("My name is Ann.", "I live in Lyon.", "I work as a nurse.")


async def _deleted_items_report(t: Thread) -> None:
    item = "The user's secret code is ALPHA-123."
    report = f'Done. Stored 1 memory item(s) from the conversation:\n- "{item}"'
    summarize = AIMessage("", tool_calls=[{"name": "summarize", "args": {}, "id": "s1"}])
    replies = ["Noted.", NOTHING, summarize, summary([item]), report, "Hello!"]
    t = Thread(t.memory, t.door, replies)
    await t.say("My secret code is ALPHA-123.")
    await t.say("Save that to your memory.")
    (stored,) = await t.memory.summaries.aget_all(USER)
    assert await t.memory.adelete_summaries(USER, [str(stored.id)]) == 1
    assert "ALPHA-123" not in await t.new_thread_prompt()


async def _internal_channel(t: Thread) -> None:
    await t.agent.ainvoke(
        {"messages": [HumanMessage("Hello there.")], "saved_count": -1},
        _config(),
        context={"user_id": USER},
    )
    await t.say("Hi once more.")
    assert await t.current() == t.ran("Hello there.", "Hi once more.")


ROWS: dict[str, Callable[[Thread], Awaitable[None]]] = {
    "reset": _reset,
    "removal": _removal,
    "double submit": _double_submit,
    "fork": _fork,
    "edit in place": _edit_in_place,
    "time travel edit": _time_travel_edit,
    "fork is not shown what it left": _fork_is_not_shown_what_it_left,
    "reused id after remove-all": _reused_id_after_remove_all,
    "reused id after keep-last": _reused_id_after_keep_last,
    "same text again after remove-all": _same_text_again_after_remove_all,
    "fork back before an edit": _fork_back_before_an_edit,
    "deleted item's report": _deleted_items_report,
    "internal channel": _internal_channel,
}


@pytest.mark.parametrize("door", ["graph", "middleware"])
@pytest.mark.parametrize("row", sorted(ROWS))
async def test_the_thread_history_table(memory: TieredMemory, door: str, row: str) -> None:
    await ROWS[row](Thread(memory, door))

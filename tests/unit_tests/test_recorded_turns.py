"""A real model's answers, replayed (issue 44): what Qwen2.5-Coder-1.5B answered the package
before issue 44 (``data/qwen_turns.json``, recorded by ``bench/real_model_turns.py``),
sent through the prebuilt graph and the middleware as they are now. Every answer is the
model's own: the repeated calls, the tool results it wrote as its reply, the update step
that judged "moved to Berlin" new, the summary with a date nobody said.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakes import ReplayChatModel
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from langchain_tiered_memory import TieredMemory, create_memory_graph
from langchain_tiered_memory.agent.middleware import TieredMemoryMiddleware

RECORDED: dict[str, list[dict[str, Any]]] = json.loads(
    (Path(__file__).parent / "data" / "qwen_turns.json").read_text("utf-8")
)["before"]
MACHINERY = ("<tool_response>", "<tool_call>", '"arguments"')


def _agent(memory: TieredMemory, model: ReplayChatModel, door: str) -> Any:
    if door == "graph":
        return create_memory_graph(model, memory=memory, checkpointer=InMemorySaver())
    middleware = [TieredMemoryMiddleware(memory)]
    saver = memory.checkpointer(InMemorySaver())
    return create_agent(model, tools=[], middleware=middleware, checkpointer=saver)


def _play(memory: TieredMemory, door: str, scenario: str) -> list[dict[str, Any]]:
    """Every turn of a recorded scenario, each thread a new one; per turn: the messages
    the turn added, the model's calls (bindings and prompts) and the tags and items after."""
    model = ReplayChatModel()
    agent = _agent(memory, model, door)
    out = []
    for turn in RECORDED[scenario]:
        model.play(turn["raw"])
        calls = len(model.bindings)
        before = len(_thread(agent, turn["thread"], scenario))
        agent.invoke(
            {"messages": [HumanMessage(turn["user"])]},
            {"configurable": {"thread_id": f"{scenario}-{turn['thread']}"}},
            context={"user_id": scenario},
        )
        every = memory.summaries.get_all(scenario)
        out.append(
            {
                "user": turn["user"],
                "added": _thread(agent, turn["thread"], scenario)[before:],
                "bindings": model.bindings[calls:],
                "prompts": model.prompts[calls:],
                "tags": memory.get_user_tags(scenario),
                "items": [d.page_content for d in every if not d.metadata.get("superseded_by")],
                "superseded": [d.page_content for d in every if d.metadata.get("superseded_by")],
            }
        )
    return out


def _thread(agent: Any, thread: int, scenario: str) -> list[BaseMessage]:
    state = agent.get_state({"configurable": {"thread_id": f"{scenario}-{thread}"}})
    return list(state.values.get("messages", []))


def _reply(turn: dict[str, Any]) -> str:
    final = turn["added"][-1]
    assert isinstance(final, AIMessage) and not final.tool_calls
    return final.text


def _reply_prompt(turn: dict[str, Any]) -> list[BaseMessage]:
    """The prompt of the turn's first free reply (not a forced extraction or summary)."""
    i = next(i for i, b in enumerate(turn["bindings"]) if b.get("tool_choice") is None)
    return turn["prompts"][i]  # type: ignore[no-any-return]


DOORS = ["graph", "middleware"]


@pytest.mark.parametrize("door", DOORS)
def test_the_seed_in_chinese(memory: TieredMemory, door: str) -> None:
    """Items 4 and 1: user_tag five times with the same arguments, then (tools withdrawn)
    the call written as JSON text, which became the reply."""
    first, birthday, summary, ask = _play(memory, door, "seed-zh")
    tools = [m for m in first["added"] if isinstance(m, ToolMessage)]
    assert len(tools) == 1  # the repeats were not run again
    assert first["tags"] == {"name": "王芳", "age": "28"}
    for turn in (first, birthday, summary, ask):
        reply = _reply(turn)
        assert reply.strip() and not any(m in reply for m in MACHINERY), reply
    # the model is not shown the package's report of turn 1 as its own words (after such
    # a report it wrote "好的。Recorded: ..., birthday=十月三日." though nothing was recorded)
    shown = _reply_prompt(birthday)[1:]
    assert not any(isinstance(m, AIMessage) and "Recorded" in m.text for m in shown)
    # the user did read it, in their language (issue 79 item 4: "Recorded: ..." was English)
    assert "我记住了" in _reply(first) and "王芳" in _reply(first)
    assert "Recorded" not in _reply(first)
    # item 5: the user reads what was stored, whatever the model wrote
    assert summary["items"] and all(item in _reply(summary) for item in summary["items"])
    # the new thread carries the conversation, not its machinery
    carried = _reply_prompt(ask)[1:-1]
    assert not any(isinstance(m, ToolMessage) or getattr(m, "tool_calls", None) for m in carried)
    assert not any(any(x in m.text for x in MACHINERY) for m in carried)
    # nor the package's reports of what the tools did: the model copied "好的。Stored 2
    # memory item(s) ..." as its answer to "我多大了？"
    assert not any("Stored" in m.text or "Recorded" in m.text for m in carried), carried


@pytest.mark.parametrize("door", DOORS)
def test_the_seed_in_english(memory: TieredMemory, door: str) -> None:
    """The model wrote tool results as its replies ("<tool_response> Recorded:
    birthday=March 5.", nothing was recorded); a new thread then copied them."""
    turns = _play(memory, door, "seed-en")
    assert turns[-1]["tags"] == {"name": "Ann Lee", "age": "30"}  # nothing invented
    for turn in turns:
        reply = _reply(turn)
        assert reply.strip() and not any(m in reply for m in MACHINERY), (turn["user"], reply)
        assert "birthday=" not in reply  # no claim of a record no tool made
    summary = next(t for t in turns if t["user"].startswith("Please summarize"))
    assert all(item in _reply(summary) for item in summary["items"])


@pytest.mark.parametrize("door", DOORS)
def test_the_update(memory: TieredMemory, door: str) -> None:
    """Items 3, 2, 7 and the tags: the update step judged "moved to Berlin" new, the
    summary added a birthday nobody said, "Where do I live?" was answered "Paris"."""
    paris, _, moved, again, where, restaurant = _play(memory, door, "update")
    assert again["superseded"] == ["The user lives in Paris."]
    assert again["items"] == ["The user moved to Berlin last month."]  # "May 8": not said
    memory_section = _reply_prompt(where)[0].text
    assert "Berlin" in memory_section and "Paris" not in memory_section
    # item 7: a request gets no forced extraction
    assert not any(b.get("tool_choice") == "user_facts" for b in restaurant["bindings"])
    # "I live in Paris." -> user_tag(name="Paris"), "moved to Berlin" -> name="Berlin": refused
    assert paris["tags"] == {} and moved["tags"] == {} and restaurant["tags"] == {}


def test_a_new_thread_does_not_carry_tool_results_a_model_wrote_as_replies(
    memory: TieredMemory,
) -> None:
    """Replies stored before this fix: a new thread's prompt copied them, and the model
    answered "How old am I?" with another "<tool_response>" block."""
    memory.add_session_log(
        "ann",
        [
            HumanMessage("My birthday is on March 5."),
            AIMessage("<tool_response>\nRecorded: birthday=March 5.\n</tool_response>"),
            HumanMessage("I failed my driving test."),
            AIMessage("Oh no, sorry to hear that."),
        ],
        thread_id="old",
    )
    model = ReplayChatModel(replies=["You are 30."])
    agent = _agent(memory, model, "graph")
    agent.invoke(
        {"messages": [HumanMessage("How old am I?")]},
        {"configurable": {"thread_id": "new"}},
        context={"user_id": "ann"},
    )
    carried = [m.text for m in model.prompts[0][1:-1]]
    assert carried == [
        "My birthday is on March 5.",
        "I failed my driving test.",
        "Oh no, sorry to hear that.",
    ]

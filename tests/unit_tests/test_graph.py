"""The prebuilt memory graph, driven by a scripted chat model on a real embedded Redis."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START

from langchain_tiered_memory import (
    InvalidUserIdError,
    MemoryContext,
    MissingUserIdError,
    TieredMemory,
)
from langchain_tiered_memory.agent.graph import (
    LOAD_MEMORY,
    MODEL,
    SAVE_MEMORY,
    TOOLS,
    MemoryNodes,
    create_memory_graph,
)
from langchain_tiered_memory.agent.prompt import DEFAULT_SYSTEM_PROMPT
from langchain_tiered_memory.language.text import timestamp
from langchain_tiered_memory.testing import ScriptedChatModel

WAIT = 10.0  # seconds: only a bound against hanging, never a performance assertion

INTRO = "Hi, my name is Alice and I am 30 years old. My birthday is on May 8."
BIRTHDAY_ITEM = "The user's birthday is on May 8."


# --------------------------------------------------------------------------- helpers


def call(name: str, args: Any = None, call_id: str = "c1") -> AIMessage:
    """An AI message calling one tool."""
    return AIMessage(content="", tool_calls=[{"name": name, "args": args or {}, "id": call_id}])


def calls(*specs: tuple[str, dict[str, Any]]) -> AIMessage:
    return AIMessage(
        content="",
        tool_calls=[{"name": n, "args": a, "id": f"c{i}"} for i, (n, a) in enumerate(specs)],
    )


def summary_reply(*items: str) -> AIMessage:
    """The summarizer's answer: a ``SummaryItems`` tool call."""
    return call("SummaryItems", {"items": list(items)}, "s1")


def cfg(thread: str | None = None, **configurable: Any) -> RunnableConfig:
    if thread is not None:
        configurable["thread_id"] = thread
    return {"configurable": configurable}


def ask(graph: Any, text: str, user: str = "alice", thread: str | None = None) -> dict[str, Any]:
    return graph.invoke(
        {"messages": [HumanMessage(text)]}, context={"user_id": user}, config=cfg(thread)
    )


def history(memory: TieredMemory, user: str = "alice") -> list[BaseMessage]:
    first, messages = memory.history.since(user, 0)
    assert first == 0
    return messages


def assert_no_duplicates(prompt: Sequence[BaseMessage]) -> None:
    ids = [m.id for m in prompt if m.id]
    assert len(ids) == len(set(ids)), [type(m).__name__ for m in prompt]
    contents = [(type(m).__name__, m.text) for m in prompt if not isinstance(m, SystemMessage)]
    human = [c for c in contents if c[0] == "HumanMessage"]
    assert len(human) == len(set(human))


def assert_well_formed(prompt: Sequence[BaseMessage]) -> None:
    """System first, then a human message; every tool call answered, every answer asked."""
    assert isinstance(prompt[0], SystemMessage)
    assert not any(isinstance(m, SystemMessage) for m in prompt[1:])
    assert isinstance(prompt[1], HumanMessage), type(prompt[1]).__name__
    open_calls: set[str] = set()
    for message in prompt[1:]:
        if isinstance(message, ToolMessage):
            assert message.tool_call_id in open_calls, "ToolMessage without its AI tool call"
            open_calls.discard(message.tool_call_id)
            continue
        assert not open_calls, f"tool calls {open_calls} left unanswered"
        if isinstance(message, AIMessage):
            # A provider sends unparsable calls back as tool calls too: each needs an answer.
            every = [*message.tool_calls, *message.invalid_tool_calls]
            open_calls = {c["id"] for c in every if c["id"]}
    assert not open_calls


def tool_messages(result: dict[str, Any]) -> list[ToolMessage]:
    return [m for m in result["messages"] if isinstance(m, ToolMessage)]


def past_turn(i: int, *, with_tool: bool, words: int = 30) -> list[BaseMessage]:
    """A finished earlier turn, optionally with a tool call, about ``words`` words long."""
    filler = " ".join(f"w{i}x{j}" for j in range(words))
    msgs: list[BaseMessage] = [HumanMessage(f"question {i} {filler}")]
    if with_tool:
        msgs += [
            call("user_tag", {"age": 30}, f"h{i}"),
            ToolMessage(f"Recorded: age=30. {filler}", tool_call_id=f"h{i}", name="user_tag"),
        ]
    msgs.append(AIMessage(f"answer {i} {filler}"))
    return msgs


# --------------------------------------------------------------------------- structure


def test_node_names_are_exported_constants_and_wired_in_order(
    embedded_memory: TieredMemory,
) -> None:
    assert (LOAD_MEMORY, MODEL, TOOLS, SAVE_MEMORY) == (
        "load_memory",
        "model",
        "tools",
        "save_memory",
    )
    graph = create_memory_graph(ScriptedChatModel(), memory=embedded_memory)
    drawn = graph.get_graph()
    assert {LOAD_MEMORY, MODEL, TOOLS, SAVE_MEMORY} <= set(drawn.nodes)
    edges = {(e.source, e.target) for e in drawn.edges}
    assert {
        (START, LOAD_MEMORY),
        (LOAD_MEMORY, MODEL),
        (MODEL, TOOLS),
        (MODEL, SAVE_MEMORY),
        (TOOLS, MODEL),
        (SAVE_MEMORY, END),
    } <= edges


# --------------------------------------------------------------------------- happy path


def test_happy_path_tags_summary_then_recall_in_the_next_system_prompt(
    embedded_memory: TieredMemory,
) -> None:
    memory = embedded_memory
    model = ScriptedChatModel(
        replies=[
            call("user_tag", {"name": "Alice", "age": 30}),
            "Nice to meet you, Alice.",
            # no summarize call from the model: a request to summarize runs it first
            summary_reply(BIRTHDAY_ITEM, "The user's name is Alice and she is 30 years old."),
            "I stored that.",
            "Your birthday is on May 8.",
        ]
    )
    graph = create_memory_graph(model, memory=memory, checkpointer=InMemorySaver())

    first = ask(graph, INTRO, thread="t1")
    assert memory.get_user_tags("alice") == {"name": "Alice", "age": "30"}
    (confirm,) = tool_messages(first)
    assert confirm.status == "success" and "name=Alice" in confirm.text

    second = ask(graph, "Please summarize our conversation.", thread="t2")
    (stored,) = tool_messages(second)
    assert stored.name == "summarize" and "Stored 2" in stored.text
    assert {"tool_names": ["SummaryItems"], "tool_choice": "SummaryItems"} in model.bindings
    items = memory.export_user("alice")["summaries"]
    assert {i["text"] for i in items} >= {BIRTHDAY_ITEM}
    created = next(i["created_at"] for i in items if i["text"] == BIRTHDAY_ITEM)
    # The summarizer read the first turn, which was in the history before this one.
    assert INTRO in model.prompts[2][-1].text

    ask(graph, "When is my birthday?", thread="t3")
    system = model.prompts[-1][0]
    assert isinstance(system, SystemMessage)
    assert system.text.startswith(DEFAULT_SYSTEM_PROMPT)
    assert '"name": "Alice"' in system.text and '"age": "30"' in system.text
    assert f"- [{timestamp(created)}] {json.dumps(BIRTHDAY_ITEM)}" in system.text  # to the minute
    assert model.prompts[-1][-1].text == "When is my birthday?"


def test_custom_system_prompt_comes_before_the_memory_section(
    embedded_memory: TieredMemory,
) -> None:
    embedded_memory.set_user_tags("alice", {"name": "Alice"})
    model = ScriptedChatModel(replies=["ok"])
    graph = create_memory_graph(model, memory=embedded_memory, system_prompt="Be terse.")
    ask(graph, "hello")
    text = model.prompts[0][0].text
    assert text.startswith("Be terse.\n\n")
    assert DEFAULT_SYSTEM_PROMPT not in text
    assert '"name": "Alice"' in text


# --------------------------------------------------------------------------- entry points


async def _run(graph: Any, mode: str, text: str, thread: str) -> list[str]:
    """Run one turn through ``mode``; return the node names seen, in order."""
    inputs = {"messages": [HumanMessage(text)]}
    kwargs: dict[str, Any] = {"context": {"user_id": "alice"}, "config": cfg(thread)}
    if mode == "invoke":
        graph.invoke(inputs, **kwargs)
        return []
    if mode == "ainvoke":
        await graph.ainvoke(inputs, **kwargs)
        return []
    if mode == "stream":
        return [n for chunk in graph.stream(inputs, stream_mode="updates", **kwargs) for n in chunk]
    seen = []
    async for chunk in graph.astream(inputs, stream_mode="updates", **kwargs):
        seen += list(chunk)
    return seen


@pytest.mark.parametrize("mode", ["invoke", "ainvoke", "stream", "astream"])
async def test_each_entry_point_runs_the_turn_and_saves_it_exactly_once(
    embedded_memory: TieredMemory, mode: str
) -> None:
    memory = embedded_memory
    model = ScriptedChatModel(replies=[call("user_tag", {"age": 30}), "Noted.", "Hello again."])
    graph = create_memory_graph(model, memory=memory, checkpointer=InMemorySaver())

    nodes = await _run(graph, mode, "I am 30.", "t1")
    if mode.endswith("stream"):
        assert nodes == [LOAD_MEMORY, MODEL, TOOLS, MODEL, SAVE_MEMORY]
    assert memory.get_user_tags("alice") == {"age": "30"}
    saved = history(memory)
    assert [type(m).__name__ for m in saved] == [
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "AIMessage",
    ]

    await _run(graph, mode, "Hi again.", "t1")  # the same thread: only the new turn is saved
    saved = history(memory)
    assert len(saved) == 6
    assert [m.text for m in saved[4:]] == ["Hi again.", "Hello again."]
    assert len({m.id for m in saved}) == 6
    state = graph.get_state(cfg("t1"))
    assert state.values["saved_count"] == len(state.values["messages"]) == 6


async def test_sync_and_async_runs_share_one_memory(embedded_memory: TieredMemory) -> None:
    model = ScriptedChatModel(replies=[call("user_tag", {"name": "Alice"}), "ok", "ok"])
    graph = create_memory_graph(model, memory=embedded_memory)
    await graph.ainvoke({"messages": [HumanMessage("I'm Alice")]}, context={"user_id": "alice"})
    ask(graph, "Who am I?")
    assert '"name": "Alice"' in model.prompts[-1][0].text
    # the async turn, its conversation only (issue 44 item 1: no tool call, no tool result)
    assert [m.text for m in model.prompts[-1][1:3]] == ["I'm Alice", "ok"]


# --------------------------------------------------------------------------- history in the prompt


def test_recent_history_is_loaded_on_a_threads_first_turn_only(
    embedded_memory: TieredMemory,
) -> None:
    memory = embedded_memory
    model = ScriptedChatModel(replies=["a0", "a1", "a-other", "a2"])
    graph = create_memory_graph(model, memory=memory, checkpointer=InMemorySaver())

    ask(graph, "turn zero", thread="t0")
    earlier = history(memory)
    assert [m.text for m in earlier] == ["turn zero", "a0"]

    ask(graph, "first of t1", thread="t1")
    prompt = model.prompts[1]
    assert [m.id for m in prompt[1:3]] == [m.id for m in earlier]  # history, then the thread
    assert [m.text for m in prompt[1:]] == ["turn zero", "a0", "first of t1"]

    ask(graph, "meanwhile elsewhere", thread="t2")  # written to the history after t1 started

    ask(graph, "second of t1", thread="t1")
    prompt = model.prompts[3]
    texts = [m.text for m in prompt[1:]]
    assert texts == ["turn zero", "a0", "first of t1", "a1", "second of t1"]
    assert "meanwhile elsewhere" not in texts  # not re-read on the thread's later turns
    for p in model.prompts:
        assert_no_duplicates(p)
        assert_well_formed(p)


def test_a_message_in_both_history_and_thread_is_sent_once(
    embedded_memory: TieredMemory,
) -> None:
    # Without a checkpointer an app may send the whole conversation back each time.
    model = ScriptedChatModel(replies=["first answer", "second answer"])
    graph = create_memory_graph(model, memory=embedded_memory)
    result = ask(graph, "first question")
    graph.invoke(
        {"messages": [*result["messages"], HumanMessage("second question")]},
        context={"user_id": "alice"},
    )
    prompt = model.prompts[1]
    assert_no_duplicates(prompt)
    assert [m.text for m in prompt[1:]] == ["first question", "first answer", "second question"]


def test_history_tail_cut_mid_turn_never_starts_with_a_tool_message(
    embedded_memory: TieredMemory,
) -> None:
    memory = embedded_memory
    for i in range(3):
        memory.add_session_log("alice", past_turn(i, with_tool=True, words=2))
    # The last 6 messages start inside turn 1, at its AI tool call's ToolMessage.
    model = ScriptedChatModel(replies=["ok"])
    graph = create_memory_graph(
        model, memory=memory, max_context_messages=6, context_token_budget=None
    )
    ask(graph, "now")
    prompt = model.prompts[0]
    assert_well_formed(prompt)
    assert prompt[1].text.startswith("question 2")
    assert prompt[-1].text == "now"


@pytest.mark.parametrize("budget", [100, 300, 500, 700])
def test_trimming_keeps_the_system_message_and_never_splits_a_tool_call(
    embedded_memory: TieredMemory, budget: int
) -> None:
    memory = embedded_memory
    memory.set_user_tags("alice", {"name": "Alice"})
    for i in range(8):
        memory.add_session_log("alice", past_turn(i, with_tool=i % 2 == 0))
    model = ScriptedChatModel(replies=[call("user_tag", {"age": 31}), "done"])
    graph = create_memory_graph(
        model, memory=memory, context_token_budget=budget, max_context_messages=40
    )
    ask(graph, "I am 31 now.")
    assert len(model.prompts) == 2
    for prompt in model.prompts:
        assert_well_formed(prompt)
        assert_no_duplicates(prompt)
        assert '"name": "Alice"' in prompt[0].text  # the memory section is never trimmed
        assert "question 0" not in " ".join(m.text for m in prompt)  # something was trimmed
        assert prompt[-1].text in {"I am 31 now.", "Recorded: age=31."}
        if len(prompt) > 2 + (prompt[-1].type == "tool") * 2:  # more than the current turn
            assert count_tokens_approximately(prompt) <= budget
    first = model.prompts[0]
    if budget < 300:  # the ~150-token system prompt alone is over budget: the turn goes whole
        assert [m.type for m in first] == ["system", "human"]
    else:  # room for some history beside the system prompt, within the budget
        assert len(first) > 2 and count_tokens_approximately(first) <= budget


def test_a_history_tail_without_a_human_message_is_not_sent(
    embedded_memory: TieredMemory,
) -> None:
    nodes = MemoryNodes(memory=embedded_memory)
    state = {
        "messages": [HumanMessage("now", id="n")],
        "recent_history": [
            AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": "x"}], id="a"),
            ToolMessage("t", tool_call_id="x", id="t"),
            AIMessage("cut mid-turn", id="b"),
        ],
    }
    assert [m.type for m in nodes.compose(state)] == ["system", "human"]


def test_a_turn_over_the_budget_on_its_own_is_sent_whole(embedded_memory: TieredMemory) -> None:
    memory = embedded_memory
    memory.add_session_log("alice", past_turn(0, with_tool=False))
    model = ScriptedChatModel(replies=[call("user_tag", {"age": 31}), "done"])
    graph = create_memory_graph(model, memory=memory, context_token_budget=10)
    long_text = "I am 31. " + "blah " * 200
    ask(graph, long_text)
    first, second = model.prompts
    assert [type(m).__name__ for m in first] == ["SystemMessage", "HumanMessage"]
    assert first[1].text == long_text
    assert [type(m).__name__ for m in second] == [
        "SystemMessage",
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
    ]
    assert_well_formed(second)


# --------------------------------------------------------------------------- the user id


def test_missing_user_id_fails_before_any_model_call(embedded_memory: TieredMemory) -> None:
    model = ScriptedChatModel(replies=[call("user_tag", {"name": "Alice"})])
    graph = create_memory_graph(model, memory=embedded_memory, checkpointer=InMemorySaver())
    with pytest.raises(MissingUserIdError):
        graph.invoke({"messages": [HumanMessage("I'm Alice")]}, config=cfg("t1"))
    with pytest.raises(MissingUserIdError):
        graph.invoke(
            {"messages": [HumanMessage("I'm Alice")]}, context={"user": "alice"}, config=cfg("t2")
        )
    with pytest.raises(InvalidUserIdError):
        graph.invoke(
            {"messages": [HumanMessage("I'm Alice")]}, context={"user_id": ""}, config=cfg("t3")
        )
    assert model.prompts == []
    assert embedded_memory.history.users() == []


async def test_missing_user_id_fails_before_any_model_call_async(
    embedded_memory: TieredMemory,
) -> None:
    model = ScriptedChatModel(replies=["hi"])
    graph = create_memory_graph(model, memory=embedded_memory)
    with pytest.raises(MissingUserIdError):
        await graph.ainvoke({"messages": [HumanMessage("hi")]})
    with pytest.raises(MissingUserIdError):
        async for _ in graph.astream({"messages": [HumanMessage("hi")]}):
            pass
    assert model.prompts == []


def test_user_id_from_configurable(embedded_memory: TieredMemory) -> None:
    model = ScriptedChatModel(replies=[call("user_tag", {"name": "Carol"}), "ok"])
    graph = create_memory_graph(model, memory=embedded_memory, checkpointer=InMemorySaver())
    graph.invoke({"messages": [HumanMessage("I'm Carol")]}, config=cfg("t1", user_id="carol"))
    assert embedded_memory.get_user_tags("carol") == {"name": "Carol"}
    assert [m.text for m in history(embedded_memory, "carol")][0] == "I'm Carol"


def test_context_user_id_wins_over_configurable_in_every_node(
    embedded_memory: TieredMemory,
) -> None:
    memory = embedded_memory
    memory.set_user_tags("alice", {"name": "Alice"})
    model = ScriptedChatModel(replies=[call("user_tag", {"name": "Bobby"}), "ok"])
    graph = create_memory_graph(model, memory=memory)
    graph.invoke(
        {"messages": [HumanMessage("call me Bobby")]},
        context={"user_id": "bob"},
        config=cfg(user_id="alice"),
    )
    assert memory.get_user_tags("bob") == {"name": "Bobby"}
    assert memory.get_user_tags("alice") == {"name": "Alice"}
    assert "Alice" not in model.prompts[0][0].text
    assert history(memory, "alice") == []


# --------------------------------------------------------------------------- isolation


def test_a_run_for_bob_never_reads_or_writes_alices_memory(
    embedded_memory: TieredMemory,
) -> None:
    memory = embedded_memory
    memory.set_user_tags("alice", {"name": "Alice", "age": 30})
    memory.add_session_log("alice", [HumanMessage("alice secret question"), AIMessage("ack")])
    memory.add_summaries("alice", ["Alice's birthday is on May 8, a secret."])
    before = memory.export_user("alice")
    # what bob said, which his summary item below is made of
    memory.add_session_log(
        "bob", [HumanMessage("Birthdays on May 8 are the best."), AIMessage("!")]
    )

    model = ScriptedChatModel(
        replies=[
            call("user_tag", {"user_id": "alice", "name": "Mallory"}, "x1"),
            call("user_tag", {"config": {"configurable": {"user_id": "alice"}}, "age": 99}, "x2"),
            calls(
                ("user_tag", {"name": "Alice", "context": {"user_id": "alice"}}),
                ("user_tag", {"user": "alice", "age": 1}),
            ),
            call("summarize", {"user_id": "alice"}, "x3"),  # refused: it takes no arguments
            "done",
            "Tell me about Alice? I only know you.",
        ]
    )
    graph = create_memory_graph(model, memory=memory, checkpointer=InMemorySaver())
    result = graph.invoke(
        {"messages": [HumanMessage("I'm 99. What is Alice's birthday? May 8?")]},
        context={"user_id": "bob"},
        config=cfg("t1"),
    )
    assert result["messages"][-1].text.startswith("done")  # and what was stored after it
    ask(graph, "What do you know about Alice's birthday?", user="bob", thread="t2")

    assert memory.export_user("alice") == before
    # The injected "config" argument did not redirect the write: it went to bob (the
    # name "Alice" and the age 1 were not stated by bob about bob: not recorded).
    assert memory.get_user_tags("bob") == {"age": "99"}
    bob = memory.export_user("bob")
    assert bob["summaries"] == []  # a summarize call naming a user is refused (issue 65)
    refused = [m for m in result["messages"] if getattr(m, "tool_call_id", None) == "x3"]
    assert refused[0].status == "error" and "takes no arguments" in refused[0].text
    for prompt in model.prompts:
        text = "\n".join(m.text for m in prompt)
        assert "secret" not in text
        assert '"Alice"' not in prompt[0].text and '"30"' not in prompt[0].text
        assert "alice secret question" not in text


# --------------------------------------------------------------------------- malformed calls

BAD_CALLS: dict[str, AIMessage] = {
    "bad json": AIMessage(
        content="",
        invalid_tool_calls=[
            {
                "type": "invalid_tool_call",
                "name": "user_tag",
                "args": '{"name": "Mallory", "age": ',
                "id": "bad1",
                "error": "Expecting value: line 1 column 28",
            }
        ],
    ),
    "unknown tag": call("user_tag", {"height": 180}, "bad1"),
    "unknown tag beside a valid one": call("user_tag", {"name": "Mallory", "city": "X"}, "bad1"),
    "age abc": call("user_tag", {"age": "abc"}, "bad1"),
    "age 999": call("user_tag", {"age": 999}, "bad1"),
    "age negative": call("user_tag", {"age": -1}, "bad1"),
    "age bool": call("user_tag", {"age": True}, "bad1"),
    "name too long": call("user_tag", {"name": "M" * 500}, "bad1"),
    "name not a string": call("user_tag", {"name": ["Mallory"]}, "bad1"),
    "empty args": call("user_tag", {}, "bad1"),
    "only empty values": call("user_tag", {"name": "", "age": None}, "bad1"),
    "unknown tool": call("forget_everything", {"user_id": "alice"}, "bad1"),
}


@pytest.mark.parametrize("case", list(BAD_CALLS))
def test_a_malformed_tool_call_writes_nothing_and_the_model_reads_the_error(
    embedded_memory: TieredMemory, case: str
) -> None:
    memory = embedded_memory
    memory.set_user_tags("alice", {"name": "Alice", "age": 30})
    model = ScriptedChatModel(replies=[BAD_CALLS[case], "Sorry, let me try again later."])
    graph = create_memory_graph(model, memory=memory, checkpointer=InMemorySaver())

    result = ask(graph, "My name is Mallory.", thread="t1")

    assert memory.get_user_tags("alice") == {"name": "Alice", "age": "30"}
    (error,) = tool_messages(result)
    assert error.status == "error" and error.tool_call_id == "bad1"
    assert result["messages"][-1].text == "Sorry, let me try again later."
    # The model was shown its error, and the whole turn (with the answer) was saved.
    assert model.prompts[1][-1].id == error.id
    assert_well_formed(model.prompts[1])
    assert len(history(memory)) == len(result["messages"]) == 4


async def test_a_malformed_call_async_also_answers_with_an_error(
    embedded_memory: TieredMemory,
) -> None:
    model = ScriptedChatModel(replies=[BAD_CALLS["bad json"], "ok"])
    # tool mode: no after-turn capture, which would read the name the message states
    graph = create_memory_graph(model, memory=embedded_memory, tag_capture="tool")
    result = await graph.ainvoke(
        {"messages": [HumanMessage("My name is Mallory.")]}, context={"user_id": "alice"}
    )
    (error,) = tool_messages(result)
    assert error.status == "error" and "could not be parsed" in error.text
    assert embedded_memory.get_user_tags("alice") == {}


def test_valid_and_unparsable_calls_in_one_message_are_each_answered(
    embedded_memory: TieredMemory,
) -> None:
    both = AIMessage(
        content="",
        tool_calls=[{"name": "user_tag", "args": {"age": 41}, "id": "good"}],
        invalid_tool_calls=[
            {
                "type": "invalid_tool_call",
                "name": "user_tag",
                "args": "{",
                "id": "bad",
                "error": None,
            }
        ],
    )
    model = ScriptedChatModel(replies=[both, "ok"])
    graph = create_memory_graph(model, memory=embedded_memory)
    result = ask(graph, "I am 41.")
    answers = {m.tool_call_id: m.status for m in tool_messages(result)}
    assert answers == {"good": "success", "bad": "error"}
    assert embedded_memory.get_user_tags("alice") == {"age": "41"}
    assert result["messages"][-1].text == "ok"


# --------------------------------------------------------------------------- forced capture


def test_forced_capture_stores_values_the_user_said(embedded_memory: TieredMemory) -> None:
    model = ScriptedChatModel(
        replies=[call("user_tag", {"name": "Alice", "age": 30}, "f1"), "Nice to meet you!"]
    )
    graph = create_memory_graph(model, memory=embedded_memory, force_tag_capture=True)
    result = ask(graph, "Hi, my name is Alice and I am 30 years old.")
    assert embedded_memory.get_user_tags("alice") == {"name": "Alice", "age": "30"}
    assert model.bindings[0] == {"tool_names": ["user_tag"], "tool_choice": "user_tag"}
    assert "tool_choice" not in model.bindings[1]
    assert result["messages"][-1].text == "Nice to meet you!"


def test_forced_capture_drops_values_the_user_did_not_say(
    embedded_memory: TieredMemory,
) -> None:
    model = ScriptedChatModel(replies=[call("user_tag", {"name": "Bob", "age": 30}, "f1"), "ok"])
    graph = create_memory_graph(model, memory=embedded_memory, force_tag_capture=True)
    result = ask(graph, "Hi, my name is Alice and I am 30 years old.")
    # "Bob" is dropped; the name the message states by its cue ("my name is") replaces it
    assert embedded_memory.get_user_tags("alice") == {"name": "Alice", "age": "30"}
    (ai_call,) = [m for m in result["messages"] if isinstance(m, AIMessage) and m.tool_calls]
    assert ai_call.tool_calls[0]["args"] == {"name": "Alice", "age": 30}


def test_forced_capture_with_nothing_grounded_falls_back_to_a_normal_call(
    embedded_memory: TieredMemory,
) -> None:
    model = ScriptedChatModel(replies=[call("user_tag", {"name": "Bob", "age": 41}, "f1"), "ok"])
    graph = create_memory_graph(model, memory=embedded_memory, force_tag_capture=True)
    result = ask(graph, "I am feeling great today.")
    assert embedded_memory.get_user_tags("alice") == {}
    assert tool_messages(result) == []
    assert [b.get("tool_choice") for b in model.bindings] == ["user_tag", None]
    assert result["messages"][-1].text == "ok"


@pytest.mark.parametrize(
    ("text", "echo"),
    [
        # what SmolLM2-135M answered when forced (measured): the request itself as a name
        ("Remind me how old I am.", "Remind me how old I am"),
        ("Tell me my age.", "me my age"),
        ("提醒我我多大了。", "提醒我我多大了"),  # "remind me how old I am", in Chinese
    ],
)
def test_forced_capture_never_stores_an_echo_of_the_message(
    embedded_memory: TieredMemory, text: str, echo: str
) -> None:
    embedded_memory.set_user_tags("alice", {"name": "Alice", "age": 30})
    model = ScriptedChatModel(replies=[call("user_tag", {"name": echo}, "f1"), "You are 30."])
    graph = create_memory_graph(model, memory=embedded_memory, force_tag_capture=True)
    result = ask(graph, text)
    assert embedded_memory.get_user_tags("alice") == {"name": "Alice", "age": "30"}
    assert tool_messages(result) == []
    # a request is no statement: nothing is forced, and the free model's own user_tag call
    # (not offered to it) is dropped as ungrounded; the empty reply left is asked again
    assert len(model.prompts) == 2
    (reply,) = [m for m in result["messages"] if isinstance(m, AIMessage)]
    assert reply.tool_calls == [] and reply.text == "You are 30."


@pytest.mark.parametrize(
    ("text", "name"),
    [("I am Alice Moreau.", "Alice Moreau"), ("我叫李明。", "李明")],  # most of the words
)
def test_a_short_value_from_a_long_statement_is_kept(
    embedded_memory: TieredMemory, text: str, name: str
) -> None:
    model = ScriptedChatModel(replies=[call("user_tag", {"name": name}, "f1"), "ok"])
    graph = create_memory_graph(model, memory=embedded_memory, force_tag_capture=True)
    ask(graph, text)
    assert embedded_memory.get_user_tags("alice") == {"name": name}


def test_a_capable_models_own_call_is_grounded_too(embedded_memory: TieredMemory) -> None:
    # issue 36: a capable model's own user_tag call is held to the same rule as a small
    # model's forced one (it was stored as it came: {"name": "Remind me"})
    model = ScriptedChatModel(replies=[call("user_tag", {"name": "Remind me"}, "c1"), "ok"])
    graph = create_memory_graph(model, memory=embedded_memory, force_tag_capture=False)
    result = ask(graph, "Remind me how old I am.")
    assert embedded_memory.get_user_tags("alice") == {}
    (refused,) = tool_messages(result)
    assert refused.status == "error" and "NOT RECORDED" in refused.text


@pytest.mark.parametrize("text", ["How old am I?", "What is my name?", "Hello there."])
def test_questions_and_non_statements_do_not_force_capture(
    embedded_memory: TieredMemory, text: str
) -> None:
    embedded_memory.set_user_tags("alice", {"name": "Alice", "age": 30})
    model = ScriptedChatModel(replies=[call("user_tag", {"age": 12}, "f1"), "ok"])
    graph = create_memory_graph(model, memory=embedded_memory, force_tag_capture=True)
    ask(graph, text)
    assert model.bindings[0].get("tool_choice") is None
    # in force mode user_tag is offered only through the forced call ...
    assert set(model.bindings[0]["tool_names"]) == {"summarize", "search_memory"}
    # ... and a guess the free model emits anyway is not stored
    assert embedded_memory.get_user_tags("alice") == {"name": "Alice", "age": "30"}


# --------------------------------------------------------------------------- auto summarize


def test_auto_summarize_runs_in_the_background_after_the_turn(
    embedded_memory: TieredMemory,
) -> None:
    memory = embedded_memory
    started, release = threading.Event(), threading.Event()

    def blocking_summary(messages: list[BaseMessage]) -> AIMessage:
        started.set()
        assert release.wait(WAIT), "the test never released the summarizer"
        return summary_reply(BIRTHDAY_ITEM)

    summarizer = ScriptedChatModel(replies=[blocking_summary])
    model = ScriptedChatModel(replies=["Happy early birthday!"])
    graph = create_memory_graph(
        model, memory=memory, auto_summarize_after=2, summary_model=summarizer
    )
    try:
        result = ask(graph, INTRO)
        # The turn is over and saved while the summarizer is still blocked.
        assert result["messages"][-1].text == "Happy early birthday!"
        assert started.wait(WAIT)
        assert len(history(memory)) == 2
        assert memory.export_user("alice")["summaries"] == []
        assert memory.summaries.get_watermark("alice") == 0
    finally:
        release.set()
    memory.wait_for_background(WAIT)
    exported = memory.export_user("alice")
    assert [s["text"] for s in exported["summaries"]] == [BIRTHDAY_ITEM]
    assert exported["watermark"] == 2
    assert INTRO in summarizer.prompts[0][-1].text


async def test_auto_summarize_waits_for_enough_unsummarized_messages(
    embedded_memory: TieredMemory,
) -> None:
    memory = embedded_memory
    summarizer = ScriptedChatModel(replies=[summary_reply(BIRTHDAY_ITEM)])
    graph = create_memory_graph(
        ScriptedChatModel(replies=["ok"]),
        memory=memory,
        auto_summarize_after=4,
        summary_model=summarizer,
    )
    await graph.ainvoke({"messages": [HumanMessage(INTRO)]}, context={"user_id": "alice"})
    memory.wait_for_background(WAIT)
    assert summarizer.prompts == []  # 2 pending < 4
    await graph.ainvoke(
        {"messages": [HumanMessage("And I like tea.")]}, context={"user_id": "alice"}
    )
    memory.wait_for_background(WAIT)
    assert len(summarizer.prompts) == 1
    assert memory.summaries.get_watermark("alice") == 4


def test_no_auto_summarize_by_default(embedded_memory: TieredMemory) -> None:
    model = ScriptedChatModel(replies=["ok"])
    graph = create_memory_graph(model, memory=embedded_memory)
    for i in range(3):
        ask(graph, f"My birthday is on May {i + 1}.")
    embedded_memory.wait_for_background(WAIT)
    # only the turns' own calls: a birthday is no tag, so no after-turn extraction either
    assert len(model.prompts) == 3
    assert all(b.get("tool_choice") is None for b in model.bindings)
    assert embedded_memory.summaries.get_watermark("alice") == 0


# --------------------------------------------------------------------------- app tools


def test_app_tools_are_bound_beside_the_memory_tools_and_callable(
    embedded_memory: TieredMemory,
) -> None:
    seen: list[str] = []

    @tool
    def weather(city: str) -> str:
        """The weather in a city."""
        seen.append(city)
        return f"Sunny in {city}."

    model = ScriptedChatModel(replies=[call("weather", {"city": "Oslo"}, "w1"), "It is sunny."])
    graph = create_memory_graph(model, memory=embedded_memory, tools=[weather])
    result = ask(graph, "Weather in Oslo?")
    assert model.bindings[0]["tool_names"] == ["user_tag", "summarize", "search_memory", "weather"]
    assert seen == ["Oslo"]
    (answer,) = tool_messages(result)
    assert answer.text == "Sunny in Oslo." and answer.name == "weather"
    assert model.prompts[1][-1].text == "Sunny in Oslo."


def test_graph_declares_its_context_schema(embedded_memory: TieredMemory) -> None:
    model = ScriptedChatModel(replies=["hi"])
    graph = create_memory_graph(model, memory=embedded_memory)
    assert graph.builder.context_schema is MemoryContext
    with pytest.raises(MissingUserIdError, match=r"the context has \['user'\], no 'user_id'"):
        graph.invoke({"messages": [HumanMessage("hi")]}, context={"user": "alice"})
    graph.invoke({"messages": [HumanMessage("hi")]}, context=MemoryContext(user_id="alice"))
    assert [m.text for m in history(embedded_memory, "alice")] == ["hi", "hi"]


@pytest.mark.parametrize("budget", [200, 1000, 8000])
def test_a_long_thread_is_trimmed_as_if_counted_whole(
    embedded_memory: TieredMemory, budget: int
) -> None:
    """compose counts only the thread's newest messages that can fit (a turn's cost is flat
    in the thread's length); what it sends equals trimming the whole list."""
    from langchain_core.messages.utils import trim_messages

    nodes = MemoryNodes(memory=embedded_memory, context_token_budget=budget)
    thread: list[BaseMessage] = []
    for i in range(600):
        thread += [HumanMessage(f"q{i} " + "word " * (i % 37), id=f"h{i}")]
        thread += [AIMessage(f"a{i} " + "reply " * (i % 11), id=f"a{i}")]
    history = [HumanMessage("older", id="o1"), AIMessage("older reply", id="o2")]
    state = {"messages": thread, "recent_history": history}
    sent = nodes.compose(state)
    whole = trim_messages(
        [nodes.system_message(state), *history, *thread],
        max_tokens=budget,
        token_counter=count_tokens_approximately,
        strategy="last",
        start_on="human",
        include_system=True,
        allow_partial=False,
    )
    assert [m.id for m in sent] == [m.id for m in whole] and len(sent) > 2

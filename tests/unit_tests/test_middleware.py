"""``TieredMemoryMiddleware`` in a LangChain 1.x ``create_agent`` agent."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver

from langchain_tiered_memory import MissingUserIdError, TieredMemory
from langchain_tiered_memory.agent.middleware import TieredMemoryMiddleware
from langchain_tiered_memory.agent.shown import conversation_only
from langchain_tiered_memory.testing import ScriptedChatModel


def tag_call(args: dict[str, Any]) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": "user_tag", "args": args, "id": "c1"}])


def history(memory: TieredMemory, user: str = "alice") -> list[BaseMessage]:
    first, messages = memory.history.since(user, 0)
    assert first == 0
    return messages


def agent_for(memory: TieredMemory, model: ScriptedChatModel, **kwargs: Any) -> Any:
    return create_agent(
        model,
        tools=[],
        middleware=[TieredMemoryMiddleware(memory)],
        checkpointer=memory.checkpointer(InMemorySaver()),
        **kwargs,
    )


def turn(thread: str, text: str, user: str = "alice") -> tuple[dict[str, Any], dict[str, Any]]:
    return (
        {"messages": [HumanMessage(text)]},
        {"context": {"user_id": user}, "config": {"configurable": {"thread_id": thread}}},
    )


def check_second_thread_prompt(memory: TieredMemory, model: ScriptedChatModel) -> None:
    """The last prompt: tags in the system message, the first thread's turn once, then now."""
    prompt = model.prompts[-1]
    assert isinstance(prompt[0], SystemMessage)
    assert '"name": "Alice"' in prompt[0].text and '"age": "30"' in prompt[0].text
    # the first thread's conversation, without its tool call and result (issue 44 item 1)
    earlier = conversation_only(history(memory)[:4])
    assert [m.type for m in earlier] == ["human", "ai"]
    assert [m.id for m in prompt[1:3]] == [m.id for m in earlier]
    assert prompt[-1].text == "Who am I?"
    ids = [m.id for m in prompt[1:]]
    assert len(ids) == len(set(ids)) == 3


def test_agent_records_tags_saves_the_turn_once_and_remembers_in_a_new_thread(
    embedded_memory: TieredMemory,
) -> None:
    memory = embedded_memory
    model = ScriptedChatModel(
        replies=[tag_call({"name": "Alice", "age": 30}), "Nice to meet you.", "You are Alice."]
    )
    agent = agent_for(memory, model)

    inputs, kwargs = turn("t1", "I'm Alice and I am 30.")
    result = agent.invoke(inputs, **kwargs)
    assert memory.get_user_tags("alice") == {"name": "Alice", "age": "30"}
    assert result["messages"][2].text == "Recorded: age=30, name=Alice."
    assert set(model.bindings[0]["tool_names"]) == {"user_tag", "summarize", "search_memory"}
    saved = history(memory)
    assert [m.id for m in saved] == [m.id for m in result["messages"]]
    assert len(saved) == 4

    inputs, kwargs = turn("t2", "Who am I?")
    agent.invoke(inputs, **kwargs)
    check_second_thread_prompt(memory, model)
    assert len(history(memory)) == 6  # only the new turn was appended


async def test_agent_async_path(embedded_memory: TieredMemory) -> None:
    memory = embedded_memory
    model = ScriptedChatModel(
        replies=[tag_call({"name": "Alice", "age": 30}), "Nice to meet you.", "You are Alice."]
    )
    agent = agent_for(memory, model)
    inputs, kwargs = turn("t1", "I'm Alice and I am 30.")
    await agent.ainvoke(inputs, **kwargs)
    assert await memory.aget_user_tags("alice") == {"name": "Alice", "age": "30"}
    assert len(history(memory)) == 4
    inputs, kwargs = turn("t2", "Who am I?")
    await agent.ainvoke(inputs, **kwargs)
    check_second_thread_prompt(memory, model)
    assert len(history(memory)) == 6


def test_later_turns_of_a_thread_save_only_their_messages(embedded_memory: TieredMemory) -> None:
    memory = embedded_memory
    model = ScriptedChatModel(replies=["one", "two", "three"])
    agent = agent_for(memory, model)
    for text in ("first", "second", "third"):
        inputs, kwargs = turn("t1", text)
        agent.invoke(inputs, **kwargs)
    assert [m.text for m in history(memory)] == ["first", "one", "second", "two", "third", "three"]
    prompt = model.prompts[-1]
    assert [m.text for m in prompt[1:]] == ["first", "one", "second", "two", "third"]


def test_agent_system_prompt_is_kept_beside_the_memory(embedded_memory: TieredMemory) -> None:
    embedded_memory.set_user_tags("alice", {"name": "Alice"})
    model = ScriptedChatModel(replies=["hi"])
    agent = agent_for(embedded_memory, model, system_prompt="Answer in French.")
    inputs, kwargs = turn("t1", "hello")
    agent.invoke(inputs, **kwargs)
    system = model.prompts[0][0]
    assert system.text.startswith("Answer in French.")
    assert '"name": "Alice"' in system.text
    assert sum(isinstance(m, SystemMessage) for m in model.prompts[0]) == 1


def test_user_id_from_configurable_and_isolation(embedded_memory: TieredMemory) -> None:
    memory = embedded_memory
    memory.set_user_tags("alice", {"name": "Alice"})
    model = ScriptedChatModel(replies=[tag_call({"name": "Bob", "user_id": "alice"}), "ok"])
    agent = agent_for(memory, model)
    agent.invoke(
        {"messages": [HumanMessage("I'm Bob")]},
        config={"configurable": {"thread_id": "t1", "user_id": "bob"}},
    )
    assert memory.get_user_tags("alice") == {"name": "Alice"}
    # the extra user_id argument is an error, and nothing went to alice; the name bob's
    # message states ("I'm Bob") is read off it after the turn, for bob
    assert memory.get_user_tags("bob") == {"name": "Bob"}
    assert '"Alice"' not in model.prompts[0][0].text
    assert len(history(memory, "bob")) == 4


def test_missing_user_id_fails_before_the_model(embedded_memory: TieredMemory) -> None:
    model = ScriptedChatModel(replies=["hi"])
    agent = agent_for(embedded_memory, model)
    with pytest.raises(MissingUserIdError):
        agent.invoke(
            {"messages": [HumanMessage("hello")]}, config={"configurable": {"thread_id": "t1"}}
        )
    assert model.prompts == []


def test_summarize_tool_uses_the_agents_own_model(embedded_memory: TieredMemory) -> None:
    memory = embedded_memory
    memory.add_session_log("alice", [HumanMessage("My birthday is on May 8."), AIMessage("Noted.")])
    # no summarize call from the model: a request to summarize runs the tool first
    model = ScriptedChatModel(
        replies=[
            AIMessage(
                content="",
                tool_calls=[
                    {
                        "name": "SummaryItems",
                        "args": {"items": ["The user's birthday is on May 8."]},
                        "id": "s1",
                    }
                ],
            ),
            "Saved.",
        ]
    )
    agent = agent_for(memory, model)
    inputs, kwargs = turn("t1", "Please summarize our conversation.")
    result = agent.invoke(inputs, **kwargs)
    assert result["messages"][2].text.startswith("Stored 1 memory item")
    assert {"tool_names": ["SummaryItems"], "tool_choice": "SummaryItems"} in model.bindings
    assert result["messages"][-1].text.startswith("Saved.")  # and what was stored after it
    assert [s["text"] for s in memory.export_user("alice")["summaries"]] == [
        "The user's birthday is on May 8."
    ]


def test_small_model_gets_forced_tag_capture_as_in_the_graph(embedded_memory: TieredMemory) -> None:
    memory = embedded_memory
    # the forced call also "hears" a city the user never named: only said values survive
    model = ScriptedChatModel(
        replies=[tag_call({"name": "Alice", "age": 30, "city": "Paris"}), "Nice to meet you."]
    )
    agent: Any = create_agent(
        model,
        tools=[],
        middleware=[TieredMemoryMiddleware(memory, small_model=True)],
        checkpointer=memory.checkpointer(InMemorySaver()),
    )
    inputs, options = turn("t1", "Hi, I'm Alice and I am 30 years old.")
    out = agent.invoke(inputs, **options)
    assert memory.get_user_tags("alice") == {"name": "Alice", "age": "30"}
    (forced,) = model.bindings
    assert forced["tool_choice"] == "user_tag"
    # as in the graph, the reply says what was recorded (a small model's own reply did not)
    assert out["messages"][-1].text == "Got it, I'll remember that (age: 30, name: Alice)."
    agent.invoke(*turn("t1", "How are you?")[:1], **options)
    free = model.bindings[-1]
    assert "user_tag" not in free.get("tool_names", [])  # the free model is not offered it
    assert "summarize" in free.get("tool_names", [])
    assert model.prompts[-1][-1].text == "How are you?"


def test_capable_model_gets_the_after_turn_capture_as_in_the_graph(
    embedded_memory: TieredMemory,
) -> None:
    # issue 36 item 7: through create_agent a capable model that never called user_tag
    # left the tags empty; the middleware now runs the graph's after-turn capture
    model = ScriptedChatModel(replies=["Hello!", tag_call({"name": "Alice", "age": 31})])
    agent = agent_for(embedded_memory, model)  # small_model=None: detected, and not small
    inputs, options = turn("t1", "Hi, I'm Alice and I am 30 years old.")
    agent.invoke(inputs, **options)
    reply, extraction = model.bindings[0], model.bindings[-1]
    assert reply.get("tool_choice") is None and "user_tag" in reply["tool_names"]
    assert extraction == {"tool_names": ["user_facts"], "tool_choice": "user_facts"}
    # 31 is the model's guess: dropped; the 30 the message states is read off it
    assert embedded_memory.get_user_tags("alice") == {"name": "Alice", "age": "30"}


def test_tool_loop_stops_after_max_tool_rounds(embedded_memory: TieredMemory) -> None:
    from langchain_core.tools import tool

    @tool
    def echo(text: str) -> str:
        """Echo the text."""
        return text

    looping = AIMessage(content="", tool_calls=[{"name": "echo", "args": {"text": "x"}, "id": "e"}])
    model = ScriptedChatModel(replies=[looping])  # calls echo forever
    agent: Any = create_agent(
        model,
        tools=[echo],
        middleware=[TieredMemoryMiddleware(embedded_memory, max_tool_rounds=2)],
        checkpointer=embedded_memory.checkpointer(InMemorySaver()),
    )
    inputs, options = turn("t1", "Loop, please.")
    out = agent.invoke(inputs, **options)
    assert len(model.prompts) == 3  # two tool rounds, then one call without tools
    assert "echo" in model.bindings[1]["tool_names"]
    assert not model.bindings[2].get("tool_names")
    last = out["messages"][-1]
    assert isinstance(last, AIMessage) and not last.tool_calls  # the call past the budget dropped
    assert [m.text for m in history(embedded_memory)][0] == "Loop, please."


async def test_small_model_forced_capture_on_the_async_path(embedded_memory: TieredMemory) -> None:
    memory = embedded_memory
    model = ScriptedChatModel(replies=[tag_call({"name": "Alice", "age": 30}), "Hi Alice."])
    agent: Any = create_agent(
        model,
        tools=[],
        middleware=[TieredMemoryMiddleware(memory, small_model=True, max_tool_rounds=1)],
        checkpointer=memory.checkpointer(InMemorySaver()),
    )
    inputs, options = turn("t1", "Hi, I'm Alice and I am 30 years old.")
    out = await agent.ainvoke(inputs, **options)
    assert await memory.aget_user_tags("alice") == {"name": "Alice", "age": "30"}
    assert model.bindings[0]["tool_choice"] == "user_tag"
    assert out["messages"][-1].text.startswith("Got it, I'll remember that")


class SmallScriptedModel(ScriptedChatModel):
    """A scripted model that carries the small-local-model marker, as SmolLM2's does."""

    small_local_model: ClassVar[bool] = True


def test_the_small_model_prompt_guards_apply_as_in_the_graph(
    embedded_memory: TieredMemory,
) -> None:
    """Issue 35: the middleware gets the graph's prompt guards too (short system prompt,
    the current turn only, the compact memory section); a capable model keeps the thread
    and the full prompt."""
    from langchain_tiered_memory.agent.prompt import (
        DEFAULT_SYSTEM_PROMPT,
        SMALL_MODEL_SYSTEM_PROMPT,
    )

    small = SmallScriptedModel(replies=["Hi.", "Fine."])
    capable = ScriptedChatModel(replies=["Hi.", "none", "Fine.", "none"])
    cases = ((small, None), (capable, None), (SmallScriptedModel(replies=["Hi."] * 4), True))
    for n, (model, marker) in enumerate(cases):
        user = f"user-{n}"  # a user each: no history of another case is loaded
        embedded_memory.set_user_tags(user, {"name": "Alice"})
        agent: Any = create_agent(
            model,
            tools=[],
            middleware=[TieredMemoryMiddleware(embedded_memory, small_model=marker)],
            checkpointer=embedded_memory.checkpointer(InMemorySaver()),
        )
        inputs, options = turn(f"t1-{user}", "Hello there.", user)  # a thread is its user's
        agent.invoke(inputs, **options)
        first = model.prompts[0]
        agent.invoke(turn(f"t1-{user}", "How are you?", user)[0], **options)
        last = next(p for p in reversed(model.prompts) if p[-1].text == "How are you?")
        system = last[0].text
        if model is capable:
            assert system.startswith(DEFAULT_SYSTEM_PROMPT) and "<user_tags>" in system
            assert [m.text for m in last[1:]] == ["Hello there.", "Hi.", "How are you?"]
            continue
        assert system.startswith(SMALL_MODEL_SYSTEM_PROMPT)
        assert 'The user\'s name is "Alice".' in system and "<user_tags>" not in system
        assert [m.text for m in last[1:]] == ["How are you?"]  # the current turn only
        # detected from the model (None): the very first memory section was rendered
        # before the model was seen; said up front (True): compact from the start
        assert ("<user_tags>" in first[0].text) is (marker is None)

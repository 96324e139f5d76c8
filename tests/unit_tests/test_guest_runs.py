"""A run or a write that names no user (issue 66 item 7): refused at the checkpointer's
first read or at the write, before LangGraph puts anything into the thread, on every saver
the memory guards and through both doors."""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver

from langchain_tiered_memory import TieredMemory, TieredMemoryMiddleware, create_memory_graph
from langchain_tiered_memory.errors import InvalidUserIdError, MissingUserIdError
from langchain_tiered_memory.stores.history.codec import RETRACTED
from langchain_tiered_memory.testing import ScriptedChatModel


def _saver(memory: TieredMemory, kind: str) -> Any:
    return memory.checkpointer() if kind == "redis" else memory.checkpointer(InMemorySaver())


def _agent(memory: TieredMemory, door: str, saver: Any) -> Any:
    model = ScriptedChatModel(replies=["Hello!"])
    if door == "graph":
        return create_memory_graph(model, memory=memory, checkpointer=saver)
    return create_agent(
        model, tools=[], middleware=[TieredMemoryMiddleware(memory)], checkpointer=saver
    )


def _texts(agent: Any, thread: str) -> list[str]:
    state = agent.get_state({"configurable": {"thread_id": thread}})
    return [m.text for m in state.values.get("messages", [])]


@pytest.mark.parametrize("kind", ["redis", "wrapped"])
@pytest.mark.parametrize("door", ["graph", "middleware"])
@pytest.mark.parametrize("context", [None, {}, {"user_id": ""}, {"user": "guest"}])
def test_a_run_that_names_no_user_writes_nothing(
    embedded_memory: TieredMemory, kind: str, door: str, context: Any
) -> None:
    memory = embedded_memory
    agent = _agent(memory, door, _saver(memory, kind))
    config = {"configurable": {"thread_id": "t1"}}
    agent.invoke({"messages": [HumanMessage("I'm Ann.")]}, config, context={"user_id": "ann"})
    before = _texts(agent, "t1")
    with pytest.raises((MissingUserIdError, InvalidUserIdError)):
        agent.invoke({"messages": [HumanMessage("a guest's words")]}, config, context=context)
    assert _texts(agent, "t1") == before  # nothing of the guest's in the owner's thread
    assert "a guest's words" not in [m.text for m in memory.load_context("ann", max=50)]
    # an unused thread id: the guest's refused run does not lock its rightful user out
    fresh = {"configurable": {"thread_id": "t-new"}}
    with pytest.raises((MissingUserIdError, InvalidUserIdError)):
        agent.invoke({"messages": [HumanMessage("hi")]}, fresh, context=context)
    agent.invoke({"messages": [HumanMessage("Hi, it's Ann.")]}, fresh, context={"user_id": "ann"})
    assert _texts(agent, "t-new")[0] == "Hi, it's Ann."


@pytest.mark.parametrize("kind", ["redis", "wrapped"])
def test_an_update_that_names_no_user_writes_nothing(
    embedded_memory: TieredMemory, kind: str
) -> None:
    memory = embedded_memory
    agent = _agent(memory, "graph", _saver(memory, kind))
    config = {"configurable": {"thread_id": "t1"}}
    agent.invoke({"messages": [HumanMessage("I'm Ann.")]}, config, context={"user_id": "ann"})
    before = _texts(agent, "t1")
    with pytest.raises(MissingUserIdError, match="update_state"):
        agent.update_state(config, {"messages": [HumanMessage("injected")]})
    assert _texts(agent, "t1") == before
    # the owner's edit is written
    owner = {"configurable": {"thread_id": "t1", "user_id": "ann"}}
    agent.update_state(owner, {"messages": [HumanMessage("edited by Ann")]})
    assert _texts(agent, "t1")[-1] == "edited by Ann"


@pytest.mark.parametrize("kind", ["redis", "wrapped"])
async def test_a_copied_thread_is_its_sources_owners(
    embedded_memory: TieredMemory, kind: str
) -> None:
    """Issue 66 item 5: copy_thread through the guarded saver (the server's threads.copy
    calls it) wrote no owner record: the owner's reads of the copy were refused and her
    erasure missed it (her PIN survived in the copy)."""
    from langchain_tiered_memory.errors import ThreadOwnershipError
    from langchain_tiered_memory.persistence.checkpoint import RedisSaver

    memory = embedded_memory
    assert memory.connection is not None
    plain = RedisSaver(memory.connection, key_prefix="elsewhere")  # a saver that copies
    saver = memory.checkpointer() if kind == "redis" else memory.checkpointer(plain)
    agent = _agent(memory, "graph", saver)
    ann = {"configurable": {"thread_id": "src"}}
    agent.invoke({"messages": [HumanMessage("My PIN is 4921.")]}, ann, context={"user_id": "ann"})
    saver.copy_thread("src", "copy-1")
    await saver.acopy_thread("src", "copy-2")
    for copy in ("copy-1", "copy-2"):
        assert memory.history.thread_record("ann", copy) == ("ann", True)
        state = agent.get_state({"configurable": {"thread_id": copy, "user_id": "ann"}})
        assert state.values["messages"][0].text == "My PIN is 4921."
        with pytest.raises(ThreadOwnershipError):
            agent.invoke(
                {"messages": [HumanMessage("hi")]},
                {"configurable": {"thread_id": copy}},
                context={"user_id": "bob"},
            )
    memory.forget_user("ann")
    for copy in ("copy-1", "copy-2"):
        assert saver.get_tuple({"configurable": {"thread_id": copy}}) is None


@pytest.mark.parametrize("kind", ["redis", "wrapped", "bare"])
@pytest.mark.parametrize("door", ["graph", "middleware"])
def test_shared_threads_mean_the_same_on_every_saver(
    embedded_memory: TieredMemory, kind: str, door: str
) -> None:
    """Issue 66 item 12: shared_threads=True worked with InMemorySaver, but the memory's
    own saver claimed the thread at its first read anyway (bob was refused)."""
    memory = embedded_memory
    saver: Any = {
        "redis": lambda: memory.checkpointer(shared_threads=True),
        "wrapped": lambda: memory.checkpointer(InMemorySaver(), shared_threads=True),
        "bare": InMemorySaver,
    }[kind]()
    model = ScriptedChatModel(replies=["Hello!"])
    if door == "graph":
        if kind == "redis":  # the graph drops the check of a saver given with it
            saver = memory.checkpointer()
        agent = create_memory_graph(model, memory=memory, checkpointer=saver, shared_threads=True)
    else:
        middleware = TieredMemoryMiddleware(memory, shared_threads=True)
        agent = create_agent(model, tools=[], middleware=[middleware], checkpointer=saver)
    config: RunnableConfig = {"configurable": {"thread_id": "family"}}
    for user in ("ann", "bob"):
        agent.invoke(
            {"messages": [HumanMessage(f"I'm {user}.")]}, config, context={"user_id": user}
        )
    assert _texts(agent, "family")[::2] == ["I'm ann.", "I'm bob."]
    assert memory.history.thread_record("bob", "family") == (None, True)  # nobody's


def test_a_message_two_runs_carry_is_stored_once(memory: TieredMemory) -> None:
    """Issue 66 item 10, under the thread's one rule (issue 78): the second of two
    concurrent runs read the thread after the first's input, so it carries h1 at the same
    position; h1 is held (its key), the first run's reply is the branch the thread left
    (the second run's checkpoint is the thread's now), and nothing is stored twice."""
    h1, a1, h2, a2 = (
        HumanMessage("q1", id="h1"),
        AIMessage("r1", id="a1"),
        HumanMessage("q2", id="h2"),
        AIMessage("r2", id="a2"),
    )
    memory.add_session_log("ann", [h1, a1], thread_id="t", thread_position=0)
    memory.add_session_log("ann", [h1, h2, a2], thread_id="t", thread_position=0)
    kept = memory.load_context("ann", max=10)
    assert [m.id for m in kept] == ["h1", "a1", "h2", "a2"]
    assert [m.id for m in kept if not m.response_metadata.get(RETRACTED)] == ["h1", "h2", "a2"]


def test_concurrent_turns_on_one_thread_store_each_message_once(memory: TieredMemory) -> None:
    """Issue 66 item 10, the door: 5 runs at once on one thread, 10 turns each: a message
    was stored twice in 4 of 5 runs (51-55 messages for 50 turns)."""
    import threading
    from collections import Counter

    saver = memory.checkpointer(InMemorySaver())
    graph = create_memory_graph(
        ScriptedChatModel(replies=["ok"]), memory=memory, checkpointer=saver
    )
    config: RunnableConfig = {"configurable": {"thread_id": "t"}}

    def turns(i: int) -> None:
        for j in range(10):
            graph.invoke(
                {"messages": [HumanMessage(f"m{i}-{j}")]}, config, context={"user_id": "u"}
            )

    workers = [threading.Thread(target=turns, args=(i,)) for i in range(5)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    # Concurrent runs on one thread each write their own branch of checkpoints, and the
    # thread is the last one written: which save was last need not be, so the current
    # messages follow the branch of the last save (issue 78's rule compares a batch from
    # its position; two branches of one length are not told apart before it). What
    # holds: the history keeps every message sent and none is current twice.
    kept = memory.load_context("u", max=1000)
    said = {m.text for m in kept if m.type == "human"}
    assert said == {f"m{i}-{j}" for i in range(5) for j in range(10)}
    current = [m.id for m in kept if not m.response_metadata.get(RETRACTED)]
    assert len(current) == len(set(current)), Counter(current).most_common(3)

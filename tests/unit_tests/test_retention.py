"""Retention that cannot regress silently (issue 76 items 1, 2 and 7), on real servers.

- ``user_ttl`` gives *every* key of the user a clock, from the first turn on a server
  that has cached none of the package's scripts (the case a clean-up broke: the append
  ran after the touch that was to give its keys their TTL);
- one user's export, erasure or refused run leaves every other user's clocks as they
  were, whether the other user is served with ``user_ttl`` or without;
- a checkpoint's owner stamp comes from the run, never from the config's metadata.

Each check reads the keys themselves (SCAN + PTTL), never the API's word for it. Nothing
here waits for a clock: a TTL is set short by hand and compared, so no test depends on the
machine's speed.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import redis
from langchain_core.messages import AIMessage, BaseMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from support import raw_client

from langchain_tiered_memory import (
    HashingEmbeddings,
    ThreadOwnershipError,
    TieredMemory,
    create_memory_graph,
)
from langchain_tiered_memory.backend.connection import RedisConnection, ScriptCall
from langchain_tiered_memory.testing import ScriptedChatModel

TTL_S = 3600
TTL_MS = TTL_S * 1000
SHORT_MS = 60_000  # what a user's keys are set to by hand: a refresh would raise it


def _model() -> ScriptedChatModel:
    return ScriptedChatModel(replies=[lambda prompt: AIMessage(content="ok")])


def _graph(memory: TieredMemory) -> Any:
    return create_memory_graph(_model(), memory=memory, checkpointer=memory.checkpointer())


def _turn(graph: Any, user: str, thread: str, text: str) -> None:
    config = {"configurable": {"thread_id": thread}}
    graph.invoke({"messages": [("user", text)]}, config, context={"user_id": user})


def _keys_of(client: redis.Redis, user: str, threads: list[str]) -> dict[str, int]:
    """PTTL of every key of the user and of their threads (SCAN, never KEYS)."""
    patterns = [f"tm:{{{user}}}:*", *(f"tm:{{cp:{t}}}:*" for t in threads)]
    return {
        key.decode(): int(client.pttl(key))
        for pattern in patterns
        for key in client.scan_iter(match=pattern, count=1000)
    }


def _shorten(client: redis.Redis, keys: dict[str, int]) -> None:
    for key in keys:
        client.pexpire(key, SHORT_MS)


# ----- item 1: every key of the user carries the TTL from the first turn -----


@pytest.mark.parametrize("door", ["sync", "async"])
def test_a_first_turn_on_a_fresh_server_gives_every_key_of_the_user_the_ttl(
    data_dir: Path, door: str
) -> None:
    """A fresh server has cached no script: the turn's read sends its touch by source
    (cached from then on), its write pipelines the append and the touch. Every key of
    the user and of the thread must expire within ``user_ttl`` (issue 76 item 1: the
    history, meta, spans and turns keys had no TTL, and outlived the user's TTL)."""
    memory = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings(), user_ttl=TTL_S)
    try:
        graph = _graph(memory)
        config = {"configurable": {"thread_id": "t1"}}
        said = {"messages": [("user", "Hi, I am Alice.")]}
        if door == "sync":
            graph.invoke(said, config, context={"user_id": "alice"})
        else:
            asyncio.run(graph.ainvoke(said, config, context={"user_id": "alice"}))
        assert memory.redis_url is not None
        keys = _keys_of(raw_client(memory.redis_url), "alice", ["t1"])
        assert {"tm:{alice}:history", "tm:{alice}:meta", "tm:{cp:t1}:owner"} <= set(keys)
        wrong = {k: ttl for k, ttl in keys.items() if not 0 < ttl <= TTL_MS}
        assert not wrong, f"keys that outlive user_ttl ({TTL_MS} ms): {wrong}"
    finally:
        memory.close()


def test_a_batch_of_scripts_runs_in_its_order_when_one_is_not_cached(data_dir: Path) -> None:
    """``run_all``: a later call whose script the server cached must not run before an
    earlier one whose script it has not (the EVALSHA fallback sent the earlier one again
    after the batch): here the PEXPIRE must find the key the SET made."""
    memory = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings())
    try:
        assert memory.redis_url is not None
        connection = RedisConnection(memory.redis_url)
        make = ScriptCall("return redis.call('SET', KEYS[1], ARGV[1])", 1, ("k", "v"))
        expire = ScriptCall("return redis.call('PEXPIRE', KEYS[1], ARGV[1])", 1, ("k", 5000))
        client = raw_client(memory.redis_url)
        client.script_flush()
        connection.run(expire)  # this one is cached now, the SET's is not
        assert connection.run_all([make, expire])[1] == 1
        assert 0 < int(client.pttl("k")) <= 5000
        client.delete("k")
        client.script_flush()
        connection.run(expire)

        async def batch() -> list[Any]:
            try:
                return await connection.arun_all([make, expire])
            finally:
                await connection.aclose()

        assert asyncio.run(batch())[1] == 1
        assert 0 < int(client.pttl("k")) <= 5000
        connection.close()
    finally:
        memory.close()


# ----- item 2: one user's operation leaves other users' clocks alone -----


@pytest.fixture
def two_memories(data_dir: Path) -> Any:
    """One Redis, the same prefix: a memory with ``user_ttl`` and one without (two apps
    of one operator); alice and carol have threads on the first, dan on the second."""
    timed = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings(), user_ttl=TTL_S)
    plain = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings())
    try:
        for user in ("alice", "carol"):
            _turn(_graph(timed), user, f"t-{user}", f"I am {user}.")
        _turn(_graph(plain), "dan", "t-dan", "I am dan.")
        yield timed, plain
    finally:
        plain.close()
        timed.close()


@pytest.mark.parametrize("operation", ["export", "forget_user", "forget_thread"])
def test_one_users_privacy_operation_leaves_every_other_users_clock_alone(
    two_memories: Any, operation: str
) -> None:
    """carol's export or erasure searches every saver's checkpoints by owner stamp; a
    read of a checkpoint restarted its thread's clock: alice's threads went back to the
    full TTL while her history kept its time, and dan (served without ``user_ttl``)
    got a TTL on his (issue 76 item 2)."""
    timed, _ = two_memories
    assert timed.redis_url is not None
    client = raw_client(timed.redis_url)
    alice = _keys_of(client, "alice", ["t-alice"])
    _shorten(client, alice)
    dan = _keys_of(client, "dan", ["t-dan"])
    assert dan and all(ttl == -1 for ttl in dan.values())
    if operation == "export":
        timed.export_user("carol")
    elif operation == "forget_user":
        timed.forget_user("carol")
    else:  # on alice's thread: not carol's, and its ownership is looked up in the saver
        timed.forget_thread("carol", "t-alice")
    after = _keys_of(client, "alice", ["t-alice"])
    assert set(after) == set(alice), "alice's keys changed"
    grown = {k: ttl for k, ttl in after.items() if not 0 < ttl <= SHORT_MS}
    assert not grown, f"carol's {operation} restarted alice's clocks: {grown}"
    assert _keys_of(client, "dan", ["t-dan"]) == dan, f"carol's {operation} touched dan"


def test_a_refused_run_on_another_users_thread_leaves_its_clock_alone(
    two_memories: Any,
) -> None:
    """bob's run on alice's thread is refused at the saver's first read; that read must
    not restart alice's thread (an owner record restarts only on its owner's turns)."""
    timed, _ = two_memories
    assert timed.redis_url is not None
    client = raw_client(timed.redis_url)
    alice = _keys_of(client, "alice", ["t-alice"])
    _shorten(client, alice)
    with pytest.raises(ThreadOwnershipError):
        _turn(_graph(timed), "bob", "t-alice", "let me in")
    after = _keys_of(client, "alice", ["t-alice"])
    grown = {k: ttl for k, ttl in after.items() if not 0 < ttl <= SHORT_MS}
    assert not grown, f"bob's refused run restarted alice's clocks: {grown}"


def test_the_owners_own_turn_still_restarts_the_threads_clock(two_memories: Any) -> None:
    """The other half of the rule: alice's next turn restarts every key of hers."""
    timed, _ = two_memories
    assert timed.redis_url is not None
    client = raw_client(timed.redis_url)
    _shorten(client, _keys_of(client, "alice", ["t-alice"]))
    _turn(_graph(timed), "alice", "t-alice", "Still here.")
    after = _keys_of(client, "alice", ["t-alice"])
    assert all(SHORT_MS < ttl <= TTL_MS for ttl in after.values()), after


# ----- item 7: the owner stamp comes from the run alone -----


def _parent_graph(memory: TieredMemory) -> Any:
    """An app's graph with a subgraph: the subgraph's checkpoints go to its namespace."""

    def answer(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [AIMessage(content="noted")]}

    child = StateGraph(MessagesState)
    child.add_node("answer", answer)
    child.add_edge(START, "answer")
    child.add_edge("answer", END)
    parent = StateGraph(MessagesState)
    parent.add_node("child", child.compile())
    parent.add_edge(START, "child")
    parent.add_edge("child", END)
    return parent.compile(checkpointer=memory.checkpointer())


def test_a_config_that_names_another_user_in_its_metadata_stamps_nothing_of_theirs(
    data_dir: Path,
) -> None:
    """bob's run says ``metadata={"tiered_memory_user": "alice"}``: LangGraph merges a
    config's metadata into each checkpoint's, so bob's subgraph checkpoints said alice's,
    alice's export listed bob's thread and her erasure deleted it (issue 76 item 7)."""
    memory = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings(), user_ttl=TTL_S)
    try:
        graph = _parent_graph(memory)
        config: Any = {
            "configurable": {"thread_id": "bobs-thread"},
            "metadata": {"tiered_memory_user": "alice"},
        }
        graph.invoke(
            {"messages": [("user", "bob's secret zqbob")]}, config, context={"user_id": "bob"}
        )
        saver = memory.checkpointer()
        stamps = {c.metadata.get("tiered_memory_user") for c in saver.list(None)}
        # the root namespace's are bob's; a subgraph's carry no stamp (its reads are
        # checked at the parent's), and none says alice
        assert stamps == {"bob", None}, f"checkpoints stamped {stamps}"
        exported = memory.export_user("alice")
        assert "bobs-thread" not in exported["threads"]
        assert "zqbob" not in str(exported)
        memory.forget_user("alice")
        owner = {"configurable": {"thread_id": "bobs-thread", "user_id": "bob"}}
        assert "zqbob" in str(graph.get_state(owner).values), "alice's erasure took bob's thread"
    finally:
        memory.close()


# ----- the owner record's clock, where no checkpointer of the memory's gives it one -----


def test_a_first_turn_on_an_apps_own_saver_gives_the_owner_record_the_ttl(
    data_dir: Path,
) -> None:
    """``create_agent`` with the middleware on an app's ``InMemorySaver``: no saver of the
    memory's expires the thread's owner record (the Redis saver's PUT does, for its own
    threads), so the turn's write must (mutation run: a write that sent the owner record
    without ``user_ttl`` survived every test)."""
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver

    from langchain_tiered_memory import TieredMemoryMiddleware

    memory = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings(), user_ttl=TTL_S)
    try:
        agent = create_agent(
            _model(),
            tools=[],
            middleware=[TieredMemoryMiddleware(memory)],
            checkpointer=memory.checkpointer(InMemorySaver()),
        )
        _turn(agent, "alice", "app-t1", "Hi, I am Alice.")
        assert memory.redis_url is not None
        keys = _keys_of(raw_client(memory.redis_url), "alice", ["app-t1"])
        assert "tm:{cp:app-t1}:owner" in keys
        wrong = {k: ttl for k, ttl in keys.items() if not 0 < ttl <= TTL_MS}
        assert not wrong, f"keys that outlive user_ttl: {wrong}"
    finally:
        memory.close()


@pytest.mark.parametrize("asynchronous", [False, True])
def test_the_owners_load_restarts_the_threads_owner_record(
    two_memories: Any, asynchronous: bool
) -> None:
    """The turn's read restarts the owner record of a thread it names when it is the
    reader's (``memory.load(thread_id=...)``: the graph's and the middleware's load), and
    another user's read of it does not."""
    timed, _ = two_memories
    assert timed.redis_url is not None
    client = raw_client(timed.redis_url)
    owner = "tm:{cp:t-alice}:owner"
    client.pexpire(owner, SHORT_MS)
    with pytest.raises(ThreadOwnershipError):
        timed.load("carol", "hi", thread_id="t-alice")
    assert 0 < int(client.pttl(owner)) <= SHORT_MS
    if asynchronous:
        asyncio.run(timed.aload("alice", "hi", thread_id="t-alice"))
    else:
        timed.load("alice", "hi", thread_id="t-alice")
    assert SHORT_MS < int(client.pttl(owner)) <= TTL_MS


def test_a_thread_claimed_by_the_load_itself_gets_the_ttl_at_the_save(data_dir: Path) -> None:
    """No guarded saver claimed the thread before the turn's read (an app's own loop:
    ``load(thread_id=...)`` then ``add_session_log``): the load's claim makes the owner
    record after its read, so the save must give it the clock (mutation run: a save
    without it survived every test)."""
    memory = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings(), user_ttl=TTL_S)
    try:
        memory.load("alice", "Hi, I am Alice.", thread_id="loop-1")
        memory.add_session_log("alice", [AIMessage("Hello Alice.")], thread_id="loop-1")
        assert memory.redis_url is not None
        ttl = int(raw_client(memory.redis_url).pttl("tm:{cp:loop-1}:owner"))
        assert 0 < ttl <= TTL_MS, f"the owner record's PTTL is {ttl}"
    finally:
        memory.close()

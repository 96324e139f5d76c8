"""One set of guarantees from every door (issue 43): the memory knows its checkpointer and
store, erases and exports them without being told (items 3, 7), edits an item in one store
operation (items 4, 14), deletes single items off disk (item 10), is not blocked by a
corrupt thread record (item 9), and the MCP server's arguments are strictly typed (16).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from support import raw_client

from langchain_tiered_memory import HashingEmbeddings, TieredMemory, create_memory_graph
from langchain_tiered_memory.backend.keys import KeyBuilder
from langchain_tiered_memory.mcp_server import create_mcp_server
from langchain_tiered_memory.testing import ScriptedChatModel

SECRET = "SECRETPIN4921"


def _files_with(data_dir: Path, needle: bytes) -> list[str]:
    return sorted(
        str(p.relative_to(data_dir))
        for p in data_dir.rglob("*")
        if p.is_file() and needle in p.read_bytes()
    )


def _turn(graph: Any, user: str, thread: str, text: str) -> None:
    graph.invoke(
        {"messages": [HumanMessage(text)]},
        {"configurable": {"thread_id": thread}},
        context={"user_id": user},
    )


def _keys_of(memory: TieredMemory, user: str) -> dict[str, bytes]:
    """SCAN + DUMP of every key named for ``user`` (what another's erasure must not touch)."""
    raw = raw_client(memory.redis_url or "")
    try:
        return {
            key.decode(): raw.dump(key) or b""
            for key in raw.scan_iter(count=1000)
            if user in key.decode()
        }
    finally:
        raw.close()


async def test_mcp_forget_everything_erases_threads_and_store_items(
    embedded_memory: TieredMemory,
) -> None:
    """Item 3 and 7: the MCP server (which knows no checkpointer) erases the conversation
    in the memory's own checkpointer and the items of its own LangGraph store; its export
    holds the threads' state."""
    memory = embedded_memory
    graph = create_memory_graph(
        ScriptedChatModel(replies=["Noted."]), memory=memory, checkpointer=memory.checkpointer()
    )
    _turn(graph, "ann", "ann-t", f"My PIN is {SECRET}.")
    _turn(graph, "bob", "bob-t", "I keep bees.")
    memory.store().put(("memories", "ann"), "m1", {"content": f"PIN {SECRET}"})
    memory.store().put(("memories", "bob"), "m1", {"content": "bees"})
    server = create_mcp_server(memory, user_id="ann")
    _, exported = await server.call_tool("export_memory", {})
    assert exported["thread_states"][0]["thread_id"] == "ann-t"
    assert SECRET in str(exported["thread_states"])
    assert exported["store"][0]["value"]["content"] == f"PIN {SECRET}"
    before = _keys_of(memory, "bob")
    assert len(before) > 5
    _, removed = await server.call_tool("forget_everything", {"confirm": True})
    assert removed["threads"] == 1 and removed["store_items"] == 1
    saver = memory.checkpointer()
    assert saver.get_tuple({"configurable": {"thread_id": "ann-t"}}) is None
    assert memory.store().search(("memories", "ann")) == []
    raw = raw_client(memory.redis_url or "")
    try:
        left = [k for k in raw.scan_iter(count=1000) if SECRET.encode() in (raw.dump(k) or b"")]
    finally:
        raw.close()
    assert left == []
    assert _keys_of(memory, "bob") == before  # nothing of anyone else changed
    assert memory.store().search(("memories", "bob"))[0].value == {"content": "bees"}
    assert _files_with(memory.data_dir or Path(), SECRET.encode()) == []


def test_an_edit_that_changes_only_case_keeps_the_item(memory: TieredMemory) -> None:
    """Item 4: an edit is one in-place write, never a de-duplicated add plus a delete."""
    (item,) = memory.add_summaries("ann", ["Ann lives in paris."])
    assert memory.update_summary("ann", item, "Ann lives in Paris.") is True
    (doc,) = memory.summaries.get_all("ann")
    assert (doc.id, doc.page_content) == (item, "Ann lives in Paris.")
    assert [e["text"] for e in doc.metadata["edits"]] == ["Ann lives in paris."]
    assert memory.update_summary("ann", item, "Ann lives in Paris.") is False
    assert memory.recall_summaries("ann", "Where does Ann live?", n=1)[0].id == item


def test_an_edit_of_a_superseded_item_keeps_it_superseded(memory: TieredMemory) -> None:
    """Item 14: the outdated fact is not recalled again beside its replacement."""
    (old,) = memory.add_summaries("ann", ["Ann lives in Paris."])
    (new,) = memory.summaries.add("ann", ["Ann moved to Berlin."], supersedes={0: [old]})
    memory.update_summary("ann", old, "Ann lived in Paris until 2025.")
    stored = {d.id: d for d in memory.summaries.get_all("ann")}
    assert stored[old].metadata["superseded_by"] == new
    recalled = [d.id for d in memory.recall_summaries("ann", "Where does Ann live?", n=3)]
    assert old not in recalled and new in recalled


async def test_single_deletes_leave_nothing_on_disk(embedded_memory: TieredMemory) -> None:
    """Item 10: an item deleted or edited through MCP or the facade, and a deleted tag,
    are off the embedded server's files when the call returns."""
    memory = embedded_memory
    data_dir = memory.data_dir or Path()
    raw = raw_client(memory.redis_url or "")
    raw.config_set("rdbcompression", "no")
    raw.close()
    first, second = memory.add_summaries("ann", [f"Code one {SECRET}.", "Ann likes tea."])
    memory.set_user_tags("ann", {"name": "Zorblatt"})
    server = create_mcp_server(memory, user_id="ann")
    await server.call_tool("delete_memory", {"id": first})
    assert _files_with(data_dir, SECRET.encode()) == []
    memory.update_summary("ann", second, "Ann likes green tea.")
    memory.add_summaries("bob", ["Bob likes coffee."])
    assert await memory.adelete_user_tags("ann", ["name"]) == 1
    assert _files_with(data_dir, b"Bob likes coffee")  # what is kept is on disk


def test_an_undecodable_thread_record_blocks_no_erasure(embedded_memory: TieredMemory) -> None:
    """Item 9: corruption never blocks erasure or export."""
    memory = embedded_memory
    memory.add_session_log("ann", [HumanMessage("hi")], thread_id="ok-thread")
    raw = raw_client(memory.redis_url or "")
    try:
        raw.sadd(KeyBuilder().key("ann", "threads"), b"\xff\xfe")
    finally:
        raw.close()
    assert memory.export_user("ann")["threads"] == ["ok-thread"]
    assert memory.forget_thread("ann", "ok-thread")["messages"] == 1
    assert memory.forget_user("ann")["history"] == 0
    assert memory.history.threads("ann") == []


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("set_tags", {"tags": {"age": True}}),
        ("forget_everything", {"confirm": 1}),
        ("forget_everything", {"confirm": "yes"}),
        ("search_memories", {"query": "x", "n": True}),
        ("delete_memory", {"id": 1}),
        ("update_memory", {"id": "1", "text": 5}),
    ],
)
async def test_mcp_arguments_are_not_coerced(tool: str, args: dict[str, Any]) -> None:
    """Item 16: a wrong type is a tool error and nothing stored changes."""
    from mcp.server.fastmcp.exceptions import ToolError

    memory = TieredMemory.in_memory(embeddings=HashingEmbeddings())
    memory.set_user_tags("ann", {"age": 30})
    memory.add_summaries("ann", ["Ann likes tea."])
    server = create_mcp_server(memory, user_id="ann")
    with pytest.raises(ToolError):
        await server.call_tool(tool, args)
    assert memory.get_user_tags("ann") == {"age": "30"}
    assert [d.page_content for d in memory.summaries.get_all("ann")] == ["Ann likes tea."]


@pytest.mark.parametrize("door", ["graph", "middleware"])
@pytest.mark.parametrize("change", ["delete", "edit"])
async def test_a_recalled_item_deleted_or_edited_stays_in_no_checkpoint(
    embedded_memory: TieredMemory, door: str, change: str
) -> None:
    """Issue 55 item 5: a turn's memory section is loaded each turn, never checkpointed, so
    a delete or an edit leaves the old text in no key of the keyspace (SCAN + DUMP) nor in
    the data dir's files, though a thread recalled it."""
    from langchain.agents import create_agent

    from langchain_tiered_memory.agent.middleware import TieredMemoryMiddleware

    memory = embedded_memory
    (item,) = memory.add_summaries("ann", ["Ann's locker code is 9931-QX."])
    model = ScriptedChatModel(replies=["Noted."])
    saver = memory.checkpointer()
    agent: Any
    if door == "graph":
        agent = create_memory_graph(model, memory=memory, checkpointer=saver)
    else:
        agent = create_agent(model, middleware=[TieredMemoryMiddleware(memory)], checkpointer=saver)
    agent.invoke(
        {"messages": [HumanMessage("What is my locker code?")]},
        {"configurable": {"thread_id": "t1"}},
        context={"user_id": "ann"},
    )
    assert "9931-QX" in "\n".join(m.text for m in model.prompts[-1])  # it was recalled
    if change == "delete":
        memory.delete_summaries("ann", [item])
    else:
        memory.update_summary("ann", item, "Ann has a locker.")
    assert memory.connection is not None
    sync = memory.connection.sync
    holding = [k for k in sync.scan_iter(count=1000) if b"9931-QX" in (sync.dump(k) or b"")]
    if change == "edit":  # the item itself keeps its earlier texts (metadata["edits"])
        holding = [k for k in holding if not k.endswith(b":sum:items")]
    assert holding == []  # before: the thread's cp:blobs and cp:writes held the section
    assert agent.get_state({"configurable": {"thread_id": "t1"}}).values["messages"]


def test_an_erasure_from_another_process_knows_what_the_app_attached(data_dir: Path) -> None:
    """Issue 55 item 4: the app attached its store's namespaces and a saver of its own;
    an erasure from another process (a second memory on the same data dir, as the CLI,
    the console and the MCP server open it; then the CLI itself) erases the store items
    and says what it could not reach instead of reporting a complete erasure."""
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    from langchain_tiered_memory.cli import main

    app = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings())
    other = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings())
    try:
        store = app.store()
        app.attach(store=store, store_namespaces=[("{user_id}",)])
        # a saver whose threads outlive the process (an in-memory one is not recorded)
        app.attach(checkpointer=SqliteSaver(sqlite3.connect(data_dir / "threads.db")))
        store.put(("ann", "health"), "d1", {"text": "Diagnosis: ZORBLAX syndrome."})
        store.put(("bob", "health"), "d1", {"text": "Bob: QUUXOL."})
        assert "ZORBLAX" in str(other.export_user("ann")["store"])
        # each by its storage (issue 76 item 3): the class and the file
        (unreached,) = other.export_user("ann")["unreached"]
        assert unreached.startswith("checkpointer SqliteSaver at ") and "threads.db" in unreached
        removed = other.forget_user("ann")
        assert removed["store_items"] == 1 and removed["unreached"] == 1
        assert _files_with(data_dir, b"ZORBLAX") == []
        assert other.connection is not None
        sync = other.connection.sync
        assert [k for k in sync.scan_iter() if b"ZORBLAX" in (sync.dump(k) or b"")] == []
        assert store.get(("bob", "health"), "d1") is not None  # another user's, kept
        # the command line erases bob's item too, and says the erasure was not complete
        code = main(["forget", "--user", "bob", "--yes", "--data-dir", str(data_dir)])
        assert code != 0
        assert [k for k in sync.scan_iter() if b"QUUXOL" in (sync.dump(k) or b"")] == []
    finally:
        other.close()
        app.close()


def test_a_forgotten_thread_leaves_no_copy_in_the_threads_that_carried_it(
    embedded_memory: TieredMemory,
) -> None:
    """A new thread carries the user's earlier messages into its prompt; they are read
    again each turn, never checkpointed, so forget_thread leaves no copy of them in
    another thread's keys (SCAN + DUMP; the model-based test found the copy)."""
    memory = embedded_memory
    model = ScriptedChatModel(replies=["Noted."])
    graph = create_memory_graph(model, memory=memory, checkpointer=memory.checkpointer())
    _turn(graph, "ann", "a", f"My locker code is {SECRET}.")
    _turn(graph, "ann", "b", "Hello again.")
    assert SECRET in "\n".join(m.text for m in model.prompts[-1])  # carried into b
    _turn(graph, "ann", "b", "And once more.")
    memory.forget_thread("ann", "a")
    assert memory.connection is not None
    sync = memory.connection.sync
    sync.config_set("rdbcompression", "no")
    assert [k for k in sync.scan_iter(count=1000) if SECRET.encode() in (sync.dump(k) or b"")] == []


def test_what_died_with_its_process_or_is_the_memorys_own_is_never_unreached(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 66 item 9 (part): after one process used memory.checkpointer(InMemorySaver())
    every later erasure from another process said "not complete" forever; a saver the app
    opened on the memory's own Redis and prefix counted as foreign. And the operator can
    list the record and clear it."""
    from langgraph.checkpoint.memory import InMemorySaver

    from langchain_tiered_memory.cli import main
    from langchain_tiered_memory.persistence.checkpoint import RedisSaver

    app = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings())
    other = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings())
    try:
        app.checkpointer(InMemorySaver())
        assert app.connection is not None
        with RedisSaver.from_url(app.connection.url, key_prefix="tm") as own:
            app.attach(checkpointer=own)  # its own connection, the memory's keys
            app.add_session_log("ann", [HumanMessage("hi")])
            assert "unreached" not in other.forget_user("ann")
        assert main(["forget", "--user", "ann", "--yes", "--data-dir", str(data_dir)]) == 0
        # an operator's view of the record, and its clearing
        import sqlite3

        from langgraph.checkpoint.sqlite import SqliteSaver

        app.attach(checkpointer=SqliteSaver(sqlite3.connect(data_dir / "t.db")))
        capsys.readouterr()
        assert main(["attachments", "--data-dir", str(data_dir)]) == 0
        assert "checkpointer SqliteSaver" in capsys.readouterr().out
        assert other.forget_user("bob")["unreached"] == 1
        assert main(["attachments", "--clear", "--data-dir", str(data_dir)]) == 0
        assert "unreached" not in other.forget_user("bob")
    finally:
        app.close()
        other.close()


async def test_per_request_savers_stay_bounded_and_a_closed_one_fails_no_erasure(
    memory: TieredMemory, tmp_path: Path
) -> None:
    """Issue 66 item 9: LangGraph's per-request ``async with AsyncSqliteSaver...`` pattern
    attached one saver per request, and once the first closed every user's erasure
    failed ("no active connection"). Now the closed ones are dropped, the erasure says the
    file was not reached while none is open, and reaches it when one is."""
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    path = str(tmp_path / "threads.db")
    model = ScriptedChatModel(replies=["Noted."])
    for n in range(21):
        async with AsyncSqliteSaver.from_conn_string(path) as saver:
            graph = create_memory_graph(model, memory=memory, checkpointer=saver)
            await graph.ainvoke(
                {"messages": [HumanMessage(f"My PIN is {SECRET}, request {n}.")]},
                {"configurable": {"thread_id": f"ann-{n % 3}"}},
                context={"user_id": "ann"},
            )
    kinds = [type(getattr(c, "saver", c)) for c in memory.tiers.checkpointers]
    held = [k for k in kinds if k is AsyncSqliteSaver]
    assert len(held) <= 1  # before: 21
    removed = await memory.aforget_user("bob")  # before: ValueError, no active connection
    assert removed["unreached"] == 1
    async with AsyncSqliteSaver.from_conn_string(path) as saver:
        create_memory_graph(model, memory=memory, checkpointer=saver)
        removed = await memory.aforget_user("ann")
        assert removed["threads"] == 3 and "unreached" not in removed
        assert [c async for c in saver.alist(None)] == []


def test_a_saver_given_to_the_graph_is_one_erasure_reaches(
    memory: TieredMemory, tmp_path: Path
) -> None:
    """Issue 66 item 9: ``create_memory_graph(checkpointer=...)`` guarded the saver but did
    not attach it: forget_user reported its threads erased while the file kept them."""
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(tmp_path / "threads.db", check_same_thread=False)
    graph = create_memory_graph(
        ScriptedChatModel(replies=["Noted."]), memory=memory, checkpointer=SqliteSaver(conn)
    )
    _turn(graph, "ann", "ann-t", f"My PIN is {SECRET}.")
    _turn(graph, "bob", "bob-t", "I keep bees.")
    assert memory.forget_user("ann")["threads"] == 1
    rows = conn.execute("SELECT thread_id FROM checkpoints").fetchall()
    assert {r[0] for r in rows} == {"bob-t"}  # before: ann-t's checkpoints stayed
    conn.close()


def _until(done: Callable[[], bool], *, also: Callable[[], object] = lambda: None) -> None:
    """Wait (up to a minute: never a speed assumption) until ``done``; ``also`` each poll."""
    deadline = time.monotonic() + 60
    while not done():
        assert time.monotonic() < deadline, "the user's records never expired"
        also()
        time.sleep(0.2)


def test_a_thread_that_outlived_its_users_records_is_still_erased(data_dir: Path) -> None:
    """Issue 66 item 6: with user_ttl the user's record of their threads expires on its
    own clock, while a read keeps refreshing the memory's own thread (refresh_on_read) and
    a foreign saver never expires: forget_user then said ``threads: 0`` and the
    conversation stayed. Each checkpoint names its user, so the erasure still finds them."""
    from langgraph.checkpoint.memory import InMemorySaver

    memory = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings(), user_ttl=1)
    try:
        model = ScriptedChatModel(replies=["Noted."])
        own = create_memory_graph(model, memory=memory, checkpointer=memory.checkpointer())
        foreign_saver = InMemorySaver()
        foreign = create_memory_graph(model, memory=memory, checkpointer=foreign_saver)
        _turn(own, "ann", "ann-own", f"My PIN is {SECRET}.")
        _turn(foreign, "ann", "ann-foreign", f"My PIN is {SECRET}.")
        # the app keeps reading ann's own thread as hers (its clock restarts: only the
        # owner's reads restart it, issue 76 item 2), her records expire
        as_ann: Any = {"configurable": {"thread_id": "ann-own", "user_id": "ann"}}
        _until(lambda: memory.history.threads("ann") == [], also=lambda: own.get_state(as_ann))
        assert own.get_state(as_ann).values
        removed = memory.forget_user("ann")
        assert removed["threads"] == 2  # before: 0
        assert foreign_saver.get_tuple({"configurable": {"thread_id": "ann-foreign"}}) is None
        assert memory.connection is not None
        sync = memory.connection.sync
        sync.config_set("rdbcompression", "no")
        holding = [
            k for k in sync.scan_iter(count=1000) if SECRET.encode() in (sync.dump(k) or b"")
        ]
        assert holding == []
    finally:
        memory.close()

"""Erasure reaches what it says it reached (issue 76 items 3-6).

- item 3: what an erasure did not reach is judged per saver and store *instance* (its kind
  and where it keeps data, e.g. the SQLite file), not per class: a closed ``SqliteSaver`` on
  ``a.db`` beside an open one on ``b.db`` is reported, in this process and in another;
- item 4: after ``tiered-memory attachments --clear`` a running app records again what it
  still holds, on its next turn (riding the turn's write) or when it attaches a new saver;
- item 5: ``forget_user`` leaves no per-user position counter (the history contract's
  ``erase``), and a summarizer that read before the erasure still cannot write after it;
- item 6: ``forget_thread`` drops the thread's id from the tag change log, on every backend.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.sqlite import SqliteSaver
from sqlite_stores import SQLiteHistoryStore, SQLiteSummaryStore, SQLiteTagStore
from support import raw_client

from langchain_tiered_memory import HashingEmbeddings, TieredMemory, create_memory_graph
from langchain_tiered_memory.errors import WatermarkConflict
from langchain_tiered_memory.stores.tags import TagStore
from langchain_tiered_memory.testing import ScriptedChatModel

SECRET = "SECRETPIN4921"
THREAD = "ann-thread-QX7"


def _turn(graph: Any, user: str, thread: str, text: str) -> None:
    graph.invoke(
        {"messages": [HumanMessage(text)]},
        {"configurable": {"thread_id": thread}},
        context={"user_id": user},
    )


def _dump(memory: TieredMemory) -> dict[str, bytes]:
    """SCAN + DUMP of every key of the memory's Redis."""
    raw = raw_client(memory.redis_url or "")
    try:
        raw.config_set("rdbcompression", "no")  # a DUMP shows the stored bytes as they are
        return {key.decode(): raw.dump(key) or b"" for key in raw.scan_iter(count=1000)}
    finally:
        raw.close()


def _of(keys: dict[str, bytes], user: str) -> dict[str, bytes]:
    return {k: v for k, v in keys.items() if f"{{{user}}}" in k}


def _checkpoints_of(path: Path, thread: str) -> int:
    conn = sqlite3.connect(path)
    try:
        found = conn.execute("SELECT COUNT(*) FROM checkpoints WHERE thread_id=?", (thread,))
        return int(found.fetchone()[0])
    finally:
        conn.close()


def _checkpoints(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0])
    finally:
        conn.close()


# ----- item 3: unreached per instance, not per class


def test_a_closed_saver_beside_an_open_one_of_its_class_is_unreached(data_dir: Path) -> None:
    """Issue 76 item 3: a closed ``SqliteSaver`` on a.db beside an open one on b.db gave
    a complete-looking ``forget_user`` (judged by class) while a.db kept the user's
    checkpoints; so did another process's erasure holding only b.db."""
    app = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings())
    other = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings())
    model = ScriptedChatModel(replies=["Noted."])
    a, b = data_dir.parent / "a.db", data_dir.parent / "b.db"
    try:
        first = SqliteSaver(sqlite3.connect(a, check_same_thread=False))
        graph = create_memory_graph(model, memory=app, checkpointer=first)
        _turn(graph, "ann", "t-a", SECRET)
        _turn(graph, "cat", "t-c", SECRET)
        first.conn.close()  # a per-request saver, done
        second = SqliteSaver(sqlite3.connect(b, check_same_thread=False))
        _turn(create_memory_graph(model, memory=app, checkpointer=second), "ann", "t-b", "hi")
        _turn(create_memory_graph(model, memory=app, checkpointer=second), "bob", "t-o", "hi")
        other.checkpointer(SqliteSaver(sqlite3.connect(b, check_same_thread=False)))
        # this process and another both say a.db was not reached (before: neither did)
        for memory in (app, other):
            unreached = memory.export_user("ann").get("unreached", [])
            assert [u for u in unreached if "/a.db" in u], unreached
            assert not [u for u in unreached if "/b.db" in u], unreached
        before = _checkpoints(a)
        bob = _of(_dump(app), "bob")
        removed = app.forget_user("cat")
        assert removed.get("unreached") == 1, removed  # before: no "unreached"
        assert _checkpoints(a) == before  # what it said: a.db was not reached
        assert _of(_dump(app), "bob") == bob  # no other user's key touched
        # a saver on a.db open again: reached, and ann's erasure is complete
        app.checkpointer(SqliteSaver(sqlite3.connect(a, check_same_thread=False)))
        removed = app.forget_user("ann")
        assert "unreached" not in removed, removed
        assert removed["threads"] == 2
        assert _checkpoints_of(a, "t-a") == 0 and _checkpoints_of(b, "t-b") == 0
        assert _checkpoints_of(b, "t-o") > 0
    finally:
        app.close()
        other.close()


def test_a_record_of_an_earlier_version_still_reads_by_class(data_dir: Path) -> None:
    """Entries an earlier version wrote (``{"other": "checkpointer SqliteSaver"}``) are
    read as before: unreached unless this process holds a saver of that class."""
    memory = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings())
    try:
        record = memory.tiers.attachment_record()
        assert record is not None and memory.connection is not None
        memory.connection.sync.sadd(record.key, '{"other": "checkpointer SqliteSaver"}')
        assert memory.forget_user("ann")["unreached"] == 1
        memory.checkpointer(SqliteSaver(sqlite3.connect(":memory:", check_same_thread=False)))
        memory.checkpointer(
            SqliteSaver(sqlite3.connect(data_dir.parent / "c.db", check_same_thread=False))
        )
        assert "unreached" not in memory.forget_user("ann")
        assert "checkpointer SqliteSaver" in record.read().others
    finally:
        memory.close()


# ----- item 4: recorded again after the record was cleared


def test_a_running_app_records_its_savers_again_after_a_clear(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 76 item 4: after ``attachments --clear`` the running app never recorded its
    saver again (later turns, a new graph on a new saver): ``tiered-memory forget`` exited
    0 while the app's SQLite kept the user's checkpoints."""
    from langchain_tiered_memory.cli import main

    app = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings())
    model = ScriptedChatModel(replies=["Noted."])
    path = data_dir.parent / "app.db"
    try:
        saver = SqliteSaver(sqlite3.connect(path, check_same_thread=False))
        graph = create_memory_graph(model, memory=app, checkpointer=saver)
        _turn(graph, "ann", "t1", SECRET)
        assert main(["attachments", "--clear", "--data-dir", str(data_dir)]) == 0
        _turn(graph, "ann", "t1", "again")  # a later turn records it again
        capsys.readouterr()
        assert main(["attachments", "--data-dir", str(data_dir)]) == 0
        assert path.name in capsys.readouterr().out.replace("\n", "")  # the CLI wraps long lines
        code = main(["forget", "--user", "ann", "--yes", "--data-dir", str(data_dir)])
        assert code != 0  # before: 0, while app.db kept ann's checkpoints
        assert _checkpoints(path) > 0
        # a new graph on a new saver after a clear: recorded when it is attached
        assert main(["attachments", "--clear", "--data-dir", str(data_dir)]) == 0
        newer = data_dir.parent / "newer.db"
        fresh = SqliteSaver(sqlite3.connect(newer, check_same_thread=False))
        create_memory_graph(model, memory=app, checkpointer=fresh)
        capsys.readouterr()
        assert main(["attachments", "--data-dir", str(data_dir)]) == 0
        assert newer.name in capsys.readouterr().out.replace("\n", "")
    finally:
        app.close()


def test_a_turn_records_its_attachments_in_the_round_trip_it_makes_anyway(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The record rides the turn's write: a turn of an app that attached a saver sends
    no more round trips to Redis than one of an app that attached none."""
    import redis.connection

    app = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings())
    sent: list[int] = []
    real = redis.connection.AbstractConnection.send_packed_command

    def counted(self: Any, command: Any, check_health: bool = True) -> None:
        sent.append(1)  # one send: one round trip (a pipeline is one)
        real(self, command, check_health)

    try:
        app.add_session_log("ann", [HumanMessage("hi")])  # scripts cached
        monkeypatch.setattr(redis.connection.AbstractConnection, "send_packed_command", counted)
        app.add_session_log("ann", [HumanMessage("hi")])
        plain = len(sent)
        app.checkpointer(SqliteSaver(sqlite3.connect(data_dir.parent / "r.db")))
        record = app.tiers.attachment_record()
        assert record is not None
        app.add_session_log("ann", [HumanMessage("hi")])  # the record's script cached
        record.clear()
        sent.clear()
        app.add_session_log("ann", [HumanMessage("hi")])
        assert len(sent) == plain  # no round trip more
        assert [o for o in record.read().others if "/r.db" in o]  # before: []
    finally:
        app.close()


async def test_an_async_turn_records_its_attachments_again(data_dir: Path) -> None:
    """Item 4 through the async driver (the same plan): the entry rides ``arun_all``."""
    app = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings())
    try:
        path = data_dir.parent / "async.db"
        app.checkpointer(SqliteSaver(sqlite3.connect(path, check_same_thread=False)))
        record = app.tiers.attachment_record()
        assert record is not None
        record.clear()
        await app.aadd_session_log("ann", [HumanMessage("hi")])
        assert [o for o in (await record.aread()).others if path.name in o]
    finally:
        await app.aclose()


def test_a_turn_of_composed_stores_records_its_attachments_on_its_own(data_dir: Path) -> None:
    """Item 4 where the turn's write is not one pipelined call (a Redis memory with a
    tag store of the app's): the entries go in a round trip of their own."""
    from langchain_tiered_memory.stores import InMemoryTagStore

    app = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings())
    try:
        app.tags = InMemoryTagStore()
        assert not app.tiers.turn.one_round_trip
        path = data_dir.parent / "composed.db"
        app.checkpointer(SqliteSaver(sqlite3.connect(path, check_same_thread=False)))
        record = app.tiers.attachment_record()
        assert record is not None
        record.clear()
        app.add_session_log("ann", [HumanMessage("hi")])
        assert [o for o in record.read().others if path.name in o]
        assert app.history.length("ann") == 1
    finally:
        app.close()


# ----- item 5: no counter left


def _sqlite_memory(path: Path) -> TieredMemory:
    db = str(path / "memory.db")
    return TieredMemory(
        history=SQLiteHistoryStore(db),
        tags=SQLiteTagStore(db),
        summaries=SQLiteSummaryStore(db, embeddings=HashingEmbeddings()),
    )


def _history_rows(path: Path, user: str) -> list[tuple[str, int]]:
    """Rows naming ``user`` in the SQLite history store's tables."""
    conn = sqlite3.connect(path / "memory.db")
    try:
        tables = ("msgs", "lens", "threads", "spans", "marks")
        return [
            (t, n)
            for t in tables
            if (n := conn.execute(f"SELECT COUNT(*) FROM {t} WHERE user=?", (user,)).fetchone()[0])  # noqa: S608
        ]
    finally:
        conn.close()


def test_forget_user_leaves_no_counter_row_on_an_apps_own_store(tmp_path: Path) -> None:
    """Issue 76 item 5: the contract required ``clear`` to keep the message counter, so a
    third-party backend's erasure left a row naming the user."""
    memory = _sqlite_memory(tmp_path)
    memory.add_session_log("ann", [HumanMessage("one"), HumanMessage("two")], thread_id="t")
    memory.add_session_log("bob", [HumanMessage("bees")])
    memory.forget_user("ann")
    assert _history_rows(tmp_path, "ann") == []  # before: [("lens", 1)]
    assert memory.history.length("ann") == 0  # positions start again
    assert memory.history.length("bob") == 1


def test_forget_user_restarts_positions_on_every_family(memory: TieredMemory) -> None:
    """Item 5 on the package's families: the in-memory store kept the user's counter."""
    memory.add_session_log("ann", [HumanMessage("one"), HumanMessage("two")])
    memory.forget_user("ann")
    assert memory.history.length("ann") == 0  # before (in memory): 2


@pytest.mark.parametrize("family", ["package", "sqlite"])
def test_a_summarizer_that_read_before_an_erasure_cannot_write_after_it(
    family: str, memory: TieredMemory, tmp_path: Path
) -> None:
    """Why the counter had to survive: a summarizer that read positions before the
    erasure must not store what it made of them once positions start again. The erasure
    fence keeps that: every erasure of the user invalidates fences read before it (the
    SQLite family's erasure left its fence, and positions, as they were)."""
    if family == "sqlite":
        memory = _sqlite_memory(tmp_path)
    memory.add_session_log("ann", [HumanMessage("My PIN is 4921."), HumanMessage("ok")])
    mark, fence = memory.summaries.get_fence("ann")
    memory.forget_user("ann")
    memory.add_session_log("ann", [HumanMessage("new"), HumanMessage("newer")])
    with pytest.raises(WatermarkConflict):
        memory.summaries.add("ann", ["Ann's PIN is 4921."], watermark=(mark, 2), fence=fence)
    assert memory.summaries.get_all("ann") == []


# ----- item 6: the tag log forgets the thread


def _tagged(memory: TieredMemory) -> None:
    memory.tags.set("ann", {"name": "Ann"}, thread_id=THREAD)
    memory.tags.set("ann", {"age": 41}, thread_id="ann-other")
    memory.tags.delete("ann", ["age"], thread_id=THREAD)
    memory.tags.set("bob", {"name": "Bob"}, thread_id="bob-thread")


def _check_tag_log(memory: TieredMemory) -> None:
    changes = memory.tags.history("ann")
    # the changes stay (the tag is still the user's), without the forgotten thread
    assert [(c["tag"], c["value"]) for c in changes] == [
        ("name", "Ann"),
        ("age", "41"),
        ("age", ""),
    ]
    assert [c["thread_id"] for c in changes] == [None, "ann-other", None]
    assert memory.tags.get_all("ann") == {"name": "Ann"}
    assert [c["thread_id"] for c in memory.tags.history("bob")] == ["bob-thread"]


def test_forget_thread_drops_the_thread_from_the_tag_log(memory: TieredMemory) -> None:
    """Issue 76 item 6: every change logged from the forgotten thread kept its id."""
    _tagged(memory)
    memory.add_session_log("ann", [HumanMessage(f"My PIN is {SECRET}")], thread_id=THREAD)
    bob = _of(_dump(memory), "bob") if memory.connection is not None else {}
    memory.forget_thread("ann", THREAD)
    _check_tag_log(memory)
    if memory.connection is not None:  # nothing of the thread's id left in any key
        keys = _dump(memory)
        assert [k for k, v in keys.items() if THREAD.encode() in v or THREAD in k] == []
        assert _of(keys, "bob") == bob


async def test_aforget_thread_drops_the_thread_from_the_tag_log(memory: TieredMemory) -> None:
    """Item 6, async."""
    _tagged(memory)
    await memory.aforget_thread("ann", THREAD)
    _check_tag_log(memory)


def test_forget_thread_drops_the_thread_from_an_apps_own_tag_log(tmp_path: Path) -> None:
    """Item 6 on a third-party family (SQLite), and on one that never heard of it."""
    memory = _sqlite_memory(tmp_path)
    _tagged(memory)
    memory.forget_thread("ann", THREAD)
    _check_tag_log(memory)


def test_a_tag_store_without_drop_thread_still_erases_a_thread(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A third-party tag store written before ``drop_thread`` existed still runs: the
    base's default says what it could not drop."""

    class Older(SQLiteTagStore):
        drop_thread = TagStore.drop_thread  # the base's default
        adrop_thread = TagStore.adrop_thread

    memory = _sqlite_memory(tmp_path)
    memory.tags = Older(str(tmp_path / "memory.db"))
    _tagged(memory)
    memory.forget_thread("ann", THREAD)
    assert "drop_thread" in caplog.text

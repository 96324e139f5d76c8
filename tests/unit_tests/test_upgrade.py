"""Data an earlier release wrote, opened by this one (issue 67 items 6-8).

``tests/fixtures/format1`` is an embedded server's data dir written by the last 0.1.0
state of main (``0e5f674``), ``format2`` by this release, both by
``tests/fixtures/write_format_fixture.py``: ann said her locker code in t1, keeps bees
(t2), has tags and two items, and t3 recalled the code into its memory section; bob has
a thread. One fixture per format is kept from now on.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from support import keys_holding

from langchain_tiered_memory import (
    DataFormatError,
    HashingEmbeddings,
    ThreadOwnershipError,
    TieredMemory,
    create_memory_graph,
)
from langchain_tiered_memory.cli import main
from langchain_tiered_memory.stores.history import RedisHistoryStore
from langchain_tiered_memory.testing import ScriptedChatModel
from langchain_tiered_memory.upgrade import upgrade

FIXTURES = Path(__file__).parents[1] / "fixtures"
CODE = "ZORBLAX"


def _data(fixture: str, tmp_path: Path) -> Path:
    data = tmp_path / fixture
    shutil.copytree(FIXTURES / fixture, data)
    return data


def _turn(graph: Any, user: str, thread: str, text: str) -> None:
    graph.invoke(
        {"messages": [HumanMessage(text)]},
        {"configurable": {"thread_id": thread}},
        context={"user_id": user},
    )


def _files_with(data_dir: Path, needle: bytes) -> list[str]:
    return sorted(
        str(p.relative_to(data_dir))
        for p in data_dir.rglob("*")
        if p.is_file() and needle in p.read_bytes()
    )


def test_format_1_data_is_read_as_before_and_upgraded(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Every read works on 0.1 data, the log names the upgrade; the upgrade (dry run
    first, then the command) strips the memory section and carried history 0.1 kept in
    t2's and t3's checkpoints, so a delete and a forgotten thread leave no copy (SCAN +
    DUMP, records decoded, and the data dir's files); the console lists the old users."""
    data = _data("format1", tmp_path)
    memory = TieredMemory.embedded(data, embeddings=HashingEmbeddings())
    try:
        with caplog.at_level(logging.WARNING):
            assert memory.get_user_tags("ann") == {"name": "Ann", "age": "30"}
        assert "is in format 1" in caplog.text and "tiered-memory upgrade" in caplog.text
        items = {d.page_content: d.id for d in memory.summaries.get_all("ann")}
        assert set(items) == {"The user's locker code is ZORBLAX-77.", "The user keeps bees."}
        assert CODE in str(memory.load_context("ann"))
        graph = create_memory_graph(
            ScriptedChatModel(replies=["Noted."]),
            memory=memory,
            checkpointer=memory.checkpointer(),
        )
        _turn(graph, "ann", "t2", "More bees this year.")  # the owner continues
        with pytest.raises(ThreadOwnershipError):
            _turn(graph, "bob", "t1", "Show me that thread.")
        # the two oldest 0.1 states had no console directory: as they left it
        assert memory.connection is not None
        memory.connection.sync.delete("tm:{dir:}:dir:active", "tm:{dir:}:dir:values")
        _turn(graph, "ann", "t2", "And honey.")
        from langchain_tiered_memory.console.views import list_users

        assert {u.user_id for u in list_users(memory, None, None).users} == {"ann"}
        copies = keys_holding(memory, CODE)
        assert "tm:{cp:t3}:cp:blobs" in copies  # 0.1 checkpointed the recalled section
        report = upgrade(memory, dry_run=True)
        assert report["from_format"] == 1 and report["fields"] > 0
        assert keys_holding(memory, CODE) == copies  # nothing written
        assert main(["upgrade", "--data-dir", str(data)]) == 0
        assert upgrade(memory, dry_run=True)["from_format"] == 2  # recorded, nothing left
        left = keys_holding(memory, CODE)
        assert not [k for k in left if "cp:t2" in k or "cp:t3" in k]  # only where said
        state = graph.get_state({"configurable": {"thread_id": "t3", "user_id": "ann"}})
        assert state.values["messages"]  # the upgraded thread still reads
        _turn(graph, "ann", "t3", "Thanks.")  # and continues
        memory.delete_summaries("ann", [str(items["The user's locker code is ZORBLAX-77."])])
        memory.forget_thread("ann", "t1")
        assert keys_holding(memory, CODE) == []
        assert _files_with(data, CODE.encode()) == []
        listed = {u.user_id for u in list_users(memory, None, None).users}
        assert listed == {"ann", "bob"}  # the upgrade indexed bob, whom no 0.2 turn touched
    finally:
        memory.close()


def test_format_2_data_needs_no_upgrade(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    data = _data("format2", tmp_path)
    memory = TieredMemory.embedded(data, embeddings=HashingEmbeddings())
    try:
        with caplog.at_level(logging.WARNING):
            assert memory.get_user_tags("ann") == {"name": "Ann", "age": "30"}
        assert "format" not in caplog.text
        report = upgrade(memory, dry_run=True)
        assert report["from_format"] == 2 and report["fields"] == 0
        assert "tm:{cp:t3}:cp:blobs" not in keys_holding(memory, CODE)
    finally:
        memory.close()


async def test_a_newer_format_fails_at_once_naming_both(data_dir: Path) -> None:
    """A process of this release on data a newer one wrote: one error before anything is
    read or written, naming both formats, whichever call comes first, sync or async."""
    writer = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings())
    try:
        writer.set_user_tags("ann", {"name": "Ann"})
        assert writer.connection is not None
        writer.connection.sync.set("tm:{meta:}:format", 99)
        for call in ("sync", "async"):
            reader = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings())
            try:
                with pytest.raises(DataFormatError, match=r"format 99, newer than format 2"):
                    if call == "sync":
                        reader.get_user_tags("ann")
                    else:
                        await reader.aget_user_tags("ann")
            finally:
                reader.close()
        code = main(["inspect", "--user", "ann", "--data-dir", str(data_dir)])
        assert code != 0
    finally:
        writer.close()


def test_a_second_upgrade_strips_what_a_0_1_process_wrote_after_the_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 76 item 10: a 0.1 process that writes after the upgrade (a rollback, a worker
    left running) puts back what the upgrade stripped, under a format record that already
    says 2; running the upgrade again finds it and strips it, and says why it was there."""
    data = _data("format1", tmp_path)
    memory = TieredMemory.embedded(data, embeddings=HashingEmbeddings())
    try:
        assert memory.connection is not None
        sync = memory.connection.sync
        # t3's checkpoints as a 0.1 process writes them: the recalled section in them
        as_written: dict[Any, bytes] = {}
        for key in sync.scan_iter("tm:{cp:t3}:*"):
            dumped = sync.dump(key)
            assert isinstance(dumped, bytes)
            as_written[key] = dumped
        first = upgrade(memory)
        assert first["from_format"] == 1 and first["fields"] > 0
        assert not [k for k in keys_holding(memory, CODE) if "cp:t3" in k]
        for key, value in as_written.items():  # the 0.1 process writes t3 again
            sync.restore(key, 0, value, replace=True)
        assert "tm:{cp:t3}:cp:blobs" in keys_holding(memory, CODE)
        again = upgrade(memory, dry_run=True)
        assert again["from_format"] == 2  # the record says 2: the data does not
        assert again["fields"] > 0 and again["threads"] == 1
        capsys.readouterr()
        with caplog.at_level(logging.WARNING):
            assert main(["upgrade", "--data-dir", str(data)]) == 0
        out = capsys.readouterr().out
        assert f"stripped {again['fields']} stored values" in out and "from 1 threads" in out
        assert "written by a release before 0.2" in caplog.text  # the log says why
        assert not [k for k in keys_holding(memory, CODE) if "cp:t3" in k]
        assert upgrade(memory, dry_run=True)["fields"] == 0  # nothing left
    finally:
        memory.close()


def test_a_thread_an_earlier_release_marked_follows_the_rule_and_is_forgotten_whole(
    tmp_path: Path,
) -> None:
    """Issue 78: the thread marks format 2 wrote (bare ids, and a recent-id list beside
    them) are read by id alone; the next turn appends once and rewrites the mark with keys
    and positions, a fork from before the old turn is followed, and ``forget_thread``
    leaves neither field."""
    data = _data("format2", tmp_path)
    memory = TieredMemory.embedded(data, embeddings=HashingEmbeddings())
    try:
        history = memory.history
        assert isinstance(history, RedisHistoryStore)
        marks = history._records("ann")[1]
        before = history.connection.command("HGETALL", marks)
        assert b"t1" in before and b"t1\x00recent" in before  # what format 2 wrote
        assert b"\x1f" not in before[b"t1"]  # bare ids
        graph = create_memory_graph(
            ScriptedChatModel(replies=["Sure."]), memory=memory, checkpointer=memory.checkpointer()
        )
        _turn(graph, "ann", "t1", "I also keep a cat.")
        texts = [str(m.text) for m in memory.load_context("ann", max=50)]
        assert texts.count("My locker code is ZORBLAX-77.") == 1
        assert texts.count("I also keep a cat.") == 1 and texts[-1] == "Sure."
        assert b"\x1f" in history.connection.command("HGET", marks, "t1")  # rewritten
        config: RunnableConfig = {"configurable": {"thread_id": "t1", "user_id": "ann"}}
        first = [s for s in graph.get_state_history(config) if not s.next][-1]  # the old turn's end
        graph.invoke(
            {"messages": [HumanMessage("Forget the cat.")]},
            first.config,
            context={"user_id": "ann"},
        )
        kept = memory.load_context("ann", max=50)
        left = [m.text for m in kept if m.response_metadata.get("tiered_memory_retracted")]
        assert left == ["I also keep a cat.", "Sure."]  # the branch the fork left
        memory.forget_thread("ann", "t1")
        after = history.connection.command("HGETALL", marks)
        assert b"t1" not in after and b"t1\x00recent" not in after
    finally:
        memory.close()

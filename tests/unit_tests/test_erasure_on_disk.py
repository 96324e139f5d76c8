"""Erasure on the package's own server leaves no erased byte on disk (issue 32, item 6).

Redis keeps a deleted key's values in its append-only files and its last snapshot until
they are rewritten; ``grep`` found them after ``forget_user``. On the embedded server the
erasure now rewrites both. Compression is switched off here so that ``grep`` would see
every stored string.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from support import raw_client

from langchain_tiered_memory import HashingEmbeddings, TieredMemory

SECRET = b"SECRETPIN4921"
KEPT = b"BOBKEEPSBEES"


def _files_with(data_dir: Path, needle: bytes) -> list[str]:
    return sorted(
        str(p.relative_to(data_dir))
        for p in data_dir.rglob("*")
        if p.is_file() and needle in p.read_bytes()
    )


def _fill(memory: TieredMemory, user: str, word: bytes) -> None:
    text = word.decode()
    memory.add_session_log(
        user, [HumanMessage(f"my code is {text}"), AIMessage("noted")], thread_id=f"{user}-t"
    )
    memory.set_user_tags(user, {"name": text})
    memory.add_summaries(user, [f"The user's code is {text}."])


def _snapshot(memory: TieredMemory) -> None:
    raw = raw_client(memory.redis_url or "")
    try:
        raw.bgsave()
        while raw.info("persistence")["rdb_bgsave_in_progress"]:
            time.sleep(0.02)
    finally:
        raw.close()


@pytest.mark.parametrize("erase", ["forget_user", "aforget_user", "forget_thread"])
async def test_erased_text_is_in_no_file_of_the_data_dir(data_dir: Path, erase: str) -> None:
    memory = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings())
    try:
        raw = raw_client(memory.redis_url or "")
        raw.config_set("rdbcompression", "no")
        raw.close()
        _fill(memory, "ana", SECRET)
        _fill(memory, "bob", KEPT)
        _snapshot(memory)  # the secret in the snapshot and in the AOF
        assert _files_with(data_dir, SECRET)
        if erase == "forget_user":
            memory.forget_user("ana")
        elif erase == "aforget_user":
            await memory.aforget_user("ana")
        else:
            memory.forget_thread("ana", "ana-t")
            memory.set_user_tags("ana", {"name": "Ana"})  # the tag is not the thread's
            memory.forget_user("ana")
        assert _files_with(data_dir, SECRET) == []
        assert _files_with(data_dir, KEPT)  # the other user's data is still persisted
    finally:
        memory.close()
    with TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings()) as again:
        assert again.get_user_tags("bob") == {"name": KEPT.decode()}
        assert len(again.load_context("bob")) == 2
        assert again.get_user_tags("ana") == {}


def test_forget_thread_alone_rewrites_the_files(data_dir: Path) -> None:
    with TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings()) as memory:
        raw = raw_client(memory.redis_url or "")
        raw.config_set("rdbcompression", "no")
        raw.close()
        memory.add_session_log(
            "cy", [HumanMessage(f"my code is {SECRET.decode()}"), AIMessage("ok")], thread_id="x"
        )
        memory.add_session_log("cy", [HumanMessage("I like tea"), AIMessage("ok")], thread_id="y")
        assert _files_with(data_dir, SECRET)
        memory.forget_thread("cy", "x")
        assert _files_with(data_dir, SECRET) == []
        assert _files_with(data_dir, b"I like tea")

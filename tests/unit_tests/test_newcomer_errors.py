"""Errors off the happy path name what to fix (issue 68 item 4)."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from langchain_tiered_memory import (
    HashingEmbeddings,
    TieredMemory,
    TieredMemoryMiddleware,
    create_memory_graph,
)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed when the block ends: nothing listens


@pytest.mark.parametrize("door", ["graph", "middleware"])
async def test_a_model_server_that_is_down_is_named_in_the_error(door: str) -> None:
    """The README's capable-model snippet with no server ended in ``APIConnectionError:
    Connection error.``, no URL, no fix; the error keeps its type and names the server."""
    openai = pytest.importorskip("openai")
    from langchain_openai import ChatOpenAI

    url = f"http://127.0.0.1:{_closed_port()}/v1"
    from pydantic import SecretStr

    model = ChatOpenAI(base_url=url, api_key=SecretStr("unused"), model="qwen", max_retries=0)
    memory = TieredMemory.in_memory(embeddings=HashingEmbeddings())
    agent: Any
    if door == "graph":
        agent = create_memory_graph(model, memory=memory)
    else:
        from langchain.agents import create_agent

        agent = create_agent(model, middleware=[TieredMemoryMiddleware(memory)])
    with pytest.raises(openai.APIConnectionError) as raised:
        await agent.ainvoke({"messages": [HumanMessage("Hi!")]}, context={"user_id": "ann"})
    notes = " ".join(getattr(raised.value, "__notes__", []))
    assert url in notes and "OPENAI_BASE_URL" in notes


def test_a_data_dir_that_cannot_be_made_says_where_else_it_can_go(tmp_path: Any) -> None:
    """``[Errno 30] Read-only file system: '.../.local'`` named no way out (here the data
    dir's parent is a file: it cannot be made even by root, as a read-only HOME)."""
    from langchain_tiered_memory import EmbeddedRedis

    blocked = tmp_path / "home"
    blocked.write_text("not a directory")
    with pytest.raises(OSError, match="TIERED_MEMORY_HOME") as raised:
        EmbeddedRedis(blocked / "data").start()
    assert "--data-dir" in str(raised.value)


def test_inspect_of_a_user_with_no_memory_says_so(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from langchain_tiered_memory.cli import main

    assert main(["inspect", "--user", "nobody", "--data-dir", str(tmp_path / "d")]) == 0
    assert "no memory of this user here" in capsys.readouterr().out


def test_a_cache_that_falls_back_to_tmp_says_its_size_and_how_to_move_it(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 68 item 4: a read-only cache home sent the ~0.5 GB of derived model files to
    the temporary directory with no word of their size or how to keep them elsewhere."""
    import logging
    import tempfile

    from langchain_tiered_memory._cache import cache_root

    blocked = tmp_path / "cache"
    blocked.write_text("not a directory")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    with caplog.at_level(logging.WARNING, logger="langchain_tiered_memory"):
        root = cache_root("probe")
    assert root.parent == tmp_path / "tmp" and root.is_dir()
    assert "0.5 GB" in caplog.text and "XDG_CACHE_HOME" in caplog.text and str(root) in caplog.text

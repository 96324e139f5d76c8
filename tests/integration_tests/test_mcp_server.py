"""``tiered-memory mcp`` through the official MCP SDK's client, the server a subprocess.

Over stdio and over streamable HTTP, on an embedded Redis data dir of the test's own: each
tool; another user's memory in the same Redis is unreachable (the user is the server's
configuration, never an argument); bad arguments are MCP errors and change nothing.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers.signals import like_a_terminal
from langchain_core.messages import HumanMessage

from langchain_tiered_memory import (
    EmbeddedRedis,
    HashingEmbeddings,
    TieredMemory,
    create_memory_graph,
)
from langchain_tiered_memory.testing import ScriptedChatModel

pytest.importorskip("mcp", reason="the [mcp] extra is part of the test install")

from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TOOLS = {
    "add_memory",
    "search_memories",
    "list_memories",
    "get_memory",
    "delete_memory",
    "update_memory",
    "get_tags",
    "set_tags",
    "export_memory",
    "forget_everything",
}


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _args(data_dir: Path, user: str) -> list[str]:
    return [
        "-m",
        "langchain_tiered_memory.cli",
        "mcp",
        "--user",
        user,
        "--data-dir",
        str(data_dir),
        "--embeddings",
        "hashing",
    ]


@asynccontextmanager
async def _stdio(data_dir: Path, user: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=sys.executable, args=_args(data_dir, user), env=_env())
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def _data(result: Any) -> Any:
    assert not result.isError, result.content
    if result.structuredContent is not None:
        value = result.structuredContent
        return value.get("result", value) if set(value) == {"result"} else value
    return json.loads(result.content[0].text)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    with TieredMemory.embedded(path, embeddings=HashingEmbeddings()) as memory:
        memory.add_summaries("bob", ["Bob's bank PIN is 1234."])
        memory.set_user_tags("bob", {"name": "Bob"})
        # a conversation of Ana's in the memory's own checkpointer (the app's graph)
        graph: Any = create_memory_graph(
            ScriptedChatModel(replies=["Noted."]), memory=memory, checkpointer=memory.checkpointer()
        )
        graph.invoke(
            {"messages": [HumanMessage("My locker code is 8812.")]},
            {"configurable": {"thread_id": "ana-chat"}},
            context={"user_id": "ana"},
        )
    return path


async def test_every_tool_over_stdio_for_the_configured_user_only(data_dir: Path) -> None:
    async with _stdio(data_dir, "ana") as session:
        tools = {t.name for t in (await session.list_tools()).tools}
        assert tools == TOOLS
        first = _data(
            await session.call_tool("add_memory", {"text": "Ana failed her driving test in April."})
        )
        _data(await session.call_tool("add_memory", {"text": "安娜养了一只叫豆豆的猫。"}))
        found = _data(await session.call_tool("search_memories", {"query": "driving test", "n": 1}))
        assert found[0]["text"] == "Ana failed her driving test in April."
        listed = _data(await session.call_tool("list_memories", {}))
        assert listed["total"] == 2
        assert [i["text"] for i in listed["items"]][1] == "安娜养了一只叫豆豆的猫。"
        item_id = first["ids"][0]
        got = _data(await session.call_tool("get_memory", {"id": item_id}))
        assert got["text"].startswith("Ana failed")
        assert _data(await session.call_tool("set_tags", {"tags": {"name": "Ana", "age": 31}})) == {
            "age": "31",
            "name": "Ana",
        }
        assert _data(await session.call_tool("get_tags", {}))["age"] == "31"
        exported = _data(await session.call_tool("export_memory", {}))
        assert exported["tags"]["name"] == "Ana"
        # the export is the memory's own: the thread's state, from its checkpointer
        assert "8812" in json.dumps(exported["thread_states"])
        # Bob's memory is in the same Redis and unreachable: not searched, not listed
        searched = _data(await session.call_tool("search_memories", {"query": "bank PIN", "n": 5}))
        assert all("Bob" not in i["text"] for i in searched)
        # Bob's item 0 and Ana's item 0 are different items: an id is the user's own
        assert "Bob" not in json.dumps(_data(await session.call_tool("get_memory", {"id": "0"})))
        # bad arguments: MCP errors, nothing changes
        bad: list[tuple[str, dict[str, Any]]] = [
            ("add_memory", {"text": ""}),
            ("search_memories", {"query": "x", "n": 10_000}),
            ("set_tags", {"tags": {"age": "very old"}}),
            ("set_tags", {"tags": {"user_id": "bob"}}),
            ("delete_memory", {"id": "../1"}),
            ("delete_memory", {"id": "999"}),
            ("forget_everything", {}),
            ("forget_everything", {"confirm": 1}),
            ("forget_everything", {"confirm": "yes"}),
            ("set_tags", {"tags": {"age": True}}),
            ("update_memory", {"id": "999", "text": "x"}),
        ]
        for name, arguments in bad:
            result = await session.call_tool(name, arguments)
            assert result.isError, (name, arguments)
        assert _data(await session.call_tool("list_memories", {}))["total"] == 2
        assert _data(await session.call_tool("get_tags", {})) == {"age": "31", "name": "Ana"}
        edited = {"id": item_id, "text": "Ana failed her driving test in May."}
        assert _data(await session.call_tool("update_memory", edited))["changed"] is True
        got = _data(await session.call_tool("get_memory", {"id": item_id}))
        assert got["text"] == "Ana failed her driving test in May."
        assert _data(await session.call_tool("delete_memory", {"id": item_id})) == {"deleted": 1}
        assert _data(await session.call_tool("list_memories", {}))["total"] == 1
        removed = _data(await session.call_tool("forget_everything", {"confirm": True}))
        assert removed["threads"] == 1
        assert _data(await session.call_tool("list_memories", {}))["total"] == 0
    with TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings()) as memory:
        saver = memory.checkpointer()
        assert saver.get_tuple({"configurable": {"thread_id": "ana-chat"}}) is None
        assert memory.get_user_tags("bob") == {"name": "Bob"}  # untouched
        assert len(memory.summaries.get_all("bob")) == 1
        assert memory.get_user_tags("ana") == {}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_streamable_http(data_dir: Path) -> None:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, *_args(data_dir, "cy"), "--http", "--port", str(port)],
        env=_env(),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "the HTTP server never listened"
            time.sleep(0.1)
        url = f"http://127.0.0.1:{port}/mcp"
        async with (
            streamable_http_client(url) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            assert {t.name for t in (await session.list_tools()).tools} == TOOLS
            _data(await session.call_tool("add_memory", {"text": "Cy plays the cello."}))
            found = _data(await session.call_tool("search_memories", {"query": "cello"}))
            assert found[0]["text"] == "Cy plays the cello."
            assert "Bob" not in json.dumps(_data(await session.call_tool("export_memory", {})))
    finally:
        proc.terminate()
        proc.wait(30)
    # SIGTERM ends the server as Ctrl-C does: the embedded Redis it started is shut down
    assert not EmbeddedRedis(data_dir).server_alive()


async def test_tools_describe_themselves_and_the_server_names_this_package(
    data_dir: Path,
) -> None:
    """Issue 46 item 6: every argument described, MCP's read-only/destructive/idempotent
    hints, the package's version in the server info, and a search that reads the
    conversation as the agent's recall does."""
    from importlib.metadata import version

    async with _stdio(data_dir, "ana") as session:
        info = await session.initialize()
        assert info.serverInfo.version == version("langchain-tiered-memory")
        tools = {t.name: t for t in (await session.list_tools()).tools}
        for tool in tools.values():
            for arg, schema in tool.inputSchema.get("properties", {}).items():
                assert schema.get("description"), (tool.name, arg)
            assert tool.annotations is not None, tool.name
        reads = {n for n, t in tools.items() if t.annotations and t.annotations.readOnlyHint}
        assert reads == {
            "search_memories",
            "list_memories",
            "get_memory",
            "get_tags",
            "export_memory",
        }
        destructive = {
            n for n, t in tools.items() if t.annotations and t.annotations.destructiveHint
        }
        assert destructive == {"delete_memory", "update_memory", "set_tags", "forget_everything"}
        for text in [
            "Ana failed her driving test in April.",
            "Ana likes green tea.",
            "Ana has a cat.",
        ]:
            _data(await session.call_tool("add_memory", {"text": text}))
        # the last message names the cat; the conversation before it is about the test
        context = ["I booked another driving test.", "The examiner was strict last time."]
        query = "The cat kept me up all night."
        arguments = {"query": query, "n": 2, "context": context}
        found = _data(await session.call_tool("search_memories", arguments))
        # the conversation leads; the message's own best item is kept second
        assert [i["text"] for i in found] == [
            "Ana failed her driving test in April.",
            "Ana has a cat.",
        ]
        assert {"id", "text", "created_at", "score"} <= set(found[0])
        alone = _data(await session.call_tool("search_memories", {"query": query, "n": 1}))
        assert alone[0]["text"] == "Ana has a cat."


def _serve(args: list[str]) -> subprocess.Popen[str]:
    """``tiered-memory mcp`` with ``args``, once it listens (its port is in ``args``)."""
    port = int(args[args.index("--port") + 1])
    proc = subprocess.Popen([sys.executable, *args], env=_env(), stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while True:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline, "the HTTP server never listened"
        time.sleep(0.1)


@asynccontextmanager
async def _http(url: str, token: str | None) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx.AsyncClient(headers=headers, timeout=30) as client,
        streamable_http_client(url, http_client=client) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def test_one_http_server_for_two_users_by_bearer_token(
    data_dir: Path, tmp_path: Path
) -> None:
    """Issue 46 item 7: token A reaches only A's memory, token B only B's; no token or a
    wrong one gets 401 and reaches nothing."""
    token_a, token_b = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps({token_a: "ana", token_b: "bob"}))
    port = _free_port()
    base = _args(data_dir, "x")
    args = [*base[: base.index("--user")], *base[base.index("--data-dir") :]]
    proc = _serve([*args, "--http", "--port", str(port), "--tokens", str(tokens)])
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        async with _http(url, token_a) as ana:
            _data(await ana.call_tool("add_memory", {"text": "Ana's locker code is 4471."}))
            listed = _data(await ana.call_tool("list_memories", {}))
            assert [i["text"] for i in listed["items"]] == ["Ana's locker code is 4471."]
            assert "PIN" not in json.dumps(_data(await ana.call_tool("export_memory", {})))
        async with _http(url, token_b) as bob:
            listed = _data(await bob.call_tool("list_memories", {}))
            assert [i["text"] for i in listed["items"]] == ["Bob's bank PIN is 1234."]
            found = _data(await bob.call_tool("search_memories", {"query": "locker code"}))
            assert "4471" not in json.dumps(found)
            assert _data(await bob.call_tool("get_tags", {})) == {"name": "Bob"}
        async with httpx.AsyncClient(timeout=30) as raw:
            hello = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
            for headers in ({}, {"Authorization": "Bearer " + "x" * 43}):
                response = await raw.post(url, json=hello, headers=headers)
                assert response.status_code == 401, (headers, response.text)
    finally:
        proc.terminate()
        proc.wait(30)


def test_a_bind_beyond_loopback_needs_tokens(data_dir: Path) -> None:
    port = str(_free_port())
    result = subprocess.run(
        [sys.executable, *_args(data_dir, "ana"), "--http", "--host", "0.0.0.0", "--port", port],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "--tokens FILE" in result.stderr


def test_tokens_must_be_long_and_name_valid_users(data_dir: Path) -> None:
    from langchain_tiered_memory.errors import InvalidArgumentError
    from langchain_tiered_memory.mcp_server import create_mcp_server

    with TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings()) as memory:
        with pytest.raises(InvalidArgumentError, match="at least 24"):
            create_mcp_server(memory, tokens={"short": "ana"})
        with pytest.raises(InvalidArgumentError, match="user_id .* or tokens"):
            create_mcp_server(memory, user_id="ana", tokens={"t" * 32: "ana"})
        with pytest.raises(ValueError, match="user"):
            create_mcp_server(memory, tokens={"t" * 32: ""})


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_the_stdio_server_stops_on_one_signal(data_dir: Path, sig: int) -> None:
    """Issue 59 item 4: the first Ctrl-C did nothing for 60 s, a second stopped its Redis
    but the process stayed until stdin closed (SIGTERM the same). One signal now stops
    it, and the embedded server it started with it; stdin stays open, as a client's."""
    proc = subprocess.Popen(
        [sys.executable, *_args(data_dir, "ann")],
        env=_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=like_a_terminal,
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        hello = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"},
            },
        }
        proc.stdin.write((json.dumps(hello) + "\n").encode())
        proc.stdin.flush()
        assert b'"result"' in proc.stdout.readline()  # serving, its Redis started
        assert EmbeddedRedis(data_dir).server_alive()
        proc.send_signal(sig)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not EmbeddedRedis(data_dir).server_alive()


def test_an_http_server_on_another_loopback_address_serves_its_own_host(
    data_dir: Path,
) -> None:
    """Issue 55 item 14: on 127.0.0.2 every request got 421 (only 127.0.0.1's names were
    allowed); and the URL is printed once the port is bound, not before."""
    port = _free_port()
    args = [*_args(data_dir, "ann"), "--http", "--host", "127.0.0.2", "--port", str(port)]
    proc = subprocess.Popen([sys.executable, *args], env=_env(), stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        url = f"http://127.0.0.2:{port}/mcp"
        lines: list[str] = []
        while not any(url in line for line in lines):  # the SDK logs a line first
            lines.append(proc.stderr.readline())
            assert lines[-1] and len(lines) < 50, lines
        # printed after the bind: the port answers now
        with socket.socket() as s:
            assert s.connect_ex(("127.0.0.2", port)) == 0
        answer = httpx.post(
            f"http://127.0.0.2:{port}/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
            headers={"Accept": "application/json, text/event-stream"},
            timeout=30,
        )
        assert answer.status_code != 421, answer.text
    finally:
        proc.terminate()
        proc.wait(30)


def test_a_busy_port_gets_no_url(data_dir: Path) -> None:
    """The URL names a server only once this one holds the port."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        args = [*_args(data_dir, "ann"), "--http", "--port", str(port)]
        done = subprocess.run(
            [sys.executable, *args], env=_env(), capture_output=True, text=True, timeout=120
        )
    assert done.returncode != 0
    assert f":{port}/mcp" not in done.stderr

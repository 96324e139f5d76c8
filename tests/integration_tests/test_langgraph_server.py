"""LangGraph's own server as the client: ``langgraph dev`` serving the prebuilt graph with
``AsyncRedisSaver`` as its checkpointer (``langgraph.json``), driven by ``langgraph-sdk``.

Memory and threads live in one Redis (the standalone redis-server), so both survive a
restart of the server process.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.servers import free_port
from helpers.signals import like_a_terminal

APP = '''
"""The app ``langgraph dev`` serves: the memory graph, memory and threads in one Redis."""
import contextlib
import os
import re

from langchain_core.messages import AIMessage

from langchain_tiered_memory import HashingEmbeddings, TieredMemory
from langchain_tiered_memory.persistence.checkpoint import AsyncRedisSaver
from langchain_tiered_memory.agent.graph import create_memory_graph
from langchain_tiered_memory.testing import ScriptedChatModel

URL, PREFIX = os.environ["TM_REDIS_URL"], os.environ["TM_PREFIX"]


def reply(messages):
    last = messages[-1]
    if last.type == "human" and "I'm Alice" in last.text:
        call = {"name": "user_tag", "args": {"name": "Alice", "age": 30}, "id": "c1"}
        return AIMessage(content="", tool_calls=[call])
    if last.type == "tool":
        return "Nice to meet you, Alice!"
    # answer from the memory section of the system prompt only
    tags = dict(re.findall(r'"(name|age)": "([^"]+)"', messages[0].text))
    return f"You are {tags['name']}, {tags['age']}." if tags else "I don't know you."


memory = TieredMemory.from_url(URL, key_prefix=PREFIX, embeddings=HashingEmbeddings())
graph = create_memory_graph(ScriptedChatModel(replies=[reply]), memory=memory)


@contextlib.asynccontextmanager
async def checkpointer():
    async with AsyncRedisSaver.from_url(URL, key_prefix=PREFIX) as saver:
        yield memory.checkpointer(saver)  # checks thread owners, as the memory requires
'''


@pytest.fixture
def app_dir(tmp_path: Path) -> Path:
    if (
        shutil.which("langgraph") is None
        and not (Path(sys.executable).parent / "langgraph").exists()
    ):
        pytest.fail("langgraph-cli is not installed: it is in the [test] extra")
    app = tmp_path / "app"
    app.mkdir()
    (app / "app.py").write_text(textwrap.dedent(APP))
    config = {
        "dependencies": ["."],
        "graphs": {"memory": "./app.py:graph"},
        "checkpointer": {"path": "./app.py:checkpointer"},
    }
    (app / "langgraph.json").write_text(json.dumps(config))
    return app


@pytest.fixture
def serve(app_dir: Path, redis_server_url: str, key_prefix: str) -> Iterator[Any]:
    procs: list[subprocess.Popen[bytes]] = []

    def start() -> str:
        port = free_port()
        cli = Path(sys.executable).parent / "langgraph"
        env = {**os.environ, "TM_REDIS_URL": redis_server_url, "TM_PREFIX": key_prefix}
        env["LANGGRAPH_NO_ANALYTICS"] = "1"  # no network from a test
        log = open(app_dir / f"server-{port}.log", "wb")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen(
            [
                str(cli) if cli.exists() else "langgraph",
                "dev",
                "--port",
                str(port),
                "--host",
                "127.0.0.1",
                "--no-browser",
                "--no-reload",
            ],
            cwd=app_dir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=like_a_terminal,  # stopped by SIGINT below, as from a terminal
        )
        procs.append(proc)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                break
            try:
                with urllib.request.urlopen(f"{url}/ok", timeout=2) as answer:
                    if answer.status == 200:
                        return url
            except OSError:
                time.sleep(0.3)
        logs = "\n".join(p.read_text(errors="replace")[-3000:] for p in app_dir.glob("*.log"))
        raise AssertionError(f"langgraph dev did not start:\n{logs}")

    def stop() -> None:
        proc = procs[-1]
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)

    try:
        yield start, stop
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)


def test_langgraph_dev_keeps_memory_and_threads_in_redis_across_restarts(
    serve: Any, redis_server_url: str, key_prefix: str
) -> None:
    from langgraph_sdk import get_sync_client

    from langchain_tiered_memory.persistence.checkpoint import RedisSaver

    start, stop = serve
    client = get_sync_client(url=start())
    first = client.threads.create()
    result: Any = client.runs.wait(
        first["thread_id"], "memory", input=_says("I'm Alice, 30."), context={"user_id": "alice"}
    )
    assert result["messages"][-1]["content"] == "Nice to meet you, Alice!"
    stop()

    client = get_sync_client(url=start())  # a new server process, the same Redis
    second = client.threads.create()
    answer: Any = client.runs.wait(
        second["thread_id"], "memory", input=_says("Who am I?"), context={"user_id": "alice"}
    )
    assert answer["messages"][-1]["content"] == "You are Alice, 30."  # the tags, from Redis
    # the first thread's state came back from the Redis checkpointer
    state: Any = client.threads.get_state(first["thread_id"])
    assert [m["type"] for m in state["values"]["messages"]] == ["human", "ai", "tool", "ai"]
    # the user id may come from the config instead of the context
    by_config: Any = client.runs.wait(
        second["thread_id"],
        "memory",
        input=_says("And now?"),
        config={"configurable": {"user_id": "alice"}},
    )
    assert by_config["messages"][-1]["content"] == "You are Alice, 30."
    stop()

    with RedisSaver.from_url(redis_server_url, key_prefix=key_prefix) as saver:
        assert set(saver.list_threads()) == {first["thread_id"], second["thread_id"]}


def _says(text: str) -> Any:
    return {"messages": [{"role": "user", "content": text}]}

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
        env = {"TM_REDIS_URL": redis_server_url, "TM_PREFIX": key_prefix}
        return _start(app_dir, procs, env)

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


# ----- the shipped deployment: the server's own checkpointer, two users, bearer tokens -----

EXAMPLE = Path(__file__).parents[2] / "examples" / "langgraph_server"
# bearer-token users of the example deployments (every server test module uses these)
TOKENS = {"alice": "tok-alice", "bob": "tok-bob", "carol": "tok-carol"}


@pytest.fixture
def example_server(
    tmp_path: Path, redis_server_url: str, key_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    """``examples/langgraph_server`` as shipped (no checkpointer of the app's: the
    server's in-memory one), its memory in the standalone redis-server."""
    app = tmp_path / "app"
    shutil.copytree(EXAMPLE, app)
    monkeypatch.setenv("REDIS_URL", redis_server_url)
    monkeypatch.setenv("TIERED_MEMORY_KEY_PREFIX", key_prefix)
    monkeypatch.setenv("TIERED_MEMORY_MODEL", "fake")
    monkeypatch.setenv("DEMO_TOKENS", ",".join(f"{t}={u}" for u, t in TOKENS.items()))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    config = json.loads((app / "langgraph.json").read_text())
    assert "checkpointer" not in config  # the server's own
    procs: list[subprocess.Popen[bytes]] = []
    try:
        yield _start(app, procs)
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)


def _start(
    app: Path, procs: list[subprocess.Popen[bytes]], env: dict[str, str] | None = None
) -> str:
    """``langgraph dev`` on ``app`` on a free loopback port, its log in the app's folder;
    stopped by SIGINT, as from a terminal."""
    port = free_port()
    cli = Path(sys.executable).parent / "langgraph"
    environ = {**os.environ, **(env or {}), "LANGGRAPH_NO_ANALYTICS": "1"}  # no network
    log = open(app / f"server-{port}.log", "wb")  # noqa: SIM115 - closed with the process
    proc = subprocess.Popen(
        [str(cli) if cli.exists() else "langgraph", "dev", "--port", str(port)]
        + ["--host", "127.0.0.1", "--no-browser", "--no-reload"],
        cwd=app,
        env=environ,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=like_a_terminal,
    )
    procs.append(proc)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(f"{url}/ok", timeout=2) as answer:
                if answer.status == 200:
                    return url
        except OSError:
            time.sleep(0.3)
    logs = "\n".join(p.read_text(errors="replace")[-3000:] for p in app.glob("*.log"))
    raise AssertionError(f"langgraph dev did not start:\n{logs}")


def _client(url: str, user: str | None) -> Any:
    from langgraph_sdk import get_sync_client

    headers = {"Authorization": f"Bearer {TOKENS[user]}"} if user else {}
    return get_sync_client(url=url, headers=headers)


def _status(call: Any) -> int:
    import httpx

    with pytest.raises(httpx.HTTPStatusError) as caught:
        call()
    return caught.value.response.status_code


def test_the_example_deployment_keeps_each_thread_to_its_user(
    example_server: str, redis_server_url: str, key_prefix: str
) -> None:
    """Issue 66 items 1-4: the standard deployment (the server's own checkpointer) serves
    runs; the authenticated identity is the run's user; every thread endpoint refuses the
    other user; a forged user id is a 403 before anything is written."""
    from langchain_tiered_memory import TieredMemory

    alice, bob = _client(example_server, "alice"), _client(example_server, "bob")
    first = alice.threads.create()["thread_id"]
    said = alice.runs.wait(first, "memory", input=_says("Hi, my name is Alice and I am 30."))
    assert "error" not in said, said
    second = alice.threads.create()["thread_id"]
    answer: Any = alice.runs.wait(second, "memory", input=_says("How old am I?"))
    assert "30" in answer["messages"][-1]["content"]  # from the memory, across threads

    # bob's token, alice's name in the context (and in the config): refused, nothing written
    forgeries: list[dict[str, Any]] = [{"context": {"user_id": "alice"}}]
    forgeries.append({"config": {"configurable": {"user_id": "alice"}}})
    for forged in forgeries:
        mine = bob.threads.create()["thread_id"]

        def run(thread: str = mine, options: dict[str, Any] = forged) -> Any:
            return bob.runs.wait(thread, "memory", input=_says("Who am I?"), **options)

        assert _status(run) == 403
        assert not bob.threads.get_state(mine)["values"]  # nothing written
    # every thread endpoint: alice's threads are not bob's
    assert _status(lambda: bob.threads.get(first)) == 404
    assert _status(lambda: bob.threads.get_state(first)) == 404
    assert _status(lambda: bob.threads.get_history(first)) == 404
    assert _status(lambda: bob.threads.update_state(first, {"messages": []})) == 404
    assert _status(lambda: bob.threads.copy(first)) in (404, 409)  # the server's word for it
    assert _status(lambda: bob.runs.wait(first, "memory", input=_says("Hi"))) == 404
    bobs = bob.threads.search(limit=100)
    assert first not in {t["thread_id"] for t in bobs}
    assert all(t["metadata"].get("owner") == "bob" for t in bobs)  # no copy of alice's
    assert first in {t["thread_id"] for t in alice.threads.search(limit=100)}
    # no token: 401
    assert _status(lambda: _client(example_server, None).threads.create()) == 401
    # bob's own run is bob's memory, with nothing of alice's
    own = bob.threads.create()["thread_id"]
    reply: Any = bob.runs.wait(own, "memory", input=_says("How old am I?"))
    assert "30" not in reply["messages"][-1]["content"]
    # alice's own thread state is hers, unchanged by bob's attempts
    state: Any = alice.threads.get_state(first)
    assert [m["type"] for m in state["values"]["messages"]][0] == "human"
    with TieredMemory.from_url(redis_server_url, key_prefix=key_prefix) as memory:
        assert memory.get_user_tags("alice") == {"name": "Alice", "age": "30"}
        assert memory.get_user_tags("bob") == {}

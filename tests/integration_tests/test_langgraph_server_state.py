"""What the LangGraph server does to a thread, and the memory with it (issue 77 items 3, 4, 6),
on the real ``langgraph dev`` driven by ``langgraph-sdk``, as the documented deployment runs
it: the server's own checkpointer, bearer-token users, ``protect_threads``; the memory in
the standalone redis-server.

- time travel: ``update_state`` at an earlier checkpoint (JSON messages, as a client sends
  them), then a run: every thread endpoint still answers;
- a rolled-back run (``multitask_strategy="rollback"``, ``runs.cancel(action="rollback")``)
  leaves nothing in memory: no tag it recorded answers in a new thread;
- the server's thread record (``threads.get``, ``threads.search``) holds the thread's
  messages, never the memory the run loaded (the memory section, the carried history).

One server at a time, for the module: the server's own checkpointer, then ``AsyncRedisSaver``
(starts are slow and the machine has two cores).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import textwrap
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from test_langgraph_server import _says, _start

from langchain_tiered_memory import TieredMemory

APP = '''
"""The app ``langgraph dev`` serves: the memory graph on the server's own checkpointer, two
bearer-token users kept to their threads; memory in the standalone redis-server."""
import asyncio
import contextlib
import os
import re

from langchain_core.messages import AIMessage
from langgraph_sdk import Auth

from langchain_tiered_memory import HashingEmbeddings, TieredMemory
from langchain_tiered_memory.agent.graph import create_memory_graph
from langchain_tiered_memory.deploy import protect_threads
from langchain_tiered_memory.persistence.checkpoint import AsyncRedisSaver
from langchain_tiered_memory.testing import ScriptedChatModel

URL, PREFIX = os.environ["TM_REDIS_URL"], os.environ["TM_PREFIX"]
TOKENS = {"tok-alice": "alice", "tok-bob": "bob", "tok-carol": "carol"}


def reply(messages):
    last = messages[-1]
    said = re.search(r"I'm (\\w+), (\\d+)", last.text) if last.type == "human" else None
    if said:
        args = {"name": said.group(1), "age": int(said.group(2))}
        return AIMessage(content="", tool_calls=[{"name": "user_tag", "args": args, "id": "c1"}])
    if last.type == "tool":
        return "Noted."
    # answer from the memory section of the system prompt only
    tags = dict(re.findall(r'"(name|age)": "([^"]+)"', messages[0].text))
    return f"You are {tags['name']}, {tags['age']}." if tags else "I don't know you."


class Model(ScriptedChatModel):
    """The script; after a tool result of a message saying "slowly" it waits a minute
    (asynchronously: the server's event loop goes on), so a test can roll the run back."""

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):
        humans = [m for m in messages if m.type == "human"]
        if messages[-1].type == "tool" and humans and "slowly" in humans[-1].text:
            await asyncio.sleep(60)
        return self._generate(messages, stop=stop, **kwargs)


memory = TieredMemory.from_url(URL, key_prefix=PREFIX, embeddings=HashingEmbeddings())
graph = create_memory_graph(Model(replies=[reply]), memory=memory)

auth = Auth()


@auth.authenticate
async def authenticate(authorization: str | None) -> str:
    scheme, _, token = (authorization or "").partition(" ")
    user = TOKENS.get(token) if scheme.lower() == "bearer" else None
    if user is None:
        raise Auth.exceptions.HTTPException(status_code=401, detail="Unknown token.")
    return user


protect_threads(auth)


@contextlib.asynccontextmanager
async def checkpointer():
    """Threads in the memory's Redis (the guide's other deployment), when langgraph.json
    names it."""
    async with AsyncRedisSaver.from_url(URL, key_prefix=PREFIX) as saver:
        yield memory.checkpointer(saver)
'''

TOKENS = {"alice": "tok-alice", "bob": "tok-bob", "carol": "tok-carol"}


class Server:
    """The running server's url and the memory it writes to (one key prefix)."""

    def __init__(self, url: str, redis_url: str, prefix: str) -> None:
        self.url, self.redis_url, self.prefix = url, redis_url, prefix

    def client(self, user: str) -> Any:
        """A ``langgraph_sdk`` sync client with ``user``'s bearer token."""
        from langgraph_sdk import get_sync_client

        return get_sync_client(url=self.url, headers={"Authorization": f"Bearer {TOKENS[user]}"})

    def memory(self) -> TieredMemory:
        """The server's memory, opened beside it (close it after use)."""
        return TieredMemory.from_url(self.redis_url, key_prefix=self.prefix)


@pytest.fixture(scope="module", params=["server threads", "redis threads"])
def server(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    redis_server_url: str,
) -> Iterator[Server]:
    """The app on ``langgraph dev``: threads in the server's own checkpointer (the
    documented deployment), then in the memory's Redis (``AsyncRedisSaver``)."""
    app = tmp_path_factory.mktemp("state-app")
    (app / "app.py").write_text(textwrap.dedent(APP))
    config: dict[str, Any] = {
        "dependencies": ["."],
        "graphs": {"memory": "./app.py:graph"},
        "auth": {"path": "./app.py:auth"},
    }
    if request.param == "redis threads":
        config["checkpointer"] = {"path": "./app.py:checkpointer"}
    (app / "langgraph.json").write_text(json.dumps(config))
    prefix = f"t{uuid.uuid4().hex[:8]}"
    procs: list[subprocess.Popen[bytes]] = []
    try:
        url = _start(app, procs, {"TM_REDIS_URL": redis_server_url, "TM_PREFIX": prefix})
        yield Server(url, redis_server_url, prefix)
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)


def _eventually(check: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.2)


# ----- item 3: time travel -----


def test_update_state_at_an_earlier_checkpoint_keeps_the_thread_readable(server: Server) -> None:
    """Issue 77 item 3: ``update_state`` at an earlier checkpoint with the JSON messages a
    client sends, then a run: the state, the history and the record still answer. On the
    code before: ``get_state`` was a 500 (``AttributeError: 'dict' object has no attribute
    'id'`` in ``add_message_batches``) and ``get_history`` dropped the connection."""
    alice = server.client("alice")
    thread = alice.threads.create()["thread_id"]
    for text in ("first message", "second message"):
        assert "__error__" not in alice.runs.wait(thread, "memory", input=_says(text))
    history = alice.threads.get_history(thread, limit=100)
    earlier = next(s for s in history if len(s["values"].get("messages", [])) == 2)
    fork = alice.threads.update_state(
        thread,
        {"messages": [{"role": "user", "content": "an edited question", "id": "edited"}]},
        checkpoint_id=earlier["checkpoint"]["checkpoint_id"],
    )
    assert fork["checkpoint"]["checkpoint_id"]
    result = alice.runs.wait(thread, "memory", input=_says("after the fork"))
    assert "__error__" not in result, result
    state = alice.threads.get_state(thread)
    texts = [m["content"] for m in state["values"]["messages"]]
    assert texts[:3] == ["first message", "I don't know you.", "an edited question"]
    assert "second message" not in texts and texts[-2] == "after the fork"
    assert len(alice.threads.get_history(thread, limit=100)) > len(history)
    assert alice.threads.get(thread)["values"]["messages"][-2]["content"] == "after the fork"


# ----- item 6: the server's thread record -----


def test_the_servers_thread_record_holds_no_memory_the_run_loaded(server: Server) -> None:
    """Issue 77 item 6: a run's memory section (tags, recalled items) and the history it
    carried from another thread are in neither the thread record (``threads.get``,
    ``threads.search``) nor the run's output; the thread's own messages are. On the code
    before, the record held ``memory_prompt`` with the tags and ``recent_history`` with
    the other thread's messages (what a delete or ``forget_thread`` could not reach)."""
    bob = server.client("bob")
    first = bob.threads.create()["thread_id"]
    told = bob.runs.wait(first, "memory", input=_says("I'm Bob, 41. I keep bees."))
    assert told["messages"][-1]["content"] == "Noted."
    second = bob.threads.create()["thread_id"]
    asked = bob.runs.wait(second, "memory", input=_says("Who am I?"))
    assert asked["messages"][-1]["content"] == "You are Bob, 41."  # the memory was loaded

    def leaks(values: dict[str, Any]) -> list[str]:
        text = json.dumps(values)
        found = [w for w in ("keep bees", '\\"name\\": \\"Bob\\"') if w in text]
        memory = ("memory_prompt", "recent_history", "memory_tags", "recalled_items")
        return found + [k for k in memory if values.get(k)]

    assert leaks(asked) == []  # the run's output
    record = bob.threads.get(second)
    assert [m["content"] for m in record["values"]["messages"]] == ["Who am I?", "You are Bob, 41."]
    assert leaks(record["values"]) == []
    searched = {t["thread_id"]: t for t in bob.threads.search(limit=100)}
    assert leaks(searched[second]["values"]) == []
    assert "keep bees" in json.dumps(searched[first]["values"])  # the thread's own words


# ----- item 4: a rolled-back run -----


def _run_until_its_tool_ran(client: Any, thread: str, text: str) -> str:
    """Start a run that calls ``user_tag`` and then waits (the model, after a message
    saying "slowly"); return its id once the tool's result is in the thread."""
    run = client.runs.create(thread, "memory", input=_says(text))

    def tool_ran() -> bool:
        values = client.threads.get_state(thread)["values"] or {}
        return any(m["type"] == "tool" for m in values.get("messages", []))

    _eventually(tool_ran)
    return str(run["run_id"])


@pytest.mark.parametrize("how", ["multitask_strategy", "runs.cancel"])
def test_a_rolled_back_run_leaves_nothing_in_memory(server: Server, how: str) -> None:
    """Issue 77 item 4: a run rolled back after its ``user_tag`` call (a new run with
    ``multitask_strategy="rollback"``, or ``runs.cancel(action="rollback")``) is gone from
    the thread and from memory: no tag, no tag change, no answer from it in a new thread.
    On the code before: the tags stayed and a new thread answered "You are Alice, 30."."""
    user = "alice" if how == "multitask_strategy" else "carol"
    client = server.client(user)
    name = user.capitalize()
    thread = client.threads.create()["thread_id"]
    run_id = _run_until_its_tool_ran(client, thread, f"I'm {name}, 30. Say it slowly.")
    if how == "multitask_strategy":
        answer = client.runs.wait(
            thread, "memory", input=_says("Who am I?"), multitask_strategy="rollback"
        )
        assert answer["messages"][-1]["content"] == "I don't know you."
    else:
        client.runs.cancel(thread, run_id, wait=True, action="rollback")
    assert run_id not in {r["run_id"] for r in client.runs.list(thread)}  # the server's part
    texts = json.dumps(client.threads.get_state(thread)["values"])
    assert "slowly" not in texts
    fresh = client.threads.create()["thread_id"]
    answer = client.runs.wait(fresh, "memory", input=_says("Who am I?"))
    assert answer["messages"][-1]["content"] == "I don't know you."
    with server.memory() as memory:
        assert memory.get_user_tags(user) == {}
        assert memory.get_tag_history(user, "name") == []
        assert "slowly" not in json.dumps([m.text for m in memory.history.since(user, 0)[1]])

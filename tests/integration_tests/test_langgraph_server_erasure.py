"""Erasure and export reach a LangGraph server's threads (issue 77 item 1), on the real
``langgraph dev`` serving ``examples/langgraph_server`` as shipped (the server's own
checkpointer, bearer-token users), driven by ``langgraph_sdk``.

Before: ``forget_user("alice")`` said ``threads: N`` with nothing ``unreached`` and
``tiered-memory forget`` exited 0, while the server still answered ``get_state`` with every
message of hers (and of the copy she made).
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import httpx
import pytest
from test_langgraph_server import TOKENS, _client, _says, example_server  # noqa: F401

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.persistence.server_threads import LangGraphServerThreads

SECRET = "zq-alice-secret-91"


def _alices_threads(url: str) -> tuple[list[str], str]:
    """Two threads of alice's with her secret and a copy of the first; one of bob's."""
    alice, bob = _client(url, "alice"), _client(url, "bob")
    mine = []
    for text in (f"Hi, my name is Alice and I am 30. My code is {SECRET}.", "How old am I?"):
        thread = alice.threads.create()["thread_id"]
        said = alice.runs.wait(thread, "memory", input=_says(text))
        assert "__error__" not in said, said
        mine.append(thread)
    mine.append(alice.threads.copy(mine[0])["thread_id"])
    bobs = bob.threads.create()["thread_id"]
    bob.runs.wait(bobs, "memory", input=_says("Hi, I am Bob."))
    return mine, bobs


def _gone(url: str, thread: str) -> bool:
    """Whether the server no longer has the thread (its owner gets 404)."""
    try:
        _client(url, "alice").threads.get(thread)
    except httpx.HTTPStatusError as exc:
        return exc.response.status_code == 404
    return False


def test_an_erasure_that_holds_no_server_says_its_threads_were_not_reached(
    example_server: str,  # noqa: F811
    redis_server_url: str,
    key_prefix: str,
) -> None:
    """The server process records that it runs the memory graph; an erasure from another
    process without the server's threads reports them, and the CLI exits non-zero."""
    mine, _ = _alices_threads(example_server)
    with TieredMemory.from_url(redis_server_url, key_prefix=key_prefix) as memory:
        removed = memory.forget_user("alice")
    assert removed.get("unreached", 0) >= 1, removed
    assert not any(_gone(example_server, t) for t in mine)  # said, not hidden
    command = [sys.executable, "-m", "langchain_tiered_memory.cli", "forget", "--user", "alice"]
    command += ["--yes", "--redis-url", redis_server_url, "--key-prefix", key_prefix]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0, done.stdout + done.stderr
    assert "--langgraph-url" in done.stdout.replace("\n", " ")  # what to do instead
    # the same command, reaching the server as alice (the token from the environment)
    env = {**os.environ, "TIERED_MEMORY_LANGGRAPH_AUTH": f"Bearer {TOKENS['alice']}"}
    command += ["--langgraph-url", example_server]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert all(_gone(example_server, t) for t in mine)
    assert TOKENS["alice"] not in done.stdout + done.stderr


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_an_erasure_with_the_servers_threads_deletes_them_and_their_copies(
    example_server: str,  # noqa: F811
    redis_server_url: str,
    key_prefix: str,
    asynchronous: bool,
) -> None:
    """alice's own token (a "delete my account" request) reaches her threads: every one,
    the copy included, is gone from the server; bob's stays; nothing is unreached."""
    mine, bobs = _alices_threads(example_server)
    server = LangGraphServerThreads(
        example_server, headers={"Authorization": f"Bearer {TOKENS['alice']}"}
    )
    with TieredMemory.from_url(redis_server_url, key_prefix=key_prefix) as memory:
        memory.attach(server=server)
        exported: Any = (
            await memory.aexport_user("alice") if asynchronous else memory.export_user("alice")
        )
        assert {t["thread_id"] for t in exported["server_threads"]} == set(mine)
        assert SECRET in str(exported["server_threads"])
        if asynchronous:
            removed = await memory.aforget_user("alice")
            await server.aclose()
        else:
            removed = memory.forget_user("alice")
            server.close()
    assert removed["server_threads"] == 3, removed
    assert "unreached" not in removed, removed
    assert all(_gone(example_server, t) for t in mine)
    assert _client(example_server, "alice").threads.search(limit=100) == []
    state: Any = _client(example_server, "bob").threads.get_state(bobs)
    assert "Bob" in str(state["values"]), "bob's thread went with alice's erasure"


def test_forget_thread_deletes_the_users_thread_on_the_server_and_no_one_elses(
    example_server: str,  # noqa: F811
    redis_server_url: str,
    key_prefix: str,
) -> None:
    mine, bobs = _alices_threads(example_server)
    server = LangGraphServerThreads(
        example_server, headers={"Authorization": f"Bearer {TOKENS['alice']}"}
    )
    with TieredMemory.from_url(redis_server_url, key_prefix=key_prefix) as memory:
        memory.attach(server=server)
        assert memory.forget_thread("alice", mine[0])["server_threads"] == 1
        # bob's thread is not alice's: the server does not even show it to her
        assert memory.forget_thread("alice", bobs)["server_threads"] == 0
    server.close()
    assert _gone(example_server, mine[0])
    assert not _gone(example_server, mine[1])
    assert "Bob" in str(_client(example_server, "bob").threads.get_state(bobs)["values"])

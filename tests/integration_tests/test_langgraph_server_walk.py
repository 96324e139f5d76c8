"""A long scripted run against the real ``langgraph dev`` (issue 77, "a model-based family
or a scripted long run"): three bearer-token users drive ``examples/langgraph_server`` as
shipped through ``langgraph_sdk`` in a seeded random order of turns, summaries, copies,
deletes, runs rolled back (``multitask_strategy="rollback"``), time travel
(``update_state`` at an earlier checkpoint, then a run), another user's requests and
erasures, and after every step the invariants hold:

- nothing of one user reaches another: a user's thread search, thread records and states
  and their memory's export hold no other user's words;
- nothing of a deleted thread (words said only there), a rolled-back run or an erased user
  stays in the memory (SCAN + DUMP of every Redis key) or in a server thread record;
- every thread a user has is readable (state and history).

``TM_SERVER_WALK_STEPS`` (default 36) and ``TM_SERVER_WALK_SEED`` (default 7) run longer or
other walks; a failure names its seed and step.
"""

from __future__ import annotations

import os
import random

import httpx
import pytest
import redis
from test_langgraph_server import TOKENS, _client, _says, example_server  # noqa: F401

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.persistence.server_threads import LangGraphServerThreads

USERS = tuple(TOKENS)
STEPS = int(os.environ.get("TM_SERVER_WALK_STEPS", "36"))
SEED = int(os.environ.get("TM_SERVER_WALK_SEED", "7"))
pytestmark = pytest.mark.timeout(1800)


class Walk:
    """The model: what each user said where, and what no store may hold any more."""

    def __init__(self, url: str, redis_url: str, prefix: str) -> None:
        self.url, self.rng, self.n = url, random.Random(SEED), 0
        self.clients = {u: _client(url, u) for u in USERS}
        self.threads: dict[str, list[str]] = {u: [] for u in USERS}
        self.gone: set[str] = set()  # words no key and no server record may hold
        self.memory = TieredMemory.from_url(redis_url, key_prefix=prefix)
        self.raw = redis.Redis.from_url(redis_url)
        self.raw.config_set("rdbcompression", "no")  # DUMP shows the text
        self.said: dict[str, dict[str, list[str]]] = {u: {} for u in USERS}

    def word(self, user: str) -> str:
        self.n += 1
        return f"Zq{user}{self.n}x"  # one user's word: unique, no other user's name in it

    # ----- the steps -----

    def turn(self, user: str) -> str:
        client = self.clients[user]
        mine = self.threads[user]
        if not mine or self.rng.random() < 0.3:
            mine.append(client.threads.create()["thread_id"])
        thread = self.rng.choice(mine)
        word = self.word(user)
        said = client.runs.wait(thread, "memory", input=_says(f"I like {word} very much."))
        assert "__error__" not in said, said
        self.said[user].setdefault(thread, []).append(word)
        return f"turn {user} {thread}"

    def summarize(self, user: str) -> str:
        if not self.threads[user]:
            return self.turn(user)
        thread = self.rng.choice(self.threads[user])
        self.clients[user].runs.wait(thread, "memory", input=_says("Please summarize."))
        return f"summarize {user}"

    def copy(self, user: str) -> str:
        if not self.threads[user]:
            return self.turn(user)
        source = self.rng.choice(self.threads[user])
        if not self.clients[user].threads.get_state(source).get("checkpoint"):
            # langgraph-runtime-inmem 0.36: a copy of a thread with no checkpoint is one no
            # run can use (KeyError '' in its saver), with or without this package
            return self.turn(user)
        copied = self.clients[user].threads.copy(source)["thread_id"]
        self.threads[user].append(copied)
        self.said[user][copied] = list(self.said[user].get(source, []))
        return f"copy {user} {source}->{copied}"

    def delete(self, user: str) -> str:
        if not self.threads[user]:
            return self.turn(user)
        thread = self.rng.choice(self.threads[user])
        self.clients[user].threads.delete(thread)
        self.threads[user].remove(thread)
        words = self.said[user].pop(thread, [])
        elsewhere = {w for t in self.said[user].values() for w in t}
        self.gone.update(w for w in words if w not in elsewhere)
        return f"delete {user} {thread}"

    def rollback(self, user: str) -> str:
        """A run, and at once another with multitask_strategy="rollback": the first is
        rolled back unless it finished first (then it is an ordinary turn)."""
        client = self.clients[user]
        thread = client.threads.create()["thread_id"]
        self.threads[user].append(thread)
        word = self.word(user)
        text = f"My name is {word} and I am 77. I like {word} too."
        client.runs.create(thread, "memory", input=_says(text))
        last = client.runs.create(
            thread, "memory", input=_says("OK then."), multitask_strategy="rollback"
        )
        client.runs.join(thread, last["run_id"])
        state = client.threads.get_state(thread)
        if word in str(state["values"]):
            self.said[user].setdefault(thread, []).append(word)
            return f"rollback {user} {thread}: finished first"
        self.gone.add(word)  # the thread does not hold it: nor may the memory
        return f"rollback {user} {thread}: rolled back"

    def time_travel(self, user: str) -> str:
        """update_state at the checkpoint before the thread's last turn, then a run."""
        client = self.clients[user]
        candidates = [t for t in self.threads[user] if len(self.said[user].get(t, [])) >= 1]
        if not candidates:
            return self.turn(user)
        thread = self.rng.choice(candidates)
        history = client.threads.get_history(thread, limit=50)
        earlier = [h for h in history if not h["next"]][1:]
        if not earlier:
            return self.turn(user)
        word = self.word(user)
        config = earlier[0]["checkpoint"]
        client.threads.update_state(thread, {"messages": []}, checkpoint_id=config["checkpoint_id"])
        said = client.runs.wait(thread, "memory", input=_says(f"I like {word} very much."))
        assert "__error__" not in said, said
        self.said[user].setdefault(thread, []).append(word)
        return f"time travel {user} {thread}"

    def peek(self, user: str) -> str:
        """Another user's thread: not found, on every endpoint tried."""
        others = [(o, t) for o in USERS if o != user for t in self.threads[o]]
        if not others:
            return self.turn(user)
        _, thread = self.rng.choice(others)
        client = self.clients[user]
        for call in (client.threads.get_state, client.threads.get, client.threads.delete):
            with pytest.raises(httpx.HTTPStatusError) as caught:
                call(thread)
            assert caught.value.response.status_code == 404
        return f"peek {user}"

    def erase(self, user: str) -> str:
        server = LangGraphServerThreads(
            self.url, headers={"Authorization": f"Bearer {TOKENS[user]}"}
        )
        try:
            self.memory.attach(server=server)
            removed = self.memory.forget_user(user)
        finally:
            self.memory.tiers.servers = []
            server.close()
        assert "unreached" not in removed, removed
        self.gone.update(w for t in self.said[user].values() for w in t)
        self.said[user], self.threads[user] = {}, []
        return f"erase {user}"

    # ----- the invariants -----

    def check(self) -> None:
        for user in USERS:
            client = self.clients[user]
            others = tuple(f"Zq{o}" for o in USERS if o != user)
            found = client.threads.search(limit=1000)
            assert all(t["metadata"].get("owner") == user for t in found)
            assert {t["thread_id"] for t in found} == set(self.threads[user])
            for thread in self.threads[user]:
                record = str(client.threads.get(thread))
                state = str(client.threads.get_state(thread))
                client.threads.get_history(thread, limit=5)  # readable
                assert not any(o in record + state for o in others), f"{user}'s {thread}"
                assert not any(g in record + state for g in self.gone), f"{thread} holds gone"
            exported = str(self.memory.export_user(user))
            assert not any(o in exported for o in others), f"{user}'s export"
        if self.gone:
            needles = [g.encode() for g in self.gone]
            for key in self.raw.scan_iter(count=1000):
                dumped = self.raw.dump(key) or b""
                held = [n for n in needles if n in dumped]
                assert not held, f"{key!r} still holds {held}"


def test_a_long_walk_of_every_endpoint_keeps_each_users_memory_and_threads(
    example_server: str,  # noqa: F811
    redis_server_url: str,
    key_prefix: str,
) -> None:
    walk = Walk(example_server, redis_server_url, key_prefix)
    steps = [walk.turn] * 4 + [walk.summarize, walk.copy, walk.delete, walk.rollback]
    steps += [walk.time_travel, walk.peek, walk.erase]
    try:
        for user in USERS:  # everyone starts with a thread
            walk.turn(user)
        done: list[str] = []
        for i in range(STEPS):
            step = walk.rng.choice(steps)
            user = walk.rng.choice(USERS)
            try:
                done.append(step(user))
                walk.check()
            except Exception as exc:
                raise AssertionError(f"seed {SEED}, step {i} after {done}: {exc}") from exc
    finally:
        walk.memory.close()

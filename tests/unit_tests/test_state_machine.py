"""A model-based test of the privacy and ownership guarantees (issues 55, 66): hypothesis
drives random interleavings of two or three users' turns on shared and private thread ids
through every door (the prebuilt graph sync and async on the memory's own saver, the
middleware on an attached ``InMemorySaver`` whose model calls ``search_memory``), runs that
name no user, thread copies, tag writes, summary items, single deletes and edits,
``forget_thread``, ``forget_user``, TTL expiry (time moved on the server, never slept),
restarts of the memory and reads from each door, on a real embedded server, and checks
the invariants after every step:

- no user's export, prompt or thread state holds another user's text;
- every key of a user served with ``user_ttl`` (theirs, their threads') expires within
  ``user_ttl`` (SCAN + PTTL), and no operation on behalf of one user (a turn, a refused
  turn, an export, an erasure, a delete, an edit, a copy) changes another user's keys,
  their values (DUMP) or their clocks (PTTL), dan's included: a bystander served by a
  second memory *without* ``user_ttl`` on the same Redis, whose keys never expire
  (issue 76: a clean-up left a user's history without a TTL, and one user's export
  restarted every other user's thread clocks, and no test failed);
- after an erasure, a delete or an expiry, no key of the keyspace (SCAN + DUMP) and no
  attached in-process saver holds the erased text; nothing a run with no user sent is
  held anywhere;
- no acknowledged turn is lost: each is in its user's history until erased.

The suite runs a bounded number of examples; ``TM_STATE_MACHINE_EXAMPLES=500`` runs more
(the issue's long run; the note gives its count).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from support import stored_bytes

from langchain_tiered_memory import (
    HashingEmbeddings,
    MissingUserIdError,
    ThreadOwnershipError,
    TieredMemory,
    TieredMemoryMiddleware,
    create_memory_graph,
)
from langchain_tiered_memory.backend.keys import KeyBuilder
from langchain_tiered_memory.testing import ScriptedChatModel

USERS = ("ann", "bob", "cyd")
BYSTANDER = "dan"  # served by a memory without user_ttl, on the same Redis and prefix
KEYS = KeyBuilder("tm")
SHARED = ("room-1", "room-2")  # thread ids several users try
DOORS = ("graph", "async", "agent")  # agent: the middleware, on an attached InMemorySaver


def _reply(prompt: list[BaseMessage]) -> AIMessage:
    """The model: a turn that says "search" looks its memory up first, then answers."""
    last = prompt[-1]
    if isinstance(last, HumanMessage) and "search" in last.text:
        call = {"name": "search_memory", "args": {"query": "note"}, "id": "s1"}
        return AIMessage(content="", tool_calls=[call])
    return AIMessage(content="ok")


TTL = 3600  # user_ttl, seconds; expiry is simulated by moving the server's clocks
EXAMPLES = int(os.environ.get("TM_STATE_MACHINE_EXAMPLES", "10"))
# the run is bounded by its examples, not by a clock: beside a busy process it may take
# longer than the suite's default per-test timeout
pytestmark = pytest.mark.timeout(1800)


def _read(pipe: Any, key: bytes, kind: bytes) -> None:
    """Queue the command that reads a key of ``kind`` whole."""
    reads = {
        b"string": ("GET",),
        b"hash": ("HGETALL",),
        b"list": ("LRANGE", 0, -1),
        b"set": ("SMEMBERS",),
        b"zset": ("ZRANGE", 0, -1, "WITHSCORES"),
        b"stream": ("XRANGE", "-", "+"),
    }
    command = reads.get(kind)
    if command is None:  # gone since the SCAN ("none"), or a type no store writes
        pipe.dump(key)
    else:
        pipe.execute_command(command[0], key, *command[1:])


class MemoryMachine(RuleBasedStateMachine):
    """The memory as the app, the CLI and the console use it, against a plain model."""

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="tm-sm-"))
        self.n = 0
        # the model: what each user said that must still be there, per thread
        self.said: dict[str, dict[str, list[str]]] = {u: {} for u in USERS}
        self.owner: dict[str, str] = {}  # thread -> user of its first turn
        self.items: dict[str, dict[str, str]] = {u: {} for u in USERS}  # id -> text
        self.tags: dict[str, list[str]] = {u: [] for u in USERS}  # every value (history)
        self.erased: set[str] = set()  # texts no key and no attached saver may hold
        self.expired: set[str] = set()  # texts no key may hold (user_ttl passed)
        self.door: dict[str, str] = {}  # thread -> the door (and so the saver) holding it
        self.copies: dict[str, str] = {}  # copied thread -> its source
        self.saver = InMemorySaver()  # the app's, attached: lives as long as the process
        self.lingering: dict[str, set[str]] = {u: set() for u in USERS}  # records expired
        self.orphaned: set[str] = set()  # threads whose owner's records expired
        self.dan_threads: set[str] = set()
        self._open()

    def _open(self) -> None:
        self.memory = TieredMemory.embedded(self.dir, embeddings=HashingEmbeddings(), user_ttl=TTL)
        assert self.memory.connection is not None
        self.memory.connection.sync.config_set("rdbcompression", "no")  # DUMP shows text
        # another app of the same operator: the same server, no user_ttl (opened after
        # the memory that starts the server, closed before it)
        self.plain = TieredMemory.embedded(self.dir, embeddings=HashingEmbeddings())
        self.plain_graph: Any = create_memory_graph(
            ScriptedChatModel(replies=[_reply]),
            memory=self.plain,
            checkpointer=self.plain.checkpointer(),
        )
        self.graph: Any = create_memory_graph(
            ScriptedChatModel(replies=[_reply]),
            memory=self.memory,
            checkpointer=self.memory.checkpointer(),
            recall_k=2,
        )
        self.agent: Any = create_agent(
            ScriptedChatModel(replies=[_reply]),
            tools=[],
            middleware=[TieredMemoryMiddleware(self.memory)],
            checkpointer=self.memory.checkpointer(self.saver),
        )

    def teardown(self) -> None:
        self.plain.close()
        self.memory.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _token(self, user: str) -> str:
        self.n += 1
        return f"zq{user}x{self.n}q"  # a user's text: unique, and no other user's id

    def _forget_texts(self, texts: list[str]) -> None:
        self.erased.update(texts)

    # ----- rules -----

    @rule(
        user=st.sampled_from(USERS),
        thread=st.one_of(st.sampled_from(SHARED), st.sampled_from(("own-1", "own-2"))),
        door=st.sampled_from(DOORS),
        search=st.booleans(),
    )
    def turn(self, user: str, thread: str, door: str, search: bool) -> None:
        if thread.startswith("own"):
            thread = f"{user}-{thread}"
        if thread in self.orphaned:
            return
        door = self.door.get(thread, door)  # a thread stays on the saver it started on
        text = self._token(user)
        config = {"configurable": {"thread_id": thread}}
        owner = self.owner.get(thread, user)
        said = {"messages": [HumanMessage(f"{'search ' if search else ''}note {text}")]}
        try:
            with self._only(user):
                self._run(door, said, config, {"user_id": user})
        except ThreadOwnershipError:
            assert owner != user, f"{user} refused on their own thread {thread}"
            return
        assert owner == user, f"{user}'s turn ran on {owner}'s thread {thread}"
        self.owner[thread] = user
        self.door[thread] = door
        self.said[user].setdefault(thread, []).append(text)

    def _run(self, door: str, said: Any, config: Any, context: Any) -> None:
        if door == "async":
            asyncio.run(self.graph.ainvoke(said, config, context=context))
        else:
            (self.agent if door == "agent" else self.graph).invoke(said, config, context=context)

    @rule(
        thread=st.one_of(st.sampled_from(SHARED), st.sampled_from(("ann-own-1", "new-1"))),
        door=st.sampled_from(DOORS),
        context=st.sampled_from([None, {}, {"user_id": ""}, {"user": "ann"}]),
    )
    def guest_run(self, thread: str, door: str, context: Any) -> None:
        """A run that names no usable user is refused before anything is written."""
        text = self._token("guest")
        door = self.door.get(thread, door)
        config = {"configurable": {"thread_id": thread}}
        try:
            with self._only(None):
                self._run(door, {"messages": [HumanMessage(f"note {text}")]}, config, context)
        except (MissingUserIdError, ValueError):
            self.erased.add(text)  # held nowhere, ever
            return
        raise AssertionError(f"a run with context {context!r} ran on {thread}")

    def _copyable(self) -> list[str]:
        return sorted(t for t in self.owner if self.door[t] != "agent" and t not in self.orphaned)

    @precondition(lambda self: bool(self._copyable()))
    @rule(data=st.data())
    def copy_thread(self, data: st.DataObject) -> None:
        """LangGraph's copy_thread (the server's threads.copy): the copy is the owner's."""
        source = data.draw(st.sampled_from(self._copyable()))
        self.n += 1
        target = f"copy-{self.n}"
        user = self.owner[source]
        with self._only(user):
            self.memory.checkpointer().copy_thread(source, target)
        self.owner[target] = user
        self.door[target] = "graph"
        self.copies[target] = source
        self.said[user][target] = []  # its texts are the source's, in its checkpoints

    def _forkable(self) -> list[str]:
        return sorted(
            t
            for t, door in self.door.items()
            if door == "graph" and t in self.owner and t not in self.orphaned
        )

    @precondition(lambda self: bool(self._forkable()))
    @rule(data=st.data())
    def fork(self, data: st.DataObject) -> None:
        """A run from the checkpoint before the thread's last turn (time travel, an edit
        as a new message): the branch left stays in the history, marked, and is erased
        with the thread or the user like any of its messages."""
        thread = data.draw(st.sampled_from(self._forkable()))
        user = self.owner[thread]
        as_owner = {"configurable": {"thread_id": thread, "user_id": user}}
        ended = [s for s in self.graph.get_state_history(as_owner) if not s.next]
        if len(ended) < 2:
            return
        text = self._token(user)
        said = {"messages": [HumanMessage(f"note {text}")]}
        with self._only(user):
            self.graph.invoke(said, ended[1].config, context={"user_id": user})
        self.said[user][thread].append(text)

    @rule(user=st.sampled_from(USERS))
    def tag_write(self, user: str) -> None:
        value = self._token(user)
        with self._only(user):
            self.memory.set_user_tags(user, {"name": value})
        # a tag's change history keeps the old values until the user is forgotten
        self.tags[user].append(value)

    @rule(user=st.sampled_from(USERS))
    def add_item(self, user: str) -> None:
        text = self._token(user)
        with self._only(user):
            (item_id,) = self.memory.add_summaries(user, [f"The user said {text}."])
        self.items[user][item_id] = text

    @precondition(lambda self: any(self.items.values()))
    @rule(data=st.data())
    def delete_item(self, data: st.DataObject) -> None:
        user = data.draw(st.sampled_from([u for u in USERS if self.items[u]]))
        item_id = data.draw(st.sampled_from(sorted(self.items[user])))
        with self._only(user):
            self.memory.delete_summaries(user, [item_id])
        self._forget_texts([self.items[user].pop(item_id)])

    @precondition(lambda self: any(self.items.values()))
    @rule(data=st.data())
    def edit_item(self, data: st.DataObject) -> None:
        user = data.draw(st.sampled_from([u for u in USERS if self.items[u]]))
        item_id = data.draw(st.sampled_from(sorted(self.items[user])))
        text = self._token(user)
        with self._only(user):
            self.memory.update_summary(user, item_id, f"The user said {text}.")
        # the item keeps its earlier text (metadata["edits"]): not erased, still the user's
        self.items[user][item_id] = text

    @precondition(lambda self: any(self.said[u] for u in USERS))
    @rule(data=st.data())
    def forget_thread(self, data: st.DataObject) -> None:
        user = data.draw(st.sampled_from([u for u in USERS if self.said[u]]))
        thread = data.draw(st.sampled_from(sorted(self.said[user])))
        with self._only(user):
            self.memory.forget_thread(user, thread)
        texts = self.said[user].pop(thread)
        # what a copy of the thread still holds is that copy's, until it is forgotten
        kept = {t for c, src in self.copies.items() if src == thread for t in texts}
        self._forget_texts([t for t in texts if t not in kept])
        self.owner.pop(thread, None)  # erasure frees the id
        self.door.pop(thread, None)
        self.copies.pop(thread, None)

    @rule(user=st.sampled_from(USERS))
    def forget_user(self, user: str) -> None:
        with self._only(user):
            self.memory.forget_user(user)
        self._erase_model(user)

    @rule(user=st.sampled_from(USERS))
    def expire(self, user: str) -> None:
        """``user_ttl`` passes for ``user``: every key of theirs expires together (their
        keys and threads' keys moved to 1 ms, the directory's clock moved back), then
        ``other``'s next read sweeps the directory, with no worker."""
        connection = self.memory.connection
        assert connection is not None
        sync = connection.sync
        threads = [t for t, owner in self.owner.items() if owner == user]
        patterns = [f"tm:{{{user}}}*", *(f"tm:{{cp:{t}}}*" for t in threads)]
        for pattern in patterns:
            for key in sync.scan_iter(match=pattern):
                sync.pexpire(key, 1)
        sync.zadd("tm:{dir:}:dir:active", {user: time.time() - TTL - 60}, xx=True)
        deadline = time.monotonic() + 10
        while any(sync.exists(k) for p in patterns for k in sync.scan_iter(match=p)):
            assert time.monotonic() < deadline, "keys did not expire"
            time.sleep(0.005)  # the server's clock: 1 ms, not the TTL
        other = USERS[(USERS.index(user) + 1) % len(USERS)]
        self.memory.load(other, "hello")
        # what expired is gone from Redis; the app's own saver keeps its threads by its own
        # retention until the user is forgotten (each checkpoint names its user)
        for thread in [t for t, d in self.door.items() if d == "agent"]:
            if self.owner.get(thread) == user:
                self.lingering[user].update(self.said[user].pop(thread, []))
        self._erase_model(user, expired=True)

    @rule(user=st.sampled_from(USERS))
    def expire_records(self, user: str) -> None:
        """The user's own keys expire on their clock while their threads live on (a read
        restarted the memory's own thread keys; the app's saver never expires): the
        threads still hold what they said until the user is forgotten, then nothing does
        (issue 66 item 6)."""
        connection = self.memory.connection
        assert connection is not None
        sync = connection.sync
        pattern = f"tm:{{{user}}}*"
        for key in sync.scan_iter(match=pattern):
            sync.pexpire(key, 1)
        deadline = time.monotonic() + 10
        while any(True for _ in sync.scan_iter(match=pattern)):
            assert time.monotonic() < deadline, "keys did not expire"
            time.sleep(0.005)
        # the directory's entry is on the user's clock too: the next read sweeps it
        sync.zadd("tm:{dir:}:dir:active", {user: time.time() - TTL - 60}, xx=True)
        self.memory.load(USERS[(USERS.index(user) + 1) % len(USERS)], "hello")
        texts = [t for thread in self.said[user].values() for t in thread]
        self.lingering[user].update(texts)  # in the threads, gone from the history
        self.expired.update([*self.items[user].values(), *self.tags[user]])
        self.items[user] = {}
        self.tags[user] = []
        self.said[user] = {}
        # the threads are nobody's to continue now (their owner record may have gone)
        self.orphaned.update(t for t, owner in self.owner.items() if owner == user)

    @rule()
    def restart(self) -> None:
        with self._only(None):
            self.plain.close()
            self.memory.close()
            self._open()

    @rule(thread=st.sampled_from(("dan-1", "dan-2")))
    def bystander_turn(self, thread: str) -> None:
        """dan talks to the other app: his keys have no clock and must keep none."""
        text = self._token(BYSTANDER)
        config = {"configurable": {"thread_id": thread}}
        said = {"messages": [HumanMessage(f"note {text}")]}
        self.plain_graph.invoke(said, config, context={"user_id": BYSTANDER})
        self.dan_threads.add(thread)

    # ----- whose keys: the cross-user check around every operation -----

    def _owner_of(self, key: bytes) -> str | None:
        user = KEYS.user_from_key(key)
        if user is not None:
            return user
        thread = KEYS.thread_from_key(key)
        if thread is None:
            return None  # shared: the directory, the queue, a run's index, the format
        if thread in self.dan_threads:
            return BYSTANDER
        return self.owner.get(thread)

    def _snapshot(self, acting: str | None) -> dict[bytes, tuple[int, Any]]:
        """(PTTL, value) of every key of every user but ``acting`` (every user's: None).
        The value as read by its type, not DUMP's bytes: a restarted server encodes a
        hash again (listpack, hashtable), which changes DUMP and not the data."""
        connection = self.memory.connection
        assert connection is not None
        sync = connection.sync
        keys = [
            k
            for k in sync.scan_iter(count=1000)
            if (owner := self._owner_of(k)) is not None and owner != acting
        ]
        pipe = sync.pipeline(transaction=False)
        for key in keys:
            pipe.type(key)
        kinds = pipe.execute()
        for key, kind in zip(keys, kinds, strict=True):
            pipe.pttl(key)
            _read(pipe, key, kind)
        replies = pipe.execute()
        return {k: (int(replies[2 * i]), replies[2 * i + 1]) for i, k in enumerate(keys)}

    @contextmanager
    def _only(self, acting: str | None) -> Iterator[None]:
        """What runs inside acts on behalf of ``acting`` (of no user: None): every other
        user's keys keep their values and their clocks (a clock only runs down), checked
        when it raises too (a refused turn is the case that matters)."""
        before = self._snapshot(acting)
        try:
            yield
        finally:
            self._unchanged(acting, before)

    def _unchanged(self, acting: str | None, before: dict[bytes, tuple[int, Any]]) -> None:
        after = self._snapshot(acting)
        for key, (ttl, value) in before.items():
            now = after.get(key)
            assert now is not None, f"{acting}'s operation deleted {key!r}"
            assert now[1] == value, f"{acting}'s operation changed {key!r}"
            if ttl == -1:
                assert now[0] == -1, f"{acting}'s operation gave {key!r} a TTL ({now[0]} ms)"
            else:
                assert -1 < now[0] <= ttl, f"{acting}'s operation restarted {key!r}'s clock"
        added = set(after) - set(before)
        assert not added, f"{acting}'s operation made keys of another user: {added}"

    def _erase_model(self, user: str, *, expired: bool = False) -> None:
        texts = [t for thread in self.said[user].values() for t in thread]
        if not expired:  # what lingered in threads after the records expired: erased now
            texts += self.lingering[user]
            self.lingering[user] = set()
        texts += list(self.items[user].values())
        texts += self.tags[user]
        (self.expired.update if expired else self._forget_texts)(texts)
        self.said[user] = {}
        self.items[user] = {}
        self.tags[user] = []
        for thread in [t for t, owner in self.owner.items() if owner == user]:
            if expired and self.door.get(thread) == "agent":
                self.orphaned.add(thread)  # the app's saver holds it: nobody's to continue
                continue
            del self.owner[thread]
            self.orphaned.discard(thread)
            self.door.pop(thread, None)
            self.copies.pop(thread, None)

    # ----- invariants -----

    @invariant()
    def every_key_of_a_ttl_user_expires_within_user_ttl(self) -> None:
        connection = self.memory.connection
        assert connection is not None
        sync = connection.sync
        keys = [k for k in sync.scan_iter(count=1000) if self._owner_of(k) in USERS]
        pipe = sync.pipeline(transaction=False)
        for key in keys:
            pipe.pttl(key)
        wrong = {
            k: ttl
            for k, ttl in zip(keys, pipe.execute(), strict=True)
            if ttl != -2 and not 0 <= ttl <= TTL * 1000  # -2: gone since the SCAN
        }
        assert not wrong, f"keys that outlive user_ttl ({TTL} s): {wrong}"

    @invariant()
    def no_user_reads_another_users_text(self) -> None:
        for user in USERS:
            with self._only(user):
                exported = str(self.memory.export_user(user))
                prompt = str(self.memory.load(user, "what do you know about me?"))
            for other in (*USERS, BYSTANDER):
                if other == user:
                    continue
                mark = f"zq{other}x"
                assert mark not in exported, f"{user}'s export holds {other}'s text"
                assert mark not in prompt, f"{user}'s prompt holds {other}'s text"
            for thread in self.said[user]:
                config = {"configurable": {"thread_id": thread, "user_id": user}}
                door = self.agent if self.door.get(thread) == "agent" else self.graph
                state = str(door.get_state(config).values)
                assert all(f"zq{o}x" not in state for o in USERS if o != user)

    @invariant()
    def no_acknowledged_turn_is_lost(self) -> None:
        for user in USERS:
            history = " ".join(str(m.text) for m in self.memory.load_context(user, max=10_000))
            for thread, texts in self.said[user].items():
                for text in texts:
                    assert text in history, f"{user}'s turn {text} on {thread} was lost"

    @invariant()
    def no_key_holds_erased_text(self) -> None:
        if not self.erased and not self.expired:
            return
        connection = self.memory.connection
        assert connection is not None
        sync = connection.sync
        needles = [t.encode() for t in self.erased | self.expired]
        for key in sync.scan_iter(count=1000):
            stored = stored_bytes(sync, key)  # checkpoint records decoded
            held = [n for n in needles if any(n in v for v in stored)]
            assert not held, f"{key!r} still holds {held}"
        in_process = repr(self.saver.storage) + repr(self.saver.writes) + repr(self.saver.blobs)
        held_here = [t for t in self.erased if t in in_process]
        assert not held_here, f"the attached InMemorySaver still holds {held_here}"


MemoryMachine.TestCase.settings = settings(
    max_examples=EXAMPLES,
    stateful_step_count=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestMemoryStateMachine = MemoryMachine.TestCase

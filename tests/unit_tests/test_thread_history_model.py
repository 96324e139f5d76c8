"""A model-based test of the rule for what a thread's history holds (issue 78): hypothesis
drives one user's thread (ann's) through both doors (the prebuilt graph on a plain
``InMemorySaver``, the middleware on an attached one), on the in-memory stores and on the
embedded Redis, with random interleavings of

- turns whose human message has a client-numbered id ("m1", "m2", ... counted from the
  client's current list, so after a trim or a removal an id an earlier message had comes
  back) or none (LangGraph assigns one), in English, Chinese and Spanish;
- ``RemoveMessage(REMOVE_ALL_MESSAGES)``, a client's "keep the last N" trim, the removal of
  one message;
- an edit in place at the head (``update_state`` with the message's id, then a turn);
- LangGraph's time-travel edit (``update_state`` at the checkpoint before a turn's model
  call, then ``invoke(None, ...)``) of a random earlier turn;
- a fork (a new turn from the checkpoint where an earlier turn ended);
- a replayed save (``add_session_log`` again with a batch a turn saved, at its position);

and checks after every step that ann's current history (``load_context``, without the
messages marked ``tiered_memory_retracted == "abandoned"``) is, by id and text and in
order, the model: every message the thread's current branch ever held, each once, with its
latest text on that branch. bob's thread, on the same memory and with the same client ids,
never changes.

Where the rule leaves an interleaving open, the model takes what an app developer would
expect, said where it is decided (``_fork_to`` and ``replayable``): the history follows the
branch, so going back before an edit in place brings back the text the branch had there.

A failure is named by the kind of step after which the history and the model differ
(``HistoryMismatchAfter_fork``, ...): hypothesis shrinks and reports each kind on its own.

The suite runs 4 examples of 25 steps per door and store (about 15 s in all while the rule
holds); ``TM_THREAD_HISTORY_EXAMPLES=300`` runs the issue's long run (some minutes per
test; ``TM_THREAD_HISTORY_STEPS`` sets the steps per example).
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from langchain_tiered_memory import (
    EmbeddedRedis,
    HashingEmbeddings,
    TieredMemory,
    TieredMemoryMiddleware,
    create_memory_graph,
)
from langchain_tiered_memory.agent.unsaved import mark
from langchain_tiered_memory.stores.history.rule import MARK_IDS
from langchain_tiered_memory.testing import ScriptedChatModel

EXAMPLES = int(os.environ.get("TM_THREAD_HISTORY_EXAMPLES", "4"))
STEPS = int(os.environ.get("TM_THREAD_HISTORY_STEPS", "25"))
# the long run is bounded by its examples, not by a clock
pytestmark = pytest.mark.timeout(max(300, 30 * EXAMPLES))

DOORS = ("graph", "middleware")
ANN, BOB = "ann", "bob"
THREAD, BOBS_THREAD = "ann-thread", "bob-thread"
RETRACTED, ABANDONED = "tiered_memory_retracted", "abandoned"
SAID = (
    "My sister's birthday is May 5.",
    "I live in Lyon with two cats.",
    "我的门禁密码是ALPHA-123。",
    "我每天早上六点起床。",
    "Mi color favorito es el azul.",
    "Trabajo como enfermera en Madrid.",
)
_prefixes = itertools.count()


@dataclass(frozen=True)
class Entry:
    """A message of the model: ``uid`` tells two messages with one (reused) id apart."""

    uid: int
    id: str
    text: str


@dataclass
class Turn:
    """A turn on the thread's current branch, with the checkpoints it can be returned to."""

    before_model: RunnableConfig  # the checkpoint before its model call (time travel)
    end: RunnableConfig  # where its run ended (a fork)
    model_before: list[Entry]  # the model at before_model
    model_after: list[Entry]  # the model at end


@dataclass
class Batch:
    """A save a turn made: what ``add_session_log`` was given, and the model's entries."""

    messages: list[BaseMessage]
    position: int | None
    entries: list[Entry] = field(default_factory=list)


class HistoryMismatch(AssertionError):
    """ann's current history is not the model. Subclassed per step kind (``_mismatch``):
    hypothesis shrinks and reports a failure after each kind of step on its own."""


_MISMATCHES: dict[str, type[HistoryMismatch]] = {}


def _mismatch(step: str) -> type[HistoryMismatch]:
    if step not in _MISMATCHES:
        _MISMATCHES[step] = type(f"HistoryMismatchAfter_{step}", (HistoryMismatch,), {})
    return _MISMATCHES[step]


def _as(user: str, thread: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread, "user_id": user}}


def _owned(config: RunnableConfig) -> RunnableConfig:
    """A checkpoint's config as ann's (the guard refuses a write that names no user)."""
    return {**config, "configurable": {**config["configurable"], "user_id": ANN}}


def _pairs(messages: list[BaseMessage]) -> list[tuple[str | None, str]]:
    return [(m.id, m.text) for m in messages]


def _short(pair: tuple[str | None, str] | None) -> str:
    """A message as the failure shows it: its id's head and its text."""
    return "-" if pair is None else f"{str(pair[0])[-12:]}: {pair[1][:44]}"


def _in_order(part: list[Any], whole: list[Any]) -> bool:
    rest = iter(whole)
    return all(any(x == y for y in rest) for x in part)


class ThreadHistoryMachine(RuleBasedStateMachine):
    """ann's thread through one door; the memory is made by :meth:`new_memory`."""

    door = "graph"

    def __init__(self) -> None:
        super().__init__()
        self.said = 0  # replies said: each reply's text is its own
        self.step = "start"  # the kind of the last step (the failure's name)
        self.memory = self.new_memory()
        self.saves: list[tuple[list[BaseMessage], int | None]] = []  # ann's, by the door
        self._spy_on_saves()
        self.agent = self._agent()
        self.model: list[Entry] = []  # ann's current branch, as the history must hold it
        self.turns: list[Turn] = []  # the current branch's turns, oldest first
        self.batches: list[Batch] = []  # the saves of the turns, oldest first
        self.latest: list[Batch] = []  # the last turn's
        self.uids = itertools.count()
        self.trimmed = False  # a removal happened on the thread (see edit_in_place)
        # bob said the same client ids first: nothing of ann's may touch his
        for n, text in ((1, "I am Bob."), (3, "Soy de Sevilla.")):
            self.agent.invoke(
                {"messages": [HumanMessage(text, id=f"m{n}")]},
                _as(BOB, BOBS_THREAD),
                context={"user_id": BOB},
            )
        self.bobs = self._history(BOB)
        assert _pairs([m for m in self.bobs if m.type == "human"]) == [
            ("m1", "I am Bob."),
            ("m3", "Soy de Sevilla."),
        ]

    def new_memory(self) -> TieredMemory:
        raise NotImplementedError

    def teardown(self) -> None:
        self.memory.close()

    def _agent(self) -> Any:
        model = ScriptedChatModel(replies=[self._reply])
        if self.door == "graph":
            return create_memory_graph(model, memory=self.memory, checkpointer=InMemorySaver())
        return create_agent(
            model,
            tools=[],
            middleware=[TieredMemoryMiddleware(self.memory)],
            checkpointer=self.memory.checkpointer(InMemorySaver()),
        )

    def _reply(self, prompt: list[BaseMessage]) -> AIMessage:
        self.said += 1
        return AIMessage(f"Reply {self.said}: noted.")

    def _spy_on_saves(self) -> None:
        """What the door gives ``add_session_log`` for ann (the batches ``replay`` saves
        again); the replays themselves are not recorded."""
        save, asave = self.memory.add_session_log, self.memory.aadd_session_log

        def spy(user_id: str, messages: Any, **kwargs: Any) -> Any:
            if user_id == ANN and kwargs.get("thread_id") == THREAD:
                self.saves.append((list(messages), kwargs.get("thread_position")))
            return save(user_id, messages, **kwargs)

        async def aspy(user_id: str, messages: Any, **kwargs: Any) -> Any:
            if user_id == ANN and kwargs.get("thread_id") == THREAD:
                self.saves.append((list(messages), kwargs.get("thread_position")))
            return await asave(user_id, messages, **kwargs)

        self.memory.add_session_log = spy  # type: ignore[method-assign]
        self.memory.aadd_session_log = aspy  # type: ignore[method-assign]

    # ----- the thread, as the client sees it -----

    def _history(self, user: str) -> list[BaseMessage]:
        return list(self.memory.load_context(user, max=100_000))

    def _state(self, config: RunnableConfig | None = None) -> Any:
        return self.agent.get_state(config or _as(ANN, THREAD))

    def _messages(self, config: RunnableConfig | None = None) -> list[BaseMessage]:
        return list(self._state(config).values.get("messages", []))

    def _before_model(self, head: Any) -> Any:
        """The checkpoint before the model call of the turn that ended at ``head``."""
        snapshot = head
        while tuple(snapshot.next) != ("model",):
            assert snapshot.parent_config is not None, "no model call in the turn"
            snapshot = self._state(_owned(snapshot.parent_config))
        return snapshot

    @staticmethod
    def _client_id(messages: list[BaseMessage]) -> str:
        """A client that numbers the messages of its current list: the next number no
        message it holds has (one a removed message had comes back)."""
        held = {m.id for m in messages}
        n = len(messages) + 1
        while f"m{n}" in held:
            n += 1
        return f"m{n}"

    def _entry(self, message: BaseMessage) -> Entry:
        assert message.id, "a message of the thread has no id"
        return Entry(next(self.uids), message.id, message.text)

    # ----- one turn, from the head, a fork point or a time-travel edit -----

    def _run(
        self,
        said: dict[str, Any] | None,
        config: RunnableConfig,
        model_before: list[Entry],
        kept_turns: list[Turn],
    ) -> None:
        """Run a turn from ``config`` (``said`` None: resume a time-travel edit); the model
        becomes ``model_before`` + the turn's human message and reply."""
        self.saves.clear()
        self.agent.invoke(said, config, context={"user_id": ANN})
        head = self._state()
        *_, human, reply = head.values["messages"]
        assert isinstance(reply, AIMessage) and reply.text == f"Reply {self.said}: noted."
        assert isinstance(human, HumanMessage)
        before = self._before_model(head)
        turn_entries = [self._entry(human), self._entry(reply)]
        self.model = [*model_before, *turn_entries]
        self.turns = [
            *kept_turns,
            Turn(_owned(before.config), _owned(head.config), list(model_before), list(self.model)),
        ]
        by_id = {e.id: e for e in turn_entries}
        self.latest = []
        for messages, position in self.saves:
            entries = [by_id.get(m.id or "") for m in messages]
            if all(e is not None and e.text == m.text for e, m in zip(entries, messages)):
                self.latest.append(Batch(messages, position, [e for e in entries if e]))
        self.batches += self.latest

    def _said(self, index: int, numbered: bool, messages: list[BaseMessage]) -> HumanMessage:
        text = SAID[index]
        return HumanMessage(text, id=self._client_id(messages)) if numbered else HumanMessage(text)

    # ----- rules -----

    @rule(index=st.integers(0, len(SAID) - 1), numbered=st.booleans())
    def turn(self, index: int, numbered: bool) -> None:
        """A turn, its id numbered by the client or assigned by LangGraph."""
        self.step = "turn_numbered" if numbered else "turn"
        self._turn(index, numbered)

    def _turn(self, index: int, numbered: bool) -> None:
        human = self._said(index, numbered, self._messages())
        self._run({"messages": [human]}, _as(ANN, THREAD), self.model, self.turns)

    @precondition(lambda self: bool(self.turns))
    @rule()
    def remove_all(self) -> None:
        """The client clears the thread: the history keeps every message."""
        self.step = "remove_all"
        self.trimmed = True
        self.agent.update_state(
            _as(ANN, THREAD), {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES)]}
        )

    @precondition(lambda self: bool(self.turns))
    @rule(keep=st.integers(0, 3), whole=st.booleans())
    def keep_last(self, keep: int, whole: bool) -> None:
        """A client's "keep the last N": a removal per message, or remove-all and the kept
        ones again (as trimming middleware does)."""
        self.step = "keep_last"
        self.trimmed = True
        messages = self._messages()
        kept = messages[len(messages) - keep :] if keep else []
        if whole:
            update = [RemoveMessage(id=REMOVE_ALL_MESSAGES), *kept]
        else:
            update = [RemoveMessage(id=m.id or "") for m in messages[: len(messages) - keep]]
        if update:
            self.agent.update_state(_as(ANN, THREAD), {"messages": update})

    @precondition(lambda self: bool(self.turns))
    @rule(data=st.data())
    def remove_one(self, data: st.DataObject) -> None:
        self.step = "remove_one"
        self.trimmed = True
        messages = self._messages()
        if not messages:
            return
        gone = data.draw(st.sampled_from(messages), label="removed")
        self.agent.update_state(_as(ANN, THREAD), {"messages": [RemoveMessage(id=gone.id or "")]})

    # Documented limits of the rule (docs/development.md): an edit in place is followed
    # for the last saved messages the state keeps (SAVED_IDS) in a thread that still holds
    # them; after removals the state cannot tell an edit from a removal and a new message.
    @precondition(lambda self: bool(self.turns) and not self.trimmed)
    @rule(data=st.data(), index=st.integers(0, len(SAID) - 1), numbered=st.booleans())
    def edit_in_place(self, data: st.DataObject, index: int, numbered: bool) -> None:
        """``update_state`` at the head with a human message's id, then a turn: the
        history holds the new text where the old one was."""
        self.step = "edit_in_place"
        # the rule follows an edit in place of the last saved messages the state keeps
        # (agent/unsaved.py: SAVED_IDS); an older one is documented as not followed
        state = self._state().values
        window = {a[:10] for a in state.get("saved_ids") or []}
        humans = [
            m
            for m in self._messages()
            if isinstance(m, HumanMessage) and m.id and mark(m.id) in window
        ]
        if not humans:
            return
        old = data.draw(st.sampled_from(humans), label="edited")
        new = data.draw(st.sampled_from(SAID), label="new text") + " (edited)"
        self.agent.update_state(_as(ANN, THREAD), {"messages": [HumanMessage(new, id=old.id)]})
        # the thread holds each id once: the message it holds is the newest of its id
        at = max(i for i, e in enumerate(self.model) if e.id == old.id)
        self.model[at] = Entry(self.model[at].uid, old.id or "", new)
        self._turn(index, numbered)

    @precondition(lambda self: bool(self.turns))
    @rule(data=st.data())
    def time_travel_edit(self, data: st.DataObject) -> None:
        """LangGraph's documented edit: the checkpoint before a turn's model call, the
        turn's human message with a new text, then ``invoke(None, ...)``. The history is
        the new branch: what the thread held there, the edit, the new reply."""
        self.step = "time_travel_edit"
        k = data.draw(st.integers(0, len(self.turns) - 1), label="turn")
        turn = self.turns[k]
        human = self._messages(turn.before_model)[-1]
        assert isinstance(human, HumanMessage)
        new = data.draw(st.sampled_from(SAID), label="new text") + " (time travel)"
        config = self.agent.update_state(
            turn.before_model, {"messages": [HumanMessage(new, id=human.id)]}
        )
        # as a fork (``_fork_to``): an edit in place made after this turn is on the branch
        # left, so the messages before the edited one have the text they had here
        self._run(None, _owned(config), turn.model_before, self.turns[:k])

    @precondition(lambda self: bool(self.turns))
    @rule(
        data=st.data(),
        index=st.integers(0, len(SAID) - 1),
        numbered=st.booleans(),
    )
    def fork(self, data: st.DataObject, index: int, numbered: bool) -> None:
        """A new turn from the checkpoint where an earlier turn's run ended."""
        self.step = "fork"
        k = data.draw(st.integers(0, len(self.turns) - 1), label="turn")
        self._fork_to(k, index, numbered)

    def _fork_to(self, k: int, index: int, numbered: bool) -> None:
        turn = self.turns[k]
        human = self._said(index, numbered, self._messages(turn.end))
        # Decided here (the rule leaves it open): the history follows the branch. A fork
        # to before an edit in place holds the text the branch had there (the thread's
        # own state shows it), not the edit the abandoned branch made.
        self._run({"messages": [human]}, turn.end, turn.model_after, self.turns[: k + 1])

    @precondition(lambda self: bool(self.replayable(latest=True)))
    @rule()
    def replay_latest(self) -> None:
        """The last turn's save stored again (a retry after a timeout that Redis applied,
        LangGraph's async durability): the same messages at the same position store
        nothing."""
        self.step = "replay_latest"
        for batch in self.replayable(latest=True):
            self._replay(batch)

    @precondition(lambda self: bool(self.replayable()))
    @rule(data=st.data())
    def replay_earlier(self, data: st.DataObject) -> None:
        """A save of any earlier turn of the current branch stored again, late (a queued
        retry delivered after later turns): it stores nothing and abandons nothing."""
        self.step = "replay_earlier"
        self._replay(data.draw(st.sampled_from(self.replayable()), label="batch"))

    def _replay(self, batch: Batch) -> None:
        self.memory.add_session_log(
            ANN, batch.messages, thread_id=THREAD, thread_position=batch.position
        )

    def replayable(self, *, latest: bool = False) -> list[Batch]:
        """Decided here: a batch is replayed while every message of it is on the current
        branch with the text it was saved with (replaying a branch a fork left, or a text
        an edit replaced, is a save of something else, not a replay). ``latest``: the
        saves of the last turn, if nothing changed the thread since."""
        if latest:
            if not self.turns:
                return []
            head = self._state().config["configurable"].get("checkpoint_id")
            last = self.turns[-1].end["configurable"]["checkpoint_id"]
            return self.latest if head == last else []
        current = set(self.model)
        # the store compares a batch with the thread's last MARK_IDS saved messages; a
        # batch older than those is documented as taken for a fork from its start
        saved = int(self._state().values.get("saved_count") or 0)
        return [
            b
            for b in self.batches
            if all(e in current for e in b.entries)
            and b.position is not None
            and b.position >= saved - MARK_IDS
        ]

    # ----- invariants -----

    @invariant()
    def the_history_is_the_current_branch(self) -> None:
        held = self._history(ANN)
        current = _pairs([m for m in held if m.response_metadata.get(RETRACTED) != ABANDONED])
        model = [(e.id, e.text) for e in self.model]
        if current != model:
            lines = "\n".join(
                f"  {'  ' if a == b else '!='} {_short(a):60} | {_short(b)}"
                for a, b in itertools.zip_longest(current, model)
            )
            raise _mismatch(self.step)(
                f"after {self.step}, ann's current history | the model:\n{lines}"
            )

    @invariant()
    def the_thread_is_in_the_model(self) -> None:
        """The test's own check: what the thread holds is in the model, in order."""
        assert _in_order(_pairs(self._messages()), [(e.id, e.text) for e in self.model])

    @invariant()
    def bobs_history_never_changes(self) -> None:
        now = self._history(BOB)
        assert [(m.type, m.id, m.text, m.response_metadata) for m in now] == [
            (m.type, m.id, m.text, m.response_metadata) for m in self.bobs
        ]


class InMemoryHistory(ThreadHistoryMachine):
    def new_memory(self) -> TieredMemory:
        return TieredMemory.in_memory(embeddings=HashingEmbeddings())


class RedisHistory(ThreadHistoryMachine):
    """On the session's embedded Redis, each example under a key prefix of its own."""

    data_dir: Path

    def new_memory(self) -> TieredMemory:
        return TieredMemory.embedded(
            self.data_dir, embeddings=HashingEmbeddings(), key_prefix=f"th{next(_prefixes)}"
        )


SETTINGS = settings(
    max_examples=EXAMPLES,
    stateful_step_count=STEPS,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


@pytest.mark.parametrize("door", DOORS)
def test_the_history_follows_the_thread_in_memory(door: str) -> None:
    machine = type(f"InMemory_{door}", (InMemoryHistory,), {"door": door})
    run_state_machine_as_test(machine, settings=SETTINGS)


@pytest.mark.parametrize("door", DOORS)
def test_the_history_follows_the_thread_on_redis(embedded_server: EmbeddedRedis, door: str) -> None:
    machine = type(
        f"Redis_{door}", (RedisHistory,), {"door": door, "data_dir": embedded_server.data_dir}
    )
    run_state_machine_as_test(machine, settings=SETTINGS)

"""The memory steps the prebuilt graph and the middleware share.

``MemoryNodes`` loads a turn's memory into the state, composes what the model is sent
(system prompt with the memory section, recent history, the thread trimmed to a token
budget) and saves the turn's new messages; ``ModelStep`` holds the guards around the model
call that ``ModelPolicy`` switches (forced capture, scripted requests, grounding, the tool
round limit). ``graph.py`` wires them into nodes; ``middleware.py`` into hooks.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    InvalidToolCall,
    SystemMessage,
    ToolCall,
    ToolMessage,
)
from langchain_core.messages.tool import invalid_tool_call, tool_call
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.runnables import RunnableConfig

from langchain_tiered_memory._portable import check_portable
from langchain_tiered_memory._steps import adrive, drive
from langchain_tiered_memory.agent.capture import (
    CAPTURE_NOTE,
    capture_reply,
    new_call_id,
    summarize_call,
    summary_reply,
    tag_answer,
)
from langchain_tiered_memory.agent.context import saved_position
from langchain_tiered_memory.agent.memory_query import (
    MEMORY_QUERY_TURNS,
    MemoryQueryKind,
    awrite_memory_query,
    write_memory_query,
)
from langchain_tiered_memory.agent.owned import require_guarded_checkpointer, run_config
from langchain_tiered_memory.agent.policy import ModelPolicy
from langchain_tiered_memory.agent.recalled import RECALLED, shown_results
from langchain_tiered_memory.agent.replies import (
    is_empty,
    no_reply,
    with_stored_items,
    without_echo,
    without_repeated_calls,
)
from langchain_tiered_memory.agent.settings import TurnSettings
from langchain_tiered_memory.agent.shown import conversation_only, models_words
from langchain_tiered_memory.agent.tools import (
    USER_TAG_TOOL,
)
from langchain_tiered_memory.agent.unsaved import last_human, unsaved
from langchain_tiered_memory.errors import InvalidMessageError
from langchain_tiered_memory.language.attribution import ground_tags, stated_tags, states_a_fact
from langchain_tiered_memory.memory import MemorySnapshot, TieredMemory
from langchain_tiered_memory.persistence.server_threads import served_by
from langchain_tiered_memory.retrieval.conversation import (
    DEFAULT_CONTEXT_TURNS,
    recent_user_texts,
)

logger = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_CONTEXT_TOKEN_BUDGET",
    "DEFAULT_MAX_TOOL_ROUNDS",
    "DEFAULT_MEMORY_TOKEN_BUDGET",
    "MemoryNodes",
    "ModelStep",
    "invalid_call_errors",
]

DEFAULT_MEMORY_TOKEN_BUDGET = 1000
DEFAULT_CONTEXT_TOKEN_BUDGET = 8000
DEFAULT_MAX_TOOL_ROUNDS = 5
CAPABLE = ModelPolicy(small=False)


def _newest_within(
    system: BaseMessage, messages: Sequence[BaseMessage], budget: int
) -> list[BaseMessage]:
    """The system message and the newest ``messages`` within ``budget`` tokens, from the
    first human message among them: ``trim_messages(strategy="last", start_on="human",
    include_system=True, allow_partial=False)`` with ``count_tokens_approximately``, in one
    pass. That counter adds up per message (each is rounded up on its own), so each message
    is counted once; ``trim_messages`` counts prefixes in a binary search, a tenth of a
    long thread's turn. tests/unit_tests/test_graph_limits.py checks the two agree.
    """
    remaining = max(0, budget - count_tokens_approximately([system]))
    used, start = 0, len(messages)
    for i in range(len(messages) - 1, -1, -1):
        used += count_tokens_approximately([messages[i]])
        if used > remaining:
            break
        start = i
    kept = messages[start:]
    first = next((j for j, m in enumerate(kept) if m.type == "human"), len(kept))
    return [system, *kept[first:]]


def _from_first_human(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """Drop what precedes the first human message: a history tail cut mid-turn would
    otherwise start with a ToolMessage or an AI tool call whose results were cut off.
    """
    for i, message in enumerate(messages):
        if isinstance(message, HumanMessage):
            return list(messages[i:])
    return []


def invalid_call_errors(response: BaseMessage) -> list[ToolMessage]:
    """An error ToolMessage for each tool call the model's output could not be parsed into.

    A provider puts a call with malformed JSON arguments into ``invalid_tool_calls``, which
    ``ToolNode`` ignores. Unanswered, the model would never learn its call failed, and the
    call (sent back as a ``tool_calls`` entry) would make the next request invalid.
    """
    if not isinstance(response, AIMessage):
        return []
    return [
        ToolMessage(
            content=(
                f"Error: the arguments of your {call.get('name')!r} call could not be parsed "
                f"({call.get('error') or 'invalid JSON'}); nothing was done. Call it again "
                "with valid JSON arguments."
            ),
            tool_call_id=call.get("id") or f"invalid-{i}",
            name=call.get("name") or "",
            status="error",
        )
        for i, call in enumerate(response.invalid_tool_calls)
    ]


def _refuse_unportable_calls(response: AIMessage) -> AIMessage:
    """Move tool calls whose arguments JSON or a checkpointer cannot carry (an integer past
    64 bits, NaN, absurd nesting) to ``invalid_tool_calls``, where they are answered with an
    error. Kept as calls, they would be stored in the thread and the history and break the
    checkpointer's serializer on every later turn and thread that loads them.
    """
    good: list[ToolCall] = []
    bad: list[InvalidToolCall] = []
    for call in response.tool_calls:
        try:
            check_portable(call.get("args"), f"the arguments of {call.get('name')!r}")
        except InvalidMessageError as exc:
            bad.append(
                # "{}": providers resend invalid calls with their arguments, which must be a
                # JSON string; the offending values are what may not be kept.
                invalid_tool_call(
                    name=call.get("name"), args="{}", id=call.get("id"), error=str(exc)
                )
            )
        else:
            good.append(call)
    if not bad:
        return response
    return response.model_copy(
        update={"tool_calls": good, "invalid_tool_calls": [*response.invalid_tool_calls, *bad]}
    )


def _before_thread(history: Sequence[BaseMessage], state: dict[str, Any]) -> list[BaseMessage]:
    """The history read for this turn up to the thread's own first message in it: on the
    thread's first turn all of it; later, what came before the thread, never a message
    another thread wrote meanwhile (nothing when none of the thread's is in the read).
    """
    ids = {m.id for m in state.get("messages", []) if m.id}
    for i, message in enumerate(history):
        if message.id in ids:
            return list(history[:i])
    return [] if state.get("saved_count") else list(history)


@dataclass
class MemoryNodes:
    """The memory logic of one turn, shared by the graph and the agent middleware.

    Each step has a sync and an async body that differ only in I/O.
    """

    memory: TieredMemory
    # what this model's turns run with, from its policy (agent/settings.py), given by
    # MemoryOptions.build (agent/turn.py) for both doors
    settings: TurnSettings = field(default_factory=lambda: TurnSettings.of(CAPABLE))
    recall_k: int = 3
    # user turns the recall query reads (the latest one included): a memory the
    # conversation is about, not only what its last message names
    recall_context_turns: int = DEFAULT_CONTEXT_TURNS
    memory_token_budget: int | None = DEFAULT_MEMORY_TOKEN_BUDGET
    context_token_budget: int | None = DEFAULT_CONTEXT_TOKEN_BUDGET
    auto_summarize_after: int | None = None
    summary_model: BaseChatModel | None = None
    # Users of the app share threads (said explicitly): threads are recorded, not claimed.
    shared_threads: bool = False
    # the model that writes the memory query (settings.memory_query), before the reply
    query_model: BaseChatModel | None = None

    # ----- load -----

    def _load_args(self, state: dict[str, Any]) -> tuple[list[str], int]:
        texts = recent_user_texts(state.get("messages", []), max(self.recall_context_turns, 1))
        return texts, self.settings.max_context_messages

    def _load_update(self, state: dict[str, Any], snap: MemorySnapshot) -> dict[str, Any]:
        # The memory section and the tags are loaded every turn and never checkpointed
        # (untracked channels, see MemoryState): a thread's checkpoints hold no copy of a
        # memory that a delete or an edit would have to chase.
        update: dict[str, Any] = {
            "memory_prompt": self.settings.render_memory(
                snap.tags, snap.recalled, token_budget=self.memory_token_budget
            )
        }
        # What the thread carries of earlier ones is read again each turn, never
        # checkpointed (a forgotten thread's messages leave no copy in other threads):
        # the history before the thread's own messages, not what other threads wrote
        # meanwhile; the conversation, not its machinery, within the budget at compose.
        carried = _before_thread(snap.history, state)
        update["recent_history"] = conversation_only(carried, snap.superseded)
        # a question about a tag answered from it (a small model's template, every
        # model's fallback when it gave no answer); untracked, as the memory section
        update["memory_tags"] = dict(snap.tags)
        return update

    def _query_request(
        self, state: dict[str, Any]
    ) -> tuple[BaseChatModel, list[str], MemoryQueryKind] | None:
        """The arguments of ``write_memory_query`` for this state, or ``None`` when the
        model writes no memory query (not asked for, or no model yet).
        """
        if self.settings.memory_query is None or self.query_model is None:
            return None
        texts = recent_user_texts(state.get("messages", []), MEMORY_QUERY_TURNS)
        return self.query_model, texts, self.settings.memory_query

    def _load_call(
        self,
        state: dict[str, Any],
        user_id: str,
        thread_id: str | None,
        line: str | None = None,
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The arguments of the memory's ``load`` for this state (``load`` and ``aload``);
        ``line``, the model's memory query, joins the context as its newest turn.
        """
        texts, n = self._load_args(state)
        query, context = (texts[-1], texts[:-1]) if texts else (None, [])
        if line and query is not None:
            context = [*context, line]
        options = {
            "max_messages": n,
            "k": self.recall_k,
            "context": context,
            "thread_id": thread_id,
            "shared_thread": self.shared_threads,
        }
        config = run_config()
        if thread_id is not None and config is not None and saved_position(config, 0) is not None:
            # what the run carries that the history does not hold, with the saved messages
            # before it as this branch has them: a fork (back to before an edit in place
            # too) is followed before the model is shown memory (issue 78 item 2)
            run = unsaved(state)
            options["unsaved"] = (run.position, run.batch, run.context)
        return (user_id, query), options

    def load(
        self, state: dict[str, Any], user_id: str, thread_id: str | None = None
    ) -> dict[str, Any]:
        """Read tags, recalled items and (first turn) recent history into the state; record
        the thread as the user's (before anything of the turn can fail).
        """
        if not self.shared_threads:
            require_guarded_checkpointer()  # before any model call of the run
        if served_by() is not None:  # the server keeps threads: erasure must know
            drive(self.memory.tiers.served())
        line = None
        if (request := self._query_request(state)) is not None:
            line = write_memory_query(*request)
        args, options = self._load_call(state, user_id, thread_id, line)
        return self._load_update(state, self.memory.load(*args, **options))

    async def aload(
        self, state: dict[str, Any], user_id: str, thread_id: str | None = None
    ) -> dict[str, Any]:
        """Async :meth:`load`."""
        if not self.shared_threads:
            require_guarded_checkpointer()
        if served_by() is not None:
            await adrive(self.memory.tiers.served())
        line = None
        if (request := self._query_request(state)) is not None:
            line = await awrite_memory_query(*request)
        args, options = self._load_call(state, user_id, thread_id, line)
        return self._load_update(state, await self.memory.aload(*args, **options))

    # ----- compose -----

    def system_message(
        self, state: dict[str, Any], base_prompt: str | None = None
    ) -> SystemMessage:
        """Base prompt plus the memory section."""
        memory_prompt = state.get("memory_prompt") or ""
        base = self.settings.system_prompt if base_prompt is None else base_prompt
        return SystemMessage(f"{base}\n\n{memory_prompt}".strip())

    def compose(self, state: dict[str, Any], base_prompt: str | None = None) -> list[BaseMessage]:
        """System prompt + recent history + thread messages, trimmed; no message twice;
        ``search_memory`` results shown with what this run found (``agent/recalled.py``).
        """
        thread = shown_results(state.get("messages", []), state.get(RECALLED))
        if self.settings.current_turn_only:
            last = last_human(thread)
            start = thread.index(last) if last is not None else 0
            return [self.system_message(state, base_prompt), *thread[start:]]
        seen = {m.id for m in thread if m.id}
        history = [m for m in state.get("recent_history") or [] if not m.id or m.id not in seen]
        history = _from_first_human(history)
        system = self.system_message(state, base_prompt)
        messages: list[BaseMessage] = [system, *history, *models_words(thread)]
        if self.context_token_budget is None:
            return messages
        # counted from the newest back, up to the budget: a turn's cost is flat in the
        # thread's length (600 turns: 1,200 messages)
        trimmed = _newest_within(system, messages[1:], self.context_token_budget)
        if len(trimmed) <= 1 and thread:
            # The latest exchange alone is over budget: keep it whole rather than send nothing.
            last = last_human(thread)
            start = thread.index(last) if last is not None else len(thread) - 1
            return [messages[0], *thread[start:]]
        return trimmed

    # ----- save -----

    def save(
        self,
        state: dict[str, Any],
        user_id: str,
        thread_id: str | None = None,
        config: RunnableConfig | None = None,
    ) -> dict[str, Any]:
        """Append the turn's unsaved messages to the history (one atomic write; at the
        thread's saved position in a run with a checkpointer, with the saved messages before
        them: :meth:`_saves`).

        Idempotent per thread position, so a save that timed out after Redis applied it is
        not stored twice by the next turn; a message the history refuses is stored as a
        short note (and logged) so that it cannot fail every later turn of the thread.
        """
        saves, update = self._saves(state, thread_id, config)
        for messages, position in saves:
            self.memory.add_session_log(
                user_id,
                messages,
                thread_id=thread_id,
                thread_position=position,
                on_invalid="placeholder",
            )
        if saves:
            self._maybe_summarize(user_id)
        return update

    async def asave(
        self,
        state: dict[str, Any],
        user_id: str,
        thread_id: str | None = None,
        config: RunnableConfig | None = None,
    ) -> dict[str, Any]:
        """Async :meth:`save`."""
        saves, update = self._saves(state, thread_id, config)
        for messages, position in saves:
            await self.memory.aadd_session_log(
                user_id,
                messages,
                thread_id=thread_id,
                thread_position=position,
                on_invalid="placeholder",
            )
        if saves:
            self._maybe_summarize(user_id)
        return update

    def _saves(
        self, state: dict[str, Any], thread_id: str | None, config: RunnableConfig | None
    ) -> tuple[list[tuple[list[BaseMessage], int | None]], dict[str, Any]]:
        """What a turn's save appends (``(messages, thread position)`` each) and the state
        update: each saved message edited in place alone at its position, then the new
        messages with the saved ones before them as this branch has them, so the history's
        rule sees where the branch differs from what it holds (time travel back to before
        an edit, a fork). A shared thread's own saved messages are other users' too, so
        its new messages go alone.
        """
        run = unsaved(state)
        position = saved_position(config, run.position)
        if thread_id is None or position is None:
            return ([(run.batch, position)] if run.batch else []), run.update
        saves: list[tuple[list[BaseMessage], int | None]] = [
            ([message], at) for at, message in run.edits
        ]
        if run.batch:
            context = [] if self.shared_threads else run.context
            saves.append(([*context, *run.batch], position - len(context)))
        return saves, run.update

    def _maybe_summarize(self, user_id: str) -> None:
        if self.auto_summarize_after is None or self.summary_model is None:
            return
        self.memory.summarize_in_background(
            user_id,
            self.summary_model,
            min_messages=self.auto_summarize_after,
            **self.settings.summary_options,
        )


def _tool_rounds(messages: Sequence[BaseMessage]) -> int:
    """Tool-calling AI replies since the latest human message."""
    rounds = 0
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            break
        if isinstance(message, AIMessage) and (message.tool_calls or message.invalid_tool_calls):
            rounds += 1
    return rounds


def _ground_tag_calls(
    calls: Sequence[ToolCall], text: str, tags: Sequence[str] = ()
) -> list[ToolCall]:
    """``calls`` with each ``user_tag`` call's arguments reduced to what ``text`` states
    about the user (:func:`~langchain_tiered_memory.language.attribution.ground_tags`) and, of
    ``tags``, what the message states that the call left out
    (:func:`~langchain_tiered_memory.language.attribution.stated_tags`); a ``user_tag`` call left
    with nothing is dropped.
    """
    out = []
    for call in calls:
        if call["name"] == USER_TAG_TOOL:
            grounding = ground_tags(dict(call.get("args") or {}), text)
            grounding.log("forced user_tag")
            args = {**stated_tags(text, [t for t in tags if t not in grounding.kept])}
            args.update(grounding.kept)
            if not args:
                continue
            call = {**call, "args": args}
        out.append(call)
    return out


@dataclass
class ModelStep:
    """The decisions around one model call, shared by the graph and the agent middleware.

    - **forced tag capture** (small local models): when the latest human message states a
      fact, the ``user_tag`` call is forced and only values the user stated about
      themself are kept, with those the message states that the call left out;
    - **a request to summarize** ("Please summarize our conversation.", "请总结一下"), for
      every model, runs the ``summarize`` tool before the reply, so the reply can say what
      was kept; for small models the reply is the tool's report, as after a capture;
    - **the tool-round limit**: past ``max_tool_rounds`` tool-calling replies since the
      latest human message the model is called without tools, and calls it emits anyway
      are dropped, so a turn always ends in an answer;
    - **portability**: tool calls whose arguments would not survive JSON and Redis are
      turned into invalid calls (answered with an error, never executed).

    Example:
        >>> step = ModelStep(max_tool_rounds=5, force_tag_capture=False)
        >>> step.exhausted([HumanMessage("hi")])
        False
    """

    max_tool_rounds: int = DEFAULT_MAX_TOOL_ROUNDS
    force_tag_capture: bool = False
    # The tag schema's fields: forced capture adds those the message states that the
    # small model's call left out ("我叫李明，今年28岁" -> the name only).
    tag_fields: tuple[str, ...] = ()
    # small models: the reply after a forced summarize or capture is the tool's report
    scripted_replies: bool = False

    @classmethod
    def of(cls, settings: TurnSettings, max_tool_rounds: int, memory: TieredMemory) -> ModelStep:
        """The step of a model with ``settings`` (the graph's and the middleware's)."""
        return cls(
            max_tool_rounds=max_tool_rounds,
            force_tag_capture=settings.tag_capture == "forced",
            tag_fields=tuple(memory.tags.schema.model_fields),
            scripted_replies=settings.scripted_replies,
        )

    def exhausted(self, messages: Sequence[BaseMessage]) -> bool:
        """Whether this turn has used its tool rounds: the model must answer now."""
        return _tool_rounds(messages) >= self.max_tool_rounds

    def wants_capture(self, messages: Sequence[BaseMessage]) -> HumanMessage | None:
        """The human message to force a ``user_tag`` call for, if any."""
        if not self.force_tag_capture or not messages:
            return None
        last = messages[-1]
        if isinstance(last, HumanMessage) and states_a_fact(last.text):
            return last
        return None

    def captured(self, response: Any, human: HumanMessage) -> AIMessage | None:
        """The forced call's reply reduced to one grounded ``user_tag`` call, or ``None``."""
        calls = [
            c for c in getattr(response, "tool_calls", None) or [] if c["name"] == USER_TAG_TOOL
        ] or [tool_call(name=USER_TAG_TOOL, args={}, id=new_call_id())]
        calls = _ground_tag_calls(calls[:1], human.text, self.tag_fields)
        if not calls:
            return None
        # Non-empty content: OpenAI-compatible servers such as llama.cpp's reject an
        # assistant message whose content is null, which is what "" becomes on the wire.
        return AIMessage(content=CAPTURE_NOTE, tool_calls=calls[:1])

    def scripted(
        self, messages: Sequence[BaseMessage], tags: Mapping[str, str] | None = None
    ) -> AIMessage | None:
        """The reply made without the model, or ``None``: a ``summarize`` call for a
        request to summarize (every model); for small models the report after a forced
        summarize or capture, and the answer to a question about a recorded tag (``tags``).
        """
        if self.scripted_replies:
            reply = (
                summary_reply(messages)
                or capture_reply(messages)
                or tag_answer(messages, tags or {})
            )
            if reply is not None:
                return reply
        return summarize_call(messages)

    def finish(
        self, response: BaseMessage, messages: Sequence[BaseMessage], exhausted: bool
    ) -> BaseMessage:
        """The free model's reply as it may enter the thread: no call this turn already
        made with the same arguments; a final reply names what this turn stored.
        """
        if not isinstance(response, AIMessage):
            return response
        response = without_repeated_calls(_refuse_unportable_calls(response), messages)
        if exhausted and (response.tool_calls or response.invalid_tool_calls):
            # Past the budget, calls a model emits anyway (no tools bound) are dropped.
            response = AIMessage(content=response.text or "", id=response.id)
        if self.force_tag_capture and response.tool_calls:
            # In force mode the free model is not offered user_tag; if it calls it anyway,
            # only values the user literally said survive, as when forced.
            human = last_human(messages)
            calls = _ground_tag_calls(response.tool_calls, human.text if human else "")
            if calls != response.tool_calls:
                response = response.model_copy(update={"tool_calls": calls})
        return with_stored_items(without_echo(response, messages), messages)

    @staticmethod
    def empty(response: BaseMessage) -> bool:
        """Whether the reply is empty: the model is asked once more, without tools."""
        return is_empty(response)

    @staticmethod
    def no_reply(
        messages: Sequence[BaseMessage], tags: Mapping[str, str] | None = None
    ) -> AIMessage:
        """The reply when the model gave none twice (never empty): what the turn did, the
        answer a recorded tag gives (``tags``), or what fits a statement or a question.
        """
        return no_reply(messages, lambda human: tag_answer([human], tags or {}))

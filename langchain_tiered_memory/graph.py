"""The prebuilt LangGraph agent with tiered memory.

``load_memory -> model <-> tools -> save_memory``:

- ``load_memory`` reads the user's tags, recalls summary items for the latest user message
  and, on a thread's first turn, the user's recent history (from any earlier thread or
  process). It writes them into the state, never into ``messages``.
- ``model`` sends the system prompt (base + memory section) + recent history + the thread's
  messages, trimmed to a token budget without splitting tool calls from their results.
- ``tools`` runs the memory tools (``user_tag``, ``summarize``) and the app's tools.
- ``save_memory`` appends the turn's new messages to the user's history in one write.

The user id comes from the run (``context={"user_id": ...}`` or
``config["configurable"]["user_id"]``), never from the model.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
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
from langchain_core.tools import BaseTool
from langgraph._internal._runnable import RunnableCallable
from langgraph.channels import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore
from typing_extensions import NotRequired, TypedDict

from langchain_tiered_memory.attribution import ground_tags, stated_tags, states_a_fact
from langchain_tiered_memory.capture import (
    CAPTURE_NOTE,
    AfterTurnCapture,
    TagCapture,
    capture_reply,
    new_call_id,
    summarize_call,
    summary_reply,
    tag_answer,
)
from langchain_tiered_memory.context import MemoryContext, resolve_user_id, thread_of
from langchain_tiered_memory.errors import InvalidMessageError
from langchain_tiered_memory.memory import MemorySnapshot, TieredMemory
from langchain_tiered_memory.messages import add_message_batches
from langchain_tiered_memory.policy import ModelPolicy
from langchain_tiered_memory.prompt import (
    DEFAULT_SYSTEM_PROMPT,
    MemoryRenderer,
    base_system_prompt,
    render_compact_memory,
    render_memory_section,
)
from langchain_tiered_memory.retrieval.conversation import (
    DEFAULT_CONTEXT_TURNS,
    recent_user_texts,
)
from langchain_tiered_memory.stores.history import check_portable
from langchain_tiered_memory.tools import (
    USER_TAG_TOOL,
    SearchMemoryTool,
    SummarizeTool,
    UserTagTool,
)

logger = logging.getLogger(__name__)

__all__ = [
    "LOAD_MEMORY",
    "MODEL",
    "TOOLS",
    "SAVE_MEMORY",
    "MemoryState",
    "MemoryNodes",
    "create_memory_graph",
]

LOAD_MEMORY = "load_memory"
MODEL = "model"
TOOLS = "tools"
SAVE_MEMORY = "save_memory"

DEFAULT_MEMORY_TOKEN_BUDGET = 1000
DEFAULT_CONTEXT_TOKEN_BUDGET = 8000
DEFAULT_MAX_TOOL_ROUNDS = 5
# Ids of the last saved messages kept in the state: what is new is after the newest of
# them still in the thread (a few ids: the state is stored with every turn's checkpoint).
_SAVED_IDS = 8


def _mark(message_id: str) -> str:
    """A message id as the state keeps it among the saved ones: 10 hex digits of its
    SHA-1 (40 bits; a thread has thousands of messages, not a million). Whole ids (36-46
    characters, 8 of them, in a write and a blob of every turn's checkpoints) were about
    700 bytes of each turn's checkpoint data.
    """
    return hashlib.sha1(message_id.encode("utf-8", "surrogatepass")).hexdigest()[:10]


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


class MemoryState(TypedDict):
    """Graph state: the thread's messages plus what memory loaded for this turn.

    ``messages`` is a ``DeltaChannel``: a checkpoint stores what a step added, not the
    whole thread again, so a thread's checkpoints grow with the thread, not its square.
    """

    messages: Annotated[list[AnyMessage], DeltaChannel(add_message_batches)]
    memory_prompt: NotRequired[str]
    recent_history: NotRequired[list[AnyMessage]]
    saved_count: NotRequired[int]
    saved_ids: NotRequired[list[str]]
    # small models only: the tags, for answering a question about one from the tag itself
    memory_tags: NotRequired[dict[str, str]]


def _from_first_human(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """Drop what precedes the first human message: a history tail cut mid-turn would
    otherwise start with a ToolMessage or an AI tool call whose results were cut off.
    """
    for i, message in enumerate(messages):
        if isinstance(message, HumanMessage):
            return list(messages[i:])
    return []


def _invalid_call_errors(response: BaseMessage) -> list[ToolMessage]:
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


def _last_human(messages: Sequence[BaseMessage]) -> HumanMessage | None:
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return message
    return None


@dataclass
class MemoryNodes:
    """The memory logic of one turn, shared by the graph and the agent middleware.

    Each step has a sync and an async body that differ only in I/O.
    """

    memory: TieredMemory
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    max_context_messages: int = 20
    recall_k: int = 3
    # user turns the recall query reads (the latest one included): a memory the
    # conversation is about, not only what its last message names
    recall_context_turns: int = DEFAULT_CONTEXT_TURNS
    memory_token_budget: int | None = DEFAULT_MEMORY_TOKEN_BUDGET
    context_token_budget: int | None = DEFAULT_CONTEXT_TOKEN_BUDGET
    auto_summarize_after: int | None = None
    summary_model: BaseChatModel | None = None
    # the small-model guards of background summaries (see summarize_messages)
    extractive_summary_fallback: bool = False
    grounded_summaries: bool = False
    render_memory: MemoryRenderer = render_memory_section
    # Small models get the current turn only. SmolLM2-135M, 10 seeds, "When is my
    # birthday?" with the birthday item in memory: 10/10 alone, 8/10 after one earlier
    # exchange of the thread, 0/10 with two more loaded from an earlier thread.
    current_turn_only: bool = False
    # Small models: keep the loaded tags in the state, so that a question about a tag is
    # answered from it (capture.tag_answer); other models' checkpoints do not carry them.
    keep_tags: bool = False

    # ----- load -----

    def _load_args(self, state: dict[str, Any]) -> tuple[list[str], int]:
        texts = recent_user_texts(state.get("messages", []), max(self.recall_context_turns, 1))
        first_turn = "recent_history" not in state
        return texts, self.max_context_messages if first_turn else 0

    def _load_update(self, state: dict[str, Any], snap: MemorySnapshot) -> dict[str, Any]:
        update: dict[str, Any] = {
            "memory_prompt": self.render_memory(
                snap.tags, snap.recalled, token_budget=self.memory_token_budget
            )
        }
        if "recent_history" not in state:
            update["recent_history"] = snap.history
        if self.keep_tags and snap.tags != state.get("memory_tags"):
            update["memory_tags"] = dict(snap.tags)
        return update

    def load(
        self, state: dict[str, Any], user_id: str, thread_id: str | None = None
    ) -> dict[str, Any]:
        """Read tags, recalled items and (first turn) recent history into the state; record
        the thread as the user's (before anything of the turn can fail).
        """
        texts, n = self._load_args(state)
        query, context = (texts[-1], texts[:-1]) if texts else (None, [])
        snap = self.memory.load(
            user_id, query, max_messages=n, k=self.recall_k, context=context, thread_id=thread_id
        )
        return self._load_update(state, snap)

    async def aload(
        self, state: dict[str, Any], user_id: str, thread_id: str | None = None
    ) -> dict[str, Any]:
        """Async :meth:`load`."""
        texts, n = self._load_args(state)
        query, context = (texts[-1], texts[:-1]) if texts else (None, [])
        snap = await self.memory.aload(
            user_id, query, max_messages=n, k=self.recall_k, context=context, thread_id=thread_id
        )
        return self._load_update(state, snap)

    # ----- compose -----

    def system_message(
        self, state: dict[str, Any], base_prompt: str | None = None
    ) -> SystemMessage:
        """Base prompt plus the memory section."""
        memory_prompt = state.get("memory_prompt") or ""
        base = self.system_prompt if base_prompt is None else base_prompt
        return SystemMessage(f"{base}\n\n{memory_prompt}".strip())

    def compose(self, state: dict[str, Any], base_prompt: str | None = None) -> list[BaseMessage]:
        """System prompt + recent history + thread messages, trimmed; no message twice."""
        thread: list[BaseMessage] = list(state.get("messages", []))
        if self.current_turn_only:
            last = _last_human(thread)
            start = thread.index(last) if last is not None else 0
            return [self.system_message(state, base_prompt), *thread[start:]]
        seen = {m.id for m in thread if m.id}
        history = [m for m in state.get("recent_history") or [] if not m.id or m.id not in seen]
        history = _from_first_human(history)
        system = self.system_message(state, base_prompt)
        messages: list[BaseMessage] = [system, *history, *thread]
        if self.context_token_budget is None:
            return messages
        # counted from the newest back, up to the budget: a turn's cost is flat in the
        # thread's length (600 turns: 1,200 messages)
        trimmed = _newest_within(system, messages[1:], self.context_token_budget)
        if len(trimmed) <= 1 and thread:
            # The latest exchange alone is over budget: keep it whole rather than send nothing.
            last = _last_human(thread)
            start = thread.index(last) if last is not None else len(thread) - 1
            return [messages[0], *thread[start:]]
        return trimmed

    # ----- save -----

    def _unsaved(self, state: dict[str, Any]) -> tuple[list[BaseMessage], int, dict[str, Any]]:
        """The thread's messages not saved yet, the running count of saved ones (the
        history's replay check reads it as the batch's position), and the state update.

        What is new is told by identity: after the newest of the last saved messages
        (``saved_ids``) still in the thread. By position alone, a message removed from the
        thread (``update_state(RemoveMessage)``, a summarizing middleware) moved later turns
        below the saved count and they never reached memory. A thread saved before ids
        were kept, or one that removed every recently saved message, falls back to the
        position.
        """
        messages = list(state.get("messages", []))
        saved = int(state.get("saved_count") or 0)
        anchors = list(state.get("saved_ids") or [])
        start = min(saved, len(messages))
        if anchors:
            known = set(anchors)
            for i in range(len(messages) - 1, -1, -1):  # the anchor is near the end
                msg_id = messages[i].id
                # a short mark of the id (a thread saved before marks holds whole ids)
                if msg_id and (_mark(msg_id) in known or msg_id in known):
                    start = i + 1
                    break
        new = messages[start:]
        kept = [*anchors, *(_mark(m.id) for m in new if m.id)][-_SAVED_IDS:]
        return new, saved, {"saved_count": saved + len(new), "saved_ids": kept}

    def save(
        self, state: dict[str, Any], user_id: str, thread_id: str | None = None
    ) -> dict[str, Any]:
        """Append the turn's unsaved messages to the history (one atomic write).

        Idempotent per thread position, so a save that timed out after Redis applied it is
        not stored twice by the next turn; a message the history refuses is stored as a
        short note (and logged) so that it cannot fail every later turn of the thread.
        """
        new, saved, update = self._unsaved(state)
        if new:
            self.memory.add_session_log(
                user_id, new, thread_id=thread_id, thread_position=saved, on_invalid="placeholder"
            )
            self._maybe_summarize(user_id)
        return update

    async def asave(
        self, state: dict[str, Any], user_id: str, thread_id: str | None = None
    ) -> dict[str, Any]:
        """Async :meth:`save`."""
        new, saved, update = self._unsaved(state)
        if new:
            await self.memory.aadd_session_log(
                user_id, new, thread_id=thread_id, thread_position=saved, on_invalid="placeholder"
            )
            self._maybe_summarize(user_id)
        return update

    def _maybe_summarize(self, user_id: str) -> None:
        if self.auto_summarize_after is None or self.summary_model is None:
            return
        self.memory.summarize_in_background(
            user_id,
            self.summary_model,
            min_messages=self.auto_summarize_after,
            extractive_fallback=self.extractive_summary_fallback,
            grounded=self.grounded_summaries,
            reconcile=not self.grounded_summaries,  # a small model cannot judge updates
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
    about the user (:func:`~langchain_tiered_memory.attribution.ground_tags`) and, of
    ``tags``, what the message states that the call left out
    (:func:`~langchain_tiered_memory.attribution.stated_tags`); a ``user_tag`` call left
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
        """The free model's reply as it may enter the thread."""
        if not isinstance(response, AIMessage):
            return response
        response = _refuse_unportable_calls(response)
        if exhausted and (response.tool_calls or response.invalid_tool_calls):
            # Past the budget, calls a model emits anyway (no tools bound) are dropped.
            return AIMessage(content=response.text or "", id=response.id)
        if self.force_tag_capture and response.tool_calls:
            # In force mode the free model is not offered user_tag; if it calls it anyway,
            # only values the user literally said survive, as when forced.
            human = _last_human(messages)
            calls = _ground_tag_calls(response.tool_calls, human.text if human else "")
            if calls != response.tool_calls:
                response = response.model_copy(update={"tool_calls": calls})
        return response


def _route_after_model(state: dict[str, Any]) -> str:
    messages = state["messages"]
    response = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
    if response is not None and response.tool_calls:
        return TOOLS
    if isinstance(messages[-1], ToolMessage):
        return MODEL  # only unparsable calls, answered with errors: let the model retry
    return SAVE_MEMORY


def create_memory_graph(
    model: BaseChatModel,
    *,
    memory: TieredMemory,
    tools: Sequence[BaseTool] = (),
    checkpointer: BaseCheckpointSaver | None = None,
    store: BaseStore | None = None,
    system_prompt: str | None = None,
    memory_prompt: MemoryRenderer | None = None,
    max_context_messages: int | None = None,
    recall_k: int = 3,
    recall_context_turns: int = DEFAULT_CONTEXT_TURNS,
    memory_token_budget: int | None = DEFAULT_MEMORY_TOKEN_BUDGET,
    context_token_budget: int | None = DEFAULT_CONTEXT_TOKEN_BUDGET,
    auto_summarize_after: int | None = None,
    summary_model: BaseChatModel | None = None,
    small_model: bool | None = None,
    force_tag_capture: bool | None = None,
    tag_capture: TagCapture | None = None,
    max_tool_rounds: int = DEFAULT_MAX_TOOL_ROUNDS,
    extractive_summary_fallback: bool | None = None,
    search_memory: bool | None = None,
    name: str | None = None,
) -> CompiledStateGraph[Any, Any, Any, Any]:  # context: a MemoryContext or a dict
    """Build the memory agent graph.

    Args:
        model: a chat model supporting ``bind_tools`` (``ChatOpenAI`` in production).
        memory: the :class:`TieredMemory` to read and write.
        tools: the app's own tools, bound beside ``user_tag`` and ``summarize``.
        checkpointer: any ``BaseCheckpointSaver`` for thread state.
        store: an optional LangGraph ``BaseStore`` handed to the app's tools.
        system_prompt: the base system prompt (default: :data:`DEFAULT_SYSTEM_PROMPT`;
            :data:`SMALL_MODEL_SYSTEM_PROMPT` for small models).
        memory_prompt: renders tags and recalled items into the system prompt (a
            :class:`~langchain_tiered_memory.prompt.MemoryRenderer`; default:
            :func:`render_memory_section`, or :func:`render_compact_memory` for small
            models).
        max_context_messages: history messages loaded on a thread's first turn (default
            20; 0 for small models, which are sent the current turn only: earlier
            exchanges make a 135M model repeat them instead of answering).
        recall_k: summary items recalled per turn.
        recall_context_turns: the user turns of the thread the recall query reads, the
            latest included (default 3; 1: the latest message only). Each is embedded once
            (the store keeps recent query vectors); their vectors are summed, each older
            turn at half the weight of the next, so a memory the conversation is about comes
            up though the last message does not name it ("I'm scared I'll fail again" after
            "a big test on Friday" -> the failed driving test). See
            :mod:`~langchain_tiered_memory.retrieval.conversation`.
        memory_token_budget: approximate token cap of the memory section.
        context_token_budget: approximate token cap of everything sent to the model.
        auto_summarize_after: summarize in the background once a user has this many
            unsummarized messages (the turn does not wait for it).
        summary_model: the model that writes summaries (default: ``model``).
        small_model: switch on the guards for small local models, which help them and
            would hold a capable model back: forced tag capture, the extractive summary
            fallback and grounded summaries (items must come from the user's own words),
            and it skips the update check of new summary items, which such a model
            cannot judge.
            ``None`` (default): on for small in-process models
            (:class:`~langchain_tiered_memory.policy.ModelPolicy`), off for
            ChatOpenAI and other capable models.
        force_tag_capture: when the user's message is a first-person statement, first
            force a ``user_tag`` call (``tool_choice``) and keep only values the user
            literally said; ``user_tag`` is then not offered to the model otherwise, so a
            weak model cannot record guesses. For small local models that never choose
            tools on their own. Kept for compatibility: ``True`` is
            ``tag_capture="forced"``, ``False`` ``"tool"``.
        tag_capture: how stated facts reach the tag store: ``"tool"`` (the model calls
            ``user_tag`` when it chooses), ``"forced"`` (as ``force_tag_capture``), or
            ``"after_turn"``: the model is offered ``user_tag`` as with ``"tool"``, and when
            a turn's message states a fact but no call came, one forced extraction runs
            after the reply (:class:`~langchain_tiered_memory.capture.AfterTurnCapture`).
            ``None`` (default): ``"forced"`` for small models; ``"after_turn"`` for the
            others: many capable models skip the tool now and then, and the extraction
            costs a call only on such turns.
        max_tool_rounds: after this many tool-calling replies in one turn the model is
            called without tools and must answer, so a model stuck calling tools cannot
            loop until the recursion limit (and lose the turn).
        extractive_summary_fallback: when the summarizer model returns nothing usable,
            store the user's own first-person statements (quoted) instead of failing.
            For small local models, whose structured output is often empty. ``None``:
            follows ``small_model``.
        search_memory: offer the ``search_memory`` tool
            (:class:`~langchain_tiered_memory.tools.SearchMemoryTool`): the model searches
            the user's memory with its own query when the recalled items miss what the user
            refers to. ``None`` (default): on for capable models, off for small ones.
        name: the compiled graph's name.

    Example:
        >>> memory = TieredMemory.embedded()  # doctest: +SKIP
        >>> graph = create_memory_graph(ChatOpenAI(), memory=memory)  # doctest: +SKIP
        >>> graph.invoke({"messages": [("user", "Hi, I'm Alice")]},
        ...              context={"user_id": "alice"},
        ...              config={"configurable": {"thread_id": "t1"}})  # doctest: +SKIP

    """
    summary_model = summary_model or model
    policy = ModelPolicy.for_model(model, small=small_model)
    if tag_capture is None:
        if force_tag_capture is not None:
            tag_capture = "forced" if force_tag_capture else "tool"
        else:
            tag_capture = policy.tag_capture
    if tag_capture not in ("tool", "forced", "after_turn"):
        raise ValueError(
            f"tag_capture must be 'tool', 'forced' or 'after_turn', not {tag_capture!r}."
        )
    force_tag_capture = tag_capture == "forced"
    if extractive_summary_fallback is None:
        extractive_summary_fallback = policy.extractive_fallback
    if memory_prompt is None:
        memory_prompt = render_compact_memory if policy.compact_prompt else render_memory_section
    if max_context_messages is None:
        max_context_messages = policy.max_context_messages
    default_prompt = base_system_prompt(policy.compact_prompt)
    nodes = MemoryNodes(
        memory=memory,
        system_prompt=system_prompt or default_prompt,
        render_memory=memory_prompt,
        current_turn_only=policy.current_turn_only,
        keep_tags=policy.scripted_requests,
        max_context_messages=max_context_messages,
        recall_k=recall_k,
        recall_context_turns=recall_context_turns,
        memory_token_budget=memory_token_budget,
        context_token_budget=context_token_budget,
        auto_summarize_after=auto_summarize_after,
        summary_model=summary_model,
        extractive_summary_fallback=extractive_summary_fallback,
        grounded_summaries=policy.grounded,
    )
    tag_tool = UserTagTool(memory=memory)
    summarize_tool = SummarizeTool(
        memory=memory,
        model=summary_model,
        extractive_fallback=extractive_summary_fallback,
        grounded=policy.grounded,
        reconcile=policy.reconcile,
    )
    if search_memory is None:
        search_memory = policy.search_tool
    search: list[BaseTool] = [SearchMemoryTool(memory=memory)] if search_memory else []
    all_tools: list[BaseTool] = [tag_tool, summarize_tool, *search, *tools]
    offered = [t for t in all_tools if t is not tag_tool] if force_tag_capture else all_tools
    bound = model.bind_tools(offered)
    forced = model.bind_tools([tag_tool], tool_choice=USER_TAG_TOOL) if force_tag_capture else None

    step = ModelStep(
        max_tool_rounds=max_tool_rounds,
        force_tag_capture=force_tag_capture,
        tag_fields=tuple(memory.tags.schema.model_fields),
        scripted_replies=policy.scripted_requests,
    )
    after_turn = AfterTurnCapture.for_model(memory, model) if tag_capture == "after_turn" else None

    def _free_model(state: dict[str, Any]) -> tuple[Any, bool]:
        exhausted = step.exhausted(state.get("messages", []))
        return (model if exhausted else bound), exhausted  # no tools: it has to answer

    def _finish(response: Any, state: dict[str, Any], exhausted: bool) -> dict[str, Any]:
        response = step.finish(response, state.get("messages", []), exhausted)
        return {"messages": [response, *_invalid_call_errors(response)]}

    def _user(runtime: Runtime[MemoryContext], config: RunnableConfig) -> str:
        return resolve_user_id(runtime.context, config)

    # Each node gets the run's Runtime (LangGraph injects the ``runtime`` argument); the
    # user id comes from its context, else from config["configurable"]["user_id"].
    def load_memory(
        state: dict[str, Any], config: RunnableConfig, runtime: Runtime[MemoryContext]
    ) -> dict[str, Any]:
        return nodes.load(state, _user(runtime, config), thread_of(config))

    async def aload_memory(
        state: dict[str, Any], config: RunnableConfig, runtime: Runtime[MemoryContext]
    ) -> dict[str, Any]:
        return await nodes.aload(state, _user(runtime, config), thread_of(config))

    def _scripted(state: dict[str, Any]) -> dict[str, Any] | None:
        reply = step.scripted(state["messages"], state.get("memory_tags"))
        return None if reply is None else {"messages": [reply]}

    def call_model(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        if (scripted := _scripted(state)) is not None:
            return scripted
        messages = nodes.compose(state)
        human = step.wants_capture(state["messages"])
        if human is not None and forced is not None:
            captured = step.captured(forced.invoke(messages, config), human)
            if captured is not None:
                return {"messages": [captured]}
        free, exhausted = _free_model(state)
        return _finish(free.invoke(messages, config), state, exhausted)

    async def acall_model(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        if (scripted := _scripted(state)) is not None:
            return scripted
        messages = nodes.compose(state)
        human = step.wants_capture(state["messages"])
        if human is not None and forced is not None:
            captured = step.captured(await forced.ainvoke(messages, config), human)
            if captured is not None:
                return {"messages": [captured]}
        free, exhausted = _free_model(state)
        return _finish(await free.ainvoke(messages, config), state, exhausted)

    def save_memory(
        state: dict[str, Any], config: RunnableConfig, runtime: Runtime[MemoryContext]
    ) -> dict[str, Any]:
        user, thread = _user(runtime, config), thread_of(config)
        if after_turn is not None:
            after_turn.run(state["messages"], user, thread, config)
        return nodes.save(state, user, thread)

    async def asave_memory(
        state: dict[str, Any], config: RunnableConfig, runtime: Runtime[MemoryContext]
    ) -> dict[str, Any]:
        user, thread = _user(runtime, config), thread_of(config)
        if after_turn is not None:
            await after_turn.arun(state["messages"], user, thread, config)
        return await nodes.asave(state, user, thread)

    builder: StateGraph[Any, Any, Any, Any] = StateGraph(MemoryState, context_schema=MemoryContext)
    # A sync and an async body per node (invoke and ainvoke each run their own), with the
    # Runtime injected: LangGraph's own RunnableCallable, as langgraph-prebuilt builds nodes.
    nodes_by_name: dict[str, Any] = {
        LOAD_MEMORY: RunnableCallable(load_memory, aload_memory, name=LOAD_MEMORY),
        MODEL: RunnableCallable(call_model, acall_model, name=MODEL),
        TOOLS: ToolNode(all_tools, handle_tool_errors=True),
        SAVE_MEMORY: RunnableCallable(save_memory, asave_memory, name=SAVE_MEMORY),
    }
    for node_name, node in nodes_by_name.items():
        builder.add_node(node_name, node)
    builder.add_edge(START, LOAD_MEMORY)
    builder.add_edge(LOAD_MEMORY, MODEL)
    builder.add_conditional_edges(MODEL, _route_after_model, [TOOLS, MODEL, SAVE_MEMORY])
    builder.add_edge(TOOLS, MODEL)
    builder.add_edge(SAVE_MEMORY, END)
    return builder.compile(checkpointer=checkpointer, store=store, name=name)

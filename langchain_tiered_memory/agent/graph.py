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

import logging
from collections.abc import Sequence
from typing import Annotated, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    ToolMessage,
)
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

from langchain_tiered_memory.agent.capture import (
    TagCapture,
)
from langchain_tiered_memory.agent.context import MemoryContext, resolve_user_id, thread_of
from langchain_tiered_memory.agent.memory_query import MemoryQueryKind
from langchain_tiered_memory.agent.model_errors import naming_the_server
from langchain_tiered_memory.agent.nodes import (
    DEFAULT_CONTEXT_TOKEN_BUDGET,
    DEFAULT_MAX_TOOL_ROUNDS,
    DEFAULT_MEMORY_TOKEN_BUDGET,
    MemoryNodes,
    invalid_call_errors,
)
from langchain_tiered_memory.agent.prompt import (
    MemoryRenderer,
)
from langchain_tiered_memory.agent.recalled import (
    abare_or_referenced,
    bare_or_referenced,
)
from langchain_tiered_memory.agent.state import MEMORY_LOADED, MemoryChannels, MemoryInput
from langchain_tiered_memory.agent.tools import (
    USER_TAG_TOOL,
)
from langchain_tiered_memory.agent.turn import MemoryOptions, MemoryTurn
from langchain_tiered_memory.memory import TieredMemory
from langchain_tiered_memory.persistence.messages import add_message_batches
from langchain_tiered_memory.retrieval.conversation import (
    DEFAULT_CONTEXT_TURNS,
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


class MemoryState(MemoryChannels):
    """Graph state: the thread's messages plus the memory's channels (``MemoryChannels``).

    ``messages`` is a ``DeltaChannel``: a checkpoint stores what a step added, not the
    whole thread again, so a thread's checkpoints grow with the thread, not its square.
    """

    messages: Annotated[list[AnyMessage], DeltaChannel(add_message_batches)]


def _route_after_model(state: dict[str, Any]) -> str:
    messages = state["messages"]
    response = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
    if response is not None and response.tool_calls:
        return TOOLS
    if isinstance(messages[-1], ToolMessage):
        return MODEL  # only unparsable calls, answered with errors: let the model retry
    return SAVE_MEMORY


def _user(runtime: Runtime[MemoryContext], config: RunnableConfig) -> str:
    return resolve_user_id(runtime.context, config)


class _GraphNodes:
    """The graph's nodes: a :class:`MemoryTurn`'s steps behind LangGraph's node signatures.

    Each node gets the run's Runtime (LangGraph injects the ``runtime`` argument); the user
    id comes from its context, else from ``config["configurable"]["user_id"]``.
    """

    def __init__(self, turn: MemoryTurn, model: BaseChatModel, tools: Sequence[BaseTool]):
        self.turn, self.model = turn, model
        self.tools: list[BaseTool] = [*turn.tools, *tools]
        forced = turn.step.force_tag_capture
        # forced capture: user_tag is only ever forced, so a weak model cannot guess tags
        offered = [t for t in self.tools if t is not turn.tag_tool] if forced else self.tools
        self.bound = model.bind_tools(offered)
        self.forced = (
            model.bind_tools([turn.tag_tool], tool_choice=USER_TAG_TOOL) if forced else None
        )

    def load_memory(
        self, state: dict[str, Any], config: RunnableConfig, runtime: Runtime[MemoryContext]
    ) -> dict[str, Any]:
        return _shown(runtime, self.turn.load(state, _user(runtime, config), thread_of(config)))

    async def aload_memory(
        self, state: dict[str, Any], config: RunnableConfig, runtime: Runtime[MemoryContext]
    ) -> dict[str, Any]:
        update = await self.turn.aload(state, _user(runtime, config), thread_of(config))
        return _shown(runtime, update)

    def _scripted(self, state: dict[str, Any]) -> dict[str, Any] | None:
        reply = self.turn.step.scripted(state["messages"], state.get("memory_tags"))
        return None if reply is None else {"messages": [reply]}

    def _free_model(self, state: dict[str, Any]) -> tuple[Any, bool]:
        exhausted = self.turn.step.exhausted(state.get("messages", []))
        return (self.model if exhausted else self.bound), exhausted  # no tools: it must answer

    def _final(self, reply: Any, state: dict[str, Any]) -> dict[str, Any]:
        if self.turn.step.empty(reply):  # never an empty reply
            reply = self.turn.step.no_reply(state["messages"], state.get("memory_tags"))
        return {"messages": [reply, *invalid_call_errors(reply)]}

    def call_model(self, state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        with naming_the_server(self.model):  # a server that is down: named in the error
            return self._call_model(state, config)

    async def acall_model(self, state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        with naming_the_server(self.model):
            return await self._acall_model(state, config)

    def _call_model(self, state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        if (scripted := self._scripted(state)) is not None:
            return scripted
        step, messages = self.turn.step, self.turn.nodes.compose(state)
        human = step.wants_capture(state["messages"])
        if human is not None and self.forced is not None:
            captured = step.captured(self.forced.invoke(messages, config), human)
            if captured is not None:
                return {"messages": [captured]}
        free, exhausted = self._free_model(state)
        reply = step.finish(free.invoke(messages, config), state["messages"], exhausted)
        if step.empty(reply):  # once more without tools, then what the turn did
            reply = step.finish(self.model.invoke(messages, config), state["messages"], True)
        return self._final(reply, state)

    async def _acall_model(self, state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        if (scripted := self._scripted(state)) is not None:
            return scripted
        step, messages = self.turn.step, self.turn.nodes.compose(state)
        human = step.wants_capture(state["messages"])
        if human is not None and self.forced is not None:
            captured = step.captured(await self.forced.ainvoke(messages, config), human)
            if captured is not None:
                return {"messages": [captured]}
        free, exhausted = self._free_model(state)
        reply = step.finish(await free.ainvoke(messages, config), state["messages"], exhausted)
        if step.empty(reply):
            reply = step.finish(await self.model.ainvoke(messages, config), state["messages"], True)
        return self._final(reply, state)

    def save_memory(
        self, state: dict[str, Any], config: RunnableConfig, runtime: Runtime[MemoryContext]
    ) -> dict[str, Any]:
        return self.turn.save(state, _user(runtime, config), thread_of(config), config)

    async def asave_memory(
        self, state: dict[str, Any], config: RunnableConfig, runtime: Runtime[MemoryContext]
    ) -> dict[str, Any]:
        return await self.turn.asave(state, _user(runtime, config), thread_of(config), config)


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
    memory_query: MemoryQueryKind | None = None,
    shared_threads: bool = False,
    context_schema: type[Any] = MemoryContext,
    name: str | None = None,
) -> CompiledStateGraph[Any, Any, Any, Any]:  # context: a MemoryContext or a dict
    """Build the memory agent graph.

    Args:
        model: a chat model supporting ``bind_tools`` (``ChatOpenAI`` in production).
        memory: the :class:`TieredMemory` to read and write.
        tools: the app's own tools, bound beside ``user_tag`` and ``summarize``.
        checkpointer: any ``BaseCheckpointSaver`` for thread state; unless
            ``shared_threads``, it is used through ``memory.checkpointer(checkpointer)``:
            a run on another user's thread is refused at the saver's first read, before
            LangGraph writes the run's input. It is attached (``memory.attach``): erasure
            and export reach it while it is open.
        store: an optional LangGraph ``BaseStore`` handed to the app's tools.
        system_prompt: the base system prompt (default: :data:`DEFAULT_SYSTEM_PROMPT`;
            :data:`SMALL_MODEL_SYSTEM_PROMPT` for small models).
        memory_prompt: renders tags and recalled items into the system prompt (a
            :class:`~langchain_tiered_memory.agent.prompt.MemoryRenderer`; default:
            :func:`render_memory_section`, or :func:`render_compact_memory` for small
            models).
        max_context_messages: history messages loaded on a thread's first turn (default
            20; 0 for small models, which are sent the current turn only: earlier
            exchanges make a 135M model repeat them instead of answering).
        recall_k: summary items recalled per turn.
        recall_context_turns: the user turns of the thread the recall query reads, the
            latest included (default 3; 1: the latest message only). They are joined and
            embedded as one text, so a memory the conversation is about comes up though
            the last message does not name it ("I'm scared I'll fail again" after "a big
            test on Friday" -> the failed driving test); the latest message's own best item
            is kept near the top. See :mod:`~langchain_tiered_memory.retrieval.conversation`.
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
            (:class:`~langchain_tiered_memory.agent.policy.ModelPolicy`), off for
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
            after the reply (:class:`~langchain_tiered_memory.agent.capture.AfterTurnCapture`).
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
            (:class:`~langchain_tiered_memory.agent.tools.SearchMemoryTool`): the model searches
            the user's memory with its own query when the recalled items miss what the user
            refers to. ``None`` (default): on for capable models, off for small ones.
        memory_query: capable models, opt-in: before each reply the model writes one line
            for the recall query, ``"note"`` (the memory it hopes to find) or ``"query"``
            (a search query), from the last five user turns; the line joins the
            conversation's query (:mod:`~langchain_tiered_memory.agent.memory_query`). One
            more model call per turn; ``docs/benchmarks.md`` has what it bought and cost
            with a real model. Ignored, with a warning, for small models.
        shared_threads: the app's users share threads, on purpose. By default a thread
            belongs to the user of its first turn and another user's run on it is refused
            (:class:`~langchain_tiered_memory.errors.ThreadOwnershipError`); shared, threads
            are recorded for each user who speaks in them, owned by none, and the erasure
            of any of them deletes the thread.
        context_schema: the type of the run's context (default :class:`MemoryContext`):
            any with a ``user_id`` attribute; an app whose context names the user
            otherwise gives one with ``user_id`` as a property (``return self.account_id``).
            On a LangGraph server with auth, the authenticated identity still wins.
        name: the compiled graph's name.

    Example:
        >>> memory = TieredMemory.embedded()  # doctest: +SKIP
        >>> graph = create_memory_graph(ChatOpenAI(), memory=memory)  # doctest: +SKIP
        >>> graph.invoke({"messages": [("user", "Hi, I'm Alice")]},
        ...              context={"user_id": "alice"},
        ...              config={"configurable": {"thread_id": "t1"}})  # doctest: +SKIP

    """
    if tag_capture is None and force_tag_capture is not None:
        tag_capture = "forced" if force_tag_capture else "tool"
    options = MemoryOptions(
        memory=memory,
        summary_model=summary_model,
        system_prompt=system_prompt,
        memory_prompt=memory_prompt,
        max_context_messages=max_context_messages,
        recall_k=recall_k,
        recall_context_turns=recall_context_turns,
        memory_token_budget=memory_token_budget,
        context_token_budget=context_token_budget,
        auto_summarize_after=auto_summarize_after,
        small_model=small_model,
        tag_capture=tag_capture,
        max_tool_rounds=max_tool_rounds,
        extractive_summary_fallback=extractive_summary_fallback,
        search_memory=search_memory,
        memory_query=memory_query,
        shared_threads=shared_threads,
    )
    g = _GraphNodes(options.build(model), model, tools)
    # the input is the turn's messages: a run that names a memory channel cannot set it
    builder: StateGraph[Any, Any, Any, Any] = StateGraph(
        MemoryState, context_schema=context_schema, input_schema=MemoryInput
    )
    # A sync and an async body per node (invoke and ainvoke each run their own), with the
    # Runtime injected: LangGraph's own RunnableCallable, as langgraph-prebuilt builds nodes.
    nodes_by_name: dict[str, Any] = {
        LOAD_MEMORY: RunnableCallable(g.load_memory, g.aload_memory, name=LOAD_MEMORY),
        MODEL: RunnableCallable(g.call_model, g.acall_model, name=MODEL),
        TOOLS: ToolNode(
            g.tools,
            handle_tool_errors=True,
            wrap_tool_call=bare_or_referenced,
            awrap_tool_call=abare_or_referenced,
        ),
        SAVE_MEMORY: RunnableCallable(g.save_memory, g.asave_memory, name=SAVE_MEMORY),
    }
    for node_name, node in nodes_by_name.items():
        builder.add_node(node_name, node)
    builder.add_edge(START, LOAD_MEMORY)
    builder.add_edge(LOAD_MEMORY, MODEL)
    builder.add_conditional_edges(MODEL, _route_after_model, [TOOLS, MODEL, SAVE_MEMORY])
    builder.add_edge(TOOLS, MODEL)
    builder.add_edge(SAVE_MEMORY, END)
    if checkpointer is not None:
        # ownership is checked where LangGraph writes: the saver's first read of a run;
        # attached, so erasure reaches every saver the package guards (one that closes
        # before the memory is skipped and reported); shared threads: no owner check
        checkpointer = memory.checkpointer(checkpointer, shared_threads=shared_threads)
    graph = builder.compile(checkpointer=checkpointer, store=store, name=name)
    return _without_memory_in_values(graph)


def _shown(runtime: Runtime[Any], update: dict[str, Any]) -> dict[str, Any]:
    """The load's update, its memory section also sent to ``stream_mode="custom"`` as
    ``{"load_memory": {"memory_prompt": ...}}``: the graph keeps the memory it loads out of
    every other stream (``_without_memory_in_values``), and an app that shows the memory
    section of a turn (``tiered-memory chat --show-prompt``, the demo) reads it here, from
    an event no checkpoint or thread record keeps.
    """
    runtime.stream_writer({LOAD_MEMORY: {"memory_prompt": update.get("memory_prompt", "")}})
    return update


def _without_memory_in_values(
    graph: CompiledStateGraph[Any, Any, Any, Any],
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """``graph`` with the memory a run loads (:data:`MEMORY_LOADED`) kept out of its
    values: ``invoke``'s result, the ``"values"`` and ``"checkpoints"`` stream modes,
    ``get_state`` and the thread record a LangGraph server stores from them
    (``threads.get``, ``threads.search``), at every step, a failed or interrupted run's
    included. LangGraph streams every channel of the state (an output schema narrows
    ``invoke``'s result only), so both lists are narrowed; the nodes still read the
    channels. ``stream_mode="updates"`` is narrowed with them: the memory section of a
    turn is sent to ``stream_mode="custom"`` instead (:func:`_shown`).
    """
    graph.stream_channels = [c for c in graph.stream_channels_list if c not in MEMORY_LOADED]
    outputs = graph.output_channels
    if isinstance(outputs, list):  # "__root__" (a str) is a state of one value: not ours
        graph.output_channels = [c for c in outputs if c not in MEMORY_LOADED]
    return graph.validate()

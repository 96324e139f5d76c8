"""Tiered memory for LangChain 1.x agents: ``create_agent(..., middleware=[...])``.

The middleware runs the same code as the prebuilt graph: :class:`~langchain_tiered_memory.
agent.nodes.MemoryNodes` (load before the agent, memory in the system prompt of every model
call, save after the agent), :class:`~langchain_tiered_memory.agent.nodes.ModelStep` (a request to
summarize runs ``summarize`` before the reply, forced tag capture for small local models,
the tool-round limit, portable tool calls) and :class:`~langchain_tiered_memory.agent.capture.
AfterTurnCapture` (the after-turn extraction for capable models, grounded as in the graph);
it contributes the ``user_tag`` and ``summarize`` tools. Which of them a model gets is
:class:`~langchain_tiered_memory.agent.policy.ModelPolicy`'s decision, as in the graph.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest
from langchain.agents.middleware.types import ModelResponse, ToolCallRequest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config
from langgraph.runtime import Runtime
from langgraph.types import Command

from langchain_tiered_memory.agent.context import resolve_user_id, thread_of
from langchain_tiered_memory.agent.memory_query import MemoryQueryKind
from langchain_tiered_memory.agent.model_errors import naming_the_server
from langchain_tiered_memory.agent.nodes import (
    DEFAULT_CONTEXT_TOKEN_BUDGET,
    DEFAULT_MAX_TOOL_ROUNDS,
    DEFAULT_MEMORY_TOKEN_BUDGET,
    ModelStep,
)
from langchain_tiered_memory.agent.policy import TagCapture
from langchain_tiered_memory.agent.prompt import MemoryRenderer
from langchain_tiered_memory.agent.recalled import (
    abare_or_referenced,
    bare_or_referenced,
)
from langchain_tiered_memory.agent.state import MemoryChannels
from langchain_tiered_memory.agent.tools import (
    SEARCH_MEMORY_TOOL,
    USER_TAG_TOOL,
)
from langchain_tiered_memory.agent.turn import MemoryOptions, MemoryTurn
from langchain_tiered_memory.memory import TieredMemory
from langchain_tiered_memory.retrieval.conversation import DEFAULT_CONTEXT_TURNS

__all__ = ["TieredMemoryMiddleware", "TieredMemoryState"]


class TieredMemoryState(AgentState, MemoryChannels):  # type: ignore[type-arg]
    """Agent state plus the memory's channels (``MemoryChannels``, the graph's too)."""


def _config() -> RunnableConfig | None:
    try:
        return get_config()
    except RuntimeError:
        return None


def _user_id(runtime: Runtime[Any]) -> str:
    return resolve_user_id(runtime.context, _config())


class TieredMemoryMiddleware(AgentMiddleware[TieredMemoryState, Any]):
    """Gives a ``create_agent`` agent the three memory tiers.

    The options are :func:`~langchain_tiered_memory.agent.graph.create_memory_graph`'s,
    with the same names, defaults and meaning (documented there), and the turn is built
    from them by the same call (:meth:`~langchain_tiered_memory.agent.turn.MemoryOptions.
    build`): the agent's model decides what ``None`` leaves open, as the graph's model does
    (``small_model=None``: the small-model guards for small in-process models only; the
    summaries and the memory query written by the agent's model unless ``summary_model``).
    The middleware first sees the agent's model at its first model call and then replaces
    its turn with that model's. One difference from the graph follows: with
    ``small_model=None`` the memory section of an agent's very first turn is rendered
    before that call, as for a capable model; pass ``small_model=True`` to have the compact
    one from the start. ``system_prompt`` is added to the agent's own system prompt.

    A thread belongs to the user of its first turn and another user's turn on it is refused
    before the run writes anything, by the checkpointer: give ``create_agent``
    ``memory.checkpointer()`` or ``memory.checkpointer(saver)`` (a bare saver is refused on
    the first turn with :class:`~langchain_tiered_memory.errors.UnguardedCheckpointerError`);
    ``shared_threads=True`` records threads without owners, for apps whose users share them
    on purpose.

    Example:
        >>> from langchain.agents import create_agent
        >>> agent = create_agent(model, tools=[],
        ...                      middleware=[TieredMemoryMiddleware(memory)])  # doctest: +SKIP
        >>> agent.invoke({"messages": [("user", "I'm Alice")]},
        ...              context={"user_id": "alice"})  # doctest: +SKIP
    """

    state_schema = TieredMemoryState

    def __init__(
        self,
        memory: TieredMemory,
        *,
        summary_model: BaseChatModel | None = None,
        system_prompt: str | None = None,
        memory_prompt: MemoryRenderer | None = None,
        max_context_messages: int | None = None,
        recall_k: int = 3,
        recall_context_turns: int = DEFAULT_CONTEXT_TURNS,
        memory_token_budget: int | None = DEFAULT_MEMORY_TOKEN_BUDGET,
        context_token_budget: int | None = DEFAULT_CONTEXT_TOKEN_BUDGET,
        auto_summarize_after: int | None = None,
        small_model: bool | None = None,
        tag_capture: TagCapture | None = None,
        max_tool_rounds: int = DEFAULT_MAX_TOOL_ROUNDS,
        extractive_summary_fallback: bool | None = None,
        search_memory: bool | None = None,
        memory_query: MemoryQueryKind | None = None,
        shared_threads: bool = False,
    ) -> None:
        super().__init__()
        self.options = MemoryOptions(
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
        # until the agent's model is seen, the turn of the model small_model names (None:
        # a capable one); replaced, never changed, on the first model call
        self._turn = self.options.build(None)
        self._seen = False
        # the schemas create_agent binds; a call runs the current turn's tool (wrap_tool_call).
        # search_memory is registered unless refused: a small model's calls withdraw it.
        turn = self._turn
        search = [turn.search_memory_tool] if search_memory is not False else []
        self.tools = [turn.tag_tool, turn.summarize_tool, *search]

    @property
    def turn(self) -> MemoryTurn:
        """The memory turn the agent runs: built from the agent's model on its first call
        (before it, from ``small_model`` alone).
        """
        return self._turn

    def before_agent(self, state: TieredMemoryState, runtime: Runtime[Any]) -> dict[str, Any]:
        """Load tags, recalled items and (first turn) recent history."""
        return self._turn.load(dict(state), _user_id(runtime), thread_of(_config()))

    async def abefore_agent(
        self, state: TieredMemoryState, runtime: Runtime[Any]
    ) -> dict[str, Any]:
        """Async :meth:`before_agent`."""
        return await self._turn.aload(dict(state), _user_id(runtime), thread_of(_config()))

    def _adopt(self, model: BaseChatModel) -> MemoryTurn:
        """The turn of the agent's model, built once, as the graph builds it: the prompt,
        the thread and the tools from this call on; the memory section and the kept tags
        from the next load on (a turn's load runs before its first model call, where the
        agent's model is first seen). Replaced whole, so no call sees half of each.
        """
        if not self._seen:
            self._turn = self.options.build(model, like=self._turn)
            self._seen = True
        return self._turn

    def _request(self, request: ModelRequest) -> ModelRequest:
        base = request.system_message.text if request.system_message else None
        turn = self._turn
        prompt = (base + "\n\n" + turn.settings.system_prompt) if base else None
        state = {**request.state, "messages": request.messages}
        composed = turn.nodes.compose(state, prompt)
        system = composed[0]
        assert isinstance(system, SystemMessage)
        return request.override(system_message=system, messages=composed[1:])  # type: ignore[arg-type]

    def _plan(self, request: ModelRequest) -> _ModelCall:
        """Everything about this model call but its I/O (shared by the sync and async paths)."""
        turn = self._adopt(request.model)
        request = self._request(request)
        if not turn.settings.search_tool:
            tools = [t for t in request.tools if _tool_name(t) != SEARCH_MEMORY_TOOL]
            request = request.override(tools=tools)
        tags: dict[str, str] = dict(request.state.get("memory_tags") or {})  # type: ignore[call-overload]
        return _ModelCall(request, turn.step, list(request.state["messages"]), tags)

    def _forced(self, request: ModelRequest) -> Any:
        return request.model.bind_tools([self._turn.tag_tool], tool_choice=USER_TAG_TOOL)

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        """Put memory into the system prompt and recent history before the thread; force
        tag capture for small models; stop the tool loop after ``max_tool_rounds``.
        """
        with naming_the_server(request.model):  # a server that is down: named in the error
            return self._wrap_model_call(request, handler)

    def _wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        call = self._plan(request)
        if (scripted := call.step.scripted(call.thread, call.tags)) is not None:
            return ModelResponse(result=[scripted])
        if call.human is not None:
            forced = self._forced(call.request).invoke(call.prompt)
            captured = call.step.captured(forced, call.human)
            if captured is not None:
                return ModelResponse(result=[captured])
        response = call.finish(handler(call.free_request))
        if call.empty(response):  # once more without tools, then what the turn did
            response = call.finish(handler(call.bare_request), exhausted=True)
        return call.never_empty(response)

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        """Async :meth:`wrap_model_call`."""
        with naming_the_server(request.model):
            return await self._awrap_model_call(request, handler)

    async def _awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        call = self._plan(request)
        if (scripted := call.step.scripted(call.thread, call.tags)) is not None:
            return ModelResponse(result=[scripted])
        if call.human is not None:
            forced = await self._forced(call.request).ainvoke(call.prompt)
            captured = call.step.captured(forced, call.human)
            if captured is not None:
                return ModelResponse(result=[captured])
        response = call.finish(await handler(call.free_request))
        if call.empty(response):
            response = call.finish(await handler(call.bare_request), exhausted=True)
        return call.never_empty(response)

    def after_agent(self, state: TieredMemoryState, runtime: Runtime[Any]) -> dict[str, Any]:
        """Record the facts the turn stated that no call recorded (capable models), then
        append the turn's new messages to the user's history.
        """
        config = _config()
        return self._turn.save(dict(state), _user_id(runtime), thread_of(config), config)

    async def aafter_agent(self, state: TieredMemoryState, runtime: Runtime[Any]) -> dict[str, Any]:
        """Async :meth:`after_agent`."""
        config = _config()
        return await self._turn.asave(dict(state), _user_id(runtime), thread_of(config), config)

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        """Run a memory tool as the current turn built it (the agent's model's summary
        switches; ``search_memory``'s result kept by reference, ``agent/recalled.py``);
        the app's tools as they are.
        """
        return bare_or_referenced(self._current_tool(request), handler)

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        """Async :meth:`wrap_tool_call`."""
        return await abare_or_referenced(self._current_tool(request), handler)

    def _current_tool(self, request: ToolCallRequest) -> ToolCallRequest:
        tool = self._turn.tool(request.tool_call["name"])
        return request if tool is None or tool is request.tool else request.override(tool=tool)


def _tool_name(tool: Any) -> str | None:
    if isinstance(tool, dict):
        function = tool.get("function")
        return (function or {}).get("name") if isinstance(function, dict) else tool.get("name")
    return getattr(tool, "name", None)


@dataclass
class _ModelCall:
    """One model call of the agent, as the memory's :class:`ModelStep` decides it."""

    request: ModelRequest
    step: ModelStep
    thread: list[Any]
    tags: dict[str, str]

    @cached_property
    def human(self) -> Any:
        """The human message to force a ``user_tag`` call for, if any."""
        return self.step.wants_capture(self.thread)

    @property
    def prompt(self) -> list[Any]:
        return [self.request.system_message, *self.request.messages]

    @cached_property
    def exhausted(self) -> bool:
        return self.step.exhausted(self.thread)

    @property
    def free_request(self) -> ModelRequest:
        """The request for the free model: no tools past the budget; in force mode no
        ``user_tag`` (it is forced when the user states a fact, as in the graph).
        """
        if self.exhausted:
            return self.request.override(tools=[], tool_choice=None)
        if self.step.force_tag_capture:
            tools = [t for t in self.request.tools if _tool_name(t) != USER_TAG_TOOL]
            return self.request.override(tools=tools)
        return self.request

    @property
    def bare_request(self) -> ModelRequest:
        """The request asked again when the reply was empty: no tools, it must answer."""
        return self.request.override(tools=[], tool_choice=None)

    def finish(self, response: ModelResponse, *, exhausted: bool | None = None) -> ModelResponse:
        spent = self.exhausted if exhausted is None else exhausted
        result = [self.step.finish(m, self.thread, spent) for m in response.result]
        return ModelResponse(result=result, structured_response=response.structured_response)

    def empty(self, response: ModelResponse) -> bool:
        """Whether the model's reply is empty (no text, no call)."""
        return bool(response.result) and self.step.empty(response.result[-1])

    def never_empty(self, response: ModelResponse) -> ModelResponse:
        """``response``, or the reply saying what the turn did when it is empty."""
        if not self.empty(response):
            return response
        result = [*response.result[:-1], self.step.no_reply(self.thread, self.tags)]
        return ModelResponse(result=result, structured_response=response.structured_response)

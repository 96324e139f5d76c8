"""Tiered memory for LangChain 1.x agents: ``create_agent(..., middleware=[...])``.

The middleware runs the same :class:`~langchain_tiered_memory.graph.MemoryNodes` code as the
prebuilt graph: load before the agent, memory in the system prompt of every model call,
save after the agent, and it contributes the ``user_tag`` and ``summarize`` tools.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest
from langchain.agents.middleware.types import ModelResponse
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AnyMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config
from langgraph.runtime import Runtime
from typing_extensions import NotRequired

from langchain_tiered_memory.context import resolve_user_id, thread_of
from langchain_tiered_memory.graph import (
    DEFAULT_CONTEXT_TOKEN_BUDGET,
    DEFAULT_MEMORY_TOKEN_BUDGET,
    MemoryNodes,
)
from langchain_tiered_memory.memory import TieredMemory
from langchain_tiered_memory.prompt import DEFAULT_SYSTEM_PROMPT
from langchain_tiered_memory.tools import SummarizeTool, UserTagTool

__all__ = ["TieredMemoryMiddleware", "TieredMemoryState"]


class TieredMemoryState(AgentState):  # type: ignore[type-arg]
    """Agent state plus what memory loaded for the current turn."""

    memory_prompt: NotRequired[str]
    recent_history: NotRequired[list[AnyMessage]]
    saved_count: NotRequired[int]


def _config() -> RunnableConfig | None:
    try:
        return get_config()
    except RuntimeError:
        return None


def _user_id(runtime: Runtime[Any]) -> str:
    return resolve_user_id(runtime.context, _config())


class TieredMemoryMiddleware(AgentMiddleware[TieredMemoryState, Any]):
    """Gives a ``create_agent`` agent the three memory tiers.

    ``summary_model`` writes the summaries; by default the agent's own model, picked up on
    its first model call.

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
        max_context_messages: int = 20,
        recall_k: int = 3,
        memory_token_budget: int | None = DEFAULT_MEMORY_TOKEN_BUDGET,
        context_token_budget: int | None = DEFAULT_CONTEXT_TOKEN_BUDGET,
        auto_summarize_after: int | None = None,
    ) -> None:
        super().__init__()
        self.nodes = MemoryNodes(
            memory=memory,
            system_prompt=DEFAULT_SYSTEM_PROMPT,
            max_context_messages=max_context_messages,
            recall_k=recall_k,
            memory_token_budget=memory_token_budget,
            context_token_budget=context_token_budget,
            auto_summarize_after=auto_summarize_after,
            summary_model=summary_model,
        )
        self._summarize = SummarizeTool(memory=memory, model=summary_model)
        self.tools = [UserTagTool(memory=memory), self._summarize]

    def before_agent(self, state: TieredMemoryState, runtime: Runtime[Any]) -> dict[str, Any]:
        """Load tags, recalled items and (first turn) recent history."""
        return self.nodes.load(dict(state), _user_id(runtime))

    async def abefore_agent(
        self, state: TieredMemoryState, runtime: Runtime[Any]
    ) -> dict[str, Any]:
        """Async :meth:`before_agent`."""
        return await self.nodes.aload(dict(state), _user_id(runtime))

    def _request(self, request: ModelRequest) -> ModelRequest:
        if self.nodes.summary_model is None:
            self.nodes.summary_model = request.model
            self._summarize.model = request.model
        base = request.system_message.text if request.system_message else None
        prompt = (base + "\n\n" + DEFAULT_SYSTEM_PROMPT) if base else None
        state = {**request.state, "messages": request.messages}
        composed = self.nodes.compose(state, prompt)
        system = composed[0]
        assert isinstance(system, SystemMessage)
        return request.override(system_message=system, messages=composed[1:])  # type: ignore[arg-type]

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        """Put memory into the system prompt and recent history before the thread."""
        return handler(self._request(request))

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        """Async :meth:`wrap_model_call`."""
        return await handler(self._request(request))

    def after_agent(self, state: TieredMemoryState, runtime: Runtime[Any]) -> dict[str, Any]:
        """Append the turn's new messages to the user's history."""
        return self.nodes.save(dict(state), _user_id(runtime), thread_of(_config()))

    async def aafter_agent(self, state: TieredMemoryState, runtime: Runtime[Any]) -> dict[str, Any]:
        """Async :meth:`after_agent`."""
        return await self.nodes.asave(dict(state), _user_id(runtime), thread_of(_config()))

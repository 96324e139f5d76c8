"""The memory turn, assembled once for both agent doors.

:class:`MemoryOptions` is what the app asked for (a frozen object, the same for the
prebuilt graph and the agent middleware); :meth:`MemoryOptions.build` turns it and a chat
model into a :class:`MemoryTurn`: the model's settings (:class:`TurnSettings`), the memory
steps (:class:`MemoryNodes`, :class:`ModelStep`), the memory tools and the after-turn
capture. ``create_memory_graph`` builds one and wires it into nodes; the middleware builds
one for the model it knows (``None`` before its first model call) and *replaces* it with
the agent model's turn when it first sees that model. Neither door decides a setting.

Example:
    >>> options = MemoryOptions(memory=memory)  # doctest: +SKIP
    >>> turn = options.build(ChatOpenAI())  # doctest: +SKIP
    >>> turn.settings.tag_capture  # doctest: +SKIP
    'after_turn'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool

from langchain_tiered_memory._steps import Plan, call, paired
from langchain_tiered_memory.agent.capture import AfterTurnCapture
from langchain_tiered_memory.agent.memory_query import MemoryQueryKind
from langchain_tiered_memory.agent.nodes import (
    DEFAULT_CONTEXT_TOKEN_BUDGET,
    DEFAULT_MAX_TOOL_ROUNDS,
    DEFAULT_MEMORY_TOKEN_BUDGET,
    MemoryNodes,
    ModelStep,
)
from langchain_tiered_memory.agent.policy import ModelPolicy, TagCapture
from langchain_tiered_memory.agent.prompt import MemoryRenderer
from langchain_tiered_memory.agent.settings import TurnSettings
from langchain_tiered_memory.agent.state import memory_cleared
from langchain_tiered_memory.agent.tools import (
    SearchMemoryTool,
    SummarizeTool,
    UserTagTool,
    pending_tags,
)
from langchain_tiered_memory.agent.unsaved import unsaved
from langchain_tiered_memory.memory import TieredMemory
from langchain_tiered_memory.retrieval.conversation import DEFAULT_CONTEXT_TURNS

__all__ = ["MemoryOptions", "MemoryTurn"]


@dataclass(frozen=True, kw_only=True)
class MemoryOptions:
    """The app's options of the memory turn; ``None`` leaves a choice to the model's policy.

    ``create_memory_graph`` and ``TieredMemoryMiddleware`` document each option.
    """

    memory: TieredMemory
    summary_model: BaseChatModel | None = None
    system_prompt: str | None = None
    memory_prompt: MemoryRenderer | None = None
    max_context_messages: int | None = None
    recall_k: int = 3
    recall_context_turns: int = DEFAULT_CONTEXT_TURNS
    memory_token_budget: int | None = DEFAULT_MEMORY_TOKEN_BUDGET
    context_token_budget: int | None = DEFAULT_CONTEXT_TOKEN_BUDGET
    auto_summarize_after: int | None = None
    small_model: bool | None = None
    tag_capture: TagCapture | None = None
    max_tool_rounds: int = DEFAULT_MAX_TOOL_ROUNDS
    extractive_summary_fallback: bool | None = None
    search_memory: bool | None = None
    memory_query: MemoryQueryKind | None = None
    shared_threads: bool = False

    def policy(self, model: BaseChatModel | None) -> ModelPolicy:
        """The guards of ``model`` (``None``: a model not seen yet, capable unless
        ``small_model`` says otherwise).
        """
        if model is None:
            return ModelPolicy(small=self.small_model is True)
        return ModelPolicy.for_model(model, small=self.small_model)

    def settings(self, policy: ModelPolicy) -> TurnSettings:
        """The settings of the turns of a model with ``policy``.

        Raises:
            ValueError: an unknown ``tag_capture`` or ``memory_query``.
        """
        return TurnSettings.of(
            policy,
            system_prompt=self.system_prompt,
            memory_prompt=self.memory_prompt,
            max_context_messages=self.max_context_messages,
            tag_capture=self.tag_capture,
            extractive_summary_fallback=self.extractive_summary_fallback,
            search_memory=self.search_memory,
            memory_query=self.memory_query,
        )

    def build(self, model: BaseChatModel | None, *, like: MemoryTurn | None = None) -> MemoryTurn:
        """The turn of ``model`` (``None``: before the middleware has seen its model).

        ``like``: a turn built before, whose settings are kept when ``model`` has the same
        policy (what the settings warned about is said once).

        Raises:
            ValueError: an unknown ``tag_capture`` or ``memory_query``.
        """
        policy = self.policy(model)
        same = like is not None and like.policy == policy
        settings = like.settings if like is not None and same else self.settings(policy)
        memory = self.memory
        summary_model = self.summary_model or model
        nodes = MemoryNodes(
            memory=memory,
            settings=settings,
            recall_k=self.recall_k,
            recall_context_turns=self.recall_context_turns,
            memory_token_budget=self.memory_token_budget,
            context_token_budget=self.context_token_budget,
            auto_summarize_after=self.auto_summarize_after,
            summary_model=summary_model,
            shared_threads=self.shared_threads,
            # the agent's model writes the memory query; until it is seen, the summarizer
            query_model=model or self.summary_model,
        )
        capture = settings.tag_capture == "after_turn" and model is not None
        return MemoryTurn(
            model=model,
            policy=policy,
            settings=settings,
            nodes=nodes,
            step=ModelStep.of(settings, self.max_tool_rounds, memory),
            # its tags are recorded by this turn's save: a rolled-back run records none
            tag_tool=UserTagTool(memory=memory, deferred=True),
            summarize_tool=SummarizeTool(
                memory=memory, model=summary_model, **settings.summary_options
            ),
            search_memory_tool=SearchMemoryTool(memory=memory),
            capture=AfterTurnCapture.for_model(memory, model) if capture else None,
        )


@dataclass(frozen=True)
class MemoryTurn:
    """Everything one model's memory turn runs with; built by :meth:`MemoryOptions.build`.

    Attributes:
        model: the agent's chat model (``None``: not seen yet).
        policy: the model's guards, which ``settings`` follow.
        settings: what the model's turns run with.
        nodes: load, compose and save.
        step: the decisions around each model call.
        tag_tool: ``user_tag``.
        summarize_tool: ``summarize``, with this model's summary switches.
        search_memory_tool: ``search_memory`` (offered when ``settings.search_tool``).
        capture: the after-turn tag extraction, or ``None``.
    """

    model: BaseChatModel | None
    policy: ModelPolicy
    settings: TurnSettings
    nodes: MemoryNodes
    step: ModelStep
    tag_tool: UserTagTool
    summarize_tool: SummarizeTool
    search_memory_tool: SearchMemoryTool
    capture: AfterTurnCapture | None

    @property
    def tools(self) -> list[BaseTool]:
        """The memory tools the model is offered, ``user_tag`` first."""
        search = [self.search_memory_tool] if self.settings.search_tool else []
        return [self.tag_tool, self.summarize_tool, *search]

    def tool(self, name: str) -> BaseTool | None:
        """This turn's memory tool called ``name``, or ``None`` (an app's tool)."""
        tools = (self.tag_tool, self.summarize_tool, self.search_memory_tool)
        return next((t for t in tools if t.name == name), None)

    @paired
    def load(
        self, state: dict[str, Any], user_id: str, thread_id: str | None
    ) -> Plan[dict[str, Any]]:
        """Load the turn's memory into the state (:meth:`MemoryNodes.load`)."""
        nodes = self.nodes
        return (yield call(nodes.load, nodes.aload, state, user_id, thread_id))

    aload = load.aio

    @paired
    def save(
        self,
        state: dict[str, Any],
        user_id: str,
        thread_id: str | None,
        config: RunnableConfig | None,
    ) -> Plan[dict[str, Any]]:
        """Record the tags the turn's ``user_tag`` calls left to it
        (:func:`~langchain_tiered_memory.agent.tools.pending_tags`) and the facts it stated
        that no call recorded (the after-turn capture), then append the turn's new messages
        to the user's history; the update also empties what the turn loaded
        (:func:`~langchain_tiered_memory.agent.state.memory_cleared`). Both doors' last
        step: a run that never gets here (rolled back by a LangGraph server, cancelled,
        failed) wrote no tag, and the state it ends with carries no memory.
        """
        # the thread's messages the history does not hold: a failed run's calls are kept
        # in the thread and recorded by its next save, a rolled-back run's are gone
        if tags := pending_tags(unsaved(state).new):
            memory = self.nodes.memory
            yield call(
                memory.set_user_tags, memory.aset_user_tags, user_id, tags, thread_id=thread_id
            )
        if (capture := self.capture) is not None:
            yield call(capture.run, capture.arun, state["messages"], user_id, thread_id, config)
        nodes = self.nodes
        update = yield call(nodes.save, nodes.asave, state, user_id, thread_id, config)
        return {**update, **memory_cleared()}

    asave = save.aio

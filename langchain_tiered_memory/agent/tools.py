"""The memory tools the model calls: ``user_tag`` and ``summarize``.

The user id never appears in a tool's arguments: it comes from the run (the graph's
context or ``config["configurable"]["user_id"]``), so whatever the model emits, a run for
one user cannot touch another user's memory. Bad arguments come back to the model as an
error ``ToolMessage`` saying what is wrong; nothing is written.

``user_tag`` stores only what the user's message states about the user
(:func:`~langchain_tiered_memory.language.attribution.ground_tags`): run by a ``ToolNode`` (the
prebuilt graph, ``create_agent``, any LangGraph agent) it reads the turn's message from the
injected ``ToolRuntime`` and drops a value the user did not state of themself, or one that
would change a stored value without the user saying so. Called directly by app code,
with no conversation, it records what it is given.

In a memory turn (the prebuilt graph, the middleware: ``deferred``) ``user_tag`` validates
and answers but records nothing itself: the tags ride in its ``ToolMessage``'s artifact
(:data:`PENDING_TAGS`) and the turn's save step records them
(:func:`pending_tags`). A run that never reaches its save (rolled back by a LangGraph
server, cancelled, failed) leaves no tag; the memory follows the thread's messages.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, ToolException
from langchain_core.tools.base import InjectedToolArg
from pydantic import BaseModel, ConfigDict, Field, create_model

from langchain_tiered_memory.agent.context import resolve_user_id, saved_position, thread_of
from langchain_tiered_memory.agent.prompt import quote
from langchain_tiered_memory.agent.unsaved import unsaved
from langchain_tiered_memory.errors import InvalidTagError, SummarizationError
from langchain_tiered_memory.language.attribution import ground_tags

if TYPE_CHECKING:
    from langchain_tiered_memory.memory import TieredMemory

logger = logging.getLogger(__name__)

__all__ = [
    "PENDING_TAGS",
    "pending_tags",
    "UserTagTool",
    "SummarizeTool",
    "SearchMemoryTool",
    "USER_TAG_TOOL",
    "SUMMARIZE_TOOL",
    "SEARCH_MEMORY_TOOL",
]

USER_TAG_TOOL = "user_tag"
SUMMARIZE_TOOL = "summarize"
SEARCH_MEMORY_TOOL = "search_memory"
MAX_SEARCH_RESULTS = 20
# the artifact key of a deferred user_tag result: the validated tags the turn's save records
PENDING_TAGS = "pending_tags"


def run_context() -> Any:
    """The graph run's context, or ``None`` outside a LangGraph run."""
    try:
        from langgraph.runtime import get_runtime

        return get_runtime().context
    except (AttributeError, RuntimeError, KeyError):
        return None


def _user_id(config: RunnableConfig) -> str:
    return resolve_user_id(run_context(), config)


def _optional_schema(schema: type[BaseModel]) -> type[BaseModel]:
    """The tag schema as the model sees it: every field optional.

    No ``additionalProperties: false``: llama.cpp's function calling mangles arguments when
    it is present, and unknown tags are refused by our own validation anyway.
    """
    fields: dict[str, Any] = {}
    for name, field in schema.model_fields.items():
        info: Any = Field(
            default=None,
            description=field.description,
            json_schema_extra=field.json_schema_extra,  # type: ignore[arg-type]
        )
        info.metadata = list(field.metadata)  # keeps ge/le/max_length in the JSON schema
        annotation = field.annotation
        fields[name] = (annotation | None if annotation is not None else Any, info)
    return create_model(USER_TAG_TOOL, **fields)  # type: ignore[call-overload, no-any-return]


def _loose_schema(schema: type[BaseModel]) -> type[BaseModel]:
    """What the tool accepts: anything, so *our* validation reports every problem; and
    ``runtime``, the ``ToolRuntime`` a ``ToolNode`` injects (the turn's messages).
    """
    fields: dict[str, Any] = {name: (Any, None) for name in schema.model_fields}
    fields["runtime"] = (Annotated[Any, InjectedToolArg], None)
    return create_model(  # type: ignore[call-overload, no-any-return]
        f"{USER_TAG_TOOL}_input", __config__=ConfigDict(extra="allow"), **fields
    )


def _turn_text(runtime: Any) -> str | None:
    """The latest human message of the run's state, ``None`` outside a ``ToolNode``."""
    state = getattr(runtime, "state", None)
    messages = state.get("messages") if isinstance(state, dict) else None
    if messages is None:
        messages = getattr(state, "messages", None)
    if messages is None:
        return None
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return message.text
    return ""  # a conversation with no human message states nothing


def pending_tags(messages: Sequence[BaseMessage]) -> dict[str, str]:
    """The tags the deferred ``user_tag`` calls among ``messages`` left to the turn's save,
    merged in order (a later call's value wins, as two writes would).

    Example:
        >>> done = ToolMessage("Recorded: age=30.", tool_call_id="c1", name="user_tag",
        ...                    artifact={"pending_tags": {"age": "30"}})
        >>> pending_tags([done])
        {'age': '30'}
    """
    tags: dict[str, str] = {}
    for message in messages:
        if not isinstance(message, ToolMessage) or message.name != USER_TAG_TOOL:
            continue
        artifact = message.artifact
        pending = artifact.get(PENDING_TAGS) if isinstance(artifact, dict) else None
        if message.status != "error" and isinstance(pending, dict):
            tags.update({str(k): str(v) for k, v in pending.items()})
    return tags


def _turn_messages(runtime: Any) -> list[BaseMessage]:
    """The run's messages from its latest human message on (the turn so far)."""
    state = getattr(runtime, "state", None)
    messages = state.get("messages") if isinstance(state, dict) else None
    if messages is None:
        messages = getattr(state, "messages", None) or []
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], HumanMessage):
            return list(messages[i:])
    return list(messages)


def _ungrounded(text: str, values: dict[str, Any], stored: dict[str, str]) -> dict[str, Any]:
    """``values`` reduced to what ``text`` states about the user (see the module
    docstring); raises ``ToolException`` saying why when nothing is left.
    """
    grounding = ground_tags(values, text, stored=stored)
    grounding.log("user_tag")
    if grounding.kept:
        return grounding.kept
    reasons = "; ".join(f"{d.tag}={d.value!r}: {d.reason}" for d in grounding.dropped)
    raise ToolException(
        f"NOT RECORDED: nothing was stored ({reasons}). Do not tell the user it was "
        "recorded. Record only facts the user stated about themself in their message; to "
        "change a stored value the user must say it changed."
    )


class UserTagTool(BaseTool):
    """Records facts about the user ("tags") validated by the memory's tag schema.

    Example:
        >>> tool = UserTagTool(memory=memory)  # doctest: +SKIP
        >>> tool.invoke({"name": "Alice", "age": 30},
        ...             config={"configurable": {"user_id": "alice"}})  # doctest: +SKIP
        'Recorded: age=30, name=Alice.'

    """

    name: str = USER_TAG_TOOL
    description: str = (
        "Record facts the user states about themselves (only the fields you know). "
        "Call it whenever the user tells you one of these facts."
    )
    memory: Any = Field(exclude=True)
    handle_tool_error: bool = True
    # the artifact carries the tags a deferred call leaves to the turn's save
    response_format: Literal["content", "content_and_artifact"] = "content_and_artifact"
    # Run by a ToolNode in a memory turn: validate and answer, and leave the write to the
    # turn's save (pending_tags), so a run the server rolls back records nothing. Set by
    # the turn (agent/turn.py), whose save step records them; an app's own graph has none.
    deferred: bool = False

    def __init__(self, *, memory: TieredMemory, **kwargs: Any) -> None:
        schema = memory.tags.schema
        super().__init__(memory=memory, args_schema=_loose_schema(schema), **kwargs)
        self._call_schema = _optional_schema(schema)

    @property
    def tool_call_schema(self) -> type[BaseModel]:  # type: ignore[override]
        """The typed, all-optional tag schema shown to the model."""
        return self._call_schema

    @staticmethod
    def _given(kwargs: dict[str, Any]) -> dict[str, Any]:
        # Weak models fill fields they do not know with "" or null: that means "not given".
        values = {k: v for k, v in kwargs.items() if v is not None and v != ""}
        if not values:
            raise ToolException("No tag values given: pass at least one field you know.")
        return values

    @staticmethod
    def _confirm(stored: dict[str, str], asked: dict[str, Any]) -> str:
        out = "Recorded: " + ", ".join(f"{k}={v}" for k, v in sorted(stored.items())) + "."
        left = sorted(set(asked) - set(stored))
        if left:
            out += " NOT RECORDED (not stated by the user about themself): " + ", ".join(left)
            out += "."
        return out

    def _defers(self, text: str | None) -> bool:
        """Whether this call leaves the write to the turn's save: a deferred tool run by
        a ``ToolNode`` (a conversation: ``text`` is not ``None``).
        """
        return self.deferred and text is not None

    def _result(
        self, stored: dict[str, str], asked: dict[str, Any], pending: bool
    ) -> tuple[str, dict[str, Any] | None]:
        return self._confirm(stored, asked), ({PENDING_TAGS: stored} if pending else None)

    def _run(
        self, config: RunnableConfig, runtime: Any = None, **kwargs: Any
    ) -> tuple[str, dict[str, Any] | None]:
        user_id = _user_id(config)
        values = asked = self._given(kwargs)
        text = _turn_text(runtime)
        defers = self._defers(text)
        try:
            if text is not None:
                known = self.memory.get_user_tags(user_id)
                if defers:  # this turn's earlier calls count as stored
                    known.update(pending_tags(_turn_messages(runtime)))
                values = _ungrounded(text, values, known)
            if defers:
                stored = self.memory.tags.validate(values)
            else:
                stored = self.memory.set_user_tags(user_id, values, thread_id=thread_of(config))
        except InvalidTagError as exc:
            raise ToolException(f"NOT RECORDED: nothing was stored: {exc}") from exc
        return self._result(stored, asked, defers)

    async def _arun(
        self, config: RunnableConfig, runtime: Any = None, **kwargs: Any
    ) -> tuple[str, dict[str, Any] | None]:
        user_id = _user_id(config)
        values = asked = self._given(kwargs)
        text = _turn_text(runtime)
        defers = self._defers(text)
        try:
            if text is not None:
                known = await self.memory.aget_user_tags(user_id)
                if defers:
                    known.update(pending_tags(_turn_messages(runtime)))
                # reading a long message is CPU work: off the event loop
                values = await asyncio.to_thread(_ungrounded, text, values, known)
            if defers:
                stored = self.memory.tags.validate(values)
            else:
                stored = await self.memory.aset_user_tags(
                    user_id, values, thread_id=thread_of(config)
                )
        except InvalidTagError as exc:
            raise ToolException(f"NOT RECORDED: nothing was stored: {exc}") from exc
        return self._result(stored, asked, defers)


class _NoArgs(BaseModel):
    # extra arguments reach the tool, which refuses them in words the model can act on
    model_config = ConfigDict(extra="allow")
    # the ToolRuntime a ToolNode injects: the turn's messages (not shown to the model)
    runtime: Annotated[Any, InjectedToolArg] = None


def _no_arguments(kwargs: dict[str, Any]) -> None:
    """Refuse a ``summarize`` call with arguments: a real model called it with
    ``query`` and ``k`` (a search) and a summary ran instead.
    """
    if kwargs:
        raise ToolException(
            f"NOT DONE: {SUMMARIZE_TOOL} takes no arguments (got {', '.join(sorted(kwargs))}); "
            f"nothing was summarized. To look something up in memory, call "
            f"{SEARCH_MEMORY_TOOL} with a query; call {SUMMARIZE_TOOL} with no arguments only "
            "when the user asks to summarize or remember the conversation."
        )


def _turn_so_far(runtime: Any, config: RunnableConfig) -> tuple[list[Any], int | None, str | None]:
    """The run's messages the history does not hold yet (the turn the tool is called in),
    their position and the thread: saved before summarizing, so that "Please summarize"
    in the same message as the facts summarizes them. Outside a ``ToolNode``, or in a run
    with no thread: nothing.
    """
    state = getattr(runtime, "state", None)
    thread = thread_of(config)
    # a thread's position makes the later save a replay; without a thread it would not be
    if not isinstance(state, dict) or "messages" not in state or thread is None:
        return [], 0, None
    batch, saved = unsaved(state)[:2]
    return batch, saved_position(config, saved), thread


class SummarizeTool(BaseTool):
    """Summarizes the user's not yet summarized history into long-term memory items.

    Example:
        >>> tool = SummarizeTool(memory=memory, model=chat_model)  # doctest: +SKIP

    """

    name: str = SUMMARIZE_TOOL
    description: str = (
        "Summarize the conversation so far into long-term memory. Call it when the user "
        "asks you to summarize or remember the conversation."
    )
    args_schema: type[BaseModel] = _NoArgs
    memory: Any = Field(exclude=True)
    model: Any = Field(exclude=True)
    extractive_fallback: bool = False
    grounded: bool = False
    reconcile: bool = True
    handle_tool_error: bool = True

    def __init__(self, *, memory: TieredMemory, model: BaseChatModel | None, **kwargs: Any) -> None:
        super().__init__(memory=memory, model=model, **kwargs)

    @staticmethod
    def _report(ids: list[str], docs: list[Any]) -> str:
        if not ids:
            return "Nothing new to summarize: the memory is up to date."
        wanted = set(ids)
        # quoted as the system prompt quotes them: an item cannot forge a line of its own
        texts = [quote(d.page_content) for d in docs if d.id in wanted]
        listed = "".join(f"\n- {t}" for t in texts)
        return f"Stored {len(ids)} memory item(s) from the conversation:{listed}"

    def _model(self) -> BaseChatModel:
        if self.model is None:
            raise ToolException("No summarizer model is configured; nothing was stored.")
        return self.model  # type: ignore[no-any-return]

    def _run(self, config: RunnableConfig, runtime: Any = None, **kwargs: Any) -> str:
        _no_arguments(kwargs)
        user_id = _user_id(config)
        new, position, thread = _turn_so_far(runtime, config)
        if new:  # stored once: the save step's write of the same positions is a replay
            self.memory.add_session_log(
                user_id, new, thread_id=thread, thread_position=position, on_invalid="placeholder"
            )
        try:
            ids = self.memory.summarize_history(
                user_id,
                self._model(),
                extractive_fallback=self.extractive_fallback,
                grounded=self.grounded,
                reconcile=self.reconcile,
            )
            return self._report(ids, self.memory.summaries.get_all(user_id) if ids else [])
        except SummarizationError as exc:
            raise ToolException(f"Summarizing failed, nothing was stored: {exc}") from exc

    async def _arun(self, config: RunnableConfig, runtime: Any = None, **kwargs: Any) -> str:
        _no_arguments(kwargs)
        user_id = _user_id(config)
        new, position, thread = _turn_so_far(runtime, config)
        if new:
            await self.memory.aadd_session_log(
                user_id, new, thread_id=thread, thread_position=position, on_invalid="placeholder"
            )
        try:
            ids = await self.memory.asummarize_history(
                user_id,
                self._model(),
                extractive_fallback=self.extractive_fallback,
                grounded=self.grounded,
                reconcile=self.reconcile,
            )
            docs = await self.memory.summaries.aget_all(user_id) if ids else []
            return self._report(ids, docs)
        except SummarizationError as exc:
            raise ToolException(f"Summarizing failed, nothing was stored: {exc}") from exc


class _SearchArgs(BaseModel):
    query: str = Field(
        description="What to look for, in your own words: a topic, a person, an event, a "
        "feeling, or a hypothetical memory ('the user failed an exam')."
    )
    k: int = Field(default=5, ge=1, le=MAX_SEARCH_RESULTS, description="How many memories.")


class SearchMemoryTool(BaseTool):
    """Searches the user's long-term memory with a query the model writes.

    The memory section of the prompt already holds what the conversation recalls; this
    tool is for what it missed (another topic, an earlier event the user alludes to). The
    user is the run's, never an argument; the ranking is ``recall_summaries``'.

    Example:
        >>> tool = SearchMemoryTool(memory=memory)  # doctest: +SKIP
        >>> tool.invoke({"query": "driving test"},
        ...             config={"configurable": {"user_id": "alice"}})  # doctest: +SKIP
        '1. (2025-06-01) The user passed their driving test on the second try.'
    """

    name: str = SEARCH_MEMORY_TOOL
    description: str = (
        "Search the user's long-term memory (summaries of earlier conversations) when the "
        "memories in your instructions do not cover what the user refers to. Returns the "
        "best matches with their dates."
    )
    args_schema: type[BaseModel] = _SearchArgs
    response_format: Literal["content", "content_and_artifact"] = "content_and_artifact"
    memory: Any = Field(exclude=True)
    handle_tool_error: bool = True
    handle_validation_error: bool = True  # bad arguments come back as a message

    def __init__(self, *, memory: TieredMemory, **kwargs: Any) -> None:
        super().__init__(memory=memory, **kwargs)

    @staticmethod
    def _query(query: Any, k: Any) -> tuple[str, int]:
        if not isinstance(query, str) or not query.strip():
            raise ToolException("Give a non-empty query string.")
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_SEARCH_RESULTS:
            raise ToolException(f"k must be a whole number from 1 to {MAX_SEARCH_RESULTS}.")
        return query, k

    @staticmethod
    def _report(docs: list[Any]) -> tuple[str, dict[str, Any]]:
        """The text a direct call returns, and the items by id (the artifact: a turn
        keeps the result by reference, ``agent/recalled.py``).
        """
        if not docs:
            return "No memories found.", {}
        items = []
        for doc in docs:
            # quoted as the system prompt quotes them (one JSON string a line): a stored
            # item holding line feeds cannot forge results or a "SYSTEM:" line here
            text = quote(doc.page_content)
            when = str(doc.metadata.get("created_at") or "")[:10]
            items.append({"id": str(doc.id), "line": f"({when}) {text}" if when else text})
        report = "\n".join(f"{n}. {i['line']}" for n, i in enumerate(items, start=1))
        return report, {"memory_items": items}

    def _run(self, config: RunnableConfig, query: Any, k: Any = 5) -> tuple[str, dict[str, Any]]:
        text, n = self._query(query, k)
        user_id = _user_id(config)
        return self._report(self.memory.recall_summaries(user_id, text, n))

    async def _arun(
        self, config: RunnableConfig, query: Any, k: Any = 5
    ) -> tuple[str, dict[str, Any]]:
        text, n = self._query(query, k)
        user_id = _user_id(config)
        return self._report(await self.memory.arecall_summaries(user_id, text, n))

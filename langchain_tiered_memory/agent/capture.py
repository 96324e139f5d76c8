"""Memory writes that do not wait for the model to choose a tool.

Many models, capable ones included, answer "Nice to meet you, Alice!" without calling
``user_tag``, or say "I don't have enough information to summarize" instead of calling
``summarize``; some OpenAI-compatible servers even leave tools out of the prompt unless a
``tool_choice`` forces one. The mechanisms here make the memory hold anyway:

- :class:`AfterTurnCapture` (``tag_capture="after_turn"``): when the turn's user message
  states a fact and no ``user_tag`` call came during the turn, one structured extraction
  runs after the reply. The extraction may say "nothing" (``nothing_stated``), and what it
  returns, for every model, is kept only where the message states it about the user
  (:func:`~langchain_tiered_memory.language.attribution.ground_tags`), never changing a stored
  value the user did not say changed. Values the message states by an unambiguous cue
  ("my name is", "我叫", "I'm" + a number) fill in what a call left out
  (:func:`~langchain_tiered_memory.language.attribution.stated_tags`): "Hi, I'm Carol and I'm 52."
  keeps the name when the model gave the age only.
- a request to summarize ("Please summarize our conversation.", "请总结一下") runs the
  ``summarize`` tool before the reply (:func:`summarize_call`), for every model, so the
  reply can say what was stored; for small models the reply is the tool's report
  (:func:`summary_reply`); likewise a small model's forced ``user_tag`` capture is
  answered by saying what was recorded (:func:`capture_reply`): SmolLM2-135M's own reply
  to "Hi, my name is Alice ..." was "I'm a helpful assistant. I'll be ready to assist you";
  and a small model's question about a recorded name or age is answered from the tag
  (:func:`tag_answer`), in the user's language.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.tool import tool_call
from langchain_core.runnables import Runnable, RunnableConfig
from pydantic import BaseModel, Field, create_model

from langchain_tiered_memory.agent.replies import (
    CAPTURE_NOTE,
    SUMMARIZE_NOTE,
    package_reply,
    recorded_sentence,
    report_in,
)
from langchain_tiered_memory.agent.tools import SUMMARIZE_TOOL, USER_TAG_TOOL
from langchain_tiered_memory.errors import InvalidTagError
from langchain_tiered_memory.language.attribution import (
    check_changes,
    ground_tags,
    may_state_tags,
    stated_tags,
    states_a_fact,
)
from langchain_tiered_memory.language.registry import replies_in, tag_questions
from langchain_tiered_memory.language.text import asks_to_summarize, split_sentences
from langchain_tiered_memory.memory import TieredMemory

logger = logging.getLogger(__name__)

__all__ = [
    "CAPTURE_NOTE",
    "EXTRACTION_TOOL",
    "AfterTurnCapture",
    "TagCapture",
    "asked_tag",
    "capture_reply",
    "extraction_schema",
    "new_call_id",
    "summarize_call",
    "summary_reply",
    "tag_answer",
]


TagCapture = Literal["tool", "forced", "after_turn"]
"""How facts reach ``user_tag``: the model's own choice (``"tool"``), a forced call before
the reply (``"forced"``, small models), or an extraction after the reply when the model made
no call (``"after_turn"``)."""

EXTRACTION_TOOL = "user_facts"
EXTRACTION_PROMPT = (
    "Read the user's message and report the facts it states about the user themself, "
    "in the user's own words: {fields}. Facts about other people (relatives, friends, "
    "colleagues), hobbies, jobs, questions and requests are none of these. Leave out every "
    "field the message does not state about the user. If it states none of them, call "
    "`user_facts` with nothing_stated=true and no other field."
)


def new_call_id() -> str:
    """An id for a tool call the graph makes itself (not the model)."""
    return f"call_{uuid.uuid4().hex[:12]}"


def extraction_schema(tags: type[BaseModel]) -> type[BaseModel]:
    """The extraction's tool schema: ``nothing_stated`` first, then every tag, optional.

    A forced call must be able to say "nothing": forced to fill ``user_tag`` itself,
    Qwen2.5-Coder-1.5B answered "I love hiking in the Alps." with a name and an age.

    Example:
        >>> from langchain_tiered_memory.stores.tags import DefaultTags
        >>> list(extraction_schema(DefaultTags).model_fields)
        ['nothing_stated', 'name', 'age']
    """
    fields: dict[str, Any] = {
        "nothing_stated": (
            bool,
            Field(
                default=False,
                description="true when the message states none of these facts about the "
                "user themself",
            ),
        )
    }
    for name, field in tags.model_fields.items():
        annotation = field.annotation
        fields[name] = (
            annotation | None if annotation is not None else Any,
            Field(default=None, description=field.description),
        )
    schema: type[BaseModel] = create_model(EXTRACTION_TOOL, **fields)
    schema.__doc__ = "Facts the user's message states about the user themself."
    return schema


def _turn(messages: Sequence[BaseMessage]) -> tuple[HumanMessage | None, list[BaseMessage]]:
    """The turn's (latest) human message and the messages after it."""
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], HumanMessage):
            return messages[i], list(messages[i + 1 :])  # type: ignore[return-value]
    return None, []


def _yes(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


@dataclass
class AfterTurnCapture:
    """The ``"after_turn"`` tag capture (see the module docstring).

    ``model`` is the chat model with the extraction tool (:func:`extraction_schema`) bound
    and forced, or ``None``: only what the message states by a cue is read.

    Example:
        >>> capture = AfterTurnCapture.for_model(memory, chat_model)  # doctest: +SKIP
        >>> capture.run(state["messages"], "alice", "t1", config)  # doctest: +SKIP
        {'name': 'Alice', 'age': '30'}
    """

    memory: TieredMemory
    model: Runnable[Any, Any] | None = None

    @classmethod
    def for_model(cls, memory: TieredMemory, model: BaseChatModel | None) -> AfterTurnCapture:
        """The capture for ``model``: its extraction tool bound and forced."""
        if model is None:
            return cls(memory=memory)
        schema = extraction_schema(memory.tags.schema)
        return cls(memory=memory, model=model.bind_tools([schema], tool_choice=EXTRACTION_TOOL))

    def _plan(self, messages: Sequence[BaseMessage]) -> tuple[HumanMessage | None, set[str]]:
        """The human message to extract from (a statement of fact) and what the turn's own
        ``user_tag`` calls did: ``USER_TAG_TOOL`` if the model called it (then it is not
        asked again), and the tags of each call that succeeded (not read again).
        """
        human, after = _turn(messages)
        fields = self.memory.tags.schema.model_fields
        if human is None or not states_a_fact(human.text):
            return None, set()
        if not may_state_tags(human.text, fields):
            return None, set()  # no extraction call: nothing it returned could be kept
        failed = {
            m.tool_call_id for m in after if isinstance(m, ToolMessage) and m.status == "error"
        }
        called: set[str] = set()
        for m in after:
            if not isinstance(m, AIMessage):
                continue
            for c in m.tool_calls:
                if c["name"] != USER_TAG_TOOL:
                    continue
                called.add(USER_TAG_TOOL)
                if c.get("id") not in failed:
                    called.update(k for k, v in (c.get("args") or {}).items() if v)
        return human, called

    def _prompt(self, human: HumanMessage) -> list[BaseMessage]:
        fields = ", ".join(self.memory.tags.schema.model_fields)
        return [SystemMessage(EXTRACTION_PROMPT.format(fields=fields)), HumanMessage(human.text)]

    def _proposed(self, response: Any, human: HumanMessage, called: set[str]) -> dict[str, Any]:
        """What to store before the stored-value check: the extraction's values grounded
        in the message, and the values the message states by a cue for the other tags.
        """
        args: dict[str, Any] = {}
        for c in getattr(response, "tool_calls", None) or []:
            if c["name"] in (EXTRACTION_TOOL, USER_TAG_TOOL):
                args = dict(c.get("args") or {})
                break
        if _yes(args.pop("nothing_stated", False)):
            args = {}
        grounding = ground_tags(args, human.text)
        grounding.log("after-turn extraction")
        tags = [t for t in self.memory.tags.schema.model_fields if t not in grounding.kept]
        # A model that abstained (nothing_stated, or no value) is overruled by the cues
        # alone only on an unambiguous self-statement ("my name is", not "I'm" + a
        # capitalised word: "I'm French."); one that stated a value read the message as
        # the user's own, and the cues fill what it left out ("I'm Carol and I'm 52").
        engaged = USER_TAG_TOOL in called or any(v for v in args.values())
        strict = self.model is not None and not engaged
        values = {**stated_tags(human.text, tags, strict=strict), **grounding.kept}
        return {k: v for k, v in values.items() if k not in called}

    def _store_plan(
        self, values: dict[str, Any], human: HumanMessage, stored: dict[str, str]
    ) -> dict[str, Any]:
        # the values are grounded in the message already: only the stored-value rule is left
        grounding = check_changes(values, human.text, stored)
        grounding.log("after-turn capture")
        return grounding.kept

    def run(
        self,
        messages: Sequence[BaseMessage],
        user_id: str,
        thread_id: str | None,
        config: RunnableConfig | None = None,
    ) -> dict[str, str]:
        """Extract and store the turn's facts; return what was stored (``{}``: nothing)."""
        human, called = self._plan(messages)
        if human is None:
            return {}
        response = None
        if self.model is not None and not called:
            try:
                response = self.model.invoke(self._prompt(human), config)
            except Exception:  # the reply is out already: the cue-read values still count
                logger.warning("after-turn tag extraction failed", exc_info=True)
        values = self._proposed(response, human, called)
        if not values:
            return {}
        values = self._store_plan(values, human, self.memory.get_user_tags(user_id))
        if not values:
            return {}
        try:
            stored: dict[str, str] = self.memory.set_user_tags(user_id, values, thread_id=thread_id)
        except InvalidTagError as exc:
            logger.warning("after-turn tag extraction gave invalid values (%s); skipped", exc)
            return {}
        return stored

    async def arun(
        self,
        messages: Sequence[BaseMessage],
        user_id: str,
        thread_id: str | None,
        config: RunnableConfig | None = None,
    ) -> dict[str, str]:
        """Async :meth:`run` (reading the message runs in a worker thread: CPU work)."""
        human, called = await asyncio.to_thread(self._plan, messages)
        if human is None:
            return {}
        response = None
        if self.model is not None and not called:
            try:
                response = await self.model.ainvoke(self._prompt(human), config)
            except Exception:
                logger.warning("after-turn tag extraction failed", exc_info=True)
        values = await asyncio.to_thread(self._proposed, response, human, called)
        if not values:
            return {}
        values = self._store_plan(values, human, await self.memory.aget_user_tags(user_id))
        if not values:
            return {}
        try:
            stored: dict[str, str] = await self.memory.aset_user_tags(
                user_id, values, thread_id=thread_id
            )
        except InvalidTagError as exc:
            logger.warning("after-turn tag extraction gave invalid values (%s); skipped", exc)
            return {}
        return stored


def summarize_call(messages: Sequence[BaseMessage]) -> AIMessage | None:
    """The ``summarize`` call to make, before the reply, for a request to summarize that
    is the latest message, or ``None`` (every model: a model that answers such a request
    with text alone stores nothing, or stores after a reply that cannot say what).
    """
    if not messages or not isinstance(messages[-1], HumanMessage):
        return None
    if not asks_to_summarize(messages[-1].text):
        return None
    call = tool_call(name=SUMMARIZE_TOOL, args={}, id=new_call_id())
    return AIMessage(content=SUMMARIZE_NOTE, tool_calls=[call])


def summary_reply(messages: Sequence[BaseMessage]) -> AIMessage | None:
    """For a small model: the reply after a forced ``summarize`` call, from its result
    (which names the stored items), or ``None`` when the last messages are not that.
    """
    if len(messages) < 2 or getattr(messages[-1], "type", "") != "tool":
        return None
    call = messages[-2]
    if not (isinstance(call, AIMessage) and call.content == SUMMARIZE_NOTE):
        return None
    report = str(messages[-1].content)
    human, _ = _turn(messages)
    # the tool reports in English; the user may have asked in another language
    said = report_in(report, replies_in(human.text)) if human is not None else None
    return package_reply(said or report)


def asked_tag(text: str) -> str | None:
    """The tag a message asks for the stored value of ("How old am I?" -> ``"age"``), or
    ``None``: a sentence that is that question, nothing more ("How old am I going to be in
    2040?" asks something else).

    Example:
        >>> asked_tag("我多大了？"), asked_tag("What's my name?"), asked_tag("我叫李明。")
        ('age', 'name', None)
    """
    for sentence in split_sentences(text):
        for tag, pattern in tag_questions().items():
            if pattern.fullmatch(sentence):
                return tag
    return None


def tag_answer(messages: Sequence[BaseMessage], tags: Mapping[str, str]) -> AIMessage | None:
    """For a small model: the answer to a question about a recorded name or age, from the
    tag, in the user's language; ``None`` for anything else (or a tag not recorded).

    SmolLM2-135M answered "我多大了？" with the age in memory as "The user is a 28-year-old
    male." (English, an invented gender); the exact tier is exact, so its answer is too.

    Example:
        >>> tag_answer([HumanMessage("我多大了？")], {"age": "28"}).content
        '你28岁。'
    """
    if not messages or not isinstance(messages[-1], HumanMessage):
        return None
    text = messages[-1].text
    tag = asked_tag(text)
    value = tags.get(tag) if tag else None
    if tag is None or not value:
        return None
    # a language with no answer for this tag: English's ("" is in the first record)
    answer = replies_in(text).tag_answers.get(tag) or replies_in("").tag_answers.get(tag)
    return package_reply(answer.format(value=value)) if answer else None


def capture_reply(messages: Sequence[BaseMessage]) -> AIMessage | None:
    """For a small model: the reply after a forced ``user_tag`` capture that succeeded,
    saying what was recorded in the user's language, or ``None`` when the last messages are
    not that.
    """
    if len(messages) < 3 or getattr(messages[-1], "type", "") != "tool":
        return None
    call, result = messages[-2], messages[-1]
    if not (isinstance(call, AIMessage) and call.content == CAPTURE_NOTE and call.tool_calls):
        return None
    if getattr(result, "status", "success") == "error":
        return None
    args = {k: v for k, v in (call.tool_calls[0].get("args") or {}).items() if v not in (None, "")}
    human, _ = _turn(messages)
    if not args or human is None:
        return None
    return package_reply(recorded_sentence(args, replies_in(human.text)))

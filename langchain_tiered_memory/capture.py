"""Memory writes that do not wait for the model to choose a tool.

Many models, capable ones included, answer "Nice to meet you, Alice!" without calling
``user_tag``, or say "I don't have enough information to summarize" instead of calling
``summarize``; some OpenAI-compatible servers even leave tools out of the prompt unless a
``tool_choice`` forces one. Two mechanisms here make the memory hold anyway:

- :class:`AfterTurnCapture` (``tag_capture="after_turn"``): when the turn's user message
  states a fact and no ``user_tag`` call came during the turn, one structured extraction
  (the ``user_tag`` call forced with ``tool_choice``) runs after the reply, and what it
  returns is stored. For a small model only values the user literally said are kept (the
  grounding rule of forced capture); a capable model's values are kept as they come. The
  same for an explicit request to summarize that got no ``summarize`` call: the tool runs
  after the reply.
- for small models, a request to summarize ("Please summarize our conversation.",
  "请总结一下") runs the ``summarize`` tool directly (:func:`summarize_call`), and the reply
  says what was stored (:func:`summary_reply`) instead of the model's free text; likewise
  a forced ``user_tag`` capture is answered by saying what was recorded
  (:func:`capture_reply`): SmolLM2-135M's own reply to "Hi, my name is Alice ..." was
  "I'm a helpful assistant. I'll be ready to assist you with any questions".
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.messages.tool import tool_call
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool

from langchain_tiered_memory.errors import InvalidTagError
from langchain_tiered_memory.memory import TieredMemory
from langchain_tiered_memory.summarizer import states_a_fact
from langchain_tiered_memory.text import asks_to_summarize, is_cjk
from langchain_tiered_memory.tools import SUMMARIZE_TOOL, USER_TAG_TOOL

logger = logging.getLogger(__name__)

__all__ = [
    "CAPTURE_NOTE",
    "AfterTurnCapture",
    "TagCapture",
    "capture_reply",
    "new_call_id",
    "summarize_call",
    "summary_reply",
]

# The content of a forced user_tag call's AI message (non-empty: OpenAI-compatible servers
# such as llama.cpp's reject an assistant message whose content is null).
CAPTURE_NOTE = "(recording what you told me)"

TagCapture = Literal["tool", "forced", "after_turn"]
"""How facts reach ``user_tag``: the model's own choice (``"tool"``), a forced call before
the reply (``"forced"``, small models), or an extraction after the reply when the model made
no call (``"after_turn"``)."""

EXTRACTION_PROMPT = (
    "Record the facts the user states about themselves in their message by calling "
    "`user_tag` with only the fields they said, in their words. If they state none of "
    "these facts, call it with no fields."
)


def new_call_id() -> str:
    """An id for a tool call the graph makes itself (not the model)."""
    return f"call_{uuid.uuid4().hex[:12]}"


def _turn(messages: Sequence[BaseMessage]) -> tuple[HumanMessage | None, list[BaseMessage]]:
    """The turn's (latest) human message and the messages after it."""
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], HumanMessage):
            return messages[i], list(messages[i + 1 :])  # type: ignore[return-value]
    return None, []


@dataclass
class AfterTurnCapture:
    """The ``"after_turn"`` tag capture (see the module docstring).

    ``model`` is the chat model with ``user_tag`` bound and forced; ``ground`` reduces a
    call's arguments to what the message literally says (small models), or ``None``.

    Example:
        >>> capture = AfterTurnCapture(memory=memory, model=forced)  # doctest: +SKIP
        >>> capture.run(state["messages"], "alice", "t1", config)  # doctest: +SKIP
        {'name': 'Alice', 'age': '30'}
    """

    memory: TieredMemory
    model: Runnable[Any, Any]
    ground: Callable[[dict[str, Any], str], dict[str, Any]] | None = None
    summarize: BaseTool | None = None  # the summarize tool, run for an unanswered request

    @staticmethod
    def _called(after: Sequence[BaseMessage], tool: str) -> bool:
        return any(
            isinstance(m, AIMessage) and any(c["name"] == tool for c in m.tool_calls) for m in after
        )

    def wanted(self, messages: Sequence[BaseMessage]) -> HumanMessage | None:
        """The human message to extract from: a statement of fact, with no ``user_tag``
        call made for it during the turn.
        """
        human, after = _turn(messages)
        if human is None or not states_a_fact(human.text):
            return None
        return None if self._called(after, USER_TAG_TOOL) else human

    def summary_wanted(self, messages: Sequence[BaseMessage]) -> bool:
        """Whether the turn asked to summarize and no ``summarize`` call came."""
        human, after = _turn(messages)
        if self.summarize is None or human is None or not asks_to_summarize(human.text):
            return False
        return not self._called(after, SUMMARIZE_TOOL)

    def _values(self, response: Any, human: HumanMessage) -> dict[str, Any]:
        calls = [
            c for c in getattr(response, "tool_calls", None) or [] if c["name"] == USER_TAG_TOOL
        ]
        if not calls:
            return {}
        args = {k: v for k, v in (calls[0].get("args") or {}).items() if v not in (None, "")}
        if self.ground is not None:
            args = self.ground(args, human.text)
        return args

    @staticmethod
    def _prompt(human: HumanMessage) -> list[BaseMessage]:
        return [SystemMessage(EXTRACTION_PROMPT), HumanMessage(human.text)]

    def run(
        self,
        messages: Sequence[BaseMessage],
        user_id: str,
        thread_id: str | None,
        config: RunnableConfig | None = None,
    ) -> dict[str, str]:
        """Extract and store the turn's facts; return what was stored (``{}``: nothing)."""
        if self.summary_wanted(messages):
            assert self.summarize is not None
            logger.info("after-turn summarize: %s", self.summarize.invoke({}, config))
        human = self.wanted(messages)
        if human is None:
            return {}
        try:
            response = self.model.invoke(self._prompt(human), config)
        except Exception:  # the reply is out already: a failed extraction loses no data
            logger.warning("after-turn tag extraction failed; nothing recorded", exc_info=True)
            return {}
        values = self._values(response, human)
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
        """Async :meth:`run`."""
        if self.summary_wanted(messages):
            assert self.summarize is not None
            logger.info("after-turn summarize: %s", await self.summarize.ainvoke({}, config))
        human = self.wanted(messages)
        if human is None:
            return {}
        try:
            response = await self.model.ainvoke(self._prompt(human), config)
        except Exception:
            logger.warning("after-turn tag extraction failed; nothing recorded", exc_info=True)
            return {}
        values = self._values(response, human)
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


# What the forced summarize call's AI message says (OpenAI-compatible servers reject an
# assistant message whose content is null).
SUMMARIZE_NOTE = "(saving our conversation to memory)"


def summarize_call(messages: Sequence[BaseMessage]) -> AIMessage | None:
    """For a small model: the ``summarize`` call to make for a request to summarize that is
    the latest message, or ``None``.
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
    return AIMessage(content=str(messages[-1].content))


_ZH_LABELS = {"name": "名字", "age": "年龄"}


def capture_reply(messages: Sequence[BaseMessage]) -> AIMessage | None:
    """For a small model: the reply after a forced ``user_tag`` capture that succeeded,
    saying what was recorded in the user's script, or ``None`` when the last messages are
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
    if any(is_cjk(c) for c in human.text):
        facts = "，".join(f"{_ZH_LABELS.get(k, k)}：{v}" for k, v in sorted(args.items()))
        return AIMessage(content=f"好的，我记住了（{facts}）。")
    facts = ", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in sorted(args.items()))
    return AIMessage(content=f"Got it, I'll remember that ({facts}).")

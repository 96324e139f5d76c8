"""A memory query the model writes before it replies (opt-in, capable models only).

The conversation's own words often do not name the memory it is about: "I booked another
slot for Thursday." ... "I just don't want to feel that embarrassed again." is about a
failed driving test it never mentions. A capable model can say what it is about. Before
the reply, the model is asked for one line: a *note* it would hope to find in its memory
of the user (``"note"``, a hypothetical document), or a short search *query*
(``"query"``). The line joins the conversation's recall query as one more turn before the
latest message (:class:`~langchain_tiered_memory.agent.nodes.MemoryNodes`), so the
latest message's own best item is still kept near the top.

It costs one model call per turn, before the reply. ``bench/model_query.py`` measures
both kinds against the conversation alone with a real model (``docs/benchmarks.md``).

Example:
    >>> from langchain_tiered_memory.testing import ScriptedChatModel
    >>> model = ScriptedChatModel(replies=["The user failed a driving test."])
    >>> write_memory_query(model, ["Thursday is the retake.", "I'm scared."])
    'The user failed a driving test.'
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

__all__ = [
    "MEMORY_QUERY_KINDS",
    "MEMORY_QUERY_TURNS",
    "MemoryQueryKind",
    "awrite_memory_query",
    "memory_query_messages",
    "parse_memory_query",
    "write_memory_query",
]

logger = logging.getLogger(__name__)

MemoryQueryKind = Literal["note", "query"]
MEMORY_QUERY_KINDS: tuple[MemoryQueryKind, ...] = ("note", "query")

_INSTRUCTIONS: dict[MemoryQueryKind, str] = {
    "note": (
        "You help an assistant remember its user. Read the user's latest messages. "
        "Which earlier event, fact or feeling of the user's are they most likely about? "
        "Write the note the assistant would have kept about it, as one short sentence "
        "that starts with 'The user' (in Chinese, '用户'). Guess if you must. Write it in "
        "the language of the user's messages. Write only the sentence."
    ),
    "query": (
        "You help an assistant remember its user. Read the user's latest messages. "
        "Write a short search query (a few words) for the assistant's notes about the "
        "user: the earlier event, fact or feeling of the user's these messages are most "
        "likely about. Write it in the language of the user's messages. Write only the "
        "query."
    ),
}

MEMORY_QUERY_TURNS = 5
"""User turns the model reads to write its query (more than the recall query's three: the
model can tell what is background and what is the point)."""

MAX_QUERY_CHARS = 300
"""A longer answer is cut here: the query is one line, and a model that runs on would
drown the conversation's own words."""

# a reply that is machinery, not a line of text: a tool call or a tool result written out
_NOT_A_LINE = re.compile(r"^\s*(?:[{\[]|<\s*/?\s*tool)", re.IGNORECASE)
_QUOTES = "\"'“”‘’「」『』`"


def memory_query_messages(texts: Sequence[str], kind: MemoryQueryKind) -> list[BaseMessage]:
    """The messages that ask for a memory query of ``kind`` for the user's ``texts``
    (oldest first, the latest last).

    Example:
        >>> [m.type for m in memory_query_messages(["hi"], "note")]
        ['system', 'human']
    """
    if kind not in _INSTRUCTIONS:
        raise ValueError(f"memory query kind must be one of {MEMORY_QUERY_KINDS}, not {kind!r}")
    lines = "\n".join(f"- {t.strip()}" for t in texts if t.strip())
    return [
        SystemMessage(_INSTRUCTIONS[kind]),
        HumanMessage(f"The user's latest messages, oldest first:\n{lines}"),
    ]


def parse_memory_query(reply: BaseMessage) -> str | None:
    """The one line of ``reply`` to search with, or ``None`` when it has none (empty, a
    tool call, or a tool call written as text).

    Example:
        >>> from langchain_core.messages import AIMessage
        >>> parse_memory_query(AIMessage('"The user failed a test."\\nMore text.'))
        'The user failed a test.'
        >>> parse_memory_query(AIMessage('{"name": "user_tag"}')) is None
        True
    """
    if getattr(reply, "tool_calls", None):
        return None
    text = reply.text.strip()
    if not text or _NOT_A_LINE.match(text):
        return None
    line = next(s for s in (t.strip() for t in text.splitlines()) if s)
    line = line.strip(_QUOTES).strip()[:MAX_QUERY_CHARS]
    return line or None


def write_memory_query(
    model: BaseChatModel, texts: Sequence[str], kind: MemoryQueryKind = "note"
) -> str | None:
    """The model's memory query for the user's ``texts``, or ``None`` (no texts, or no
    usable line). A model error propagates: the turn that asked fails as its reply would.
    """
    if not any(t.strip() for t in texts):
        return None
    line = parse_memory_query(model.invoke(memory_query_messages(texts, kind)))
    logger.debug("memory query (%s): %r", kind, line)
    return line


async def awrite_memory_query(
    model: BaseChatModel, texts: Sequence[str], kind: MemoryQueryKind = "note"
) -> str | None:
    """Async :func:`write_memory_query`."""
    if not any(t.strip() for t in texts):
        return None
    line = parse_memory_query(await model.ainvoke(memory_query_messages(texts, kind)))
    logger.debug("memory query (%s): %r", kind, line)
    return line

"""Turns unsummarized conversation into short, self-contained memory items.

The model is asked for a list of strings through a tool call (structured output). Small
local models often fail at that, so a plain-text answer with one item per line is accepted
as a fallback. Whatever comes back is validated: items must be short sentences grounded in
what the user said (sharing content words with it); anything else is dropped, and if nothing is left
:class:`SummarizationError` is raised so the caller stores nothing.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.utils.json import parse_partial_json
from pydantic import BaseModel, Field

from langchain_tiered_memory.errors import SummarizationError

logger = logging.getLogger(__name__)

__all__ = ["SummaryItems", "SUMMARY_SYSTEM_PROMPT", "summarize_messages", "asummarize_messages"]

MAX_ITEM_CHARS = 300
MAX_ITEMS = 20
MIN_GROUNDED_SHARE = 0.5
MAX_TRANSCRIPT_CHARS = 12000


class SummaryItems(BaseModel):
    """Facts worth remembering from a conversation."""

    items: list[str] = Field(
        max_length=MAX_ITEMS,
        description=(
            "Short, self-contained facts about the user, one per item, in the third person, "
            "e.g. 'The user's birthday is on May 8.'"
        ),
    )


SUMMARY_SYSTEM_PROMPT = (
    "You write the long-term memory of an assistant. Read the conversation between the user "
    "and the assistant and list the facts about the user worth remembering later: who they "
    "are, dates, preferences, plans, people and events they mention. Write each fact as one "
    'short self-contained sentence in the third person ("The user ..."). Do not invent '
    "anything. Do not include greetings or small talk. Answer by calling SummaryItems, or, "
    "if you cannot call it, with one fact per line starting with '- '."
)

_WORD = re.compile(r"[^\W_]{3,}", re.UNICODE)
_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s+(.*\S)\s*$")
_STOP = frozenset(
    (
        "the and you your are was were has have had for with this that user assistant "
        "about what they their them she her his him its not but can will would please"
    ).split()
)


def render_transcript(messages: Sequence[BaseMessage]) -> str:
    """The human and assistant text of ``messages``, one line each, capped in size."""
    lines = []
    for message in messages:
        if isinstance(message, HumanMessage):
            who = "User"
        elif isinstance(message, AIMessage):
            who = "Assistant"
        else:
            continue  # tool traffic and system prompts hold no new facts about the user
        text = message.text.strip() if hasattr(message, "text") else str(message.content)
        if text:
            lines.append(f"{who}: {text}")
    transcript = "\n".join(lines)
    return transcript[-MAX_TRANSCRIPT_CHARS:]


def build_request(transcript: str) -> list[BaseMessage]:
    """The prompt sent to the summarizer model for a :func:`render_transcript` text."""
    return [
        SystemMessage(SUMMARY_SYSTEM_PROMPT),
        HumanMessage(f"Conversation:\n<<<\n{transcript}\n>>>\nList the facts to remember."),
    ]


def _words(text: str) -> set[str]:
    # A crude stem (no trailing "s") so that "likes" matches "like".
    return {w.removesuffix("s") for w in _WORD.findall(text.lower()) if w not in _STOP}


def user_text(messages: Sequence[BaseMessage]) -> str:
    """Everything the user said in ``messages``: what memory items must be grounded in."""
    return "\n".join(m.text for m in messages if isinstance(m, HumanMessage))


def clean_items(candidates: Sequence[Any], source_text: str) -> list[str]:
    """Keep the candidates that are short sentences sharing a content word with
    ``source_text`` (the user's own words: an item echoing only the assistant's chatter,
    or nobody's, is dropped).
    """
    source = _words(source_text)
    out: list[str] = []
    seen: set[str] = set()
    for raw in candidates:
        if not isinstance(raw, str):
            continue
        text = " ".join(raw.split()).strip(" -*\"'")
        if not (8 <= len(text) <= MAX_ITEM_CHARS):
            continue
        words = _words(text)
        # Most content words must come from the user: an item echoing the assistant's
        # chatter, or invented, shares one word with the user's text at most by chance.
        if not words or len(words & source) < MIN_GROUNDED_SHARE * len(words):
            continue
        key = text.lower()
        if key in seen:
            continue
        seen.add(key)
        out.append(text)
    return out[:MAX_ITEMS]


def _candidates(response: Any) -> list[Any]:
    if isinstance(response, SummaryItems):
        return list(response.items)
    if not isinstance(response, AIMessage):
        return []
    for call in response.tool_calls:
        items = call.get("args", {}).get("items")
        if isinstance(items, list):
            return items
    for bad in response.invalid_tool_calls:
        # Small models run into max_tokens mid-list: keep the complete items before the cut.
        salvaged = parse_partial_json(bad.get("args") or "") if bad.get("args") else None
        items = salvaged.get("items") if isinstance(salvaged, dict) else None
        if isinstance(items, list):
            return items
    text = response.text if hasattr(response, "text") else str(response.content)
    return [m.group(1) for line in text.splitlines() if (m := _BULLET.match(line))]


_FIRST_PERSON = re.compile(r"\b(i|i'm|im|i am|my|me|mine)\b", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!])\s+")


def states_a_fact(text: str) -> bool:
    """Heuristic: a first-person statement (not a question) that may hold a fact."""
    stripped = text.strip()
    return bool(stripped) and not stripped.endswith("?") and bool(_FIRST_PERSON.search(stripped))


def extract_user_statements(messages: Sequence[BaseMessage]) -> list[str]:
    """The user's own first-person statements, quoted: the extractive fallback.

    No model is involved, so nothing can be invented; used only when asked for
    (``extractive_fallback=True``), typically with a small local model.
    """
    out: list[str] = []
    for message in messages:
        if not isinstance(message, HumanMessage):
            continue
        for sentence in _SENTENCE_END.split(message.text.strip()):
            sentence = " ".join(sentence.split())
            if 8 <= len(sentence) <= MAX_ITEM_CHARS - 20 and states_a_fact(sentence):
                item = f'The user said: "{sentence}"'
                if item not in out:
                    out.append(item)
    return out[:MAX_ITEMS]


def _bind(model: BaseChatModel) -> Any:
    try:
        return model.bind_tools([SummaryItems], tool_choice="SummaryItems")
    except (NotImplementedError, TypeError, ValueError):
        return model


def _grounding(messages: Sequence[BaseMessage], transcript: str) -> str:
    # Items must come from the user's words; a window of assistant text only (the user's
    # part was in an earlier batch) is grounded in what the assistant said.
    return user_text(messages) or transcript


def _or_fallback(
    items: list[str], messages: Sequence[BaseMessage], extractive_fallback: bool
) -> list[str]:
    if not items and extractive_fallback:
        items = extract_user_statements(messages)
    if not items:
        raise SummarizationError(
            "the summarizer model returned no usable items; nothing was stored and the "
            "history stays unsummarized (try again, or use a stronger model)."
        )
    return items


def summarize_messages(
    model: BaseChatModel,
    messages: Sequence[BaseMessage],
    *,
    extractive_fallback: bool = False,
) -> list[str]:
    """Ask ``model`` for memory items about ``messages``.

    First as a ``SummaryItems`` tool call; if that yields nothing usable, once more as plain
    text with one item per line. With ``extractive_fallback``, if the model still gives
    nothing usable, the user's own first-person statements are kept, quoted.

    Raises:
        SummarizationError: the model failed (raised, timed out) or returned nothing usable
            and there was nothing to fall back on.

    Example:
        >>> summarize_messages(model, [HumanMessage("My birthday is May 8")])  # doctest: +SKIP
        ['The user's birthday is on May 8.']

    """
    transcript = render_transcript(messages)
    if not transcript:
        return []
    request, grounding = build_request(transcript), _grounding(messages, transcript)
    try:
        items = clean_items(_candidates(_bind(model).invoke(request)), grounding)
        if not items:
            items = clean_items(_candidates(model.invoke(request)), grounding)
    except Exception as exc:  # any model/provider failure: nothing may be stored
        raise SummarizationError(f"the summarizer model failed: {exc!r}") from exc
    return _or_fallback(items, messages, extractive_fallback)


async def asummarize_messages(
    model: BaseChatModel,
    messages: Sequence[BaseMessage],
    *,
    extractive_fallback: bool = False,
) -> list[str]:
    """Async :func:`summarize_messages`."""
    transcript = render_transcript(messages)
    if not transcript:
        return []
    request, grounding = build_request(transcript), _grounding(messages, transcript)
    try:
        items = clean_items(_candidates(await _bind(model).ainvoke(request)), grounding)
        if not items:
            items = clean_items(_candidates(await model.ainvoke(request)), grounding)
    except Exception as exc:  # any model/provider failure: nothing may be stored
        raise SummarizationError(f"the summarizer model failed: {exc!r}") from exc
    return _or_fallback(items, messages, extractive_fallback)

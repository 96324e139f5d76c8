"""Turns unsummarized conversation into short, self-contained memory items.

The model is asked for a list of strings through a tool call (structured output). Small
local models often fail at that, so a plain-text answer with one item per line is accepted
as a fallback. Whatever comes back is validated for form, in any language (short text, not
a copy of the instructions). For small local models a junk guard (``grounded=True``) also
requires most of an item's character n-grams to occur in what the user said. If nothing is
left, :class:`SummarizationError` is raised so the caller stores nothing.
"""

from __future__ import annotations

import html
import logging
import re
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.utils.json import parse_partial_json
from pydantic import BaseModel, Field

from langchain_tiered_memory._said import only_machinery, said_by_model, without_machinery
from langchain_tiered_memory._steps import Plan, adrive, call, drive
from langchain_tiered_memory.errors import SummarizationError
from langchain_tiered_memory.language.attribution import is_request, states_a_fact  # noqa: F401
from langchain_tiered_memory.language.registry import (
    joined,
    language_named,
    language_of,
    languages,
)
from langchain_tiered_memory.language.text import (
    char_grams,
    is_cjk,
    is_first_person,
    is_question,
    said_item,
    split_sentences,
    tokenize,
)
from langchain_tiered_memory.summarization.forms import (
    first_person_item,
    reports_a_request,
    with_antecedent,
)
from langchain_tiered_memory.summarization.reconcile import (
    NoteDecision,
    NoteDecisions,
    areconcile_items,
    reconcile_items,
)
from langchain_tiered_memory.summarization.uncovered import keep_uncovered, user_statements

logger = logging.getLogger(__name__)

__all__ = [
    "SummaryItems",
    "SUMMARY_SYSTEM_PROMPT",
    "summarize_messages",
    "asummarize_messages",
    "states_something",
    "NoteDecision",
    "NoteDecisions",
    "reconcile_items",
    "areconcile_items",
]

MAX_ITEM_CHARS = 300
MIN_ITEM_CHARS = 4  # "生日五月八日" is six characters: short items are fine in CJK
MAX_ITEMS = 20
MIN_GROUNDED_SHARE = 0.5
MIN_CONTENT_GRAMS = 6
MAX_TRANSCRIPT_CHARS = 12000
SAID = {"min_chars": MIN_ITEM_CHARS, "max_chars": MAX_ITEM_CHARS - 20}  # a sentence kept as said


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
    'short self-contained sentence in the third person ("The user ..."), in the language '
    "the user writes in. Only facts the user stated about themselves and the people in "
    "their life: never what the assistant told them, offered or promised. Keep how a person "
    'relates to the user ("The user\'s sister Emma lives in Lyon.", not "Emma lives in '
    'Lyon."); a person the user mentions is not the user. Keep what the user does not do '
    '("The user does not eat meat."). State each fact once. Do not invent anything. Do not '
    "include greetings or small talk. Answer by calling SummaryItems, or, if you cannot "
    "call it, with one fact per line starting with '- '."
)

_BULLET = re.compile(r"^\s*(?:[-*\u2022\u30fb]|\d+[.)\u3001])\s*(.*\S)\s*$")


def render_transcript(messages: Sequence[BaseMessage]) -> str:
    """The human and assistant text of ``messages``, one line each, capped in size; of an
    assistant message only what the model said (:mod:`~langchain_tiered_memory._said`).
    """
    lines = []
    for message in messages:
        if isinstance(message, HumanMessage):
            who = "User"
        elif isinstance(message, AIMessage):
            who = "Assistant"
        else:
            continue  # tool traffic and system prompts hold no new facts about the user
        text = message.text.strip() if hasattr(message, "text") else str(message.content)
        if isinstance(message, AIMessage):
            # the conversation as the reply model sees it: not the package's reports of
            # what was stored (a real model re-emitted an old item from one), its
            # placeholders, or tool calls written as text
            text = said_by_model(message)
            if only_machinery(text):
                continue
            text = without_machinery(text)  # a copied memory section is no new fact
        if text:
            lines.append(f"{who}: {text}")
    transcript = "\n".join(lines)
    return transcript[-MAX_TRANSCRIPT_CHARS:]


def build_request(transcript: str, language: str | None = None) -> list[BaseMessage]:
    """The prompt sent to the summarizer model for a :func:`render_transcript` text;
    with ``language`` (:func:`user_language`), the facts are asked for in it.
    """
    ask = "List the facts to remember."
    if language:
        ask += f" The user writes in {language}: write every fact in {language}."
    return [
        SystemMessage(SUMMARY_SYSTEM_PROMPT),
        HumanMessage(f"Conversation:\n<<<\n{transcript}\n>>>\n{ask}"),
    ]


def in_language(items: Sequence[str], language: str) -> bool:
    """Whether most ``items`` are written in ``language`` (:func:`user_language`), as the
    language records tell.

    Example:
        >>> in_language(["用户叫李明。", "The user is 28."], "Chinese")
        False
    """
    record = language_named(language)
    written = sum(1 for item in items if record is not None and language_of(item) is record)
    return written * 2 > len(items)


def rewrite_request(
    request: Sequence[BaseMessage], items: Sequence[str], language: str
) -> list[BaseMessage]:
    """The summarizer's request once more, asking for ``items`` in the user's language."""
    listed = "\n".join(f"- {item}" for item in items)
    return [
        *request,
        AIMessage(listed),
        HumanMessage(
            f"These facts are not in {language}, the language the user writes in. Write each "
            f"of them in {language}, keeping names as the user wrote them."
        ),
    ]


def _rewritten(
    items: list[str], rewrite: list[str], language: str, messages: Sequence[BaseMessage]
) -> list[str]:
    """The items in the user's ``language``: those written in it, and the rewrites that
    are; if none is, the user's own statements (Qwen2.5-Coder-1.5B, asked twice, wrote "The
    user is named Li Ming." for 我叫李明); else nothing. A memory in a language the user
    does not write is not kept (a real model stored 14 English items for a user who wrote
    only Chinese): the user's next summary tries again.
    """
    kept = [item for item in [*items, *rewrite] if in_language([item], language)]
    if kept:
        return list(dict.fromkeys(kept))
    own = [item for item in extract_user_statements(messages) if in_language([item], language)]
    if own:
        logger.warning("the summarizer would not write in %s; kept the user's own words", language)
    else:
        logger.warning(
            "the summarizer wrote %d items not in %s, also when asked again; none kept",
            len(items),
            language,
        )
    return own


def user_language(messages: Sequence[BaseMessage]) -> str | None:
    """The language the user writes in, if the records tell one other than English:
    ``"Chinese"``, ``"Japanese"``, ``"Spanish"``, ``"Russian"``, ... ``None`` for English or
    a record of several languages (the prompt's general rule applies).

    Example:
        >>> user_language([HumanMessage("我叫李明，今年28岁。")])
        'Chinese'
        >>> user_language([HumanMessage("I live in Lyon.")]) is None
        True
    """
    record = language_of(user_text(messages))
    return None if record is languages()[0] else record.name


_CLAUSE = re.compile(r"[,;，；、]")


def states_something(messages: Sequence[BaseMessage]) -> bool:
    """Whether the user said anything a memory could hold: a clause that is neither a
    question nor a request (to summarize, to answer) and speaks in the first person or has
    two content words ("Emma moved to Lyon."; "Hi!", "Thanks.", "你好" have one; a CJK
    word is a pair of characters). When not, the summarizer model is not asked: asked to
    summarize a conversation that was only "Please summarize our conversation.", a real
    model wrote 15 facts of its own.

    Example:
        >>> states_something([HumanMessage("Please summarize our conversation."),
        ...                   HumanMessage("Thanks!"), AIMessage("I'm glad to help.")])
        False
        >>> states_something([HumanMessage("Please summarize, I live in Paris.")])
        True
    """
    for message in messages:
        if not isinstance(message, HumanMessage):
            continue
        for sentence in split_sentences(message.text):
            for clause in _CLAUSE.split(sentence):
                if not clause.strip() or is_question(clause) or is_request(clause):
                    continue
                words = [t for t in tokenize(clause) if len(t) > 1 or not is_cjk(t)]
                if is_first_person(clause) or len(words) >= 2:  # CJK: character pairs
                    return True
    return False


def user_text(messages: Sequence[BaseMessage]) -> str:
    """Everything the user said in ``messages``: what memory items must be grounded in."""
    return "\n".join(m.text for m in messages if isinstance(m, HumanMessage))


# What every item says whatever the user said ("The user ...", "用户"): not evidence that an
# item is grounded, so these n-grams count on neither side.
FRAME_GRAMS = char_grams(
    " ".join([SUMMARY_SYSTEM_PROMPT, "SummaryItems", *(lang.the_user for lang in languages())])
)


def is_grounded(item: str, source_text: str, *, source_grams: set[str] | None = None) -> bool:
    """Whether ``item`` is said in ``source_text``: every sentence of it has most of its
    content (character n-grams, the prompt's own wording left out) there, and it carries
    at least ``MIN_CONTENT_GRAMS`` of them ("Alice" or "The user's sister" alone is a
    fragment). Language-agnostic; the junk guard for small models.
    """
    source = char_grams(source_text) if source_grams is None else source_grams
    total = 0
    for sentence in split_sentences(item):
        grams = char_grams(sentence) - FRAME_GRAMS
        if not grams:
            continue
        if len(grams & source) < MIN_GROUNDED_SHARE * len(grams):
            return False  # an invented sentence spoils the item ("... on April 15.")
        total += len(grams)
    return total >= MIN_CONTENT_GRAMS


def _copies_instructions(item: str) -> bool:
    """Most of ``item``'s n-grams are the prompt's, and every word of it is: "The user's age
    is 30." shares 8 of its 9 n-grams with the prompt, and says "age" and "30".
    """
    grams = char_grams(item)
    return (
        bool(grams)
        and len(grams & _INSTRUCTION_GRAMS) >= 0.8 * len(grams)
        and set(tokenize(item)) <= _INSTRUCTION_TERMS
    )


# The prompt's own wording, without its quoted examples: an item may well say what an
# example says ("The user does not eat meat.").
_INSTRUCTIONS = (
    re.sub(r'"[^"]*"', " ", SUMMARY_SYSTEM_PROMPT) + " Conversation List the facts to remember"
)
_INSTRUCTION_GRAMS = char_grams(_INSTRUCTIONS)
_INSTRUCTION_TERMS = set(tokenize(_INSTRUCTIONS))


# The prompt's quoted examples, as terms: an item that says what an example says, in words
# the conversation never used, is the example copied (Qwen2.5-Coder-1.5B wrote "The user
# does not eat meat." for two conversations that never mentioned meat).
_EXAMPLE_TERMS = [
    {t for t in tokenize(example) if t != "user"}
    for example in re.findall(r'"([^"]*)"', SUMMARY_SYSTEM_PROMPT)
]


def _copies_an_example(item: str, transcript: str) -> bool:
    """``item`` says what one of the prompt's examples says (two terms of it at least),
    and the conversation says none of those terms.
    """
    terms = set(tokenize(item))
    heard = set(tokenize(transcript))
    return any(
        len(shared := terms & example) >= 2 and not shared & heard for example in _EXAMPLE_TERMS
    )


_USER_LABEL, _ASSISTANT_LABEL = "User:", "Assistant:"  # render_transcript's speakers
_THE_USER_LABEL = re.compile(r"the user\s*:\s*", re.IGNORECASE)
_ENTITY = re.compile(r"&(?:#\d+|#x[0-9a-f]+|[a-z]+);", re.IGNORECASE)
# What the assistant says of itself is not a fact about the user: "The assistant will keep
# the allergy in mind.", "I will keep that in mind.", "助手会记住。"
# An assistant's promise, whoever a model made its subject ("The user will keep the peanut
# allergy in mind.": Qwen2.5-Coder-1.5B re-subjected "I will keep ... in mind").
_A_PROMISE = re.compile(r"\bwill (?:keep|bear) .{0,60}\bin mind\b", re.IGNORECASE)
_ABOUT_THE_ASSISTANT = joined("about_assistant")


def clean_items(
    candidates: Sequence[Any], source_text: str | None = None, transcript: str | None = None
) -> list[str]:
    """Validate candidate items by form, in any language: text, 4-300 characters, with a
    letter, not a question, not a copy of the summarizer's instructions or of one of its
    examples in words the ``transcript`` never used, not the assistant's words about
    itself ("The assistant will ...", "I will keep that in mind"), no duplicates, at most 20.
    HTML entities (``&#39;``, ``&amp;``: a server's chat template escaped the prompt and
    the model copied them) are decoded unless the ``transcript`` itself holds them.

    With ``source_text`` (the small-model junk guard), an item must also be grounded in
    it (:func:`is_grounded`): what a weak model echoes from the assistant, or invents, is
    dropped. A capable model's abstraction ("I don't eat meat" -> "The user is
    vegetarian") is kept without it.
    """
    source = char_grams(source_text) if source_text is not None else None
    relations = people_of(transcript or "")
    said = None if transcript is None else _said_by_user(transcript)
    out: list[str] = []
    seen: set[str] = set()
    for raw in candidates:
        if not isinstance(raw, str):
            continue
        text = " ".join(raw.split()).strip(" -*\"'\u201c\u201d\u300c\u300d")
        # Lines echoed from the transcript: the user's keep their content; the
        # assistant's words are not facts about the user.
        if text.startswith(_ASSISTANT_LABEL):
            continue
        text = text.removeprefix(_USER_LABEL).strip()
        if "&" in text and _ENTITY.search(text) and not _ENTITY.search(transcript or ""):
            text = html.unescape(text)
        if _ABOUT_THE_ASSISTANT.match(text) or _A_PROMISE.search(text):
            continue
        if reports_a_request(text):  # a request is not a fact about the user
            continue
        if relations:
            related = _with_relation(text, relations)
            if related is None:
                continue  # "The user is Emma" when Emma is the user's sister
            text = related
        # "The user: I am 30 ..." (a small model copying a line under a label): the one
        # form of a quoted statement, as the extractive fallback writes it
        if (label := _THE_USER_LABEL.match(text)) and is_first_person(text[label.end() :]):
            text = said_item(text[label.end() :])
        if not (MIN_ITEM_CHARS <= len(text) <= MAX_ITEM_CHARS):
            continue
        if not any(c.isalpha() for c in text) or _copies_instructions(text):
            continue
        if is_question(text):  # a question is not a memory (a small model echoed one)
            continue
        if transcript is not None and _copies_an_example(text, transcript):
            continue
        if source is not None and not is_grounded(text, "", source_grams=source):
            continue
        if (stored := first_person_item(text, said=said)) is None:
            continue  # an "I" the user never said: the assistant's words
        key = stored.casefold()
        if key in seen:
            continue
        seen.add(key)
        if said is None or not with_antecedent(out, stored, said=said, max_chars=MAX_ITEM_CHARS):
            out.append(stored)
    if len(out) > MAX_ITEMS:  # said, never silent: the batch's messages count as summarized
        logger.warning(
            "the summary has %d items; the first %d are kept (summarize fewer messages at a "
            "time, max_messages, to keep more)",
            len(out),
            MAX_ITEMS,
        )
    return out[:MAX_ITEMS]


# People the user introduces by their relation: "my sister Emma", "我妹妹叫Emma" (a name is
# capitalised: the patterns keep their case).
_INTRODUCED = tuple(re.compile(language.introduced) for language in languages())
_IS_THE_USER = joined("is_the_user").pattern


def _said_by_user(transcript: str) -> str:
    """The user's lines of a :func:`render_transcript` transcript."""
    return "\n".join(
        line.removeprefix(_USER_LABEL)
        for line in transcript.splitlines()
        if line.startswith(_USER_LABEL)
    )


def people_of(transcript: str) -> dict[str, str]:
    """The people the user introduces by relation in ``transcript``'s user lines: name ->
    relation (``{"Emma": "sister"}``), in English and Chinese.

    Example:
        >>> people_of("User: I don't eat meat. My sister Emma lives in Lyon.")
        {'Emma': 'sister'}
    """
    said = _said_by_user(transcript)
    found: dict[str, str] = {}
    for pattern in _INTRODUCED:
        for match in pattern.finditer(said):
            found[match["name"]] = match["relation"].lower()
    return found


def _with_relation(item: str, people: dict[str, str]) -> str | None:
    """An item about a person the user introduced by relation, with the relation kept:
    ``None`` for one that makes the user that person ("The user is Emma."), the item with
    "The user's sister" put back for one that lost it ("Emma lives in Lyon.").
    """
    for name, relation in people.items():
        if re.fullmatch(rf"(?:{_IS_THE_USER}){re.escape(name)}[.。]?", item, re.IGNORECASE):
            return None
        if item.startswith(name) and relation not in item:
            form = language_of(item).relation_item or languages()[0].relation_item or "{item}"
            return form.format(relation=relation, item=item)
    return item


def _candidates(response: Any) -> list[Any]:
    if isinstance(response, SummaryItems):
        return list(response.items)
    if not isinstance(response, AIMessage):
        return []
    for tool_call in response.tool_calls:
        items = tool_call.get("args", {}).get("items")
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


def extract_user_statements(messages: Sequence[BaseMessage]) -> list[str]:
    """The user's own first-person statements ("The user said: ...", in their language):
    the extractive fallback. No model is involved, so nothing can be invented.
    """
    # No quotation marks: nested in a quoted string, SmolLM2 answered 4/10, not 8/10
    said = user_text(messages)
    items = [said_item(sentence, context=said) for sentence in user_statements(messages, **SAID)]
    return list(dict.fromkeys(items))[:MAX_ITEMS]


def _bind(model: BaseChatModel) -> Any:
    try:
        return model.bind_tools([SummaryItems], tool_choice="SummaryItems")
    except (NotImplementedError, TypeError, ValueError):
        return model


def _grounding(messages: Sequence[BaseMessage], transcript: str, grounded: bool) -> str | None:
    # Items must come from the user's words; a window of assistant text only (the user's
    # part was in an earlier batch) is grounded in what the assistant said.
    if not grounded:
        return None
    return user_text(messages) or transcript


def _or_fallback(
    items: list[str], messages: Sequence[BaseMessage], extractive_fallback: bool
) -> list[str]:
    if not items and extractive_fallback:
        # The user's own statements, and none is none: a window of questions and greetings
        # ("我多大了？") holds nothing to keep, and the watermark moves past it. Raising
        # here left such a window unsummarized, failing again at every later attempt.
        return extract_user_statements(messages)
    if not items:
        raise SummarizationError(
            "the summarizer model returned no usable items; nothing was stored and the "
            "history stays unsummarized (try again, or use a stronger model)."
        )
    return items


def _summary_plan(
    model: BaseChatModel, messages: Sequence[BaseMessage], grounded: bool
) -> Plan[list[str] | None]:
    """Ask for items (a ``SummaryItems`` call, then plain text), and once more for those
    that came back in another language than the user's; ``None``: nothing to summarize (no
    message, or none :func:`states_something`).
    """
    transcript = render_transcript(messages)
    if not transcript or not states_something(messages):
        return None
    language = user_language(messages)
    request = build_request(transcript, language)
    grounding = _grounding(messages, transcript, grounded)
    tool = _bind(model)
    reply = yield call(tool.invoke, tool.ainvoke, request)
    items = clean_items(_candidates(reply), grounding, transcript)
    if not items:
        reply = yield call(model.invoke, model.ainvoke, request)
        items = clean_items(_candidates(reply), grounding, transcript)
    foreign = [item for item in items if language and not in_language([item], language)]
    if language and foreign:
        again = yield call(tool.invoke, tool.ainvoke, rewrite_request(request, foreign, language))
        rewrite = clean_items(_candidates(again), grounding, transcript)
        items = _rewritten([i for i in items if i not in foreign], rewrite, language, messages)
    return items


def _summarize_plan(
    model: BaseChatModel,
    messages: Sequence[BaseMessage],
    extractive_fallback: bool,
    grounded: bool,
    keep_said: bool | None,
) -> Plan[list[str]]:
    """:func:`summarize_messages` as one plan, run by ``drive`` or ``adrive``."""
    try:
        items = yield from _summary_plan(model, messages, grounded)
    except Exception as exc:  # any model/provider failure: nothing may be stored
        raise SummarizationError(f"the summarizer model failed: {exc!r}") from exc
    if items is None:
        return []
    items = _or_fallback(items, messages, extractive_fallback)
    if not (grounded if keep_said is None else keep_said):
        return items  # else what the items left out, as the user said it:
    return keep_uncovered(items, user_statements(messages, **SAID), MAX_ITEMS, user_text(messages))


def summarize_messages(
    model: BaseChatModel,
    messages: Sequence[BaseMessage],
    *,
    extractive_fallback: bool = False,
    grounded: bool = False,
    keep_said: bool | None = None,
) -> list[str]:
    """Ask ``model`` for memory items about ``messages``.

    First as a ``SummaryItems`` tool call; if that yields nothing usable, once more as plain
    text with one item per line. Items are checked for form (:func:`clean_items`); the
    model's wording is trusted, in any language.

    Args:
        model: the summarizer chat model.
        messages: the conversation window to summarize.
        extractive_fallback: if the model gives nothing usable, keep the user's own
            first-person statements ("The user said: ...", for small local models).
        grounded: the junk guard for small local models: keep only items whose content
            occurs in what the user said (character n-grams, any language). Off for
            capable models, whose abstractions it would drop.
        keep_said: keep the user's sentences with a word no item holds, as they said them
            (:mod:`.uncovered`). ``None``: as ``grounded``, the small local model's switch.

    Raises:
        SummarizationError: the model failed (raised, timed out) or returned nothing usable
            and there was nothing to fall back on.

    Example:
        >>> summarize_messages(model, [HumanMessage("My birthday is May 8")])  # doctest: +SKIP
        ['The user's birthday is on May 8.']

    """
    return drive(_summarize_plan(model, messages, extractive_fallback, grounded, keep_said))


async def asummarize_messages(
    model: BaseChatModel,
    messages: Sequence[BaseMessage],
    *,
    extractive_fallback: bool = False,
    grounded: bool = False,
    keep_said: bool | None = None,
) -> list[str]:
    """Async :func:`summarize_messages`."""
    plan = _summarize_plan(model, messages, extractive_fallback, grounded, keep_said)
    return await adrive(plan)

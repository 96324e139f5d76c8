"""How a turn ends, whatever the model does: a tool call repeated with the same arguments
is answered once, an empty reply (or one that is only a tool call or result written as
text) is never the answer, and the user sees what was stored.

A real model (Qwen2.5-Coder-1.5B over an OpenAI-compatible API) called ``user_tag`` with
the same arguments five times, then, with tools withdrawn, returned an empty string,
which became the reply; after "Please summarize" the user saw the placeholder and an
empty or off-topic reply while the list of stored items was only in the tool message.
:class:`~langchain_tiered_memory.agent.nodes.ModelStep` applies these to every model, in
the graph and the middleware alike.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langchain_tiered_memory._said import (
    CAPTURE_NOTE,
    PLACEHOLDERS,
    REPORT,
    SUMMARIZE_NOTE,
    only_machinery,
    said_by_model,
    without_machinery,
)
from langchain_tiered_memory.agent.tools import SEARCH_MEMORY_TOOL, SUMMARIZE_TOOL
from langchain_tiered_memory.language.record import Replies
from langchain_tiered_memory.language.registry import languages, replies_in
from langchain_tiered_memory.language.text import is_cjk, is_question

__all__ = [
    "CAPTURE_NOTE",
    "PLACEHOLDERS",
    "REPORT",
    "SUMMARIZE_NOTE",
    "only_machinery",
    "is_empty",
    "package_reply",
    "recorded_sentence",
    "report_in",
    "written_by_package",
    "no_reply",
    "said_by_model",
    "with_stored_items",
    "without_echo",
    "without_repeated_calls",
]

logger = logging.getLogger(__name__)

# How the tools report (tools.py), in English for the model: what the summarize tool's
# report starts with when it stored something, and when there was nothing new; user_tag's
# "Recorded: age=30, name=Alice." (its keys sorted, "NOT RECORDED ..." after for the model)
_STORED = "Stored "
_NOTHING_NEW = "Nothing new"
_RECORDED = re.compile(r"\ARecorded: (?P<facts>.*?)\.(?:\s+NOT RECORDED\b.*)?\Z", re.DOTALL)
_FACT = re.compile(r"(?P<key>\w+)=(?P<value>.*?)(?=, \w+=|\Z)", re.DOTALL)


def recorded_sentence(facts: dict[str, Any], replies: Replies) -> str:
    """What was recorded, said in the language of ``replies`` ("Entendido, lo recordaré
    (edad: 34, nombre: Lucía Romero).").

    Example:
        >>> recorded_sentence({"age": 34}, replies_in("¿Cuántos años tengo?"))
        'Entendido, lo recordaré (edad: 34).'
    """
    listed = replies.fact_separator.join(
        replies.fact.format(label=replies.tag_labels.get(k, k.replace("_", " ")), value=v)
        for k, v in sorted(facts.items())
    )
    return replies.recorded.format(facts=listed)


def report_in(report: str, replies: Replies) -> str | None:
    r"""A memory tool's report (written in English, for the model) as a user of another
    language reads it, from the language record's replies; ``None`` when the record has no
    sentence for it (an app's own tool, a report of another shape). A real turn showed a
    Spanish user "Hecho. Recorded: age=34, name=Lucía Romero." (issue 79).

    Example:
        >>> report_in("Recorded: age=34, name=Lucía Romero.", replies_in("¿Cómo me llamo?"))
        'Entendido, lo recordaré (edad: 34, nombre: Lucía Romero).'
        >>> print(report_in("Stored 1 memory item(s) from the conversation:\n- 我住在上海。",
        ...                 replies_in("请总结")))
        好的，我记下了1条记忆：
        - 我住在上海。
    """
    if report.startswith(_STORED) and replies.stored is not None:
        items = [line for line in report.splitlines() if line.startswith("- ")]
        return replies.stored.format(count=len(items), items="\n".join(items))
    if report.startswith(_NOTHING_NEW) and replies.nothing_new is not None:
        return replies.nothing_new
    recorded = _RECORDED.match(report.strip())
    if recorded is not None:
        facts = {m["key"]: m["value"] for m in _FACT.finditer(recorded["facts"])}
        return recorded_sentence(facts, replies) if facts else None
    return None


def _in_english(replies: Replies) -> bool:
    """Whether ``replies`` are the first record's (English), the tools' own language."""
    return replies is (languages()[0].replies or replies)


def _turn(messages: Sequence[BaseMessage]) -> tuple[HumanMessage | None, list[BaseMessage]]:
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], HumanMessage):
            return messages[i], list(messages[i + 1 :])  # type: ignore[return-value]
    return None, list(messages)


def _key(call: Any) -> str:
    return json.dumps([call.get("name"), call.get("args") or {}], sort_keys=True, default=str)


def without_repeated_calls(response: AIMessage, messages: Sequence[BaseMessage]) -> AIMessage:
    """``response`` without the tool calls this turn already made with the same arguments
    (their result is in the thread: a second call cannot change it).
    """
    if not response.tool_calls:
        return response
    _, turn = _turn(messages)
    made = {_key(c) for m in turn if isinstance(m, AIMessage) for c in m.tool_calls}
    calls = [c for c in response.tool_calls if _key(c) not in made]
    if len(calls) == len(response.tool_calls):
        return response
    logger.info("dropped %d repeated tool call(s)", len(response.tool_calls) - len(calls))
    if not calls:  # a fresh message: no provider field may carry the calls along
        return AIMessage(content=response.text or "", id=response.id)
    extra = {k: v for k, v in response.additional_kwargs.items() if k != "tool_calls"}
    return response.model_copy(update={"tool_calls": calls, "additional_kwargs": extra})


# a message this long copied as the whole reply says nothing ("I live in Paris." ->
# "I live in Paris."); a short one may be the answer ("Thank you!" -> "Thank you!")
MIN_ECHO_TERMS = 3


def _folded(text: str) -> str:
    return " ".join("".join(c if c.isalnum() else " " for c in text.casefold()).split())


def _echoes(said: str, human: str) -> bool:
    """Whether ``said`` is ``human`` copied, and long enough to say nothing else."""
    folded = _folded(said)
    if len(folded.split()) + sum(is_cjk(c) for c in folded) / 2 < MIN_ECHO_TERMS:
        return False  # a word or two (a CJK character is half a word)
    return folded == _folded(human)


def without_echo(response: AIMessage, messages: Sequence[BaseMessage]) -> AIMessage:
    """``response`` as the user may read it: without the machinery in it (the package's
    placeholders and prompt sections, tool calls and results written as text,
    :func:`without_machinery`), and an empty reply if what is left is nothing, only
    machinery, or the user's latest message copied (Qwen2.5-Coder-1.5B answered "I live in
    Paris." with the message itself, and another message with two JSON calls and the
    message): an empty reply is asked again.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> turn = [HumanMessage("I live in Paris.")]
        >>> without_echo(AIMessage("I live in Paris"), turn).text
        ''
        >>> without_echo(AIMessage("Paris is lovely."), turn).text
        'Paris is lovely.'
        >>> without_echo(AIMessage("(saving our conversation to memory) I live in Paris."),
        ...              turn).text
        ''
    """
    human, _ = _turn(messages)
    if response.tool_calls or response.invalid_tool_calls:
        return response
    said = said_by_model(response)
    if not said:
        return response  # empty already: asked again as it is
    rest = without_machinery(said)
    echo = human is not None and _echoes(rest, human.text)
    if not rest or echo or only_machinery(rest):
        logger.info("the model's reply was machinery or a copy of the message; asking again")
        return AIMessage(content="", id=response.id, response_metadata=response.response_metadata)
    if rest == said:
        return response
    logger.info("took the machinery out of the model's reply")
    report = response.response_metadata.get(REPORT)
    text = "\n\n".join([rest, report]) if isinstance(report, str) and report else rest
    return response.model_copy(update={"content": text})


def package_reply(text: str) -> AIMessage:
    """A reply the package wrote, not the model (a small model's answer from a tag, what a
    turn did when the model gave nothing): marked, so that a person and a demo can tell,
    and a model is never shown it as its own words.

    Example:
        >>> written_by_package(package_reply("You are 30."))
        True
    """
    return AIMessage(content=text, response_metadata={REPORT: text})


def written_by_package(message: BaseMessage) -> bool:
    """Whether the package wrote all of ``message`` (:func:`package_reply`); a message
    with no mark, even an empty one, is the model's.
    """
    return (
        isinstance(message, AIMessage)
        and bool(message.response_metadata.get(REPORT))
        and not said_by_model(message)
    )


def is_empty(response: BaseMessage) -> bool:
    """Whether ``response`` is a final reply with nothing in it for the user: no text, or
    only a placeholder, a tool call or a tool's result written as text, whatever report of
    the package's is appended (a real model answered "请总结一下我们的对话。" with a copy of
    the summarize placeholder, and the stored items' report made it look like a reply).

    Example:
        >>> is_empty(AIMessage("<tool_response>Recorded: age=30.</tool_response>"))
        True
        >>> is_empty(AIMessage("You are 30."))
        False
    """
    return (
        isinstance(response, AIMessage)
        and not response.tool_calls
        and not response.invalid_tool_calls
        and only_machinery(said_by_model(response))
    )


def _results(turn: Sequence[BaseMessage]) -> list[ToolMessage]:
    return [
        m for m in turn if isinstance(m, ToolMessage) and m.status != "error" and m.text.strip()
    ]


def no_reply(
    messages: Sequence[BaseMessage],
    answer: Callable[[HumanMessage], AIMessage | None] | None = None,
) -> AIMessage:
    """The reply when the model gave none, asked twice, fitting what the user said, in
    their language: what the turn's tools did (recorded, stored; a memory lookup is no
    deed: its list of items answered "I have another exam tomorrow and I'm so nervous."),
    else the answer memory gives (``answer``: a question about a recorded tag), else for a
    statement that it was heard, for a question that there is no answer.

    Example:
        >>> no_reply([HumanMessage("I have another exam tomorrow.")]).text
        'Thanks for telling me.'
        >>> no_reply([HumanMessage("What should I eat?")]).text
        'Sorry, I could not come up with an answer. Could you ask again?'
    """
    human, turn = _turn(messages)
    replies = replies_in(human.text if human is not None else "")
    done = [m.text.strip() for m in _results(turn) if m.name != SEARCH_MEMORY_TOOL]
    if done and not _in_english(replies):
        # the tools report in English: a sentence of the user's language for each
        said = [report_in(report, replies) for report in done]
        if all(said):  # each a whole sentence already: no "Done." before them
            return package_reply("\n".join(s for s in said if s))
        done = [s or report for s, report in zip(said, done, strict=True)]
    if done:
        return package_reply(replies.done + "\n".join(done))
    known = answer(human) if answer is not None and human is not None else None
    if known is not None:
        return known
    if human is not None and not is_question(human.text):
        return package_reply(replies.heard)
    return package_reply(replies.no_answer)


def with_stored_items(response: AIMessage, messages: Sequence[BaseMessage]) -> AIMessage:
    """A final reply that says what this turn's summarize stored: the tool's report is
    added unless the reply already holds it.
    """
    if response.tool_calls:
        return response
    human, turn = _turn(messages)
    replies = replies_in(human.text if human is not None else "")
    reports: list[str] = [
        m.text for m in _results(turn) if m.name == SUMMARIZE_TOOL and m.text.startswith(_STORED)
    ]
    if not _in_english(replies):  # the tool's report is English: the user's language
        reports = [report_in(r, replies) or r for r in reports]
    # Whatever the model wrote: a reply that happens to restate an item ("I moved to
    # Berlin last month.") does not tell the user it was stored; the report does.
    missing = [r for r in reports if r not in response.text]
    if not missing:
        return response
    text = "\n\n".join([response.text.strip(), *missing]).strip()
    report = "\n\n".join(missing)
    metadata = {**response.response_metadata, REPORT: report}
    return response.model_copy(update={"content": text, "response_metadata": metadata})

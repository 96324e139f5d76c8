"""The update step: new summary items against the stored ones.

A capable model is shown the new notes and the stored items most like them, and decides
per note: add it, skip it (already known), or let it supersede a stored item (an updated
fact: the old item stays, marked superseded, and is no longer recalled). Small models do
not get this step (``ModelPolicy.reconcile``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.utils.json import parse_partial_json
from pydantic import BaseModel, Field, field_validator

from langchain_tiered_memory.language.text import (
    timestamp,
)
from langchain_tiered_memory.summarization.updates import merge_supersedes, same_kind

logger = logging.getLogger(__name__)

__all__ = [
    "NoteDecision",
    "NoteDecisions",
    "apply_decisions",
    "areconcile_items",
    "reconcile_items",
]


class NoteDecision(BaseModel):
    """What one new note does to the stored notes shown with it."""

    note: int = Field(description="The number of the new note.")
    action: Literal["new", "duplicate", "supersedes"] = Field(
        description=(
            "new: it adds something the stored notes do not say; duplicate: a stored note "
            "already says the same; supersedes: it makes a stored note no longer true."
        )
    )
    stored_id: str | None = Field(
        default=None,
        description="The id of the stored note it duplicates or supersedes (required then).",
    )

    # A real model writes the id it was shown (id="0") as a number too, and the action in
    # any case: neither may throw the whole answer away.
    @field_validator("stored_id", mode="before")
    @classmethod
    def _id_as_text(cls, value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        return value

    @field_validator("action", mode="before")
    @classmethod
    def _action_folded(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value


class NoteDecisions(BaseModel):
    """One decision per new note."""

    decisions: list[NoteDecision]


RECONCILE_SYSTEM_PROMPT = (
    "You keep an assistant's long-term memory of a user up to date. Each new note below is "
    "followed by the stored notes that resemble it, with their id and date. For each new "
    "note decide: 'new' if it adds something the stored notes do not say; 'duplicate' if a "
    "stored note already says the same; 'supersedes' if it makes a stored note no longer "
    "true (the user moved, changed jobs, ended a relationship, changed a preference), "
    "giving that note's id (a 'supersedes' without an id changes nothing). Notes are dated to "
    "the minute: of two that conflict, the later one is current. Answer by calling "
    "NoteDecisions with one decision per new note."
)


def build_reconcile_request(
    items: Sequence[str], similar: Sequence[Sequence[Document]]
) -> list[BaseMessage]:
    """The prompt of :func:`reconcile_items`: each new note with its similar stored notes."""
    lines = []
    for i, (item, docs) in enumerate(zip(items, similar)):
        lines.append(f"New note {i}: {json.dumps(item, ensure_ascii=False)}")
        for doc in docs:
            when = timestamp(doc.metadata.get("created_at")) or "unknown date"
            text = json.dumps(doc.page_content, ensure_ascii=False)
            lines.append(f"  stored id={json.dumps(str(doc.id))} ({when}): {text}")
        if not docs:
            lines.append("  (no similar stored notes)")
    return [SystemMessage(RECONCILE_SYSTEM_PROMPT), HumanMessage("\n".join(lines))]


def _decisions(response: Any) -> tuple[list[NoteDecision], str | None]:
    """The decisions in a reply, and why none could be used (``None`` if some could): a
    ``NoteDecisions`` tool call, its cut-off arguments, or the same JSON written as text
    (``NoteDecisions: {...}``, a fenced block), as the summary items are read. Each
    decision is validated on its own: one bad decision does not void the others.
    """
    if isinstance(response, NoteDecisions):
        return list(response.decisions), None
    if not isinstance(response, AIMessage):
        return [], f"the reply was a {type(response).__name__}"
    payloads: list[Any] = [call.get("args") for call in response.tool_calls]
    payloads += [parse_partial_json(c.get("args") or "") for c in response.invalid_tool_calls]
    payloads += _json_values(response.text if isinstance(response.text, str) else "")
    for payload in payloads:
        raw = payload.get("decisions") if isinstance(payload, dict) else payload
        if isinstance(raw, dict):
            raw = [raw]  # one decision, not in a list
        if not isinstance(raw, list):
            continue
        decisions = []
        for entry in raw:
            try:
                decisions.append(NoteDecision.model_validate(entry))
            except ValueError:
                continue
        if decisions:
            return decisions, None
    return [], "no NoteDecisions call and no decisions in the text"


def _json_values(text: str) -> list[Any]:
    """The JSON objects and arrays written in ``text`` (each outermost one), in order."""
    decoder, found, at = json.JSONDecoder(), [], 0
    while (start := _next_json(text, at)) >= 0:
        try:
            value, end = decoder.raw_decode(text, start)
        except ValueError:
            at = start + 1
            continue
        found.append(value)
        at = end
    return found


def _next_json(text: str, at: int) -> int:
    hits = [i for i in (text.find("{", at), text.find("[", at)) if i >= 0]
    return min(hits) if hits else -1


def _the_one(decision: NoteDecision, items: Sequence[str], docs: Sequence[Document]) -> bool:
    """Whether a decision with no id means the one stored note shown: a duplicate, or a
    supersession of a note on the same single-valued attribute.
    """
    if decision.action == "duplicate":
        return True
    return decision.action == "supersedes" and bool(
        same_kind(items[decision.note], docs[0].page_content)
    )


def apply_decisions(
    items: Sequence[str],
    similar: Sequence[Sequence[Document]],
    decisions: Sequence[NoteDecision],
    clear: Mapping[int, Sequence[str]] | None = None,
) -> tuple[list[str], dict[int, list[str]]]:
    """Items to store (duplicates dropped) and ``{index in that list: [superseded ids]}``.

    A "duplicate" without an id takes the one stored note shown with that new note, if
    only one was; so does a "supersedes" when both notes speak of one attribute a person
    has one value of (home, work, diet: "lives in Berlin" for "lives in Paris"), and
    otherwise it counts as "new" (Qwen2.5-Coder-1.5B answered it, id None, for "no longer
    works late on Fridays" beside "works as a teacher"); one naming a note or an id that
    was not shown counts as "new". Each such fallback is logged (one warning per answer).
    ``clear`` (``{index in items: [ids]}``, :func:`~.updates.clear_updates`) adds the
    updates the words make clear to what the model decided: a model's "new" never keeps a
    stale item current.
    """
    shown = [[str(d.id) for d in docs] for docs in similar]
    action: dict[int, NoteDecision] = {}
    problems: list[str] = []
    for decision in decisions:
        if not (0 <= decision.note < len(items)) or decision.note in action:
            problems.append(f"note {decision.note} is not a new note (or decided twice)")
            continue
        candidates, docs = shown[decision.note], similar[decision.note]
        if decision.stored_id is None and len(candidates) == 1 and _the_one(decision, items, docs):
            decision = decision.model_copy(update={"stored_id": candidates[0]})
        if decision.action != "new" and decision.stored_id not in candidates:
            problems.append(
                f"note {decision.note}: {decision.action} of id {decision.stored_id!r}, "
                f"shown {candidates}; stored as new"
            )
            continue
        action[decision.note] = decision
    if problems:
        logger.warning("the update step's answer was partly unusable: %s", "; ".join(problems))
    kept: list[str] = []
    by_model: dict[int, list[str]] = {}
    by_words: dict[int, list[str]] = {}
    for i, item in enumerate(items):
        chosen = action.get(i)
        if chosen is not None and chosen.action == "duplicate":
            continue
        if chosen is not None and chosen.action == "supersedes" and chosen.stored_id:
            by_model[len(kept)] = [chosen.stored_id]
        if clear and i in clear:
            by_words[len(kept)] = list(clear[i])
        kept.append(item)
    _log_paths(by_model, by_words)
    return kept, merge_supersedes(by_model, by_words)


def _log_paths(by_model: Mapping[int, list[str]], by_words: Mapping[int, list[str]]) -> None:
    """How often each path supersedes: what ``bench/update_paths.py`` counts."""
    if by_model or by_words:
        both = sum(1 for i, ids in by_model.items() if set(ids) & set(by_words.get(i, ())))
        logger.info(
            "update step: %d superseded by the model, %d by clear words, %d by both",
            len(by_model),
            len(by_words),
            both,
        )


def _bind_decisions(model: BaseChatModel) -> Any:
    try:
        return model.bind_tools([NoteDecisions], tool_choice="NoteDecisions")
    except (NotImplementedError, TypeError, ValueError):
        return model


def reconcile_items(
    model: BaseChatModel,
    items: Sequence[str],
    similar: Sequence[Sequence[Document]],
    clear: Mapping[int, Sequence[str]] | None = None,
) -> tuple[list[str], dict[int, list[str]]]:
    """Ask ``model`` whether each new item is new, a duplicate, or supersedes a stored one.

    One structured-output call; an unusable answer (or a failing model) means every item is
    new, so an update step can never lose a note. ``clear``: the updates the words make
    clear (:func:`~.updates.clear_updates`), kept whatever the model says.

    Returns:
        ``(items to store, {index in those items: [ids of stored items it supersedes]})``.

    """
    if not any(similar):
        return list(items), {}
    try:
        response = _bind_decisions(model).invoke(build_reconcile_request(items, similar))
    except Exception:  # the update step is an improvement, never a reason to lose notes
        logger.warning("the update check failed; storing the items as new", exc_info=True)
        response = None
    return _applied(items, similar, response, clear)


def _applied(
    items: Sequence[str],
    similar: Sequence[Sequence[Document]],
    response: Any,
    clear: Mapping[int, Sequence[str]] | None,
) -> tuple[list[str], dict[int, list[str]]]:
    decisions, why = ([], None) if response is None else _decisions(response)
    if why is not None:
        logger.warning("the update step's answer could not be used (%s); storing as new", why)
    return apply_decisions(items, similar, decisions, clear)


async def areconcile_items(
    model: BaseChatModel,
    items: Sequence[str],
    similar: Sequence[Sequence[Document]],
    clear: Mapping[int, Sequence[str]] | None = None,
) -> tuple[list[str], dict[int, list[str]]]:
    """Async :func:`reconcile_items`."""
    if not any(similar):
        return list(items), {}
    try:
        request = build_reconcile_request(items, similar)
        response = await _bind_decisions(model).ainvoke(request)
    except Exception:
        logger.warning("the update check failed; storing the items as new", exc_info=True)
        response = None
    return _applied(items, similar, response, clear)

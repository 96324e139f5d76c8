"""Which of a thread's messages the history does not hold yet (the save step's question,
and the ``summarize`` tool's, which must see the turn it is called in).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage

__all__ = ["edited", "last_human", "unsaved"]

# Ids of the last saved messages kept in the state: what is new is after the newest of
# them still in the thread (a few ids: the state is stored with every turn's checkpoint).
SAVED_IDS = 8


def mark(message_id: str) -> str:
    """A message id as the state keeps it among the saved ones: 10 hex digits of its
    SHA-1 (40 bits; a thread has thousands of messages, not a million). Whole ids (36-46
    characters, 8 of them, in a write and a blob of every turn's checkpoints) were about
    700 bytes of each turn's checkpoint data.
    """
    return hashlib.sha1(message_id.encode("utf-8", "surrogatepass")).hexdigest()[:10]


def _digest(message: BaseMessage) -> str:
    # 6 hex digits of the text: enough to tell an edit of one saved message
    return hashlib.sha1(message.text.encode("utf-8", "surrogatepass")).hexdigest()[:6]


def _anchor(message: BaseMessage) -> str:
    """A saved message as the state keeps it: the mark of its id, then of its text."""
    return mark(str(message.id)) + _digest(message)


def _anchored(messages: Sequence[BaseMessage], anchors: Sequence[str]) -> dict[str, BaseMessage]:
    """The thread's messages the anchors name, by the mark of their id: read from the
    newest back until every anchor is found (they are the last saved ones), so the cost
    of a turn is not the length of its thread.
    """
    wanted = {a[:10] for a in anchors}
    found: dict[str, BaseMessage] = {}
    for message in reversed(messages):
        if len(found) == len(wanted):
            break
        if message.id and (key := mark(message.id)) in wanted:
            found.setdefault(key, message)
    return found


def edited(state: dict[str, Any]) -> list[BaseMessage]:
    """The recently saved messages whose text changed since (``update_state`` with the
    same message id: an edit in place). Anchors saved before texts were kept tell none.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> saved = {"messages": [HumanMessage("I am 30.", id="h1")]}
        >>> saved["saved_ids"] = unsaved(saved)[2]["saved_ids"]
        >>> [m.text for m in edited({**saved, "messages": [HumanMessage("I am 31.", id="h1")]})]
        ['I am 31.']
    """
    texts = {a[:10]: a[10:] for a in state.get("saved_ids") or [] if len(a) == 16}
    found = _anchored(state.get("messages", []), list(texts))
    return [m for key, m in found.items() if texts[key] != _digest(m)]


def last_human(messages: Sequence[BaseMessage]) -> HumanMessage | None:
    """The latest human message, if any."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return message
    return None


def unsaved(state: dict[str, Any]) -> tuple[list[BaseMessage], int, dict[str, Any]]:
    """The thread's messages not saved yet, the running count of saved ones (the
    history's replay check reads it as the batch's position), and the state update.

    What is new is told by identity: after the newest of the last saved messages
    (``saved_ids``) still in the thread. By position alone, a message removed from the
    thread (``update_state(RemoveMessage)``, a summarizing middleware) moved later turns
    below the saved count and they never reached memory. A thread saved before ids were
    kept, or one that removed every recently saved message, falls back to the position.

    Saving the same messages twice at the same position stores them once (the history's
    replay check), so a tool may save the turn so far and the save step the whole turn.
    """
    messages = list(state.get("messages", []))
    saved = int(state.get("saved_count") or 0)
    anchors = list(state.get("saved_ids") or [])
    start = min(saved, len(messages))
    if anchors:
        known = {a[:10] if len(a) == 16 else a for a in anchors}
        for i in range(len(messages) - 1, -1, -1):  # the anchor is near the end
            msg_id = messages[i].id
            # a short mark of the id (a thread saved before marks holds whole ids)
            if msg_id and (mark(msg_id) in known or msg_id in known):
                start = i + 1
                break
        else:
            # None of the recently saved messages is left: the thread was cleared
            # (RemoveMessage(REMOVE_ALL_MESSAGES)) or summarized down to its last
            # message. The saved count says nothing of what is left; this turn's
            # messages (from its human message on) are new whatever happened to the
            # old ones, and a summary a middleware put before them is not the user's.
            last = last_human(messages)
            start = messages.index(last) if last is not None else 0
    new = messages[start:]
    # each anchor with the text its message has now: an edit is told once (``edited``)
    now = {key: _anchor(m) for key, m in _anchored(messages, anchors).items()}
    kept = [now.get(a[:10], a) for a in anchors] + [_anchor(m) for m in new if m.id]
    kept = kept[-SAVED_IDS:]
    return new, saved, {"saved_count": saved + len(new), "saved_ids": kept}

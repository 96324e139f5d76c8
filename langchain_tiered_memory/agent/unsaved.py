"""Which of a thread's messages the history does not hold yet (the save step's question,
and the ``summarize`` tool's, which must see the turn it is called in).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage

__all__ = ["last_human", "unsaved"]

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
        known = set(anchors)
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
    kept = [*anchors, *(mark(m.id) for m in new if m.id)][-SAVED_IDS:]
    return new, saved, {"saved_count": saved + len(new), "saved_ids": kept}

"""Which of a thread's messages a turn's save sends the history, and from which thread
position (the save step's question, and the ``summarize`` tool's, which must see the turn
it is called in).

The state keeps what its branch saved: ``saved_count`` (the thread position after the
last save) and ``saved_ids``, the last saved messages, each as the mark of its id and of
its text. Those say which messages are new, and which saved ones were edited in place
(``update_state`` with the same id); the history's one rule (``thread_append``) then
decides the rest by comparing the batch with what the thread holds from its position.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any, NamedTuple

from langchain_core.messages import BaseMessage, HumanMessage

__all__ = ["Unsaved", "last_human", "unsaved"]

# Saved messages kept in the state: what is new is after the newest of them still in the
# thread (a few: the state is stored with every turn's checkpoint).
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
    return mark(str(message.id or "")) + _digest(message)


class Unsaved(NamedTuple):
    """What a save sends (:func:`unsaved`)."""

    batch: list[BaseMessage]
    """The messages to append: the new ones, from the earliest edited saved one if any."""
    position: int
    """The thread position of ``batch[0]``."""
    update: dict[str, Any]
    """The state's ``saved_count`` and ``saved_ids`` once the batch is saved."""
    new: list[BaseMessage]
    """The batch's messages the history never held (a turn's tag calls are read there)."""
    context: list[BaseMessage] = []
    """The saved messages just before the batch, as this branch has them (up to
    ``SAVED_IDS``): a turn's load compares them too, so a run from an earlier checkpoint
    is followed also where it differs before its own messages."""
    edits: list[tuple[int, BaseMessage]] = []
    """``(thread position, message)`` of each saved message edited in place, each saved
    alone at its position before the batch (the rule stores it in place of the old)."""


def last_human(messages: Sequence[BaseMessage]) -> HumanMessage | None:
    """The latest human message, if any."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return message
    return None


def _found(messages: Sequence[BaseMessage], anchors: Sequence[str]) -> dict[int, tuple[int, bool]]:
    """The saved messages still in the thread: state index -> (anchor index, text kept).
    Read from the newest back until every anchor is found (they are the last saved
    ones), so the cost of a turn is not the length of its thread.
    """
    index: dict[str, int] = {}
    for i, anchor in enumerate(anchors):
        index[anchor[:10] if len(anchor) == 16 else anchor] = i
    found: dict[int, tuple[int, bool]] = {}
    seen: set[int] = set()
    for j in range(len(messages) - 1, -1, -1):
        if len(seen) == len(index):
            break
        msg_id = messages[j].id
        if not msg_id:
            continue
        # a short mark of the id (a thread saved before marks holds whole ids)
        key = mark(msg_id)
        if key not in index and msg_id not in index:
            continue
        i = index[key] if key in index else index[msg_id]
        seen.add(i)
        anchor = anchors[i]
        found[j] = (i, len(anchor) != 16 or anchor[10:] == _digest(messages[j]))
    return found


def unsaved(state: dict[str, Any]) -> Unsaved:
    """What the turn's save sends the history: the thread's messages it does not hold,
    or holds with another text, and the thread position they start at.

    New is what comes after the most recently saved message still in the thread, as
    saved (by identity: after ``RemoveMessage``, a summarizing middleware or a trim, the
    thread's indexes say nothing). A message after it with the id of one saved *before*
    it is a new one reusing a removed message's id (clients that number their messages
    do), never an edit of it. A saved message whose text changed is an edit in place
    (``edits``: saved alone at its thread position, the history stores the new text in
    place of the old; one of the last ``SAVED_IDS`` saved messages, as the state keeps
    them: an older edit is not followed). A
    thread that kept no saved message unchanged (``RemoveMessage(REMOVE_ALL_MESSAGES)``)
    sends its messages from the latest human one.

    Saving the same messages twice at the same position stores them once (the history's
    rule), so a tool may save the turn so far and the save step the whole turn.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> state = {"messages": [HumanMessage("I am 30.", id="h1"), AIMessage("Ok.", id="a1")]}
        >>> state.update(unsaved(state).update)
        >>> state["messages"] = [HumanMessage("I am 31.", id="h1"), state["messages"][1]]
        >>> done = unsaved(state)
        >>> done.batch, [(p, m.text) for p, m in done.edits]
        ([], [(0, 'I am 31.')])
    """
    messages = list(state.get("messages", []))
    saved = int(state.get("saved_count") or 0)
    anchors = list(state.get("saved_ids") or [])
    found = _found(messages, anchors) if anchors else {}
    kept = sorted((i, j) for j, (i, same) in found.items() if same)
    for j, (i, _) in list(found.items()):
        if _sent_again(messages, (i, j), found, len(anchors)):
            del found[j]  # a new message, whatever its text
    kept = [(i, j) for i, j in kept if j in found]
    position, context, changed = saved, [], []
    if not anchors:
        start = min(saved, len(messages))
        batch = new = messages[start:]
    elif not kept:
        # None of the recently saved messages is left as saved: the thread was cleared
        # (RemoveMessage(REMOVE_ALL_MESSAGES)) or summarized down to its last message.
        # The saved count says nothing of what is left; this turn's messages (from its
        # human message on) are new whatever happened to the old ones, and a summary a
        # middleware put before them is not the user's.
        last = last_human(messages)
        batch = new = messages[messages.index(last) if last is not None else 0 :]
    else:
        newest, at = kept[-1]  # the most recently saved message the thread still has
        edits = [
            (i, j)
            for j, (i, same) in found.items()
            if not same and ((j < at and i < newest) or (j > at and i > newest))
        ]
        edited = {j: i for i, j in edits}
        batch = new = [m for j, m in enumerate(messages) if j > at and j not in edited]
        context = _before(messages, dict(kept), len(anchors))
        for j, i in sorted(edited.items(), key=lambda e: e[1]):
            anchors[i] = _anchor(messages[j])
            changed.append((saved - len(anchors) + i, messages[j]))
    anchored = (anchors + [_anchor(m) for m in batch])[-SAVED_IDS:]
    update = {"saved_count": position + len(batch), "saved_ids": anchored}
    return Unsaved(batch, position, update, new, context, changed)


def _sent_again(
    messages: Sequence[BaseMessage],
    newest: tuple[int, int],
    found: dict[int, tuple[int, bool]],
    anchors: int,
) -> bool:
    """Whether a saved message's id in the thread (``newest``: its anchor and thread
    index) is the turn's input sent again: the thread's last human message, every
    message saved after it gone (what follows it is the run's own). A client that numbers
    its messages per thread sends "hi" as "m1" again after removing every message, or
    "m5" for a new message after removing the old "m5" and its reply; it is a new message,
    with the same words or others, never an edit of the one removed.
    """
    i, j = newest
    return (
        messages[j] is last_human(messages)
        and i < anchors - 1
        and all(k <= i for k, _ in found.values())
    )


def _before(messages: Sequence[BaseMessage], at: dict[int, int], keep: int) -> list[BaseMessage]:
    """The saved messages right before anchor ``keep`` (``at``: anchor -> thread index of
    those the thread holds as saved), contiguous and in order.
    """
    out: list[BaseMessage] = []
    i, j = keep - 1, len(messages)
    while i in at and at[i] < j:
        j = at[i]
        out.append(messages[j])
        i -= 1
    return out[::-1]

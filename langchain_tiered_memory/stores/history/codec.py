"""The history's stored form: a message as compact JSON, checked to be portable (JSON and
every checkpointer's msgpack can carry it), read back tolerant of what an older release or
a forgotten thread left (tombstones), and the per-thread spans of positions.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
    message_to_dict,
)
from langchain_core.messages import messages_from_dict as _messages_from_dict

from langchain_tiered_memory._portable import check_portable
from langchain_tiered_memory.errors import CorruptMemoryError, InvalidMessageError

logger = logging.getLogger(__name__)

OnInvalid = Literal["raise", "placeholder"]
DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024
BASE_FIELD = "hist_base"  # in the user's meta hash: absolute position of list index 0


# Fields a message holds at their default value, left out of the stored entry (the loader
# gives them back): for a short message they were half of its bytes.
_DEFAULTS: dict[str, Any] = {
    "additional_kwargs": {},
    "response_metadata": {},
    "name": None,
    "id": None,
    "example": False,
    "tool_calls": [],
    "invalid_tool_calls": [],
    "usage_metadata": None,
    "artifact": None,
    "status": "success",
}


def _compact(data: dict[str, Any]) -> dict[str, Any]:
    """LangChain's message dict without the fields that hold their defaults."""
    body = {
        k: v
        for k, v in data["data"].items()
        if not (k in _DEFAULTS and type(v) is type(_DEFAULTS[k]) and v == _DEFAULTS[k])
        and not (k == "type" and v == data["type"])
    }
    return {"type": data["type"], "data": body}


def dump_message(message: BaseMessage, max_bytes: int) -> bytes:
    """Serialize one message as JSON bytes (LangChain's dict format without the fields at
    their defaults), enforcing the size cap.

    Raises:
        InvalidMessageError: not a message, not portable JSON data (see
            :func:`check_portable`), or over ``max_bytes`` serialized.

    """
    if not isinstance(message, BaseMessage):
        raise InvalidMessageError(
            f"expected a langchain BaseMessage, got {type(message).__name__}; wrap text in "
            "HumanMessage/AIMessage."
        )
    try:
        data = _compact(message_to_dict(message))
        check_portable(data, f"a {message.type} message")
        raw = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode(
            "utf-8"
        )
    except InvalidMessageError:
        raise
    except (TypeError, ValueError, UnicodeEncodeError, RecursionError) as exc:
        raise InvalidMessageError(
            f"message cannot be stored as JSON ({type(exc).__name__}: {str(exc)[:200]}); keep "
            "contents to text, JSON-able content blocks and JSON-able additional_kwargs."
        ) from exc
    if len(raw) > max_bytes:
        raise InvalidMessageError(
            f"message is {len(raw)} bytes serialized; the limit is {max_bytes}. Store large "
            "payloads elsewhere and keep a reference in the message, or raise max_message_bytes."
        )
    return raw


def placeholder_for(message: Any, reason: str) -> BaseMessage:
    """A small stand-in for a message the history refused, keeping the conversation's shape.

    Tool results keep their ``tool_call_id`` and tool calls their ids, so the stored turn
    stays one a chat model accepts.
    """
    note = f"[not stored: {reason[:300]}]"
    msg_id = getattr(message, "id", None)
    msg_id = msg_id if isinstance(msg_id, str) and len(msg_id) <= 200 else None
    try:
        if isinstance(message, ToolMessage):
            return ToolMessage(
                content=note,
                tool_call_id=str(message.tool_call_id)[:200],
                id=msg_id,
                status="error",
            )
        if isinstance(message, AIMessage):
            calls = [
                {"id": str(c.get("id") or "")[:200], "name": str(c.get("name"))[:200], "args": {}}
                for c in message.tool_calls
            ]
            return AIMessage(content=note, tool_calls=calls, id=msg_id)
        if isinstance(message, HumanMessage):
            return HumanMessage(content=note, id=msg_id)
    except (TypeError, ValueError):
        pass
    return AIMessage(content=note)


# What a forgotten thread's messages become (positions are kept; readers skip them).
TOMBSTONE = '{"forgotten": true}'
TOMBSTONES = frozenset({TOMBSTONE, TOMBSTONE.encode()})


# A message whose memory item its user deleted or edited: kept in the history (the user's
# words), no longer carried into new threads as current (``agent/shown.py``). In the
# message's ``response_metadata``, which no chat model integration sends to a provider.
RETRACTED = "tiered_memory_retracted"
# its value: why (a deleted or edited item's source, or a branch a fork left)
CHANGED, ABANDONED = "changed", "abandoned"
# how many entries after a retracted message are looked at for the assistant's reply to it
REPLY_REACH = 4


def retractions(
    entries: Sequence[bytes | str | None], sources: int, reason: str = CHANGED
) -> list[str | None]:
    """The new stored form of each entry that a retraction marks, ``None`` for the others:
    the first ``sources`` entries (the item's source messages), and in the rest (each
    source's next ``REPLY_REACH`` entries, in the same order) the assistant's messages that
    answer a retracted human one, up to the next human message. Tombstones, entries this
    package did not write and messages already marked are left alone.

    Example:
        >>> human = dump_message(HumanMessage("My code is A-1.", id="h"), 10_000)
        >>> reply = dump_message(AIMessage("Noted, A-1.", id="a"), 10_000)
        >>> [r is not None for r in retractions([human, reply], 1)]
        [True, True]
    """
    out: list[str | None] = []
    answering = False
    for i, raw in enumerate(entries):
        if i < sources:
            answering = True
        entry = _entry(raw)
        kind = entry.get("type") if entry is not None else None
        if i >= sources and kind == "human":
            answering = False
        data = entry.get("data") if entry is not None else None
        if not answering or not isinstance(data, dict) or (i >= sources and kind != "ai"):
            out.append(None)
            continue
        meta = data.get("response_metadata")
        meta = dict(meta) if isinstance(meta, dict) else {}
        if meta.get(RETRACTED):
            out.append(None)
            continue
        meta[RETRACTED] = reason
        out.append(json.dumps({**(entry or {}), "data": {**data, "response_metadata": meta}}))
    return out


def stored_id(raw: bytes | str | None) -> str | None:
    """The message id of a stored entry (``None``: none, a tombstone, not one of ours)."""
    entry = _entry(raw)
    data = entry.get("data") if entry is not None else None
    found = data.get("id") if isinstance(data, dict) else None
    return found if isinstance(found, str) else None


def _entry(raw: bytes | str | None) -> dict[str, Any] | None:
    if raw is None or raw in TOMBSTONES:
        return None
    try:
        entry = json.loads(raw)
    except ValueError:
        return None
    return entry if isinstance(entry, dict) else None


def thread_spans(raw: Sequence[bytes | str]) -> list[tuple[int, int, str]]:
    """Parse stored ``"start:end:thread"`` records."""
    out = []
    for entry in raw:
        text = entry.decode() if isinstance(entry, bytes) else entry
        start, end, thread = text.split(":", 2)
        out.append((int(start), int(end), thread))
    return out


def threads_between(spans: Sequence[tuple[int, int, str]], start: int, end: int) -> list[str]:
    """Threads with a message in positions ``[start, end)``, in order of first appearance."""
    out: list[str] = []
    for first, last, thread in spans:
        if first < end and start < last and thread not in out:
            out.append(thread)
    return out


def positioned(
    first: int, raw: Sequence[bytes | str], *, where: str = "a history"
) -> list[tuple[int, BaseMessage]]:
    """Stored entries read from absolute position ``first`` as ``(position, message)``,
    forgotten ones left out: which message of a window is which position (the provenance
    of the summary items made from it).
    """
    positions = [first + i for i, r in enumerate(raw) if r not in TOMBSTONES]
    return list(zip(positions, load_messages(raw, where=where), strict=True))


def load_messages(raw: Sequence[bytes | str], *, where: str = "a history") -> list[BaseMessage]:
    """Inverse of :func:`dump_message` for a batch.

    Raises:
        CorruptMemoryError: an entry is not what this package writes (another writer, a
            bug, a migration); ``where`` names the user and key in the message.

    """
    try:
        return _messages_from_dict([json.loads(r) for r in raw if r not in TOMBSTONES])
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        # JSONDecodeError and UnicodeDecodeError are ValueErrors; a dict of the wrong shape
        # raises KeyError/TypeError/ValueError in messages_from_dict.
        raise CorruptMemoryError(
            f"{where} holds an entry that is not a stored chat message "
            f"({type(exc).__name__}: {str(exc)[:200]}). Export the user's other tiers with "
            "export_user, then forget_user or delete the key to recover."
        ) from exc


def drop_orphan_tool_messages(messages: list[BaseMessage]) -> list[BaseMessage]:
    """Cut a history window so it starts at a message a chat model accepts first.

    A window cut from the middle can start with ``ToolMessage``\\s whose ``AIMessage`` (with
    the ``tool_calls``) was cut off; providers reject those, so they are dropped.
    """
    start = 0
    while start < len(messages) and isinstance(messages[start], ToolMessage):
        start += 1
    return messages[start:]


def drop_unanswered_tool_calls(messages: list[BaseMessage]) -> list[BaseMessage]:
    """Drop a trailing ``AIMessage`` whose tool calls are not all answered (cut turn).

    The ``ToolMessage``\\s that follow it are dropped with it: providers reject an
    assistant message with ``tool_calls`` unless every call id has a tool result.
    """
    end = len(messages)
    answered: set[str | None] = set()
    while end > 0 and isinstance(last := messages[end - 1], ToolMessage):
        answered.add(last.tool_call_id)
        end -= 1
    if (
        end > 0
        and isinstance(ai := messages[end - 1], AIMessage)
        and not {call.get("id") for call in ai.tool_calls} <= answered
    ):
        return messages[: end - 1]
    return messages


def parse_tail(raw: Sequence[bytes | str], where: str = "a history") -> list[BaseMessage]:
    """Stored entries (the reply of a tail read) as the messages a turn may see: a tool
    message whose call was cut off and a tool call whose answer was are dropped.

    Raises:
        CorruptMemoryError: an entry is not a stored message (``where`` names it).
    """
    return drop_unanswered_tool_calls(drop_orphan_tool_messages(load_messages(raw, where=where)))

"""The thread's messages as the prebuilt graph keeps them: a ``DeltaChannel`` reducer that
is ``add_messages`` applied write by write, however the writes are grouped, on whatever
``add_messages`` accepts (messages, dicts, tuples, strings).

Shared by the graph (its state) and privacy (a thread's messages rebuilt for an export
from any checkpointer's ``get_delta_channel_history``).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    BaseMessageChunk,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
    convert_to_messages,
)
from langgraph.channels import DeltaChannel
from langgraph.channels.base import MISSING  # type: ignore[attr-defined]
from langgraph.graph.message import add_messages

__all__ = ["add_message_batches", "messages_at"]


# Ids for messages written without one (("user", text), a string, a dict): derived from
# the message before it in the thread and what it says, so that every rebuild of the
# thread from its checkpoints gives it the same id (add_messages would draw a new uuid4
# each time: get_state ids changed, a RemoveMessage of it failed, an edit appended). Two
# messages in a thread never share one: after a message with id P the next one appended
# follows P only until everything after P is removed again.
_STABLE_IDS = uuid.UUID("7d0b7c4e-52c1-4e0a-9d3e-2b8f6a1c4e11")


def _stable_id(previous: str, message: BaseMessage, present: set[Any]) -> str:
    ident = str(uuid.uuid5(_STABLE_IDS, f"{previous}\0{message.type}\0{message.content!s}"))
    while ident in present:  # rare (a message removed and re-added by id): still fixed
        ident = str(uuid.uuid5(_STABLE_IDS, ident))
    return ident


# A message as a LangGraph server's read path hands it over: the model's fields as a dict
# (its checkpointer decodes stored messages to JSON, ``_msgpack_ext_hook_to_json``), the
# thread's stored value (a ``DeltaChannel`` snapshot) included. By their ``type``.
_DUMPED: dict[str, type[BaseMessage]] = {
    "human": HumanMessage,
    "ai": AIMessage,
    "tool": ToolMessage,
    "system": SystemMessage,
    "remove": RemoveMessage,
    "function": FunctionMessage,
    "chat": ChatMessage,
}


def _as_message(item: Any) -> BaseMessage:
    """``item`` as a message, as ``add_messages`` coerces it (``convert_to_messages``); a
    message's fields as a dict (a server's JSON read) back to that message whole:
    ``convert_to_messages`` would move an AI message's ``usage_metadata`` and
    ``invalid_tool_calls`` into ``additional_kwargs``.
    """
    if isinstance(item, BaseMessage):
        return item
    if isinstance(item, dict) and "role" not in item and item.get("type") in _DUMPED:
        return _DUMPED[item["type"]].model_validate(item)
    return convert_to_messages([item])[0]


def _as_messages(items: Any) -> list[BaseMessage]:
    """``items`` (a list, or one message in any form ``add_messages`` accepts) as messages."""
    if isinstance(items, list):
        return [_as_message(item) for item in items]
    return [_as_message(items)]


def add_message_batches(state: Sequence[Any] | None, writes: Any) -> list[AnyMessage]:
    """``add_messages`` applied write by write, as ``DeltaChannel`` replays the writes in
    batches: the same state however the writes are grouped (a property test checks it).

    Consecutive writes that remove nothing are applied in one pass (equal to one by one:
    ids replace in place, new ids append); a write with a ``RemoveMessage`` is applied on
    its own, since ``add_messages`` over writes joined is not the same then
    (``REMOVE_ALL_MESSAGES`` keeps whatever follows it, a later ``RemoveMessage`` too, and
    a removal then a re-add of one id would keep the old place). A message without an id
    gets one from the thread's last message, as write-by-write application has it, and
    its content (:func:`_stable_id`).

    The state and the writes may hold dicts, tuples or strings where messages go, as
    ``add_messages`` allows: a LangGraph server replays a thread's stored value and writes
    decoded to JSON when it reads a thread (``threads.get_state``, ``get_history``).
    """
    messages = [_as_message(m) for m in state or ()]
    ids = {m.id for m in messages}
    last = str(messages[-1].id) if messages else ""
    pending: list[BaseMessage] = []
    for write in writes:
        items = _as_messages(write)
        removes = any(isinstance(m, RemoveMessage) for m in items)
        if removes:
            messages = _apply(messages, pending)
            pending = []
        for m in items:
            if isinstance(m, RemoveMessage):
                continue  # add_messages removes at the end of the write
            if m.id is None:
                m.id = _stable_id(last, m, ids)
            if m.id not in ids:  # appended (an id the thread holds is replaced in place)
                ids.add(m.id)
                last = m.id
        if removes:
            messages = list(add_messages(messages, items))  # type: ignore[arg-type]
            ids = {m.id for m in messages}
            last = str(messages[-1].id) if messages else ""
        else:
            pending.extend(items)
    return _apply(messages, pending)


def _apply(left: list[Any], right: list[Any]) -> list[Any]:
    """``add_messages(left, right)`` for writes that remove nothing, in one pass."""
    if not right:
        return left
    if _appends_only(left, right):
        # what almost every step writes: new messages with new ids. add_messages would
        # give the same list, after indexing every message of the thread by id each step.
        return [*left, *right]
    return list(add_messages(left, right))


def _appends_only(left: list[Any], right: list[Any]) -> bool:
    """Whether ``add_messages(left, right)`` is ``left + right``: every new item a plain
    message (not a chunk, not a removal) with an id of its own that ``left`` does not hold,
    and every ``left`` message has an id (add_messages would give it one).
    """
    ids = set()
    for message in right:
        if (
            not isinstance(message, BaseMessage)
            or isinstance(message, (RemoveMessage, BaseMessageChunk))
            or not message.id
            or message.id in ids
        ):
            return False
        ids.add(message.id)
    return all(
        isinstance(m, BaseMessage)
        and not isinstance(m, BaseMessageChunk)
        and m.id
        and m.id not in ids
        for m in left
    )


def messages_at(history: Any) -> list[AnyMessage]:
    """The messages a ``DeltaChannelHistory`` (its seed and writes) rebuilds to.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> [m.text for m in messages_at({"writes": [("t", "messages", [HumanMessage("hi")])]})]
        ['hi']
    """
    channel = DeltaChannel(add_message_batches, list).from_checkpoint(history.get("seed", MISSING))
    channel.replay_writes(list(history.get("writes") or []))
    return list(channel.get()) if channel.is_available() else []

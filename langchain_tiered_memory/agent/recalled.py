"""What ``search_memory`` found, shown to the model by reference, never written as text.

A tool's result is a ``ToolMessage`` in the thread: LangGraph checkpoints it and the turn's
save puts it in the history. Quoting memory items there made a copy of each that outlived
the item: after ``delete_summaries`` or ``update_summary`` the old text stayed in the
checkpoints, the history, the server's files and the next prompt (issue 67). So the result
written to the thread names the items only (``artifact``: their ids); their text lives in
:data:`RECALLED`, a channel LangGraph never checkpoints, for the rest of the run, and the
model's input is composed with it (:func:`shown_results`). A later run on the thread sees
that earlier results are not kept and searches again: an edited or deleted item is never
shown from an old result.

The same wrapper serves both doors: the prebuilt graph's ``ToolNode`` and the middleware's
``wrap_tool_call``.

Example:
    >>> from langchain_core.messages import ToolMessage
    >>> found = ToolMessage("1. x", tool_call_id="c1", name="search_memory",
    ...     artifact={"memory_items": [{"id": "i1", "line": '"The user keeps bees."'}]})
    >>> command = by_reference(found)
    >>> command.update["messages"][0].content
    'Found 1 memory (shown in this run only).'
    >>> [m.content for m in shown_results(command.update["messages"], command.update[RECALLED])]
    ['1. "The user keeps bees."']
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain_core.messages import BaseMessage, ToolMessage
from langgraph.channels import UntrackedValue
from langgraph.types import Command

from langchain_tiered_memory.agent.tools import SEARCH_MEMORY_TOOL

__all__ = [
    "RECALLED",
    "RecalledItems",
    "by_reference",
    "abare_or_referenced",
    "bare_or_referenced",
    "shown_results",
]

# the state key of the run's found items (id -> the line the model is shown)
RECALLED = "recalled_items"
_ITEMS = "memory_items"
NOT_KEPT = (
    "Earlier search results are not kept (the memory may have changed since): call "
    f"{SEARCH_MEMORY_TOOL} again if you need them."
)


class RecalledItems(UntrackedValue[dict[str, str]]):
    """An ``UntrackedValue`` that gathers every search of the run (parallel calls in one
    step, and later steps), instead of keeping one write.
    """

    def __init__(self, typ: type[dict[str, str]] = dict, guard: bool = False) -> None:
        super().__init__(typ, guard=guard)

    def update(self, values: Sequence[dict[str, str]]) -> bool:
        """Merge this step's writes into what the run found so far."""
        if not values:
            return False
        merged = dict(self.value) if self.is_available() else {}
        for value in values:
            merged.update(value)
        self.value = merged
        return True


def _items(message: BaseMessage) -> list[Any] | None:
    if not isinstance(message, ToolMessage) or message.name != SEARCH_MEMORY_TOOL:
        return None
    artifact = message.artifact
    items = artifact.get(_ITEMS) if isinstance(artifact, dict) else None
    return items if isinstance(items, list) else None


def by_reference(result: Any) -> Any:
    """A ``search_memory`` result as the thread keeps it: the items' ids in the message,
    their lines in :data:`RECALLED`; any other result as it is.
    """
    items = _items(result) if isinstance(result, ToolMessage) else None
    if not items:
        return result
    lines = {str(i["id"]): str(i["line"]) for i in items}
    n = len(lines)
    kept = result.model_copy(
        update={
            "content": f"Found {n} {'memory' if n == 1 else 'memories'} (shown in this run only).",
            "artifact": {_ITEMS: list(lines)},
        }
    )
    return Command(update={"messages": [kept], RECALLED: lines})


def bare_or_referenced(request: Any, handler: Callable[[Any], Any]) -> Any:
    """A ``wrap_tool_call`` (``ToolNode``'s and the middleware's): the tool's result, a
    ``search_memory`` one by reference.
    """
    return by_reference(handler(request))


async def abare_or_referenced(request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
    """Async :func:`bare_or_referenced`."""
    return by_reference(await handler(request))


def shown_results(
    messages: Sequence[BaseMessage], recalled: dict[str, str] | None
) -> list[BaseMessage]:
    """The thread as the model is shown it: each ``search_memory`` result by reference
    with the lines this run found, or, from an earlier run, a note that they are not kept.
    """
    found = recalled or {}
    out: list[BaseMessage] = []
    for message in messages:
        items = _items(message)
        if items is None or not all(isinstance(i, str) for i in items):
            out.append(message)
            continue
        lines = [found[i] for i in items if i in found]
        text = (
            "\n".join(f"{n}. {line}" for n, line in enumerate(lines, start=1))
            if len(lines) == len(items)
            else NOT_KEPT
        )
        out.append(message.model_copy(update={"content": text}))
    return out

"""The memory's state channels, defined once: the prebuilt graph's ``MemoryState`` and the
middleware's ``TieredMemoryState`` both extend :class:`MemoryChannels`, so the two doors
keep the same channels with the same checkpointing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from langchain_core.messages import AnyMessage
from langgraph.channels import UntrackedValue
from langgraph.types import Overwrite
from typing_extensions import NotRequired, TypedDict

from langchain_tiered_memory.agent.recalled import RECALLED, RecalledItems

__all__ = ["MEMORY_LOADED", "MemoryChannels", "RunRecalledItems", "memory_cleared"]


class RunRecalledItems(RecalledItems):
    """:class:`RecalledItems` that a turn's end can empty: an ``Overwrite`` write replaces
    what the run found (the writes after it are gathered on top, as before).
    """

    def update(self, values: Sequence[Any]) -> bool:
        """Gather this step's writes; from the last ``Overwrite`` on, if there is one."""
        resets = [i for i, value in enumerate(values) if isinstance(value, Overwrite)]
        if not resets:
            return super().update(values)
        reset = values[resets[-1]]
        self.value = dict(reset.value or {})
        super().update(values[resets[-1] + 1 :])
        return True


class MemoryChannels(TypedDict):
    """What memory keeps in a run's state beside the thread's messages.

    The memory section, the carried history and the tags are loaded each turn and never
    checkpointed (``UntrackedValue``): a deleted or edited memory leaves no copy in the
    checkpoints of the threads that recalled it. The turn's save empties them
    (:func:`memory_cleared`), so the state a run ends with (what a LangGraph server keeps
    as the thread's record, ``threads.get``/``threads.search``) holds none of it.
    ``saved_count``/``saved_ids`` are checkpointed: which of the thread's messages the
    history holds.
    """

    memory_prompt: NotRequired[Annotated[str, UntrackedValue(str)]]
    recent_history: NotRequired[Annotated[list[AnyMessage], UntrackedValue(list)]]
    saved_count: NotRequired[int]
    saved_ids: NotRequired[list[str]]
    # small models only: the tags, for answering a question about one from the tag itself
    memory_tags: NotRequired[Annotated[dict[str, str], UntrackedValue(dict)]]
    # what search_memory found this run; the thread keeps only the items' ids
    recalled_items: NotRequired[Annotated[dict[str, str], RunRecalledItems()]]


# The channels holding what the memory loaded for a run (its text, never checkpointed):
# kept out of what the prebuilt graph streams and a server records, emptied at the save.
MEMORY_LOADED: tuple[str, ...] = ("memory_prompt", "recent_history", "memory_tags", RECALLED)


def memory_cleared() -> dict[str, Any]:
    """The state update that empties :data:`MEMORY_LOADED`: the turn's save returns it, so
    the values a run ends with carry no memory section, tag or carried message (a LangGraph
    server stores them as the thread's record, where no delete or erasure would reach).
    """
    return {
        "memory_prompt": "",
        "recent_history": [],
        "memory_tags": {},
        RECALLED: Overwrite({}),
    }

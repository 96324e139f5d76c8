"""The memory's state channels, defined once: the prebuilt graph's ``MemoryState`` and the
middleware's ``TieredMemoryState`` both extend :class:`MemoryChannels`, so the two doors
keep the same channels with the same checkpointing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any

from langchain_core.messages import AnyMessage
from langgraph.channels import UntrackedValue
from langgraph.types import Overwrite
from typing_extensions import NotRequired, TypedDict

from langchain_tiered_memory.agent.recalled import RECALLED, RecalledItems

__all__ = [
    "INTERNAL",
    "MEMORY_LOADED",
    "MemoryChannels",
    "MemoryInput",
    "RunRecalledItems",
    "memory_cleared",
]

if TYPE_CHECKING:
    from langchain.agents.middleware.types import OmitFromSchema

    INTERNAL: OmitFromSchema
else:
    try:
        # create_agent builds its input schema without the fields marked so: the
        # middleware's channels then are not a run's input, as the graph's are not
        from langchain.agents.middleware.types import OmitFromInput as INTERNAL
    except ImportError:  # langchain (only the middleware needs it) is not installed
        INTERNAL = None  # Annotated metadata LangGraph ignores; the graph has MemoryInput


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

    None of them is a run's input (each is marked :data:`INTERNAL`; the graph's input
    schema is :class:`MemoryInput`): a client that sent ``{"saved_count": -1}`` would
    otherwise break the thread's bookkeeping for that turn and every later one, and one
    that sent a ``memory_prompt`` or ``recent_history`` would speak as the memory. A
    LangGraph input key that no input channel names is dropped, so such a key is ignored.
    """

    memory_prompt: NotRequired[Annotated[str, UntrackedValue(str), INTERNAL]]
    recent_history: NotRequired[Annotated[list[AnyMessage], UntrackedValue(list), INTERNAL]]
    saved_count: NotRequired[Annotated[int, INTERNAL]]
    saved_ids: NotRequired[Annotated[list[str], INTERNAL]]
    # small models only: the tags, for answering a question about one from the tag itself
    memory_tags: NotRequired[Annotated[dict[str, str], UntrackedValue(dict), INTERNAL]]
    # what search_memory found this run; the thread keeps only the items' ids
    recalled_items: NotRequired[Annotated[dict[str, str], RunRecalledItems(), INTERNAL]]


class MemoryInput(TypedDict):
    """The prebuilt graph's input: the turn's messages, nothing of :class:`MemoryChannels`
    (LangGraph maps only the input schema's keys into a run, and ignores the rest).
    """

    messages: list[AnyMessage]


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

"""The memory's state channels, defined once: the prebuilt graph's ``MemoryState`` and the
middleware's ``TieredMemoryState`` both extend :class:`MemoryChannels`, so the two doors
keep the same channels with the same checkpointing.
"""

from __future__ import annotations

from typing import Annotated

from langchain_core.messages import AnyMessage
from langgraph.channels import UntrackedValue
from typing_extensions import NotRequired, TypedDict

from langchain_tiered_memory.agent.recalled import RecalledItems

__all__ = ["MemoryChannels"]


class MemoryChannels(TypedDict):
    """What memory keeps in a run's state beside the thread's messages.

    The memory section, the carried history and the tags are loaded each turn and never
    checkpointed (``UntrackedValue``): a deleted or edited memory leaves no copy in the
    checkpoints of the threads that recalled it. They are streamed with the state, as
    the guarantees page says. ``saved_count``/``saved_ids`` are checkpointed: which of the
    thread's messages the history holds.
    """

    memory_prompt: NotRequired[Annotated[str, UntrackedValue(str)]]
    recent_history: NotRequired[Annotated[list[AnyMessage], UntrackedValue(list)]]
    saved_count: NotRequired[int]
    saved_ids: NotRequired[list[str]]
    # small models only: the tags, for answering a question about one from the tag itself
    memory_tags: NotRequired[Annotated[dict[str, str], UntrackedValue(dict)]]
    # what search_memory found this run; the thread keeps only the items' ids
    recalled_items: NotRequired[Annotated[dict[str, str], RecalledItems()]]

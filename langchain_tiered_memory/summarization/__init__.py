"""The fuzzy tier's writer: ``summarizer`` (a transcript to checked, grounded items),
``reconcile`` (new items against stored ones), ``jobs`` (``Summarization``: a user's
summarization, the queue's settling, the sweep, the offline job) and ``worker``
(``SummaryWorker``: the offline job as asyncio workers).

``summarization`` was a module before it was this folder: its ``Summarization`` (and
``DEFAULT_SUMMARY_BATCH``) are still importable from here, each on first use.

Example:
    >>> from langchain_tiered_memory.summarization import Summarization
    >>> Summarization.__module__
    'langchain_tiered_memory.summarization.jobs'
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langchain_tiered_memory.summarization.jobs import DEFAULT_SUMMARY_BATCH, Summarization

__all__ = ["DEFAULT_SUMMARY_BATCH", "Summarization"]


def __getattr__(name: str) -> Any:
    # imported on first use: importing summarizer.py alone must not load the jobs (tiers,
    # stores) through this package's __init__
    if name not in __all__:
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)
    return getattr(importlib.import_module(f"{__name__}.jobs"), name)

"""Ranking of recalled summary items: hybrid lexical + dense retrieval with time awareness.

One room per concern: :mod:`.config` (the knobs), :mod:`.lexical` (BM25),
:mod:`.time` (the dates a query names) and :mod:`.fusion` (:class:`HybridIndex`, which
combines them with FAISS; its docstring gives the scoring formula).

Example:
    >>> from langchain_tiered_memory.retrieval import RetrievalConfig
    >>> RetrievalConfig.dense_only().lexical_weight
    0.0
"""

from langchain_tiered_memory.language.text import stem, tokenize
from langchain_tiered_memory.retrieval.config import RetrievalConfig
from langchain_tiered_memory.retrieval.fusion import Hit, HybridIndex
from langchain_tiered_memory.retrieval.lexical import LexicalIndex
from langchain_tiered_memory.retrieval.time import TimeWindow, parse_time_windows, to_epoch

__all__ = [
    "RetrievalConfig",
    "HybridIndex",
    "Hit",
    "LexicalIndex",
    "TimeWindow",
    "tokenize",
    "stem",
    "parse_time_windows",
    "to_epoch",
]

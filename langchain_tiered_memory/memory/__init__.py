"""``TieredMemory``: one facade over the three memory tiers of every user.

``facade.py`` holds the class (construction, lifecycle, the LangGraph checkpointer and
store on the same Redis); it inherits its methods by concern: ``tier_methods.py`` (the
history, the tags, the summary items, a turn's read), ``job_methods.py`` (summarization,
re-embedding) and ``privacy_methods.py`` (erasure, export); ``opening.py`` opens the
stores, saver and LangGraph store on one connection. The work itself is done by
``tiers.py``, ``summarization/`` and ``privacy.py``.
"""

from langchain_tiered_memory.memory.facade import TieredMemory
from langchain_tiered_memory.tiers import MemorySnapshot

__all__ = ["MemorySnapshot", "TieredMemory"]

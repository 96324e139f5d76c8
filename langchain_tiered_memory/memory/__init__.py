"""``TieredMemory``: one facade over the three memory tiers of every user.

``facade.py`` holds the class, every method written once for sync and async
(``_steps.paired``); ``opening.py`` opens the stores, saver and LangGraph store on one
connection. The work itself is done by ``tiers.py``, ``summarization/`` and ``privacy.py``.
"""

from langchain_tiered_memory.memory.facade import TieredMemory
from langchain_tiered_memory.memory.opening import is_guarded
from langchain_tiered_memory.tiers import MemorySnapshot

# is_guarded: whether a saver checks thread owners (memory.checkpointer(saver) wraps one
# that does not); the agent asks it of a run's checkpointer
__all__ = ["MemorySnapshot", "TieredMemory", "is_guarded"]

"""The memory graph as a LangGraph server serves it (``langgraph.json``: ``"graphs"``).

No checkpointer here: the server keeps threads in its own (in memory for ``langgraph dev``,
PostgreSQL on LangGraph Platform), and ``auth.py`` keeps each thread to its user. The
memory (tags, history, summary items) lives in Redis: ``REDIS_URL``, else the embedded
server under ``$TIERED_MEMORY_HOME``. The model: ``default_chat_model()`` (``OPENAI_API_KEY``
or ``OPENAI_BASE_URL``, else the local SmolLM2; ``TIERED_MEMORY_MODEL=fake`` for a
rule-based script with no model, as the tests run it).
"""

from langchain_tiered_memory import create_memory_graph
from langchain_tiered_memory.defaults import default_chat_model, open_memory

memory = open_memory()
graph = create_memory_graph(default_chat_model(), memory=memory)

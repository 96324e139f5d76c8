"""The prebuilt graph refuses a run on another user's thread before LangGraph reads or
writes the thread.

A thread belongs to the user of its first turn (``HistoryStore.record_thread``, the load
step's claim). The load step refuses another user's turn before the model sees anything,
but by then LangGraph has written the run's input into the thread's checkpoint: the other
user's message would be in the owner's conversation. So the compiled graph checks the
owner first, in ``stream``/``astream`` (``invoke``, ``batch`` and the LangGraph server all
run through them), with any checkpointer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph

from langchain_tiered_memory.agent.context import resolve_user_id, thread_of
from langchain_tiered_memory.errors import MissingUserIdError
from langchain_tiered_memory.stores.history import HistoryStore

__all__ = ["OwnedThreadsGraph", "owned_threads"]


class OwnedThreadsGraph(CompiledStateGraph[Any, Any, Any, Any]):
    """A compiled memory graph whose runs check the thread's owner before they start."""

    def __init__(self, *args: Any, thread_owners: HistoryStore | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        # copy() and with_config() rebuild the graph from its __dict__: this goes along
        self.thread_owners = thread_owners

    def _run(self, config: RunnableConfig | None, context: Any) -> tuple[str, str] | None:
        thread = thread_of(config)
        if self.thread_owners is None or thread is None:
            return None
        try:
            return resolve_user_id(context, config), thread
        except MissingUserIdError:
            return None  # the load step says so, with the keys it got

    def stream(  # type: ignore[override]
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Iterator[Any]:
        """``CompiledStateGraph.stream``, refused on another user's thread."""
        run = self._run(config, kwargs.get("context"))
        if run is not None and self.thread_owners is not None:
            self.thread_owners.check_thread(*run)
        yield from super().stream(input, config, **kwargs)

    async def astream(  # type: ignore[override]
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        """``CompiledStateGraph.astream``, refused on another user's thread."""
        run = self._run(config, kwargs.get("context"))
        if run is not None and self.thread_owners is not None:
            await self.thread_owners.acheck_thread(*run)
        async for chunk in super().astream(input, config, **kwargs):
            yield chunk


def owned_threads(
    graph: CompiledStateGraph[Any, Any, Any, Any], history: HistoryStore
) -> OwnedThreadsGraph:
    """``graph`` as an :class:`OwnedThreadsGraph` checking owners in ``history``."""
    attrs = {k: v for k, v in graph.__dict__.items() if k != "__orig_class__"}
    return OwnedThreadsGraph(**attrs, thread_owners=history)

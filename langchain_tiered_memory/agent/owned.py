"""A memory turn runs only on a checkpointer that checks thread owners.

LangGraph writes a run's input into the thread (the checkpointer's ``put``) before any
node runs, so no node can keep another user's message out of the owner's thread: only the
checkpointer's first read can (:mod:`~langchain_tiered_memory.persistence.checkpoint.owned`).
The prebuilt graph wraps the checkpointer it is given; ``create_agent`` and an app's graph
holding the prebuilt one as a subgraph get theirs from the app. So the memory's load step,
which both doors run, refuses a run whose checkpointer does not check: such an app fails on
its first turn, with the fix in the message, instead of mixing two users' threads later.
"""

from __future__ import annotations

from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config

from langchain_tiered_memory.agent.context import (
    AUTH_USER_ID,
    CHECKPOINTER,
    authenticated_user,
    thread_of,
)
from langchain_tiered_memory.errors import UnguardedCheckpointerError
from langchain_tiered_memory.memory import is_guarded
from langchain_tiered_memory.persistence.server_threads import OWNER

__all__ = ["OWNER", "require_guarded_checkpointer", "run_config", "served_to_owner"]


def run_config() -> RunnableConfig | None:
    """The current LangGraph run's config, ``None`` outside a run."""
    try:
        return get_config()
    except RuntimeError:  # called outside a LangGraph run (a test, a script)
        return None


def served_to_owner(config: RunnableConfig) -> bool:
    """Whether the run is a LangGraph server's, on a thread the server itself keeps its
    authenticated user's: the thread's ``owner`` metadata (which the server's ``Auth``
    handler stamps and filters by) is the run's authenticated identity. The server then
    refuses every other user at its API, before anything is written to the thread.
    """
    identity = authenticated_user(config)
    return identity is not None and (config.get("metadata") or {}).get(OWNER) == identity


def require_guarded_checkpointer(config: RunnableConfig | None = None) -> None:
    """Raise :class:`UnguardedCheckpointerError` if the run (``config``, else the current
    one) keeps a thread in a checkpointer that does not check thread owners, and no
    LangGraph server keeps the thread its user's (:func:`served_to_owner`).
    """
    config = run_config() if config is None else config
    if config is None or thread_of(config) is None:
        return
    saver = (config.get("configurable") or {}).get(CHECKPOINTER)
    if saver is None or is_guarded(saver) or served_to_owner(config):
        return
    if AUTH_USER_ID in (config.get("configurable") or {}):
        raise UnguardedCheckpointerError(
            "this LangGraph server does not keep threads to their owners: another user's "
            "run would be written into this thread before the memory could refuse it. Add "
            "the package's thread authorization to the server's auth "
            '(langchain_tiered_memory.deploy.protect_threads(auth), and "auth": '
            '{"path": "./auth.py:auth"} in langgraph.json); see the guide\'s "Deploying on '
            'a LangGraph server".'
        )
    raise UnguardedCheckpointerError(
        f"the run's checkpointer ({type(saver).__name__}) does not check thread owners: "
        "another user's turn would be written into this thread before the memory could "
        "refuse it. Pass checkpointer=memory.checkpointer(saver) to create_agent (or to "
        "the app's graph that holds the memory graph), or memory.checkpointer() for "
        "threads in the memory's Redis; if your users share threads on purpose, pass "
        "shared_threads=True."
    )

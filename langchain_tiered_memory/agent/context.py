"""Where a run's user id comes from: the run's context or config, never the model."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from langchain_tiered_memory._ids import (
    AUTH_USER,
    AUTH_USER_ID,
    authenticated_identity,
    run_user_id,
    validate_run_thread_id,
)
from langchain_tiered_memory.backend.keys import validate_user_id
from langchain_tiered_memory.errors import MissingUserIdError

__all__ = [
    "AUTH_USER",
    "AUTH_USER_ID",
    "CHECKPOINTER",
    "MemoryContext",
    "authenticated_user",
    "resolve_user_id",
    "saved_position",
    "thread_of",
]

# where LangGraph puts the run's checkpointer in the config (langgraph._internal._constants)
CHECKPOINTER = "__pregel_checkpointer"


class MemoryContext(BaseModel):
    """Run context for the memory graph (its ``context_schema``): whose memory this run is.

    LangGraph builds it from the ``context`` a run is given (``MemoryContext(**context)``).
    ``user_id`` defaults to ``None`` and other keys are kept, not refused, so that a run
    without a user id (``context={}``, ``context={"user": ...}``, no context) reaches the
    ``config["configurable"]["user_id"]`` fallback or a :class:`MissingUserIdError` that
    names the keys it got, rather than a ``TypeError`` from inside LangGraph.

    Example:
        >>> graph.invoke(inputs, context=MemoryContext(user_id="alice"))  # doctest: +SKIP
        >>> graph.invoke(inputs, context={"user_id": "alice"})  # the same  # doctest: +SKIP

    """

    model_config = ConfigDict(frozen=True, extra="allow")

    user_id: str | None = None


def authenticated_user(config: Mapping[str, Any] | None) -> str | None:
    """The identity a LangGraph server's ``Auth`` handler authenticated for this run, or
    ``None`` (no server, no auth handler, or an unauthenticated request).
    """
    return authenticated_identity((config or {}).get("configurable"))


def resolve_user_id(context: Any = None, config: Mapping[str, Any] | None = None) -> str:
    """The user id of a run: on a LangGraph server with an ``Auth`` handler, the identity
    it authenticated, always; else ``context.user_id`` / ``context["user_id"]``, else
    ``config["configurable"]["user_id"]``.

    On a server a ``user_id`` in the run's context or config, or in its assistant's (the
    server merges the assistant's in), is never the run's user: one naming another user
    is refused, and a saver that checks thread owners refuses it at its first read, by
    the same rule, before it records the thread.

    Raises:
        ServedUserIdMismatchError: the run names a user other than the authenticated one
            (a client holding bob's token sent ``context={"user_id": "alice"}``, or ran an
            assistant whose context says so); a ``UserIdMismatchError`` and a
            ``ValueError``, whose message a LangGraph server passes to the client.
        MissingUserIdError: no user id at all.
        InvalidUserIdError: the id is not a usable user id.

    Example:
        >>> resolve_user_id({"user_id": "alice"})
        'alice'
        >>> served = {"configurable": {"langgraph_auth_user_id": "bob",
        ...                            "langgraph_auth_user": {"identity": "bob"}}}
        >>> resolve_user_id({}, served)
        'bob'
    """
    user_id = run_user_id(context, (config or {}).get("configurable"))
    if user_id is None:
        keys = sorted(_context_keys(context))
        got = f" (the context has {keys}, no 'user_id')" if keys else ""
        raise MissingUserIdError(
            f"no user id for this run{got}: pass context={{'user_id': ...}} to invoke/stream "
            "(or config={'configurable': {'user_id': ...}}); a context that names the user "
            "otherwise needs a user_id property (create_memory_graph(context_schema=...))."
        )
    return validate_user_id(user_id)


def thread_of(config: Mapping[str, Any] | None) -> str | None:
    """The checkpointer thread id of a run, if any: recorded with the history (so that
    forgetting a user or a thread can delete it) and with tag changes.
    """
    thread_id = ((config or {}).get("configurable") or {}).get("thread_id")
    if thread_id is None:
        return None
    # "" is refused like any bad id: savers keep it as an ordinary thread every user shares;
    # a NUL too: no checkpointer stores it (the guard of a saver's reads checks alike)
    return validate_run_thread_id(str(thread_id))


def saved_position(config: Mapping[str, Any] | None, saved: int) -> int | None:
    """The thread position a turn's messages are saved at: ``saved`` (what the thread's
    state counts) in a run with a checkpointer, ``None`` in one without (or outside a
    run: the app's own call), whose state starts empty every run, so a position would
    make each turn look like a fork of the one before.
    """
    configurable = (config or {}).get("configurable") or {}
    if config is not None and configurable.get(CHECKPOINTER) is None:
        return None
    return saved


def _context_keys(context: Any) -> list[str]:
    if isinstance(context, Mapping):
        return [str(k) for k in context]
    if isinstance(context, BaseModel):
        return [k for k, v in context if v is not None]  # extra keys included
    return []

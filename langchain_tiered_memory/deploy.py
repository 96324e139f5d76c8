"""Serving the memory graph from a LangGraph server (``langgraph dev``, LangGraph
Platform) on the server's own checkpointer, each thread kept to its user.

A LangGraph server runs a graph with its own checkpointer and answers thread requests
(state, history, update, copy, search) itself, without the graph. Ownership is therefore
the server's to keep, at its API, before anything reaches a thread: :func:`protect_threads`
adds LangGraph's resource authorization to the app's ``Auth`` object. Each thread is
stamped with the identity that created it (metadata ``owner``), every thread request is
filtered by it (another user gets 404), and a run that names a user other than the
authenticated one is refused with 403. The memory graph reads the same identity
(:func:`~langchain_tiered_memory.agent.context.resolve_user_id`) and, on a thread the
server keeps to that identity, needs no owner-checking checkpointer of its own.

Example (``auth.py``, named in ``langgraph.json`` as ``"auth": {"path":
"./auth.py:auth"}``):

    >>> from langgraph_sdk import Auth
    >>> auth = Auth()
    >>> @auth.authenticate
    ... async def authenticate(authorization: str | None) -> str:
    ...     return await my_token_check(authorization)  # doctest: +SKIP
    >>> auth = protect_threads(auth)

``examples/langgraph_server/`` is a complete app (``langgraph.json``, the graph, the auth),
run by the tests against the real server.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph_sdk import Auth

from langchain_tiered_memory.agent.owned import OWNER

__all__ = ["OWNER", "protect_threads"]


def _identity(ctx: Auth.types.AuthContext) -> str:
    identity = getattr(ctx.user, "identity", None)
    if not isinstance(identity, str) or not identity or not ctx.user.is_authenticated:
        raise Auth.exceptions.HTTPException(
            status_code=401, detail="Sign in: threads belong to authenticated users."
        )
    return identity


def _claimed(kwargs: Any) -> set[str]:
    """The user ids a run's request names (its context and its configurable)."""
    if not isinstance(kwargs, Mapping):
        return set()
    found = set()
    for part in (kwargs.get("context"), (kwargs.get("config") or {}).get("configurable")):
        if isinstance(part, Mapping) and part.get("user_id") is not None:
            found.add(str(part["user_id"]))
    return found


def _stamp(value: Any, identity: str) -> None:
    metadata = value.get("metadata")
    if metadata is None:
        metadata = value["metadata"] = {}
    metadata[OWNER] = identity  # never the client's: a request cannot hand a thread over


def protect_threads(auth: Auth) -> Auth:
    """Add thread ownership to a LangGraph server's ``Auth`` (it must authenticate).

    - a thread is its creator's: ``owner`` metadata set to the authenticated identity on
      create and on a run that creates it, whatever the request sent;
    - every thread request (read, history, update, copy, delete, search, runs) sees only
      the caller's threads: another user's thread is not found (404);
    - a run whose context or config names another user id is refused (403), before the
      server writes anything; a run that names none is its authenticated user's.

    Returns:
        ``auth``, with the handlers registered (the app's own handlers for other
        resources are kept).
    """

    @auth.on.threads.create
    async def _create(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
        identity = _identity(ctx)
        _stamp(value, identity)
        return {OWNER: identity}

    @auth.on.threads.create_run
    async def _run(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
        identity = _identity(ctx)
        if _claimed(value.get("kwargs")) - {identity}:
            raise Auth.exceptions.HTTPException(
                status_code=403,
                detail=(
                    "The run names a user other than the signed-in one; leave user_id out "
                    "of the context: the server's identity is the run's user."
                ),
            )
        _stamp(value, identity)
        return {OWNER: identity}

    @auth.on.threads.update
    async def _update(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
        identity = _identity(ctx)
        if isinstance(value.get("metadata"), Mapping) and OWNER in value["metadata"]:
            _stamp(value, identity)
        return {OWNER: identity}

    @auth.on.threads
    async def _any(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
        return {OWNER: _identity(ctx)}

    return auth

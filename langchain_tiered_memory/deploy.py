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

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from langgraph_sdk import Auth

from langchain_tiered_memory.agent.owned import OWNER

if TYPE_CHECKING:
    from langchain_tiered_memory.memory import TieredMemory

logger = logging.getLogger(__name__)

__all__ = ["OWNER", "protect_threads"]


def _identity(ctx: Auth.types.AuthContext) -> str:
    identity = getattr(ctx.user, "identity", None)
    if not isinstance(identity, str) or not identity or not ctx.user.is_authenticated:
        raise Auth.exceptions.HTTPException(
            status_code=401, detail="Sign in: threads belong to authenticated users."
        )
    return identity


def _claimed(kwargs: Any) -> set[str]:
    """The user ids a run's request, an assistant or a cron's payload names (its context
    and its configurable).
    """
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


# what LangGraph's server stamps on the assistants it makes itself, one per graph in
# langgraph.json: every user runs them, no user changes them
SYSTEM = {"created_by": "system"}


def _refuse_named_user(value: Any, what: str) -> None:
    """403 for an assistant or a cron whose context or config names a ``user_id``: the
    server merges it into every run made with it, where it would name another user.
    """
    if _claimed(value):
        raise Auth.exceptions.HTTPException(
            status_code=403,
            detail=(
                f"{what} names a user_id in its context or config: leave it out. On this "
                "server a run's user is the signed-in identity, never a name in a request, "
                "an assistant or a cron."
            ),
        )


def _no_system_label(value: Any) -> None:
    metadata = value.get("metadata")
    if isinstance(metadata, Mapping) and metadata.get("created_by") == SYSTEM["created_by"]:
        # the server skips its assistant read check for those: a user's would run as shared
        raise Auth.exceptions.HTTPException(
            status_code=403,
            detail="metadata created_by='system' is the server's own; use another value.",
        )


async def _owns_thread(thread_id: str, identity: str) -> bool:
    """Whether the server's thread ``thread_id`` is ``identity``'s (its ``owner``), asked
    of the server itself: the SDK's in-process client, which bypasses the auth handlers,
    in the server process that runs them.
    """
    from langgraph_sdk import get_client
    from langgraph_sdk.errors import NotFoundError

    async with get_client() as server:  # its own HTTP client, closed after the one call
        try:
            thread = await server.threads.get(thread_id)
        except NotFoundError:
            return False
    return (thread.get("metadata") or {}).get(OWNER) == identity


def _has_handlers(auth: Auth, resource: str) -> bool:
    """Whether the app registered a handler for ``resource`` (or for everything) itself.

    LangGraph's ``Auth`` keeps them in ``_handlers`` keyed ``(resource, action)`` and
    ``_global_handlers``; it has no public way to ask.
    """
    handlers = getattr(auth, "_handlers", {}) or {}
    if getattr(auth, "_global_handlers", None):
        return True
    return any(key[0] in (resource, "*") for key in handlers)


def protect_threads(auth: Auth, *, memory: TieredMemory | None = None) -> Auth:
    """Keep everything of a LangGraph server to its user: add the handlers to the app's
    ``Auth`` (it must authenticate) for threads, assistants, crons and the store.

    - a thread is its creator's: ``owner`` metadata set to the authenticated identity on
      create and on a run that creates it, whatever the request sent;
    - every thread request (read, history, update, copy, delete, search, runs) sees only
      the caller's threads: another user's thread is not found (404);
    - a run whose context or config names another user id is refused (403), before the
      server writes anything; a run that names none is its authenticated user's;
    - an assistant is its creator's (``owner``): others do not find it (404) to read,
      run, update or delete; the server's own assistants (one per graph, metadata
      ``created_by: system``) are everyone's to read and run and no user's to change;
      an assistant whose context or config names a ``user_id`` is refused (403);
    - a cron is its creator's (``owner``), and one whose payload names another user is
      refused (403);
    - the server's store: each user's namespaces start with their identity (LangGraph's
      pattern: ``("notes",)`` is ``(identity, "notes")``, and a namespace that does not
      start with it gets it in front), so no user reads or writes another's items;
    - with ``memory``: the owner's ``threads.delete`` first erases the thread from the
      memory (``memory.aforget_thread``: its history, the items made only from it, so a
      new thread is not given what it said); another user's delete erases nothing (404).
      Without it, the memory keeps a deleted thread: call ``forget_thread`` yourself.

    Args:
        auth: The app's ``Auth``, with its ``@auth.authenticate``.
        memory: The memory the server's graph uses (import it from the graph's module:
            both run in the server process).

    Returns:
        ``auth``, with the handlers registered (the app's own handlers for other
        resources are kept).

    Example:
        >>> from graph import memory  # the module langgraph.json names  # doctest: +SKIP
        >>> auth = protect_threads(auth, memory=memory)  # doctest: +SKIP
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

    @auth.on.threads.delete
    async def _delete(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
        identity = _identity(ctx)
        thread_id = str(value.get("thread_id") or "")
        # the handler runs before the server deletes (and before it knows the owner): the
        # memory is asked only for the caller's own thread, and a failure stops the delete,
        # so a thread never leaves the server while the memory still holds it
        if memory is not None and thread_id and await _owns_thread(thread_id, identity):
            try:
                await memory.aforget_thread(identity, thread_id)
            except Exception as exc:
                logger.exception("erasing thread %s from the memory failed", thread_id)
                raise Auth.exceptions.HTTPException(
                    status_code=503,
                    detail=(
                        "The thread's memory could not be erased, so the thread was not "
                        "deleted; retry the delete."
                    ),
                ) from exc
        return {OWNER: identity}

    @auth.on.threads
    async def _any(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
        return {OWNER: _identity(ctx)}

    # an app's own handlers for a resource are kept as they are (registering one twice is
    # an error in LangGraph's Auth, and a more specific one of ours would override theirs)
    for resource, protect in (
        ("assistants", _protect_assistants),
        ("crons", _protect_crons),
        ("store", _protect_store),
    ):
        if _has_handlers(auth, resource):
            logger.warning(
                "protect_threads: the app's own %s handlers are kept; they decide what "
                "each user may do with %s",
                resource,
                resource,
            )
        else:
            protect(auth)

    return auth


def _protect_assistants(auth: Auth) -> None:
    """The assistants handlers of :func:`protect_threads`."""

    @auth.on.assistants.create
    async def _assistant_create(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
        identity = _identity(ctx)
        _refuse_named_user(value, "The assistant")
        _no_system_label(value)
        _stamp(value, identity)
        return {OWNER: identity}

    @auth.on.assistants.update
    async def _assistant_update(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
        identity = _identity(ctx)
        _refuse_named_user(value, "The assistant")
        _no_system_label(value)
        if isinstance(value.get("metadata"), Mapping):
            _stamp(value, identity)  # new metadata replaces the old: it keeps the owner
        return {OWNER: identity}  # the server's own have no owner: no user changes them

    @auth.on.assistants.delete
    async def _assistant_delete(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
        return {OWNER: _identity(ctx)}

    @auth.on.assistants
    async def _assistant_read(ctx: Auth.types.AuthContext, value: Any) -> dict[str, Any]:
        # read and search: the caller's own, and the server's own (which every run of a
        # graph by its name uses)
        return {"$or": [{OWNER: _identity(ctx)}, dict(SYSTEM)]}


def _protect_crons(auth: Auth) -> None:
    """The crons handlers of :func:`protect_threads`."""

    @auth.on.crons.create
    async def _cron_create(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
        identity = _identity(ctx)
        _refuse_named_user(value.get("payload"), "The cron")
        _stamp(value, identity)
        return {OWNER: identity}

    @auth.on.crons.update
    async def _cron_update(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
        identity = _identity(ctx)
        _refuse_named_user(value.get("payload"), "The cron")
        if isinstance(value.get("metadata"), Mapping):
            _stamp(value, identity)
        return {OWNER: identity}

    @auth.on.crons
    async def _cron_any(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
        return {OWNER: _identity(ctx)}


def _protect_store(auth: Auth) -> None:
    """The store handler of :func:`protect_threads`."""

    @auth.on.store
    async def _store(ctx: Auth.types.AuthContext, value: Any) -> None:
        identity = _identity(ctx)
        namespace = tuple(value.get("namespace") or ())
        if not namespace or namespace[0] != identity:
            value["namespace"] = (identity, *namespace)

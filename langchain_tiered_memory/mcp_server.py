"""The memory as an MCP server: any MCP client (an IDE, a desktop app, another agent) can
add, search, list, get and delete one user's memories and read and fix their tags.

The user is the server's configuration, never a tool argument: one user (``user_id``), or,
over HTTP, the user a bearer token belongs to (``tokens``: one server for many users, each
token reaching only its own user's memory). A model that fills the arguments cannot reach
another user's memory. Item ids are the user's own (a per-user counter), so an id names an
item of this user or nothing. Built on the official SDK's ``FastMCP`` (its bearer-token
auth); ``tiered-memory mcp`` serves it over stdio (the default, for clients that start the
server) or streamable HTTP.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Mapping
from typing import Annotated, Any

from langchain_core.documents import Document
from pydantic import AnyHttpUrl, Field, StrictBool, StrictInt, StrictStr

from langchain_tiered_memory._ids import validate_user_id
from langchain_tiered_memory.errors import InvalidArgumentError, TieredMemoryError
from langchain_tiered_memory.memory import TieredMemory

logger = logging.getLogger(__name__)

__all__ = ["MAX_RESULTS", "MIN_TOKEN_LENGTH", "create_mcp_server"]

MAX_RESULTS = 100
MIN_TOKEN_LENGTH = 24
"""A bearer token's least length: long enough that guessing one is hopeless."""


class _Tokens:
    """The SDK's ``TokenVerifier``: a bearer token names its user, or nobody."""

    def __init__(self, tokens: Mapping[str, str]) -> None:
        if not tokens:
            raise InvalidArgumentError("tokens is empty: give at least one {token: user}.")
        self._tokens: list[tuple[bytes, str]] = []
        for token, user in tokens.items():
            if not isinstance(token, str) or len(token) < MIN_TOKEN_LENGTH:
                raise InvalidArgumentError(
                    f"a token of {len(token) if isinstance(token, str) else 0} characters: "
                    f"use at least {MIN_TOKEN_LENGTH} (python -c 'import secrets; "
                    "print(secrets.token_urlsafe(32))')."
                )
            self._tokens.append((token.encode(), validate_user_id(user)))

    async def verify_token(self, token: str) -> Any:
        from mcp.server.auth.provider import AccessToken

        given = token.encode()
        found = None
        for known, user in self._tokens:  # every token compared: no timing tells which
            if hmac.compare_digest(given, known):
                found = user
        if found is None:
            return None
        return AccessToken(token=token, client_id=found, scopes=[])


def _item(doc: Document) -> dict[str, Any]:
    meta = doc.metadata
    out: dict[str, Any] = {"id": doc.id or meta.get("id"), "text": doc.page_content}
    # the date, the supersession, the provenance (the threads the note came from) and,
    # for a search, the score
    for key in ("created_at", "superseded_by", "valid_until", "source_threads", "score"):
        if meta.get(key) is not None:
            out[key] = meta[key]
    return out


_Text = Annotated[StrictStr, Field(description="One short note about the user, as a sentence.")]
_Id = Annotated[StrictStr, Field(description="A note's id, as list_memories shows it ('3').")]


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("langchain-tiered-memory")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def _count(value: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_RESULTS:
        raise ValueError(f"{what} must be an integer from 1 to {MAX_RESULTS}, got {value!r}.")
    return value


def create_mcp_server(
    memory: TieredMemory,
    *,
    user_id: str | None = None,
    tokens: Mapping[str, str] | None = None,
    name: str = "tiered-memory",
) -> Any:
    """An MCP server (``mcp.server.fastmcp.FastMCP``) over ``memory`` for ``user_id`` only,
    or, with ``tokens`` (``{bearer token: user id}``, for streamable HTTP), for the user of
    each request's token: a request without a known token gets 401 and reaches nothing.

    Tools: ``add_memory``, ``search_memories`` (the graph's ranking), ``list_memories``,
    ``get_memory``, ``update_memory``, ``delete_memory``, ``get_tags``, ``set_tags``,
    ``export_memory`` and ``forget_everything`` (needs ``confirm=true``). Arguments are
    strictly typed (``true`` is no number, ``1`` no boolean); bad arguments come back as
    MCP tool errors with the reason, and nothing stored changes. Erasure and export are the
    memory's own (``forget_user``, ``export_user``): threads and store items included.

    Example:
        >>> server = create_mcp_server(memory, user_id="alice")  # doctest: +SKIP
        >>> server.run("stdio")  # doctest: +SKIP
    """
    from mcp.server.fastmcp import FastMCP
    from mcp.server.fastmcp.exceptions import ToolError
    from mcp.types import ToolAnnotations

    # what a client may assume of each tool (MCP's hints): reads, additions, erasures
    reads = ToolAnnotations(readOnlyHint=True, openWorldHint=False)
    adds = ToolAnnotations(
        readOnlyHint=False, destructiveHint=False, idempotentHint=True, openWorldHint=False
    )
    changes = ToolAnnotations(
        readOnlyHint=False, destructiveHint=True, idempotentHint=True, openWorldHint=False
    )

    if (user_id is None) == (tokens is None):
        raise InvalidArgumentError("give user_id (one user) or tokens (a user per token).")
    fixed = validate_user_id(user_id) if user_id is not None else None
    auth: dict[str, Any] = {}
    if tokens is not None:
        from mcp.server.auth.settings import AuthSettings

        auth = {
            "token_verifier": _Tokens(tokens),
            # the SDK asks where tokens come from; they are this server's own, given to it
            "auth": AuthSettings(
                issuer_url=AnyHttpUrl("http://127.0.0.1"), resource_server_url=None
            ),
        }

    class MemoryServer(FastMCP):  # type: ignore[type-arg]
        """FastMCP whose server info names this package and its version, not the SDK's."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._mcp_server.version = _version()

    whose = f"one user ({fixed!r})" if fixed else "the user your token belongs to"
    server = MemoryServer(
        name,
        instructions=(
            f"Long-term memory of {whose}: short notes recalled by similarity "
            "and typed facts (tags). Search before answering from memory; add a memory for "
            "something worth keeping; fix a wrong note with update_memory."
        ),
        **auth,
    )

    def current() -> str:
        """The request's user: the configured one, or the bearer token's."""
        if fixed is not None:
            return fixed
        from mcp.server.auth.middleware.auth_context import get_access_token

        token = get_access_token()
        if token is None:  # the SDK's middleware lets no request through without one
            raise ToolError("no user: this server needs a bearer token.")
        return token.client_id

    async def _all() -> list[Document]:
        return await memory.summaries.aget_all(current())

    def _fail(exc: Exception) -> ToolError:
        # the package's errors say how to fix the input; storage errors are not swallowed
        return ToolError(str(exc))

    @server.tool(annotations=adds)
    async def add_memory(text: _Text) -> dict[str, Any]:
        """Store one short note about the user (a fact, a preference, an event).

        Returns the new id, or no id when the same note is already stored.
        """
        try:
            ids = await memory.aadd_summaries(current(), [text])
        except (TieredMemoryError, ValueError, TypeError) as exc:
            raise _fail(exc) from exc
        return {"ids": ids}

    @server.tool(annotations=reads)
    async def search_memories(
        query: Annotated[StrictStr, Field(description="What to look for: a question, a topic.")],
        n: Annotated[StrictInt, Field(description=f"How many notes, 1 to {MAX_RESULTS}.")] = 5,
        context: Annotated[
            list[StrictStr],
            Field(
                description="The conversation's earlier user messages, oldest first: the "
                "notes the conversation is about come up, as in the agent's own recall."
            ),
        ] = [],  # noqa: B006 - FastMCP reads the default into the schema; never mutated
    ) -> list[dict[str, Any]]:
        """The ``n`` notes most relevant to ``query`` (the ranking the agent's graph uses),
        each with its id, text, date, score and the threads it came from.
        """
        try:
            found = await memory.arecall_summaries(
                current(), query, n=_count(n, "n"), messages=list(context)
            )
        except (TieredMemoryError, ValueError, TypeError) as exc:
            raise _fail(exc) from exc
        return [_item(d) for d in found]

    @server.tool(annotations=reads)
    async def list_memories(
        offset: Annotated[StrictInt, Field(description="How many notes to skip.")] = 0,
        limit: Annotated[StrictInt, Field(description=f"Notes a page, 1 to {MAX_RESULTS}.")] = 50,
    ) -> dict[str, Any]:
        """The user's notes, oldest first, a page at a time."""
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ToolError(f"offset must be a non-negative integer, got {offset!r}.")
        try:
            items = await _all()
            page = items[offset : offset + _count(limit, "limit")]
        except (TieredMemoryError, ValueError) as exc:
            raise _fail(exc) from exc
        return {"total": len(items), "items": [_item(d) for d in page]}

    @server.tool(annotations=reads)
    async def get_memory(id: _Id) -> dict[str, Any]:  # noqa: A002 - the MCP argument's name
        """One note by its id."""
        for doc in await _all():
            if _item(doc)["id"] == id:
                return _item(doc)
        raise ToolError(f"no memory with id {id!r} for this user (list_memories shows the ids).")

    @server.tool(annotations=changes)
    async def delete_memory(id: _Id) -> dict[str, Any]:  # noqa: A002
        """Delete one note by its id."""
        if not id.isdigit():
            raise ToolError(f"id must be a memory id such as '3', got {id!r}.")
        # the memory's delete: the note is off the embedded server's files too
        deleted = await memory.adelete_summaries(current(), [id])
        if not deleted:
            raise ToolError(f"no memory with id {id!r} for this user; nothing was deleted.")
        return {"deleted": deleted}

    @server.tool(annotations=changes)
    async def update_memory(id: _Id, text: _Text) -> dict[str, Any]:  # noqa: A002
        """Fix one note's text in place: it keeps its id and date, and its earlier text."""
        if not id.isdigit():
            raise ToolError(f"id must be a memory id such as '3', got {id!r}.")
        try:
            changed = await memory.aupdate_summary(current(), id, text)
        except (TieredMemoryError, ValueError) as exc:
            raise _fail(exc) from exc
        return {"id": id, "changed": changed}

    @server.tool(annotations=reads)
    async def get_tags() -> dict[str, str]:
        """The user's recorded facts (tags), e.g. name and age."""
        return await memory.aget_user_tags(current())

    @server.tool(annotations=changes)
    async def set_tags(
        tags: Annotated[
            dict[StrictStr, StrictStr | StrictInt],
            Field(description='Facts to record or correct, by tag name: {"age": 31}.'),
        ],
    ) -> dict[str, str]:
        """Record or correct facts (tags), e.g. {"age": 31}. Returns all tags."""
        try:
            await memory.aset_user_tags(current(), tags)
        except (TieredMemoryError, ValueError, TypeError) as exc:
            raise _fail(exc) from exc
        return await memory.aget_user_tags(current())

    @server.tool(annotations=reads)
    async def export_memory() -> dict[str, Any]:
        """Everything remembered about the user, as JSON."""
        return await memory.aexport_user(current())

    @server.tool(annotations=changes)
    async def forget_everything(
        confirm: Annotated[
            StrictBool, Field(description="true, to erase everything: nothing is undone.")
        ] = False,
    ) -> dict[str, int]:
        """Erase every memory of the user: history, tags, notes, conversation threads and
        store items (the memory's one erasure, as from the app). Needs confirm=true.
        """
        if confirm is not True:
            raise ToolError("pass confirm=true to erase every memory of this user.")
        return await memory.aforget_user(current())

    return server

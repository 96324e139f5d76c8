"""The memory as an MCP server: any MCP client (an IDE, a desktop app, another agent) can
add, search, list, get and delete one user's memories and read and fix their tags.

The user is the server's configuration (``user_id``), never a tool argument: a model that
fills the arguments cannot reach another user's memory. Item ids are the user's own (a
per-user counter), so an id names an item of this user or nothing. Built on the official
SDK's ``FastMCP``; ``tiered-memory mcp`` serves it over stdio (the default, for clients
that start the server) or streamable HTTP on the loopback interface.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any

from langchain_core.documents import Document
from pydantic import Field, StrictBool, StrictInt, StrictStr

from langchain_tiered_memory._ids import validate_user_id
from langchain_tiered_memory.errors import TieredMemoryError
from langchain_tiered_memory.memory import TieredMemory

logger = logging.getLogger(__name__)

__all__ = ["MAX_RESULTS", "create_mcp_server"]

MAX_RESULTS = 100


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


def create_mcp_server(memory: TieredMemory, *, user_id: str, name: str = "tiered-memory") -> Any:
    """An MCP server (``mcp.server.fastmcp.FastMCP``) over ``memory`` for ``user_id`` only.

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

    user = validate_user_id(user_id)
    server = FastMCP(
        name,
        instructions=(
            f"Long-term memory of one user ({user!r}): short notes recalled by similarity "
            "and typed facts (tags). Search before answering from memory; add a memory for "
            "something worth keeping; fix a wrong note with update_memory."
        ),
    )
    # the server info names this package and its version, not the MCP library's
    server._mcp_server.version = _version()

    async def _all() -> list[Document]:
        return await memory.summaries.aget_all(user)

    def _fail(exc: Exception) -> ToolError:
        # the package's errors say how to fix the input; storage errors are not swallowed
        return ToolError(str(exc))

    @server.tool(annotations=adds)
    async def add_memory(text: _Text) -> dict[str, Any]:
        """Store one short note about the user (a fact, a preference, an event).

        Returns the new id, or no id when the same note is already stored.
        """
        try:
            ids = await memory.aadd_summaries(user, [text])
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
                user, query, n=_count(n, "n"), messages=list(context)
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
        deleted = await memory.adelete_summaries(user, [id])
        if not deleted:
            raise ToolError(f"no memory with id {id!r} for this user; nothing was deleted.")
        return {"deleted": deleted}

    @server.tool(annotations=changes)
    async def update_memory(id: _Id, text: _Text) -> dict[str, Any]:  # noqa: A002
        """Fix one note's text in place: it keeps its id and date, and its earlier text."""
        if not id.isdigit():
            raise ToolError(f"id must be a memory id such as '3', got {id!r}.")
        try:
            changed = await memory.aupdate_summary(user, id, text)
        except (TieredMemoryError, ValueError) as exc:
            raise _fail(exc) from exc
        return {"id": id, "changed": changed}

    @server.tool(annotations=reads)
    async def get_tags() -> dict[str, str]:
        """The user's recorded facts (tags), e.g. name and age."""
        return await memory.aget_user_tags(user)

    @server.tool(annotations=changes)
    async def set_tags(
        tags: Annotated[
            dict[StrictStr, StrictStr | StrictInt],
            Field(description='Facts to record or correct, by tag name: {"age": 31}.'),
        ],
    ) -> dict[str, str]:
        """Record or correct facts (tags), e.g. {"age": 31}. Returns all tags."""
        try:
            await memory.aset_user_tags(user, tags)
        except (TieredMemoryError, ValueError, TypeError) as exc:
            raise _fail(exc) from exc
        return await memory.aget_user_tags(user)

    @server.tool(annotations=reads)
    async def export_memory() -> dict[str, Any]:
        """Everything remembered about the user, as JSON."""
        return await memory.aexport_user(user)

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
        return await memory.aforget_user(user)

    return server

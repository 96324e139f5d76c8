"""Where a run's user id comes from: the run's context or config, never the model."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from langchain_tiered_memory._keys import validate_user_id
from langchain_tiered_memory.errors import MissingUserIdError

__all__ = ["MemoryContext", "resolve_user_id", "thread_of"]


@dataclass(frozen=True)
class MemoryContext:
    """Run context for the memory graph: whose memory this run reads and writes.

    Example:
        >>> graph.invoke(inputs, context=MemoryContext(user_id="alice"))  # doctest: +SKIP

    """

    user_id: str


def resolve_user_id(context: Any = None, config: Mapping[str, Any] | None = None) -> str:
    """The user id of a run: ``context.user_id`` / ``context["user_id"]``, else
    ``config["configurable"]["user_id"]``.

    Raises:
        MissingUserIdError: neither holds a user id.
        InvalidUserIdError: the id is not a usable user id.

    """
    user_id = None
    if isinstance(context, Mapping):
        user_id = context.get("user_id")
    elif context is not None:
        user_id = getattr(context, "user_id", None)
    if user_id is None and config is not None:
        user_id = (config.get("configurable") or {}).get("user_id")
    if user_id is None:
        raise MissingUserIdError(
            "no user id for this run: pass context={'user_id': ...} to invoke/stream "
            "(or config={'configurable': {'user_id': ...}})."
        )
    return validate_user_id(user_id)


def thread_of(config: Mapping[str, Any] | None) -> str | None:
    """The checkpointer thread id of a run, if any: recorded with the history (so that
    forgetting a user or a thread can delete it) and with tag changes.
    """
    thread_id = ((config or {}).get("configurable") or {}).get("thread_id")
    return str(thread_id) if thread_id is not None and thread_id != "" else None

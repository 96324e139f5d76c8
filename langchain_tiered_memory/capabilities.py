"""What a memory's stores can do beyond the store contract, asked by name.

The contract (the three store bases and their conformance suite) is what every backend
does. Some features need more than it: a shared clock to expire a user's keys together, a
queue, stored vectors to convert, the memory's own LangGraph saver, a stored format to
upgrade, a directory of every user, a turn in one round trip. Each is a
:class:`Capability`; a memory declares the ones its stores have
(:attr:`TieredMemory.capabilities <langchain_tiered_memory.TieredMemory.capabilities>`), and
a feature asks for its capability by name instead of looking at the stores' types or
attributes. A missing one raises :class:`~langchain_tiered_memory.errors.UnsupportedOperationError`
naming the stores at hand and what to do instead.

Example:
    >>> from langchain_tiered_memory import TieredMemory
    >>> from langchain_tiered_memory.capabilities import Capability
    >>> Capability.EXPIRY in TieredMemory.in_memory().capabilities
    False
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum

from langchain_tiered_memory.errors import UnsupportedOperationError

__all__ = ["Capability", "listed_users", "lists_users", "missing"]


class Capability(str, Enum):
    """A feature some stores have and others lack."""

    EXPIRY = "expiry"
    """``user_ttl``: every key of a user expires together, on one clock."""
    QUEUE = "queue"
    """``summarize_after`` and ``tiered-memory worker``: turns put users on a queue."""
    REEMBED = "reembed"
    """``reembed()``: stored vectors converted to another embeddings model."""
    SAVER = "saver"
    """``checkpointer()`` / ``store()`` with no saver given: the memory's own."""
    UPGRADE = "upgrade"
    """``tiered-memory upgrade``: a versioned stored format."""
    USER_DIRECTORY = "user_directory"
    """Every user with any tier listed (the console's users page)."""
    ONE_ROUND_TRIP_TURN = "one_round_trip_turn"
    """A turn's read and its save, one round trip each."""


# what a memory without the capability does instead, for the error's second half
_INSTEAD = {
    Capability.EXPIRY: "nothing would expire: leave user_ttl unset, or erase users with "
    "forget_user()",
    Capability.QUEUE: "no turn would be queued: summarize with summarize_pending() or "
    "summarize_history(), or give the graph auto_summarize_after=",
    Capability.REEMBED: "re-add the items (get_all, clear, add) with the new embeddings model",
    Capability.SAVER: "give a saver: memory.checkpointer(InMemorySaver()) or any "
    "BaseCheckpointSaver (memory.store(BaseStore) likewise)",
    Capability.UPGRADE: "these stores keep no versioned format: nothing to upgrade",
    Capability.USER_DIRECTORY: "users are listed from the stores that list them",
    Capability.ONE_ROUND_TRIP_TURN: "a turn calls the stores one by one",
}


def missing(
    capability: Capability, what: str, stores: Iterable[object]
) -> UnsupportedOperationError:
    """The error for ``what``, which needs ``capability`` that ``stores`` lack.

    Example:
        >>> from langchain_tiered_memory.stores import InMemoryTagStore
        >>> str(missing(Capability.EXPIRY, "user_ttl", [InMemoryTagStore()]))[:62]
        "user_ttl needs the 'expiry' capability, which this memory's st"
    """
    names = ", ".join(dict.fromkeys(type(s).__name__ for s in stores))
    return UnsupportedOperationError(
        f"{what} needs the {capability.value!r} capability, which this memory's stores "
        f"({names}) lack; the stores on Redis (TieredMemory.from_url() or .embedded()) have "
        f"it. Without it: {_INSTEAD[capability]}."
    )


def lists_users(store: object) -> bool:
    """Whether ``store`` lists its users (``users()``): the history's contract has it; a
    tag or summary store may define it.
    """
    return callable(getattr(type(store), "users", None))


def listed_users(stores: Iterable[object]) -> list[str]:
    """Every user the stores that list their users name, sorted."""
    found: set[str] = set()
    for store in stores:
        if lists_users(store):
            found.update(store.users())  # type: ignore[attr-defined]
    return sorted(found)

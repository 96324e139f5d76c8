"""Exceptions raised by langchain-tiered-memory.

Each subclasses the builtin that describes the failure, so callers that already catch
``ValueError`` or ``ConnectionError`` keep working, and each message says how to fix it.
"""

from __future__ import annotations

__all__ = [
    "InvalidArgumentError",
    "TieredMemoryError",
    "InvalidUserIdError",
    "InvalidTagError",
    "InvalidSummaryError",
    "EmbeddingsMismatchError",
    "InvalidMessageError",
    "ConcurrentEditError",
    "ConcurrentReembedError",
    "UnsafeBindError",
    "UnsupportedOperationError",
    "CorruptMemoryError",
    "DataFormatError",
    "MissingUserIdError",
    "MemoryBackendError",
    "SummarizationError",
    "SummaryLimitError",
    "WatermarkConflict",
    "ThreadOwnershipError",
    "UnguardedCheckpointerError",
    "UserIdMismatchError",
    "ServedUserIdMismatchError",
]


class TieredMemoryError(Exception):
    """Base class of every error this package raises on purpose."""


class InvalidUserIdError(TieredMemoryError, ValueError):
    """A user id is empty, too long or not a string."""


class InvalidTagError(TieredMemoryError, ValueError):
    """A tag name is not in the tag schema, or its value fails validation."""


class InvalidSummaryError(TieredMemoryError, ValueError):
    """A summary item is empty, too long or not text."""


class InvalidMessageError(TieredMemoryError, ValueError):
    """A chat message cannot be stored (wrong type or too large)."""


class InvalidArgumentError(TieredMemoryError, ValueError):
    """An argument out of its range or of the wrong type (a count, a thread id)."""


class CorruptMemoryError(TieredMemoryError, ValueError):
    """Stored data is not what this package writes (another writer, a bug, a migration).

    The message names the user and the Redis key; the user's other tiers still load.
    """


class DataFormatError(TieredMemoryError, RuntimeError):
    """The stored data is in a format this package version does not know (written by a
    newer release): upgrade the package; nothing was read or written.
    """


class EmbeddingsMismatchError(InvalidSummaryError):
    """A user's summary items were embedded by another model than the store's.

    Vectors of two models are not comparable (even at the same size), so the store refuses
    to search or extend them. The message names both models and how to fix it.
    """


class ConcurrentEditError(TieredMemoryError, RuntimeError):
    """A user's items kept changing while an operation rewrote them; it stopped.

    Nothing is lost: each item is rewritten only if it is still as it was read. Retry.
    """


class ConcurrentReembedError(TieredMemoryError, RuntimeError):
    """Another ``reembed`` run converts the same user's items to another model.

    Nothing is lost: the items and their current vectors are untouched until a run swaps.
    """


class UnsupportedOperationError(TieredMemoryError, ValueError):
    """The memory's stores cannot do this: a Redis-only feature (expiry, the queue, the
    memory's own saver and store, stored vectors to convert) on in-process stores.
    """


class UnsafeBindError(TieredMemoryError, ValueError):
    """The console was asked to listen beyond this machine without an access token."""


class SummaryLimitError(InvalidSummaryError):
    """A user already holds the maximum number of summary items; nothing was stored."""


class MissingUserIdError(TieredMemoryError, ValueError):
    """A graph run was started without a user id in its context or config."""


class UserIdMismatchError(TieredMemoryError, PermissionError):
    """A run claims a user id other than the one its LangGraph server authenticated.

    On a server with an ``Auth`` handler the authenticated identity is the run's user; a
    client that sends ``context={"user_id": ...}`` naming someone else is refused, never
    served as the user it named.
    """


class ServedUserIdMismatchError(UserIdMismatchError, ValueError):
    """:class:`UserIdMismatchError` of a run on a LangGraph server, raised before anything
    of the run is written.

    Also a ``ValueError``: a LangGraph server passes the message of that kind of error to
    the client (``runs.wait``'s ``__error__``, a stream's error event) and shows others,
    ``PermissionError`` among them, only as "An internal error occurred"; the message says
    what to remove.
    """


class MemoryBackendError(TieredMemoryError, ConnectionError):
    """The storage backend (Redis) is unreachable, timed out or refused a command."""


class SummarizationError(TieredMemoryError, RuntimeError):
    """The summarizer model failed or returned nothing usable; nothing was stored."""


class WatermarkConflict(TieredMemoryError, RuntimeError):
    """Another summarizer advanced the user's watermark first; nothing was written.

    Safe to retry: the next attempt starts from the new watermark.
    """


class ThreadOwnershipError(TieredMemoryError, PermissionError):
    """A turn of one user on a thread that another user's turns started.

    A thread belongs to the user of its first turn: its checkpoints hold that user's
    conversation, so another user's turn on it would read it (and write into it). The
    message never names the owner.
    """


class UnguardedCheckpointerError(TieredMemoryError, TypeError):
    """A run's checkpointer does not check thread owners at its reads.

    LangGraph writes a run's input into the thread before any node runs: with such a saver,
    another user's message would reach the owner's thread before the memory could refuse
    it. The message says how to wrap the saver (``memory.checkpointer(saver)``).
    """

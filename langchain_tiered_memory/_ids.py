"""A user id, validated once: what every tier and the facade accept as a user.

Kept apart from the key builder (``_keys``) so code that only checks ids (the facade,
summarization) needs no part of the Redis layer; the escape computed here is the key
alphabet ``_keys`` builds keys from.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from langchain_tiered_memory.errors import (
    InvalidArgumentError,
    InvalidUserIdError,
    ServedUserIdMismatchError,
)

__all__ = [
    "AUTH_USER",
    "AUTH_USER_ID",
    "MAX_COUNT",
    "MAX_THREAD_ID_LENGTH",
    "MAX_USER_ID_LENGTH",
    "UserId",
    "authenticated_identity",
    "run_user_id",
    "validate_count",
    "validate_run_thread_id",
    "validate_thread_id",
    "validate_user_id",
]

# A count of messages or items a call may ask for: far above any real one, and within
# Redis's 64-bit integers (LRANGE with 10**20 was a connection error).
MAX_COUNT = 1_000_000
MAX_THREAD_ID_LENGTH = 1024

MAX_USER_ID_LENGTH = 256

# RFC 3986 unreserved characters stay readable; everything else, '%' included, is escaped.
SAFE_CHARS = "-._~@"


class UserId(str):
    """A user id that has been validated, with its key-alphabet escape computed once.

    :func:`validate_user_id` returns one; it is a ``str`` everywhere (equal to, hashing
    like and serializing as the plain id), so the facade validates a call's user id once
    and hands this value to the stores, whose own checks then cost an ``isinstance``.
    """

    escaped: str

    def __new__(cls, value: str) -> UserId:
        self = super().__new__(cls, value)
        self.escaped = quote(value, safe=SAFE_CHARS)
        return self


def validate_user_id(user_id: object) -> UserId:
    """Return ``user_id`` as a :class:`UserId` if it is a usable user id.

    Raises:
        InvalidUserIdError: Not a string, empty, longer than 256 characters, or not
            encodable as UTF-8.

    Example:
        >>> validate_user_id("alice").escaped
        'alice'
        >>> validate_user_id("a b/c").escaped
        'a%20b%2Fc'
    """
    if type(user_id) is UserId:
        return user_id  # validated already, by the caller of this call
    if not isinstance(user_id, str):
        raise InvalidUserIdError(
            f"user_id must be a str, got {type(user_id).__name__}; pass the id of the end user."
        )
    if not user_id:
        raise InvalidUserIdError("user_id is empty; pass a non-empty id of the end user.")
    if len(user_id) > MAX_USER_ID_LENGTH:
        raise InvalidUserIdError(
            f"user_id is {len(user_id)} characters long; the limit is {MAX_USER_ID_LENGTH}. "
            "Use a stable short id (e.g. a UUID or a hash) instead of free text."
        )
    try:
        user_id.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidUserIdError(
            "user_id contains lone surrogates and cannot be encoded as UTF-8."
        ) from exc
    return UserId(user_id)


def validate_count(value: object, name: str) -> int:
    """``value`` as a count from 0 to :data:`MAX_COUNT` (a whole number, not a bool).

    Raises:
        InvalidArgumentError: anything else, saying what is allowed.

    Example:
        >>> validate_count(3, "n")
        3
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentError(f"{name} must be a whole number, got {value!r}.")
    if not 0 <= value <= MAX_COUNT:
        raise InvalidArgumentError(f"{name} must be from 0 to {MAX_COUNT:,}, got {value}.")
    return value


def validate_thread_id(value: object) -> str | None:
    """``value`` as a thread id: ``None``, or a string of UTF-8-encodable text of at most
    :data:`MAX_THREAD_ID_LENGTH` characters. A thread a run starts is checked further
    (:func:`validate_run_thread_id`); this check also passes the ids stored before it, so
    erasure and export reach them.

    Raises:
        InvalidArgumentError: anything else, saying what is allowed.

    Example:
        >>> validate_thread_id("t-1")
        't-1'
    """
    if value is None:
        return None
    if not isinstance(value, str) or not value or len(value) > MAX_THREAD_ID_LENGTH:
        raise InvalidArgumentError(
            f"thread_id must be a non-empty string of at most {MAX_THREAD_ID_LENGTH} "
            f"characters, got {value!r:.80}."
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidArgumentError(
            f"thread_id {value!r:.80} is not valid text (a lone surrogate): pass UTF-8 text."
        ) from exc
    return value


def validate_run_thread_id(value: object) -> str:
    """``value`` as the thread id of a run (a graph's or an agent's config, a saver's read
    or ``copy_thread``): :func:`validate_thread_id`'s rule, not ``None``, and no NUL
    character, which no checkpointer keeps (PostgreSQL ``text`` rejects the byte; the
    memory's own Redis saver separates its fields with it). The run's door checks it here,
    and so does every path inside that hands a run's thread id to a store (the owner
    checks of :class:`~langchain_tiered_memory.stores.history.ThreadGuard`), so a backend
    never sees one the door refuses.

    Raises:
        InvalidArgumentError: anything else, saying what is allowed.

    Example:
        >>> validate_run_thread_id("t-1")
        't-1'
    """
    checked = validate_thread_id(value)
    if checked is None:
        raise InvalidArgumentError("thread_id is None; pass the id of the run's thread.")
    if "\x00" in checked:
        raise InvalidArgumentError(
            f"thread_id {checked!r:.80} contains a NUL character, which checkpointers cannot "
            "store: pass printable ids."
        )
    return checked


# What a LangGraph server puts in a run's configurable (clients cannot set these keys):
# the identity its Auth handler authenticated, and the user (None when unauthenticated).
AUTH_USER_ID = "langgraph_auth_user_id"
AUTH_USER = "langgraph_auth_user"


def authenticated_identity(configurable: Mapping[str, Any] | None) -> str | None:
    """The identity a LangGraph server's ``Auth`` handler authenticated for a run, from the
    run's ``configurable``; ``None`` with no server, no auth handler, or an
    unauthenticated request.

    Example:
        >>> authenticated_identity({"langgraph_auth_user_id": "bob",
        ...                         "langgraph_auth_user": {"identity": "bob"}})
        'bob'
    """
    configurable = configurable or {}
    identity = configurable.get(AUTH_USER_ID)
    if configurable.get(AUTH_USER) is None or not isinstance(identity, str) or not identity:
        return None
    return identity


def run_user_id(context: Any, configurable: Mapping[str, Any] | None) -> object:
    """The user a run is for, unvalidated (``None`` when it names none): on a LangGraph
    server with an ``Auth`` handler, the identity it authenticated; else the context's
    ``user_id`` (a mapping's key or an attribute), else ``configurable["user_id"]``.

    One rule for every place that asks (the graph's steps, a saver's first read, which
    records the thread's owner): a run naming someone else on a server never becomes
    theirs anywhere, and is refused before the saver records anything.

    Raises:
        ServedUserIdMismatchError: on a server, the run's context or configurable (its
            own, or its assistant's or thread's, which the server merges in) names a user
            other than the authenticated one.

    Example:
        >>> run_user_id({"user_id": "alice"}, {})
        'alice'
        >>> run_user_id({}, {"langgraph_auth_user_id": "bob", "user_id": "bob",
        ...                  "langgraph_auth_user": {"identity": "bob"}})
        'bob'
    """
    configurable = configurable or {}
    if isinstance(context, Mapping):
        claimed = context.get("user_id")
    else:
        claimed = getattr(context, "user_id", None)
    if claimed is None:
        claimed = configurable.get("user_id")
    identity = authenticated_identity(configurable)
    if identity is None:
        return claimed
    # the server merges the assistant's context and the thread's configurable into the
    # run's: a name there must not make the run another user's, nor every user's run fail
    # silently, so it is refused with what to remove
    if claimed is not None and claimed != identity:
        raise ServedUserIdMismatchError(
            "the run names a user other than the one the server authenticated (a user_id "
            "in its context or config, or its assistant's): nothing was written. On a "
            "LangGraph server the run's user is the authenticated identity: remove user_id "
            "from the run's context and config, and from the assistant's (a new assistant "
            "version without it, or assistants.set_latest to one before it)."
        )
    return identity

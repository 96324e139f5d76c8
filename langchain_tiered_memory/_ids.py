"""A user id, validated once: what every tier and the facade accept as a user.

Kept apart from the key builder (``_keys``) so code that only checks ids (the facade,
summarization) needs no part of the Redis layer; the escape computed here is the key
alphabet ``_keys`` builds keys from.
"""

from __future__ import annotations

from urllib.parse import quote

from langchain_tiered_memory.errors import InvalidArgumentError, InvalidUserIdError

__all__ = [
    "MAX_COUNT",
    "MAX_THREAD_ID_LENGTH",
    "MAX_USER_ID_LENGTH",
    "UserId",
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

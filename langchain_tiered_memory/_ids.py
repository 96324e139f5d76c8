"""A user id, validated once: what every tier and the facade accept as a user.

Kept apart from the key builder (``_keys``) so code that only checks ids (the facade,
summarization) needs no part of the Redis layer; the escape computed here is the key
alphabet ``_keys`` builds keys from.
"""

from __future__ import annotations

from urllib.parse import quote

from langchain_tiered_memory.errors import InvalidUserIdError

__all__ = ["MAX_USER_ID_LENGTH", "UserId", "validate_user_id"]

MAX_USER_ID_LENGTH = 256

# RFC 3986 unreserved characters stay readable; everything else, '%' included, is escaped.
_SAFE = "-._~@"


class UserId(str):
    """A user id that has been validated, with its key-alphabet escape computed once.

    :func:`validate_user_id` returns one; it is a ``str`` everywhere (equal to, hashing
    like and serializing as the plain id), so the facade validates a call's user id once
    and hands this value to the stores, whose own checks then cost an ``isinstance``.
    """

    escaped: str

    def __new__(cls, value: str) -> UserId:
        self = super().__new__(cls, value)
        self.escaped = quote(value, safe=_SAFE)
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

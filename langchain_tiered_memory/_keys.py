"""The one key builder: every Redis key this package touches is made here.

Layout: ``<prefix>:{<escaped user>}:<kind>``. The braces make the escaped user id the
Redis Cluster hash tag, so all keys of one user live in one slot and can be used together
in a pipeline, a transaction or a Lua script. User ids are percent-encoded to a safe
alphabet, which makes the mapping injective (no two ids share keys) and keeps ``{``, ``}``,
``:`` and glob characters out of keys and SCAN patterns.
"""

from __future__ import annotations

from typing import Literal
from urllib.parse import quote, unquote

from langchain_tiered_memory.errors import InvalidUserIdError

DEFAULT_PREFIX = "tm"
MAX_USER_ID_LENGTH = 256

KeyKind = Literal[
    "history", "threads", "turns", "spans", "tags", "tags:log", "sum:items", "sum:vecs", "meta"
]
KINDS: tuple[KeyKind, ...] = (
    "history",
    "threads",
    "turns",
    "spans",
    "tags",
    "tags:log",
    "sum:items",
    "sum:vecs",
    "meta",
)

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


def escape_user_id(user_id: str) -> str:
    """Percent-encode a validated user id into the key alphabet."""
    return validate_user_id(user_id).escaped


def validate_prefix(prefix: str) -> str:
    """Check a key prefix: non-empty, printable, without hash-tag braces or glob characters."""
    if (
        not isinstance(prefix, str)
        or not prefix
        or not prefix.isprintable()
        or any(c in prefix for c in "{}*?[]\\ ")
    ):
        raise ValueError(
            f"key_prefix {prefix!r} is not usable: use letters, digits, ':', '-', '_' or '.'."
        )
    return prefix


class KeyBuilder:
    """Builds and parses the keys of one key prefix.

    Example:
        >>> KeyBuilder("tm").key("alice", "tags")
        'tm:{alice}:tags'

    """

    def __init__(self, prefix: str = DEFAULT_PREFIX) -> None:
        self.prefix = validate_prefix(prefix)

    def key(self, user_id: str, kind: KeyKind) -> str:
        """The key of ``kind`` for ``user_id``."""
        return f"{self.prefix}:{{{escape_user_id(user_id)}}}:{kind}"

    def all_keys(self, user_id: str) -> list[str]:
        """Every key a user can own under this prefix."""
        return [self.key(user_id, kind) for kind in KINDS]

    def scan_pattern(self, kind: KeyKind) -> str:
        """A SCAN MATCH pattern for ``kind`` keys of every user under this prefix."""
        return f"{self.prefix}:{{*}}:{kind}"

    def user_from_key(self, key: str | bytes) -> str | None:
        """The user id a key belongs to, or ``None`` if it is not one of ours."""
        try:
            if isinstance(key, bytes):
                key = key.decode("utf-8")
            head = f"{self.prefix}:{{"
            if not key.startswith(head):
                return None
            end = key.find("}", len(head))
            if end < 0 or key[end + 1 : end + 2] != ":":
                return None
            escaped = key[len(head) : end]
            user_id = unquote(escaped, errors="strict")
            # Only keys this builder writes: foreign or non-canonical spellings are not ours.
            return user_id if escape_user_id(user_id) == escaped else None
        except (UnicodeDecodeError, InvalidUserIdError):
            return None

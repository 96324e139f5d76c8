"""The one key builder: every Redis key this package touches is made here.

Layout: ``<prefix>:{<escaped user>}:<kind>``. The braces make the escaped user id the
Redis Cluster hash tag, so all keys of one user live in one slot and can be used together
in a pipeline, a transaction or a Lua script. User ids are percent-encoded to a safe
alphabet, which makes the mapping injective (no two ids share keys) and keeps ``{``, ``}``,
``:`` and glob characters out of keys and SCAN patterns.

The checkpointer's, the LangGraph store's and the summarization queue's keys use the same
prefix with a tag that starts with a marker and ``:`` (``{cp:<escaped thread>}``,
``{cpr:<escaped run>}``, ``{st:<escaped namespace>}``, ``{wq:<shard>}``): an escaped user
id never contains ``:``, so these can never be read as a user's keys, and each thread
(each store namespace, each queue shard) lives in one slot.
"""

from __future__ import annotations

from typing import Literal, get_args
from urllib.parse import quote, unquote

# re-exported: the stores import the id check from here, with the keys
from langchain_tiered_memory._ids import (  # noqa: F401
    MAX_THREAD_ID_LENGTH,
    MAX_USER_ID_LENGTH,
    SAFE_CHARS,
    UserId,
    validate_thread_id,
    validate_user_id,
)
from langchain_tiered_memory.errors import InvalidArgumentError, InvalidUserIdError

DEFAULT_PREFIX = "tm"

KeyKind = Literal[
    "history",
    "threads",
    "turns",
    "spans",
    "tags",
    "tags:log",
    "sum:items",
    "sum:vecs",
    "sum:revecs",  # vectors of another model, staged by reembed until they replace sum:vecs
    "meta",
]
KINDS: tuple[KeyKind, ...] = get_args(KeyKind)  # every kind of a user's keys, in this order

ThreadKeyKind = Literal[
    "cp:ids", "cp:data", "cp:writes", "cp:wkeys", "cp:runs", "cp:blobs", "cp:refs"
]
THREAD_KINDS: tuple[ThreadKeyKind, ...] = (
    "cp:ids",
    "cp:data",
    "cp:writes",
    "cp:wkeys",
    "cp:runs",
    "cp:blobs",
    "cp:refs",
)
# "queued": the pre-0.2 set of queued users, still cleaned up
QueueKeyKind = Literal["stream", "entries", "owners", "pending", "wm", "dead", "queued", "expiry"]


def escape_user_id(user_id: str) -> str:
    """Percent-encode a validated user id into the key alphabet."""
    return validate_user_id(user_id).escaped


def escape_id(value: object, what: str, *, max_length: int = MAX_THREAD_ID_LENGTH) -> str:
    """Percent-encode a thread, run or namespace id into the key alphabet. A thread id is
    checked by the one validator every door uses (:func:`validate_thread_id`).

    Raises:
        InvalidArgumentError: ``value`` is empty, too long or not encodable as UTF-8.

    Example:
        >>> escape_id("t 1", "thread_id")
        't%201'
    """
    text = value if isinstance(value, str) else str(value)
    if what == "thread_id":
        checked = validate_thread_id(text)
        assert checked is not None  # a string is never None
        return quote(checked, safe=SAFE_CHARS)
    if not text:
        raise InvalidArgumentError(f"{what} is empty; pass a non-empty id.")
    if len(text) > max_length:
        raise InvalidArgumentError(
            f"{what} is {len(text)} characters long; the limit is {max_length}."
        )
    try:
        return quote(text, safe=SAFE_CHARS)
    except UnicodeEncodeError as exc:
        raise InvalidArgumentError(
            f"{what} contains lone surrogates and cannot be encoded; pass UTF-8 text."
        ) from exc


def encode_namespace(namespace: tuple[str, ...]) -> str:
    """A store namespace as key text: each label escaped and ended by ``/``.

    A namespace *prefix* encodes to a byte prefix of every namespace under it (and of no
    other: ``("a",)`` is ``a/``, which ``("ab",)``'s ``ab/`` does not start with), so
    prefix search is a lexical range. ``/`` inside a label is escaped.

    Example:
        >>> encode_namespace(("users", "alice"))
        'users/alice/'
    """
    return "".join(quote(label, safe="-_~@") + "/" for label in namespace)


def decode_namespace(text: str) -> tuple[str, ...]:
    """The inverse of :func:`encode_namespace`."""
    return tuple(unquote(label) for label in text.split("/")[:-1])


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

    def thread_key(self, thread_id: object, kind: ThreadKeyKind) -> str:
        """The checkpointer's key of ``kind`` for a LangGraph thread.

        Example:
            >>> KeyBuilder("tm").thread_key("t-1", "cp:ids")
            'tm:{cp:t-1}:cp:ids'
        """
        return f"{self.prefix}:{{cp:{escape_id(thread_id, 'thread_id')}}}:{kind}"

    def thread_owner_key(self, thread_id: object) -> str:
        """The key naming the user a thread belongs to (the user of its first turn).

        In the thread's slot, beside its checkpoints, but not one of them: it is the
        memory's record (kept whichever checkpointer the app uses), not the saver's.

        Example:
            >>> KeyBuilder("tm").thread_owner_key("t-1")
            'tm:{cp:t-1}:owner'
        """
        return f"{self.prefix}:{{cp:{escape_id(thread_id, 'thread_id')}}}:owner"

    def thread_keys(self, thread_id: object) -> list[str]:
        """Every checkpointer key of a thread, in :data:`THREAD_KINDS` order."""
        return [self.thread_key(thread_id, kind) for kind in THREAD_KINDS]

    def thread_scan_pattern(self, thread_prefix: str = "") -> str:
        """A SCAN MATCH pattern for one key of every thread whose id starts with
        ``thread_prefix`` (escaped ids hold no glob characters).
        """
        head = quote(thread_prefix, safe=SAFE_CHARS) if thread_prefix else ""
        return f"{self.prefix}:{{cp:{head}*}}:cp:ids"

    def thread_from_key(self, key: str | bytes) -> str | None:
        """The thread id of a checkpointer key, or ``None`` if it is not one of ours."""
        if isinstance(key, bytes):
            key = key.decode("utf-8", "replace")
        head = f"{self.prefix}:{{cp:"
        end = key.find("}", len(head))
        if not key.startswith(head) or end < 0:
            return None
        return unquote(key[len(head) : end])

    def run_key(self, run_id: object) -> str:
        """The key listing the checkpoints one LangGraph run wrote (for ``delete_for_runs``)."""
        return f"{self.prefix}:{{cpr:{escape_id(run_id, 'run_id')}}}:cp:run"

    def queue_key(
        self,
        shard: int,
        kind: QueueKeyKind,
    ) -> str:
        """A key of one shard of the summarization queue (one slot per shard).

        Example:
            >>> KeyBuilder("tm").queue_key(3, "stream")
            'tm:{wq:3}:wq:stream'
        """
        return f"{self.prefix}:{{wq:{shard}}}:wq:{kind}"

    def queue_marker_key(self) -> str:
        """Set once the pending index covers every user (after a full sweep)."""
        return f"{self.prefix}:{{wq:}}:wq:indexed"

    def attachments_key(self) -> str:
        """What the apps attached to the memory (``memory.attach``): the namespace templates
        of the memory's own store and the other savers and stores by class, for the
        erasures and exports of every process (``stores/attachments.py``). No user's key.

        Example:
            >>> KeyBuilder("tm").attachments_key()
            'tm:{meta:}:attached'
        """
        return f"{self.prefix}:{{meta:}}:attached"

    def format_key(self) -> str:
        """The stored format of the memory's data (``backend/format.py``). No user's key.

        Example:
            >>> KeyBuilder("tm").format_key()
            'tm:{meta:}:format'
        """
        return f"{self.prefix}:{{meta:}}:format"

    def directory_key(self, kind: Literal["active", "values"] = "active") -> str:
        """A key of the console's directory (``{dir:}``: never a user's key, one slot):
        ``active``, the users by last activity (member: the escaped id, written with each
        turn); ``values``, the tag values searched (members ``<escaped id>\x1f<tag>\x1f<value
        case-folded>``, all scored 0, so one user's are a lexicographic range).

        Example:
            >>> KeyBuilder("tm").directory_key()
            'tm:{dir:}:dir:active'
        """
        return f"{self.prefix}:{{dir:}}:dir:{kind}"

    @staticmethod
    def id_pattern(contains: str) -> str:
        """A glob matching the escaped ids that hold ``contains`` (ASCII letters in either
        case; a percent escape as written), without the surrounding ``*``.

        Example:
            >>> KeyBuilder.id_pattern("Al*")
            '[aA][lL]%2A'
        """
        parts = []
        escaped = quote(contains, safe=SAFE_CHARS)
        i = 0
        while i < len(escaped):
            if escaped[i] == "%":  # a percent escape is matched as written
                parts.append(escaped[i : i + 3])
                i += 3
                continue
            c = escaped[i]
            parts.append(f"[{c.lower()}{c.upper()}]" if c.isascii() and c.isalpha() else c)
            i += 1
        return "".join(parts)

    def store_registry_key(self) -> str:
        """The LangGraph store's sorted set of every namespace (``{st:}``: never a user's)."""
        return f"{self.prefix}:{{st:}}:st:ns"

    def store_versions_key(self) -> str:
        """The LangGraph store's hash of namespace -> write count (``{st:}``, beside the
        registry): an emptied namespace leaves the registry only if no put came since.
        """
        return f"{self.prefix}:{{st:}}:st:nsv"

    def store_scan_pattern(self, prefix: tuple[str, ...]) -> str:
        """A SCAN pattern of the store keys of every namespace under ``prefix`` (escaped
        labels hold no glob characters).
        """
        return f"{self.prefix}:{{st:{encode_namespace(prefix)}*"

    def store_namespace_from_key(self, key: str | bytes) -> tuple[str, ...] | None:
        """The namespace of a store key (``None`` for any other key)."""
        text = key.decode() if isinstance(key, bytes) else key
        head = f"{self.prefix}:{{st:"
        if not text.startswith(head) or "}" not in text[len(head) :]:
            return None
        encoded = text[len(head) :].split("}", 1)[0]
        return decode_namespace(encoded) if encoded else None

    def store_key(self, namespace: tuple[str, ...], kind: Literal["items", "vecs"]) -> str:
        """The LangGraph store's key of ``kind`` for one namespace (one slot per namespace).

        Example:
            >>> KeyBuilder("tm").store_key(("users", "a/b"), "items")
            'tm:{st:users/a%2Fb/}:st:items'
        """
        return f"{self.prefix}:{{st:{encode_namespace(namespace)}}}:st:{kind}"

    def all_keys(self, user_id: str) -> list[str]:
        """Every key a user can own under this prefix."""
        return [self.key(user_id, kind) for kind in KINDS]

    def scan_pattern(self, kind: KeyKind) -> str:
        """A SCAN MATCH pattern for ``kind`` keys of every user under this prefix."""
        return f"{self.prefix}:{{*}}:{kind}"

    def user_search_pattern(self, kind: KeyKind, contains: str | None = None) -> str:
        """A SCAN MATCH pattern for ``kind`` keys of the users whose id holds ``contains``
        (any user if empty); ASCII letters match in either case. The escaped text holds no
        glob characters, so ``contains`` is matched literally; a match may also span the
        escape of another character ("2A" in the "%2A" of "*"), so callers check the
        decoded ids again.

        Example:
            >>> KeyBuilder("tm").user_search_pattern("tags", "Al*")
            'tm:{*[aA][lL]%2A*}:tags'
        """
        inner = f"*{self.id_pattern(contains)}*" if contains else "*"
        return f"{self.prefix}:{{{inner}}}:{kind}"

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


def keys_of(store: object) -> KeyBuilder:
    """The key builder of a Redis store (its prefix); the default one for any other store.

    Example:
        >>> keys_of(object()).prefix == DEFAULT_PREFIX
        True
    """
    keys = getattr(store, "keys", None)
    return keys if isinstance(keys, KeyBuilder) else KeyBuilder()

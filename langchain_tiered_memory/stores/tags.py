"""Long-term exact memory: typed facts ("tags") about a user, such as name and age.

The tag schema is a pydantic model; every field is a tag. Values are validated against the
field's type and constraints before anything is written, and a batch is written in one
``HSET`` (all or nothing). Values are stored and returned as strings.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from functools import cached_property
from typing import Annotated, Any

from pydantic import BaseModel, Field, TypeAdapter, ValidationError
from typing_extensions import TypedDict

from langchain_tiered_memory._ids import validate_thread_id
from langchain_tiered_memory._steps import Plan, call, paired, threaded, twin
from langchain_tiered_memory.backend.connection import RedisConnection, ScriptCall
from langchain_tiered_memory.backend.keys import KeyBuilder, validate_user_id
from langchain_tiered_memory.errors import CorruptMemoryError, InvalidTagError
from langchain_tiered_memory.stores.directory import activity_call, index_tags

__all__ = [
    "DefaultTags",
    "TagStore",
    "RedisTagStore",
    "InMemoryTagStore",
    "TagChange",
    "MAX_TAG_VALUE_CHARS",
    "MAX_TAG_HISTORY",
]

MAX_TAG_VALUE_CHARS = 2000
# Changes kept per user (all tags together): the oldest go first.
MAX_TAG_HISTORY = 1000

logger = logging.getLogger(__name__)


class TagChange(TypedDict):
    """One logged change of a tag: its new value (``""``: the tag was deleted), the one it
    replaced (``None`` on the first write), when (ISO-8601, UTC) and from which thread
    (``None`` if not known).
    """

    tag: str
    value: str
    previous: str | None
    changed_at: str
    thread_id: str | None


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _parse_changes(raw: Sequence[bytes | str], tag: str | None, where: str) -> list[TagChange]:
    out: list[TagChange] = []
    for entry in raw:
        try:
            change = json.loads(entry)
            if not isinstance(change, dict) or not isinstance(change.get("tag"), str):
                raise TypeError("not a change record")
        except (ValueError, TypeError) as exc:
            raise CorruptMemoryError(f"{where} holds an entry that is not a tag change.") from exc
        if tag is None or change["tag"] == tag:
            out.append(
                TagChange(
                    tag=change["tag"],
                    value=str(change.get("value")),
                    previous=change.get("previous") or None,
                    changed_at=str(change.get("changed_at")),
                    thread_id=change.get("thread_id") or None,
                )
            )
    return out


class DefaultTags(BaseModel):
    """The default tag schema: the user's name and age."""

    name: str | None = Field(
        default=None, min_length=1, max_length=100, description="The user's name."
    )
    age: int | None = Field(default=None, ge=0, le=150, description="The user's age in years.")


def _has_control_chars(text: str) -> bool:
    return any(ord(c) < 32 and c not in "\t\n" or ord(c) == 127 for c in text)


class TagStore(ABC):
    """Per-user typed tags validated by a pydantic ``schema``; sync and async pairs.

    A backend implements the abstract (sync) methods; each async twin defaults to running
    its sync method in a worker thread, and a backend with async I/O overrides it. So sync
    methods run concurrently, from several threads, and to their end even when the awaiting
    caller is cancelled: a backend locks what needs it and keeps each write atomic.

    Example:
        >>> store = InMemoryTagStore()
        >>> store.set("alice", {"name": "Alice", "age": 30})
        {'name': 'Alice', 'age': '30'}
        >>> store.get_all("alice")["age"]
        '30'
    """

    schema: type[BaseModel]

    @cached_property
    def _adapters(self) -> dict[str, TypeAdapter[Any]]:
        # Annotated[..., FieldInfo] keeps the field's constraints (ge, max_length, ...). Built
        # through an untyped alias: a runtime annotation is no type to mypy, and how it says
        # so changed with pydantic 2.14's TypeForm stubs (no ignore fits both).
        annotated: Any = Annotated
        return {
            name: TypeAdapter(annotated[field.annotation, field])
            for name, field in self.schema.model_fields.items()
        }

    def validate(self, mapping: Mapping[str, Any]) -> dict[str, str]:
        """Validate a mapping of tags; return the string values to store.

        Raises:
            InvalidTagError: a name is not in the schema, or a value fails validation.

        """
        if not isinstance(mapping, Mapping):
            raise InvalidTagError(f"tags must be a mapping of name to value, got {mapping!r}.")
        out: dict[str, str] = {}
        known = sorted(self._adapters)
        for name, value in mapping.items():
            adapter = self._adapters.get(name) if isinstance(name, str) else None
            if adapter is None:
                raise InvalidTagError(f"unknown tag {name!r}; known tags: {', '.join(known)}.")
            if value is None:
                raise InvalidTagError(f"tag {name!r} needs a value; to remove it use delete.")
            if isinstance(value, str) and _has_control_chars(value):
                raise InvalidTagError(f"tag {name!r} contains control characters.")
            try:
                checked = adapter.validate_python(value)
            except ValidationError as exc:
                reason = "; ".join(e["msg"] for e in exc.errors())
                raise InvalidTagError(
                    f"invalid value {value!r} for tag {name!r}: {reason}."
                ) from exc
            if isinstance(value, bool) and not isinstance(checked, bool):
                # pydantic's lax mode reads True as 1; a model sending a boolean for a
                # number or text has misunderstood the tag, so refuse it.
                raise InvalidTagError(
                    f"invalid value {value!r} for tag {name!r}: not a boolean tag."
                )
            text = checked if isinstance(checked, str) else str(checked)
            if _has_control_chars(text):  # also what bytes or another type turned into
                raise InvalidTagError(f"tag {name!r} contains control characters.")
            if len(text) > MAX_TAG_VALUE_CHARS:
                raise InvalidTagError(
                    f"tag {name!r} is {len(text)} characters; the limit is {MAX_TAG_VALUE_CHARS}."
                )
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise InvalidTagError(f"tag {name!r} is not valid UTF-8 text.") from exc
            out[name] = text
        return out

    @abstractmethod
    def get(self, user_id: str, tag: str) -> str | None:
        """One tag's value, or ``None``."""

    aget = threaded(get)

    @abstractmethod
    def get_all(self, user_id: str) -> dict[str, str]:
        """Every tag of the user."""

    aget_all = threaded(get_all)

    @abstractmethod
    def set(
        self, user_id: str, mapping: Mapping[str, Any], *, thread_id: str | None = None
    ) -> dict[str, str]:
        """Validate then write all tags at once; return what was written.

        Each value that changes is logged with the previous value, the time and
        ``thread_id`` (the conversation it came from), in the same atomic write.
        """

    aset = threaded(set)

    @abstractmethod
    def history(self, user_id: str, tag: str | None = None) -> list[TagChange]:
        """The logged changes of ``tag`` (every tag if ``None``), oldest first."""

    ahistory = threaded(history)

    @abstractmethod
    def delete(self, user_id: str, names: Sequence[str], *, thread_id: str | None = None) -> int:
        """Delete the named tags (logged as a change to ``""``); return how many existed.

        Example:
            >>> store = InMemoryTagStore()
            >>> _ = store.set("bob", {"age": 41})
            >>> store.delete("bob", ["age"]), store.get_all("bob")
            (1, {})
        """

    adelete = threaded(delete)

    def _names(self, names: Sequence[str]) -> list[str]:
        if isinstance(names, str) or not all(isinstance(n, str) for n in names):
            raise InvalidTagError(f"names must be a list of tag names, got {names!r}.")
        unknown = [n for n in names if n not in self._adapters]
        if unknown:
            known = ", ".join(sorted(self._adapters))
            raise InvalidTagError(f"unknown tag {unknown[0]!r}; known tags: {known}.")
        return list(dict.fromkeys(names))

    def drop_thread(self, user_id: str, thread_id: str) -> int:
        """Remove ``thread_id`` from the logged changes that name it (their ``thread_id``
        becomes ``None``), keeping the changes: the tags stay the user's (forgetting a
        thread deletes no tag), so what they were set to stays in their history, without
        the forgotten thread among its sources. Returns how many changes named it.

        A backend that logs the thread of a change overrides this. This default only
        reads the log: it cannot rewrite it, so it logs a warning naming the store when
        a change still names the thread (the erasure runs on) and returns 0.
        """
        named = sum(1 for change in self.history(user_id) if change["thread_id"] == thread_id)
        if named:
            logger.warning(
                "%s does not implement drop_thread: %d logged tag changes of user %r still "
                "name the forgotten thread",
                type(self).__name__,
                named,
                user_id,
            )
        return 0

    adrop_thread = threaded(drop_thread)

    @abstractmethod
    def clear(self, user_id: str) -> int:
        """Delete every tag of the user and their history; return how many tags."""

    aclear = threaded(clear)


def _decode_hash(
    raw: Mapping[bytes | str, bytes | str], where: str = "a tag hash"
) -> dict[str, str]:
    """The tag hash as text.

    Raises:
        CorruptMemoryError: a field or value is not UTF-8 text (not written by this package).

    """
    try:
        return {
            (k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
            for k, v in raw.items()
        }
    except UnicodeDecodeError as exc:
        raise CorruptMemoryError(
            f"{where} holds bytes that are not UTF-8 text ({exc}); set the tag again with "
            "set_user_tags, or delete the key."
        ) from exc


# Set every field and log each change, atomically. ARGV: time, thread, max log length, then
# field/value pairs. cjson is Redis's own JSON library for Lua. Returns each changed field
# and its old value ('' for none): the console directory's values index follows it.
_SET_LUA = """
local changed = {}
for i = 4, #ARGV, 2 do
  local old = redis.call('HGET', KEYS[1], ARGV[i])
  if old ~= ARGV[i + 1] then
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
    redis.call('RPUSH', KEYS[2], cjson.encode({
      tag = ARGV[i], value = ARGV[i + 1], previous = old or '',
      changed_at = ARGV[1], thread_id = ARGV[2]}))
    changed[#changed + 1] = ARGV[i]
    changed[#changed + 1] = old or ''
  end
end
redis.call('LTRIM', KEYS[2], -tonumber(ARGV[3]), -1)
return changed
"""


# Delete fields and log each deletion, atomically. ARGV: time, thread, max log length, names.
# Returns each deleted field and its old value.
_DELETE_LUA = """
local deleted = {}
for i = 4, #ARGV do
  local old = redis.call('HGET', KEYS[1], ARGV[i])
  if old then
    redis.call('HDEL', KEYS[1], ARGV[i])
    redis.call('RPUSH', KEYS[2], cjson.encode({
      tag = ARGV[i], value = '', previous = old, changed_at = ARGV[1], thread_id = ARGV[2]}))
    deleted[#deleted + 1] = ARGV[i]
    deleted[#deleted + 1] = old
  end
end
redis.call('LTRIM', KEYS[2], -tonumber(ARGV[3]), -1)
return deleted
"""


# Drop a thread from the logged changes that name it, in place (their order and the list's
# expiry unchanged), atomically. KEYS: the log. ARGV: the thread id. Returns how many.
_DROP_THREAD_LUA = """
local n = 0
for i, entry in ipairs(redis.call('LRANGE', KEYS[1], 0, -1)) do
  local ok, change = pcall(cjson.decode, entry)
  if ok and type(change) == 'table' and change.thread_id == ARGV[1] then
    change.thread_id = ''
    redis.call('LSET', KEYS[1], i - 1, cjson.encode(change))
    n = n + 1
  end
end
return n
"""


class RedisTagStore(TagStore):
    """Tags in a Redis hash per user.

    Example:
        >>> from pydantic import BaseModel
        >>> class Tags(BaseModel):
        ...     city: str | None = None
        >>> store = RedisTagStore(RedisConnection("redis://localhost"), schema=Tags)

    """

    def __init__(
        self,
        connection: RedisConnection,
        *,
        keys: KeyBuilder | None = None,
        schema: type[BaseModel] = DefaultTags,
    ) -> None:
        self.connection = connection
        self.keys = keys or KeyBuilder()
        self.schema = schema

    def key(self, user_id: str) -> str:
        """The user's tag hash key."""
        return self.keys.key(user_id, "tags")

    parse_all = staticmethod(_decode_hash)

    def where(self, user_id: str) -> str:
        """How errors name the user's tags: the user id and the Redis key."""
        return f"the tags of user {user_id!r} (key {self.key(user_id)})"

    def _one(self, user_id: str, tag: str, raw: bytes | str | None) -> str | None:
        if raw is None:
            return None
        return _decode_hash({tag: raw}, self.where(user_id))[tag]

    @paired
    def get(self, user_id: str, tag: str) -> Plan[str | None]:
        """One tag's value."""
        c = self.connection
        raw = yield call(c.command, c.acommand, "HGET", self.key(user_id), tag)
        return self._one(user_id, tag, raw)

    aget = get.aio

    @paired
    def get_all(self, user_id: str) -> Plan[dict[str, str]]:
        """Every tag (``HGETALL``)."""
        c = self.connection
        raw = yield call(c.command, c.acommand, "HGETALL", self.key(user_id))
        return _decode_hash(raw, self.where(user_id))

    aget_all = get_all.aio

    def _set_calls(
        self, user_id: str, values: dict[str, str], thread_id: str | None
    ) -> list[ScriptCall]:
        """The set script and the console directory's entry, for one round trip."""
        args: list[Any] = [
            self.key(user_id),
            self.keys.key(user_id, "tags:log"),
            _now(),
            validate_thread_id(thread_id) or "",
            MAX_TAG_HISTORY,
        ]
        for name, value in values.items():
            args += [name, value]
        active = activity_call(self.keys, user_id, time.time())
        return [ScriptCall(_SET_LUA, 2, tuple(args)), active]

    @paired
    def set(
        self, user_id: str, mapping: Mapping[str, Any], *, thread_id: str | None = None
    ) -> Plan[dict[str, str]]:
        """Validate, then one script: ``HSET`` every field, log every change."""
        values = self.validate(mapping)
        calls = self._set_calls(user_id, values, thread_id)
        if values:
            c = self.connection
            with c.errors():
                changed = (yield call(c.run_all, c.arun_all, calls))[0]
                yield from index_tags(c, self.keys, user_id, changed, values)
        return values

    aset = set.aio

    def _delete_args(self, user_id: str, names: list[str], thread_id: str | None) -> list[Any]:
        log = self.keys.key(user_id, "tags:log")
        return [
            _DELETE_LUA,
            2,
            self.key(user_id),
            log,
            _now(),
            validate_thread_id(thread_id) or "",
            MAX_TAG_HISTORY,
            *names,
        ]

    @paired
    def delete(
        self, user_id: str, names: Sequence[str], *, thread_id: str | None = None
    ) -> Plan[int]:
        """One script: ``HDEL`` each tag that exists, log each deletion."""
        names = self._names(names)
        if not names:
            return 0
        c = self.connection
        with c.errors():
            raw = yield call(c.eval, c.aeval, *self._delete_args(user_id, names, thread_id))
            return (yield from index_tags(c, self.keys, user_id, raw))

    adelete = delete.aio

    @paired
    def history(self, user_id: str, tag: str | None = None) -> Plan[list[TagChange]]:
        """The logged changes, oldest first."""
        key = self.keys.key(user_id, "tags:log")
        c = self.connection
        raw = yield call(c.command, c.acommand, "LRANGE", key, 0, -1)
        return _parse_changes(raw, tag, f"the tag history of user {user_id!r} (key {key})")

    ahistory = history.aio

    @paired
    def drop_thread(self, user_id: str, thread_id: str) -> Plan[int]:
        """One script: each logged change from ``thread_id`` is rewritten without it."""
        key = self.keys.key(user_id, "tags:log")
        c = self.connection
        with c.errors():
            return int((yield call(c.eval, c.aeval, _DROP_THREAD_LUA, 1, key, thread_id)))

    adrop_thread = drop_thread.aio

    @paired
    def clear(self, user_id: str) -> Plan[int]:
        """Delete the tag hash."""
        # one key per DEL: cluster pipelines refuse multi-key DEL
        c = self.connection
        n, _, _ = yield call(c.pipelined, c.apipelined, self._clear_commands(user_id))
        return int(n)

    aclear = clear.aio

    def _clear_commands(self, user_id: str) -> list[tuple[str, str]]:
        """The tag count and the deletes of the user's tag keys, one key each."""
        key = self.key(user_id)
        return [("HLEN", key), ("DEL", key), ("DEL", self.keys.key(user_id, "tags:log"))]


class InMemoryTagStore(TagStore):
    """Process-local tags with the same validation as :class:`RedisTagStore`.

    Example:
        >>> InMemoryTagStore().set("bob", {"age": "41"})
        {'age': '41'}
    """

    def __init__(self, *, schema: type[BaseModel] = DefaultTags) -> None:
        self.schema = schema
        self._data: dict[str, dict[str, str]] = {}
        self._log: dict[str, list[TagChange]] = {}
        self._lock = threading.Lock()

    def get(self, user_id: str, tag: str) -> str | None:
        """One tag's value."""
        user_id = validate_user_id(user_id)
        with self._lock:
            return self._data.get(user_id, {}).get(tag)

    aget = twin(get)

    def get_all(self, user_id: str) -> dict[str, str]:
        """Every tag."""
        user_id = validate_user_id(user_id)
        with self._lock:
            return dict(self._data.get(user_id, {}))

    def users(self) -> list[str]:
        """Users with tags (or a tag log), for a listing."""
        with self._lock:
            return sorted(set(self._data) | set(self._log))

    aget_all = twin(get_all)

    def set(
        self, user_id: str, mapping: Mapping[str, Any], *, thread_id: str | None = None
    ) -> dict[str, str]:
        """Validate, then write all at once, logging each change."""
        user_id = validate_user_id(user_id)
        thread_id = validate_thread_id(thread_id)
        values = self.validate(mapping)
        now = _now()
        with self._lock:
            tags = self._data.setdefault(user_id, {})
            log = self._log.setdefault(user_id, [])
            for name, value in values.items():
                if tags.get(name) != value:
                    log.append(
                        TagChange(
                            tag=name,
                            value=value,
                            previous=tags.get(name),
                            changed_at=now,
                            thread_id=thread_id or None,
                        )
                    )
                    tags[name] = value
            del log[:-MAX_TAG_HISTORY]
        return values

    aset = twin(set)

    def delete(self, user_id: str, names: Sequence[str], *, thread_id: str | None = None) -> int:
        """Delete each named tag that exists, logging each deletion."""
        user_id = validate_user_id(user_id)
        thread_id = validate_thread_id(thread_id)
        names = self._names(names)
        now = _now()
        with self._lock:
            tags = self._data.get(user_id, {})
            log = self._log.setdefault(user_id, [])
            gone = [n for n in names if n in tags]
            for name in gone:
                log.append(
                    TagChange(
                        tag=name,
                        value="",
                        previous=tags.pop(name),
                        changed_at=now,
                        thread_id=thread_id or None,
                    )
                )
            del log[:-MAX_TAG_HISTORY]
        return len(gone)

    adelete = twin(delete)

    def history(self, user_id: str, tag: str | None = None) -> list[TagChange]:
        """The logged changes, oldest first."""
        user_id = validate_user_id(user_id)
        with self._lock:
            return [c for c in self._log.get(user_id, []) if tag is None or c["tag"] == tag]

    ahistory = twin(history)

    def drop_thread(self, user_id: str, thread_id: str) -> int:
        """Each logged change from ``thread_id`` without it (see :meth:`TagStore.drop_thread`)."""
        user_id = validate_user_id(user_id)
        with self._lock:
            log = self._log.get(user_id, [])
            named = [i for i, change in enumerate(log) if change["thread_id"] == thread_id]
            for i in named:
                log[i] = TagChange(**{**log[i], "thread_id": None})
            return len(named)

    adrop_thread = twin(drop_thread)

    def clear(self, user_id: str) -> int:
        """Delete every tag of the user."""
        user_id = validate_user_id(user_id)
        with self._lock:
            self._log.pop(user_id, None)
            return len(self._data.pop(user_id, {}))

    aclear = twin(clear)

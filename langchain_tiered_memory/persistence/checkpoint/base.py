"""What the sync and async Redis checkpointers share: the layout, the scripts, the codec.

Layout (core commands only; every key of a thread shares the hash tag ``{cp:<thread>}``,
so a thread lives in one Redis Cluster slot and each write is one atomic Lua script):

- ``cp:data`` (hash): ``<ns>\\0<checkpoint id>`` -> the checkpoint record (msgpack of the
  serializer's typed checkpoint without its channel values, typed metadata and the
  parent id).
- ``cp:blobs`` (hash): ``<ns>\\0<channel>\\0<version>`` -> one channel value, written once
  by the checkpoint that gave the channel that version and shared by every later
  checkpoint that still holds it (as ``PostgresSaver``'s blobs): a step that changes one
  channel stores one value, not all of them again. A long list snapshot (a
  ``DeltaChannel``'s) is a list of chunk fields (``<ns>\\0<channel>\\0#<hash>``), each
  chunk shared by every later snapshot that holds the same items (``chunks.py``).
- ``cp:refs`` (hash): ``<ns>\\0<checkpoint id>`` -> the blob fields the checkpoint holds
  (msgpack list of strings, which Lua's ``cmsgpack`` reads), so a read is still one
  script: record, writes and blobs.
- ``cp:ids`` (sorted set, all scores 0): the same members, ordered by bytes. Checkpoint ids
  are time-ordered UUIDs, so the latest of a namespace is one ``ZREVRANGEBYLEX ... LIMIT
  0 1`` (O(log n)) and ``list(limit=n)`` reads n members.
- ``cp:writes`` (hash) and ``cp:wkeys`` (sorted set): pending writes, one field
  ``<ns>\\0<id>\\0<task id>\\0<idx>`` each; a checkpoint's writes are a lexical range.
- ``cp:runs`` (sorted set): ``<run id>\\0<ns>\\0<id>`` for ``delete_for_runs``; beside it,
  one set per run (``{cpr:<run>}``) names the threads the run wrote to.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, NamedTuple, TypedDict, cast

import ormsgpack
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    SerializerProtocol,
    get_checkpoint_id,
    get_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.constants import START

from langchain_tiered_memory.backend.connection import RedisConnection, as_text
from langchain_tiered_memory.backend.keys import DEFAULT_PREFIX, KeyBuilder, escape_id
from langchain_tiered_memory.errors import CorruptMemoryError
from langchain_tiered_memory.persistence.checkpoint import chunks
from langchain_tiered_memory.persistence.checkpoint.cache import DecodedValues
from langchain_tiered_memory.persistence.checkpoint.owned import (
    ThreadOwners,
    owned_put,
    run_of,
)
from langchain_tiered_memory.persistence.checkpoint.records import pack_record, unpack_record
from langchain_tiered_memory.persistence.checkpoint.versions import next_version

__all__ = ["BaseRedisSaver", "CheckpointTTL"]

SEP = "\x00"
# Channels the package's graphs checkpointed before 0.2 and no longer do (retired.py
# strips their old values; a reader racing that skips what it finds gone)
RETIRED_CHANNELS = frozenset({"memory_prompt", "recent_history", "memory_tags"})

# ``list`` reads members in pages of this size when a metadata filter or ``before`` across
# namespaces means it cannot know in advance how many it will skip.
PAGE = 100
MARKED_RUNS = 4096
KEYS_CACHE = 4096
# At most this many members per delete script call: Lua's ``unpack`` has a stack limit.
DELETE_CHUNK = 500
# Stored bytes of decoded channel values a saver keeps (checkpoint/cache.py): a 1,200-message
# snapshot is about 0.4 MB, so 32 MB holds the snapshots and recent writes of dozens of
# long threads (decoded, they take about 3x: ~100 MB at most).
DECODE_CACHE_BYTES = 32 << 20


class CheckpointTTL(TypedDict, total=False):
    """Time to live of a thread, as LangGraph's ``TTLConfig``.

    Attributes:
        default_ttl: minutes after its last write (or read, see below) that all of a
            thread's keys expire together. ``None``/absent: never.
        refresh_on_read: whether ``get_tuple``/``list`` restart the clock (default True).
    """

    default_ttl: float | None
    refresh_on_read: bool


# A value this small stays in the checkpoint record: a blob field and its name would cost
# more than the copy, as PostgresSaver keeps primitives inline.
INLINE_CHARS = 256


def _small(value: Any) -> bool:
    """Whether a channel value is stored inline; decided from the value alone (not its
    serialized size), so every checkpoint holding one version of a channel decides alike.
    """
    if value is None or isinstance(value, (bool, int, float)):
        return True
    if isinstance(value, (str, bytes)):
        return len(value) <= INLINE_CHARS
    return isinstance(value, (list, dict, tuple, set)) and not value


class Where(NamedTuple):
    """Where a config points: a thread, a namespace (``None``: all) and maybe an id."""

    thread_id: str
    ns: str | None
    checkpoint_id: str | None


def _check_part(value: str, what: str) -> str:
    if SEP in value:
        raise ValueError(f"{what} {value!r} contains a NUL character; use printable ids.")
    return value


class BaseRedisSaver(BaseCheckpointSaver[str]):
    """The layout, scripts and codec of :class:`RedisSaver` and :class:`AsyncRedisSaver`.

    Subclasses add only I/O: every method here builds a script call or decodes a reply.
    """

    def __init__(
        self,
        connection: RedisConnection,
        *,
        key_prefix: str = DEFAULT_PREFIX,
        ttl: CheckpointTTL | None = None,
        serde: SerializerProtocol | None = None,
        decode_cache_bytes: int = DECODE_CACHE_BYTES,
    ) -> None:
        super().__init__(serde=serde)
        # the same snapshot is read by every turn until the next one (see checkpoint/cache.py)
        self._decoded = DecodedValues(max_bytes=decode_cache_bytes)
        self.connection = connection
        self.keys = KeyBuilder(key_prefix)
        self.ttl = dict(ttl or {})
        minutes = self.ttl.get("default_ttl")
        if minutes is not None and (not isinstance(minutes, (int, float)) or minutes <= 0):
            raise ValueError(f"ttl default_ttl must be a positive number of minutes: {minutes!r}")
        self._ttl_ms = int(minutes * 60_000) if minutes else 0
        self._read_ttl_ms = self._ttl_ms if self.ttl.get("refresh_on_read", True) else 0
        self._owns_connection = False
        # (run, thread) pairs whose marker this process has written: a run writes many
        # checkpoints to one thread, and the marker is needed once (it lives in another
        # slot, so it costs a round trip of its own). Bounded: a forgotten pair is re-added.
        self._marked: dict[tuple[str, str], None] = {}
        self._keys_cache: dict[str, list[str]] = {}
        # TieredMemory.checkpointer() sets the memory's history: a run of one user on
        # another user's thread is refused at its first read, before LangGraph writes
        # the run's input into the thread
        self.thread_owners: ThreadOwners | None = None

    @property
    def checks_thread_owners(self) -> bool:
        """Whether its reads check thread owners (``memory.checkpointer()``'s do)."""
        return self.thread_owners is not None

    # ----- keys and config -----

    def _thread_keys(self, thread_id: str) -> list[str]:
        # Every call of a graph step names the same few threads: escaping five keys each
        # time was a tenth of a get_tuple.
        keys = self._keys_cache.get(thread_id)
        if keys is None:
            if len(self._keys_cache) >= KEYS_CACHE:
                self._keys_cache.clear()
            keys = self.keys.thread_keys(thread_id)
            if self.thread_owners is not None:
                # the owner record goes with the thread's keys: every write and read that
                # restarts their clock restarts its clock too, and a deleted thread is free
                keys.append(self.keys.thread_owner_key(thread_id))
            self._keys_cache[thread_id] = keys
        return keys

    @staticmethod
    def _where(config: RunnableConfig) -> Where:
        configurable = config.get("configurable") or {}
        if configurable.get("thread_id") in (None, ""):
            raise ValueError(
                "config['configurable']['thread_id'] is missing; pass "
                '{"configurable": {"thread_id": ...}} to the graph.'
            )
        thread_id = str(configurable["thread_id"])
        ns = configurable.get("checkpoint_ns")
        if ns is not None:
            ns = _check_part(str(ns), "checkpoint_ns")
        # "" means the latest, as InMemorySaver and SqliteSaver read it (a falsy id)
        checkpoint_id = get_checkpoint_id(config) or None
        if checkpoint_id is not None:
            checkpoint_id = _check_part(str(checkpoint_id), "checkpoint_id")
        return Where(thread_id, ns, checkpoint_id)

    @staticmethod
    def _config(thread_id: str, ns: str, checkpoint_id: str) -> RunnableConfig:
        return {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": ns,
                "checkpoint_id": checkpoint_id,
            }
        }

    # ----- write plans: (keys, args) of one script call -----

    def _put_args(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        resend: Collection[str] = (),
    ) -> tuple[list[str], list[Any], RunnableConfig, str | None]:
        """The PUT script call. A channel value goes to a blob: sent if ``new_versions``
        gives its channel a new version (or its field is in ``resend``, named by a PUT
        that found it missing), else only named. An ``update_state`` of a saver that
        checks owners must name its user, and the metadata names it (:func:`owned_put`).
        """
        if self.thread_owners is not None:
            config, metadata = owned_put(config, metadata)
        where = self._where(config)
        ns = where.ns or ""
        checkpoint_id = _check_part(str(checkpoint["id"]), "checkpoint id")
        member = f"{ns}{SEP}{checkpoint_id}"
        values = checkpoint.get("channel_values") or {}
        versions = checkpoint.get("channel_versions") or {}
        # The input channel's value is read by the next step only, never held by a later
        # checkpoint: a blob of its own would buy nothing and cost a field and a ref.
        inline = {
            ch: v for ch, v in values.items() if ch not in versions or ch == START or _small(v)
        }
        refs: list[str] = []
        sent: list[Any] = []
        held: list[str] = []
        for channel, value in values.items():
            if channel in inline:
                continue
            prefix = f"{ns}{SEP}{_check_part(str(channel), 'channel')}{SEP}"
            field = f"{prefix}{versions[channel]}"
            new = new_versions.get(channel) == versions[channel]
            chunked = chunks.split(self.serde, prefix, value)
            parts = [(field, None if chunked is None else chunked.blob)]
            # chunks after the blob that names them: refs list each field once
            parts += [c for c in (chunked.chunks if chunked else []) if c[0] not in refs]
            for name, stored in parts:
                refs.append(name)
                if new or name in resend:
                    if stored is None:
                        stored = ormsgpack.packb(list(self.serde.dumps_typed(value)))
                    sent += [name, stored]
                else:
                    held.append(name)
        ctype, cbytes = self.serde.dumps_typed({**checkpoint, "channel_values": inline})
        full_metadata = get_checkpoint_metadata(config, metadata)
        mtype, mbytes = self.serde.dumps_typed(full_metadata)
        record = pack_record([ctype, cbytes, mtype, mbytes, where.checkpoint_id or ""])
        run_id = full_metadata.get("run_id")
        run = str(run_id) if run_id else None
        run_entry = f"{_check_part(run, 'run_id')}{SEP}{member}" if run else ""
        keys = self._thread_keys(where.thread_id)
        packed_refs = ormsgpack.packb(refs) if refs else ""
        args = [self._ttl_ms, member, record, run_entry, packed_refs, len(sent) // 2]
        args += sent + held
        return keys, args, self._config(where.thread_id, ns, checkpoint_id), run

    def _put_writes_args(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str,
    ) -> tuple[list[str], list[Any]]:
        where = self._where(config)
        if where.checkpoint_id is None:
            raise ValueError("put_writes needs config['configurable']['checkpoint_id'].")
        member = f"{where.ns or ''}{SEP}{where.checkpoint_id}"
        task = _check_part(str(task_id), "task_id")
        args: list[Any] = [self._ttl_ms]
        for idx, (channel, value) in enumerate(writes):
            special = WRITES_IDX_MAP.get(channel)
            vtype, vbytes = self.serde.dumps_typed(value)
            field = f"{member}{SEP}{task}{SEP}{special if special is not None else idx}"
            args += [
                field,
                ormsgpack.packb([channel, vtype, vbytes, task_path]),
                "1" if special is not None else "0",
            ]
        return self._thread_keys(where.thread_id), args

    def _run_marker(self, run: str | None, thread_id: str) -> tuple[str, str] | None:
        """The (run key, escaped thread) still to add for this run and thread, or ``None``."""
        if run is None or (run, thread_id) in self._marked:
            return None
        return self.keys.run_key(run), escape_id(thread_id, "thread_id")

    def _marker_commands(self, run_key: str, escaped_thread: str) -> list[tuple[Any, ...]]:
        commands: list[tuple[Any, ...]] = [("SADD", run_key, escaped_thread)]
        if self._ttl_ms:
            commands.append(("PEXPIRE", run_key, self._ttl_ms))
        return commands

    def _marked_run(self, run: str, thread_id: str) -> None:
        if len(self._marked) >= MARKED_RUNS:
            self._marked.pop(next(iter(self._marked)))
        self._marked[(run, thread_id)] = None

    def _forget_runs(self, runs: Iterable[str]) -> None:
        gone = set(runs)
        for pair in [p for p in self._marked if p[0] in gone]:
            del self._marked[pair]

    # ----- read plans and decoding -----

    def _refresh(self, config: RunnableConfig | None) -> list[Any]:
        """LOAD's ``[ttl, reader]`` for a read of ``config``: whose read restarts the
        thread's clock (``refresh_on_read``). A read of every thread (``list(None)``:
        maintenance, an export's or an erasure's search by owner stamp) and a read with
        no config restart none. A saver that checks owners restarts a thread only on
        its owner's read (:func:`run_of`; LOAD compares the owner record): one user's
        export or refused run never keeps another user's thread alive (issue 76 item 2).
        Any other saver restarts on every read of a thread, as LangGraph's savers do.

        Raises:
            MissingUserIdError: a run on a thread names no usable user (:func:`run_of`).
        """
        if not self._read_ttl_ms or config is None:
            return [0, ""]
        if self.thread_owners is None:
            return [self._read_ttl_ms, ""]
        run = run_of(config)
        return [self._read_ttl_ms, run[0]] if run is not None else [0, ""]

    def _load_latest_args(self, where: Where, refresh: Sequence[Any]) -> list[Any]:
        if where.checkpoint_id is not None:
            member = f"{where.ns or ''}{SEP}{where.checkpoint_id}"
            return [*refresh, "members", member]
        return [*refresh, "latest", where.ns or ""]

    def _load_members_args(self, members: Sequence[str], refresh: Sequence[Any]) -> list[Any]:
        return [*refresh, "members", *members]

    def _decode(self, thread_id: str, entry: Sequence[Any]) -> CheckpointTuple:
        """One loaded checkpoint; a record this saver did not write is a
        :class:`CorruptMemoryError` naming the thread and the key, never a raw decode error.
        """
        member = as_text(entry[0])
        try:
            return self._decode_entry(thread_id, entry)
        except CorruptMemoryError:
            raise
        except Exception as exc:  # ormsgpack, the serializer, a wrong shape: all "corrupt"
            data_key, writes_key = self.keys.thread_keys(thread_id)[1:3]
            raise CorruptMemoryError(
                f"checkpoint {member!r} of thread {thread_id!r} cannot be read (keys "
                f"{data_key}, {writes_key}): {type(exc).__name__}: {exc}. It was not written "
                "by this saver; delete the thread (delete_thread) or restore the keys."
            ) from exc

    def _blobs(
        self, entry: Sequence[Any], channels: Collection[str] | None = None
    ) -> dict[str, Any]:
        """The channel values of a loaded entry's blobs (of ``channels``, if given)."""
        if len(entry) < 6:
            return {}  # written inline, before blobs
        out: dict[str, Any] = {}
        loaded = dict(zip(ormsgpack.unpackb(entry[4]), entry[5], strict=True))

        def missing(field: str) -> CorruptMemoryError:
            return CorruptMemoryError(
                f"checkpoint {as_text(entry[0])!r} holds the value {field!r}, which is "
                "missing from its thread's blobs; delete the thread (delete_thread) or "
                "restore the keys."
            )

        for field, blob in loaded.items():
            channel = field.split(SEP)[1]
            if (channels is not None and channel not in channels) or chunks.is_chunk_field(field):
                continue  # a chunk is read with the snapshot that names it
            if blob is None:
                if channel in RETIRED_CHANNELS:
                    continue  # an upgrade stripped it (retired.py); restored empty anyway
                raise missing(field)
            vtype, vbytes = ormsgpack.unpackb(blob)
            if vtype == chunks.CHUNKED:
                out[channel] = chunks.join(vbytes, loaded, self._value, missing)
            else:
                out[channel] = self._value(vtype, vbytes)
        return out

    def _value(self, vtype: str, vbytes: bytes) -> Any:
        """A stored channel value or write, decoded once per process while it is held."""
        if vtype != "msgpack":  # the serializer's own form; others are cheap or foreign
            return self.serde.loads_typed((vtype, vbytes))
        return self._decoded.get(vbytes, lambda b: self.serde.loads_typed((vtype, b)))

    def _decode_entry(self, thread_id: str, entry: Sequence[Any]) -> CheckpointTuple:
        member, record, fields, values = entry[:4]
        ns, _, checkpoint_id = as_text(member).partition(SEP)
        ctype, cbytes, mtype, mbytes, parent = unpack_record(record)
        checkpoint = cast(Checkpoint, self.serde.loads_typed((ctype, cbytes)))
        if blobs := self._blobs(entry):
            checkpoint["channel_values"] = {**checkpoint.get("channel_values", {}), **blobs}
        metadata = cast(CheckpointMetadata, self.serde.loads_typed((mtype, mbytes)))
        pending: list[tuple[tuple[str, str, int], tuple[str, str, Any]]] = []
        for field, value in zip(fields, values, strict=True):
            if value is None:
                continue  # its hash field is gone: a delete raced this read
            _, _, task_id, idx = as_text(field).split(SEP)
            channel, vtype, vbytes, task_path = ormsgpack.unpackb(value)
            pending.append(
                (
                    writes_sort_key(task_path, task_id, int(idx)),
                    (task_id, channel, self._value(vtype, vbytes)),
                )
            )
        pending.sort(key=lambda item: item[0])
        return CheckpointTuple(
            config=self._config(thread_id, ns, checkpoint_id),
            checkpoint=checkpoint,
            metadata=metadata,
            parent_config=self._config(thread_id, ns, parent) if parent else None,
            pending_writes=[write for _, write in pending],
        )

    @staticmethod
    def _lex_range(where: Where, before: str | None) -> tuple[str, str]:
        """ZREVRANGEBYLEX (max, min) of a thread's members, newest first."""
        if where.ns is None:
            return "+", "-"
        high = f"({where.ns}{SEP}{before}" if before else f"({where.ns}\x01"
        return high, f"[{where.ns}{SEP}"

    @staticmethod
    def _member_wanted(member: str, where: Where, before: str | None) -> bool:
        _, _, checkpoint_id = member.partition(SEP)
        if where.checkpoint_id is not None and checkpoint_id != where.checkpoint_id:
            return False
        return not (before is not None and checkpoint_id >= before)

    @staticmethod
    def _matches(metadata: Mapping[str, Any], filter: Mapping[str, Any] | None) -> bool:  # noqa: A002
        return not filter or all(metadata.get(k) == v for k, v in filter.items())

    def _before(self, before: RunnableConfig | None) -> str | None:
        return (get_checkpoint_id(before) or None) if before else None

    # ----- DeltaChannel history: one plan, run by the sync and the async saver -----

    # ----- the I/O the plans ask for: RedisSaver's -----

    def _eval(self, script: str, thread_id: str, *args: Any) -> Any:
        raise NotImplementedError

    async def _aeval(self, script: str, thread_id: str, *args: Any) -> Any:
        raise NotImplementedError

    def _members(self, where: Where, high: str, low: str, offset: int, num: int) -> list[str]:
        raise NotImplementedError

    async def _amembers(
        self, where: Where, high: str, low: str, offset: int, num: int
    ) -> list[str]:
        raise NotImplementedError

    def _mark(self, run: str | None, thread_id: str) -> None:
        raise NotImplementedError

    async def _amark(self, run: str | None, thread_id: str) -> None:
        raise NotImplementedError

    def get_next_version(self, current: str | None, channel: None) -> str:
        """A new channel version: a counter and a random tie-breaker, as LangGraph's scheme,
        written short.

        The counter is base 36 after a letter that says how many digits it has (``a`` one,
        ``b`` two, ...), so versions still compare as strings in counter order, and the
        tie-breaker (which keeps two forks of one checkpoint from sharing a blob name) is 6
        base-36 characters (31 bits) instead of a float's 18 digits. A checkpoint names each
        channel's version about twice (``channel_versions``, ``versions_seen``) and random
        digits do not compress: "0000000000000042.0.5103196368858631" was the largest part
        of a record; "b16.k3f9zq" is a third of it. A version made here starts with a letter,
        so it compares above every older, zero-padded one (16 or 32 digits), and a thread
        written before goes on.

        Example:
            >>> from langchain_tiered_memory.persistence.checkpoint.versions import next_version
            >>> next_version("0000000000000041.0.5103196368858631")[:4]
            'b16.'
        """
        return next_version(current)

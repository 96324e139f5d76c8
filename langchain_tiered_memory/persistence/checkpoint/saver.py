"""``RedisSaver``: a LangGraph checkpointer on plain Redis, sync and async on one connection."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    SerializerProtocol,
)

from langchain_tiered_memory._steps import Plan, adrive, drive
from langchain_tiered_memory.backend.connection import ConnectionOwner, RedisConnection, as_text
from langchain_tiered_memory.backend.keys import DEFAULT_PREFIX
from langchain_tiered_memory.persistence.checkpoint.base import (
    DECODE_CACHE_BYTES,
    PAGE,
    CheckpointTTL,
    Where,
)
from langchain_tiered_memory.persistence.checkpoint.delta import DeltaWalk
from langchain_tiered_memory.persistence.checkpoint.maintenance import (
    SaverMaintenance,
)
from langchain_tiered_memory.persistence.checkpoint.owned import admission
from langchain_tiered_memory.persistence.checkpoint.scripts import (
    LOAD,
    PUT,
    PUT_WRITES,
)

__all__ = ["RedisSaver"]


class RedisSaver(DeltaWalk, SaverMaintenance, ConnectionOwner):
    """A LangGraph checkpointer on Redis core commands: no modules, no admin commands.

    Runs on Redis 6.2+, Valkey, Redis Cluster (each thread is one hash slot) and managed
    services that block modules. Every method has its async twin on the same connection
    (``aget_tuple``, ``aput``, ...), so one saver serves ``invoke`` and ``ainvoke``;
    :class:`~langchain_tiered_memory.persistence.checkpoint.AsyncRedisSaver` is the same
    saver opened with ``async with``.

    Args:
        connection: the Redis to use (see :class:`~langchain_tiered_memory.RedisConnection`);
            ``TieredMemory.checkpointer()`` passes the memory's own.
        key_prefix: the key prefix, shared with the memory (default ``"tm"``).
        ttl: ``{"default_ttl": minutes, "refresh_on_read": True}``: a thread's keys expire
            together that long after its last write (or read); default: never.
        serde: the serializer; default LangGraph's ``JsonPlusSerializer`` (no pickle).
        decode_cache_bytes: stored bytes of large decoded channel values kept for reuse
            (default 32 MB; ``0``: off): a long thread's snapshot of its messages is read
            by every turn, and decoding it again was most of the turn. Keyed by the bytes,
            so it is never stale; a hit returns a new list of the same message objects.

    Example:
        >>> from langchain_tiered_memory.persistence.checkpoint import RedisSaver
        >>> with RedisSaver.from_url("redis://localhost:6379/0") as saver:  # doctest: +SKIP
        ...     graph = builder.compile(checkpointer=saver)
        ...     graph.invoke({"messages": []}, {"configurable": {"thread_id": "t-1"}})
    """

    @classmethod
    @contextlib.contextmanager
    def from_url(
        cls,
        url: str,
        *,
        key_prefix: str = DEFAULT_PREFIX,
        ttl: CheckpointTTL | None = None,
        cluster: bool | None = None,
        serde: SerializerProtocol | None = None,
        decode_cache_bytes: int = DECODE_CACHE_BYTES,
    ) -> Iterator[RedisSaver]:
        """A saver on a new connection to ``url``, closed on exit.

        Example:
            >>> with RedisSaver.from_url("redis://localhost:6379/0") as saver:  # doctest: +SKIP
            ...     saver.setup()
        """
        saver = cls(
            RedisConnection(url, cluster=cluster),
            key_prefix=key_prefix,
            ttl=ttl,
            serde=serde,
            decode_cache_bytes=decode_cache_bytes,
        )
        saver._owns_connection = True
        try:
            yield saver
        finally:
            saver.close()

    # LangGraph's savers (SqliteSaver, PostgresSaver, langgraph-redis) open this way
    from_conn_string = from_url

    # ----- I/O -----

    def _eval(self, script: str, thread_id: str, *args: Any) -> Any:
        keys = self._thread_keys(thread_id)
        with self.connection.errors():
            return self.connection.eval(script, len(keys), *keys, *args)

    async def _aeval(self, script: str, thread_id: str, *args: Any) -> Any:
        keys = self._thread_keys(thread_id)
        with self.connection.errors():
            return await self.connection.aeval(script, len(keys), *keys, *args)

    def _members(self, where: Where, high: str, low: str, offset: int, num: int) -> list[str]:
        with self.connection.errors():
            found = self.connection.sync.zrevrangebylex(
                self._thread_keys(where.thread_id)[0], high, low, start=offset, num=num
            )
        return [as_text(m) for m in found]

    async def _amembers(
        self, where: Where, high: str, low: str, offset: int, num: int
    ) -> list[str]:
        with self.connection.errors():
            found = await (await self.connection.aclient()).zrevrangebylex(
                self._thread_keys(where.thread_id)[0], high, low, start=offset, num=num
            )
        return [as_text(m) for m in found]

    def list_threads(self, *, prefix: str = "") -> Iterator[str]:
        """The ids of the stored threads that start with ``prefix`` (a SCAN, in no order).

        Example:
            >>> sorted(saver.list_threads(prefix="alice/"))  # doctest: +SKIP
            ['alice/t-1', 'alice/t-2']
        """
        with self.connection.errors():
            for key in self.connection.sync.scan_iter(
                match=self.keys.thread_scan_pattern(prefix), count=1000
            ):
                thread_id = self.keys.thread_from_key(key)
                if thread_id is not None and thread_id.startswith(prefix):
                    yield thread_id

    async def alist_threads(self, *, prefix: str = "") -> AsyncIterator[str]:
        """Async :meth:`list_threads`."""
        with self.connection.errors():
            async for key in (await self.connection.aclient()).scan_iter(
                match=self.keys.thread_scan_pattern(prefix), count=1000
            ):
                thread_id = self.keys.thread_from_key(key)
                if thread_id is not None and thread_id.startswith(prefix):
                    yield thread_id

    def _mark(self, run: str | None, thread_id: str) -> None:
        """Record once per process that ``run`` wrote to ``thread_id`` (SADD, and the TTL)."""
        if (marker := self._run_marker(run, thread_id)) is None or run is None:
            return
        self.connection.pipelined(self._marker_commands(*marker))
        self._marked_run(run, thread_id)

    async def _amark(self, run: str | None, thread_id: str) -> None:
        if (marker := self._run_marker(run, thread_id)) is None or run is None:
            return
        await self.connection.apipelined(self._marker_commands(*marker))
        self._marked_run(run, thread_id)

    # ----- reads: a run of a named user is admitted to the thread (persistence/owned.py) -----

    def _has_state(self, thread_id: str) -> bool:
        where = Where(thread_id, "", None)  # a check, no one's read: no refresh
        return bool(self._eval(LOAD, thread_id, *self._load_latest_args(where, [0, ""])))

    async def _ahas_state(self, thread_id: str) -> bool:
        where = Where(thread_id, "", None)
        load = self._load_latest_args(where, [0, ""])
        return bool(await self._aeval(LOAD, thread_id, *load))

    def _admission(self, config: RunnableConfig, *, claim: bool) -> Plan[None]:
        return admission(self.thread_owners, config, self._has_state, self._ahas_state, claim=claim)

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names, or the latest of its thread and namespace.

        One script call after the owner check (a refused run loads nothing): O(log n) + size.
        """
        where = self._where(config)
        drive(self._admission(config, claim=True))
        load = self._load_latest_args(where, self._refresh(config))
        reply = self._eval(LOAD, where.thread_id, *load)
        return self._decode(where.thread_id, reply[0]) if reply else None

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async :meth:`get_tuple`."""
        where = self._where(config)
        await adrive(self._admission(config, claim=True))
        load = self._load_latest_args(where, self._refresh(config))
        reply = await self._aeval(LOAD, where.thread_id, *load)
        return self._decode(where.thread_id, reply[0]) if reply else None

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first: of ``config``'s thread (and namespace, if given), or of
        every thread when ``config`` is ``None`` (a SCAN: for maintenance, not per turn).

        ``limit=n`` on one namespace reads n checkpoints; a metadata ``filter`` reads in
        pages until n match.
        """
        remaining = limit
        if remaining is not None and remaining <= 0:
            return
        if config is not None:
            wheres: Iterator[Where] = iter([self._where(config)])
            drive(self._admission(config, claim=False))
        else:
            wheres = (Where(t, None, None) for t in self.list_threads())
        before_id = self._before(before)
        refresh = self._refresh(config)
        for where in wheres:
            high, low = self._lex_range(where, before_id)
            page = PAGE if remaining is None or filter else remaining
            offset = 0
            while True:
                members = self._members(where, high, low, offset, page)
                offset += len(members)
                wanted = [m for m in members if self._member_wanted(m, where, before_id)]
                if wanted:
                    load = self._load_members_args(wanted, refresh)
                    reply = self._eval(LOAD, where.thread_id, *load)
                    for entry in reply:
                        found = self._decode(where.thread_id, entry)
                        if not self._matches(found.metadata, filter):
                            continue
                        yield found
                        if remaining is not None:
                            remaining -= 1
                            if remaining <= 0:
                                return
                if len(members) < page:
                    break

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Async :meth:`list`."""
        remaining = limit
        if remaining is not None and remaining <= 0:
            return
        if config is not None:
            thread_ids: list[Where] | None = [self._where(config)]
            await adrive(self._admission(config, claim=False))
        else:
            thread_ids = None
        before_id = self._before(before)
        refresh = self._refresh(config)
        wheres = (
            _aiter_list(thread_ids)
            if thread_ids is not None
            else (Where(t, None, None) async for t in self.alist_threads())
        )
        async for where in wheres:
            high, low = self._lex_range(where, before_id)
            page = PAGE if remaining is None or filter else remaining
            offset = 0
            while True:
                members = await self._amembers(where, high, low, offset, page)
                offset += len(members)
                wanted = [m for m in members if self._member_wanted(m, where, before_id)]
                if wanted:
                    load = self._load_members_args(wanted, refresh)
                    reply = await self._aeval(LOAD, where.thread_id, *load)
                    for entry in reply:
                        found = self._decode(where.thread_id, entry)
                        if not self._matches(found.metadata, filter):
                            continue
                        yield found
                        if remaining is not None:
                            remaining -= 1
                            if remaining <= 0:
                                return
                if len(members) < page:
                    break

    # ----- writes -----

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint: one atomic script (a reader sees all of it or nothing)."""
        keys, args, stored, run = self._put_args(config, checkpoint, metadata, new_versions)
        # The run marker first, so a crash in between leaves a harmless marker, not a lost one.
        self._mark(run, stored["configurable"]["thread_id"])
        with self.connection.errors():
            missing = self.connection.eval(PUT, len(keys), *keys, *args)
            if isinstance(missing, list):  # values an inline-era ancestor did not leave
                resend = [as_text(f) for f in missing]
                keys, args, *_ = self._put_args(config, checkpoint, metadata, new_versions, resend)
                self.connection.eval(PUT, len(keys), *keys, *args)
        return stored

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Async :meth:`put`."""
        keys, args, stored, run = self._put_args(config, checkpoint, metadata, new_versions)
        await self._amark(run, stored["configurable"]["thread_id"])
        with self.connection.errors():
            missing = await self.connection.aeval(PUT, len(keys), *keys, *args)
            if isinstance(missing, list):
                resend = [as_text(f) for f in missing]
                keys, args, *_ = self._put_args(config, checkpoint, metadata, new_versions, resend)
                await self.connection.aeval(PUT, len(keys), *keys, *args)
        return stored

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's pending writes for the checkpoint ``config`` names (atomic)."""
        if not writes:
            return
        keys, args = self._put_writes_args(config, writes, task_id, task_path)
        with self.connection.errors():
            self.connection.eval(PUT_WRITES, len(keys), *keys, *args)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Async :meth:`put_writes`."""
        if not writes:
            return
        keys, args = self._put_writes_args(config, writes, task_id, task_path)
        with self.connection.errors():
            await self.connection.aeval(PUT_WRITES, len(keys), *keys, *args)


async def _aiter_list(items: list[Where]) -> AsyncIterator[Where]:
    for item in items:
        yield item

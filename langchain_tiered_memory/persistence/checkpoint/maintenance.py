"""The checkpointers' maintenance: ``delete_thread``, ``delete_for_runs``, ``copy_thread``
and ``prune`` (:class:`SaverMaintenance`, which ``RedisSaver`` inherits), and what they
compute from a thread's keys as ``READ_ALL`` returns them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import unquote

from langchain_tiered_memory._steps import adrive, drive
from langchain_tiered_memory.backend.connection import as_text
from langchain_tiered_memory.backend.keys import escape_id
from langchain_tiered_memory.persistence.checkpoint import retired
from langchain_tiered_memory.persistence.checkpoint.base import DELETE_CHUNK, SEP, BaseRedisSaver
from langchain_tiered_memory.persistence.checkpoint.scripts import COPY, DELETE, READ_ALL

__all__ = ["SaverMaintenance", "copy_args", "keep_latest", "runs_of", "stale_runs"]


def keep_latest(members: Iterable[Any]) -> tuple[set[str], list[str]]:
    """Split a thread's members into the newest of each namespace and the rest."""
    newest: dict[str, str] = {}
    all_members = [as_text(m) for m in members]
    for member in all_members:
        ns, _, checkpoint_id = member.partition(SEP)
        if checkpoint_id > newest.get(ns, ""):
            newest[ns] = checkpoint_id
    keep = {f"{ns}{SEP}{cid}" for ns, cid in newest.items()}
    return keep, [m for m in all_members if m not in keep]


def copy_args(ttl_ms: int, contents: Sequence[Any]) -> list[Any]:
    """The COPY script's arguments from a READ_ALL reply."""
    ids, data, writes, wkeys, runs, blobs, refs = contents
    args: list[Any] = [ttl_ms]
    for member in ids:
        args += [1, member, ""]
    for i in range(0, len(data), 2):
        args += [2, data[i], data[i + 1]]
    for i in range(0, len(writes), 2):
        args += [3, writes[i], writes[i + 1]]
    for member in wkeys:
        args += [4, member, ""]
    for member in runs:
        args += [5, member, ""]
    for kind, flat in ((6, blobs), (7, refs)):
        for i in range(0, len(flat), 2):
            args += [kind, flat[i], flat[i + 1]]
    return args


def runs_of(runs: Iterable[Any]) -> set[str]:
    """The run ids of a thread's ``cp:runs`` entries."""
    return {as_text(entry).partition(SEP)[0] for entry in runs}


def stale_runs(runs: Iterable[Any], keep: set[str]) -> list[str]:
    """The ``cp:runs`` entries of checkpoints not in ``keep``."""
    return [e for e in map(as_text, runs) if e.partition(SEP)[2] not in keep]


class SaverMaintenance(BaseRedisSaver):
    """Deletes, copies and pruning of threads, on the I/O ``RedisSaver`` provides."""

    def strip_retired(self, thread_id: str, *, dry_run: bool = False) -> int:
        """Remove from a thread what releases before 0.2 checkpointed and no reader needs
        (``retired.py``); return how many stored values changed (or would, ``dry_run``).
        """
        args = retired.changes(self, self._eval(READ_ALL, str(thread_id)))
        if dry_run or not args:
            return len(args) // 4
        return int(self._eval(retired.STRIP, str(thread_id), *args))

    # ----- deletes and copies -----

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint and write of a thread (all namespaces), and its name
        from the run indexes (``delete_for_runs``), so that no key names it afterwards.
        """
        keys = self._thread_keys(str(thread_id))
        with self.connection.errors():
            runs = runs_of(self.connection.sync.zrange(keys[4], 0, -1))
            self.connection.pipelined(self._erase_commands(keys, runs, str(thread_id)))
        # an erased thread's decoded values must not outlive it in this process either
        self._decoded.clear()

    async def adelete_thread(self, thread_id: str) -> None:
        """Async :meth:`delete_thread`."""
        keys = self._thread_keys(str(thread_id))
        client = await self.connection.aclient()
        with self.connection.errors():
            runs = runs_of(await client.zrange(keys[4], 0, -1))
            await self.connection.apipelined(self._erase_commands(keys, runs, str(thread_id)))
        self._decoded.clear()

    def _erase_commands(
        self, keys: Sequence[str], runs: Iterable[str], thread_id: str
    ) -> list[tuple[str, ...]]:
        """What erases a thread: its keys, one a DEL (a cluster pipeline's DEL takes one),
        and its memberships in the indexes of ``runs``.
        """
        for pair in [p for p in self._marked if p[1] == thread_id]:
            del self._marked[pair]
        escaped = escape_id(thread_id, "thread_id")
        deletes: list[tuple[str, ...]] = [("DEL", key) for key in keys]
        return deletes + [("SREM", self.keys.run_key(run), escaped) for run in sorted(runs)]

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and their writes) that the given runs wrote."""
        for run in map(str, run_ids):
            run_key = self.keys.run_key(run)
            with self.connection.errors():
                threads = self.connection.sync.smembers(run_key)
            for escaped in threads:
                self._eval(DELETE, unquote(as_text(escaped)), "run", run)
            with self.connection.errors():
                self.connection.sync.delete(run_key)
        self._forget_runs(map(str, run_ids))

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Async :meth:`delete_for_runs`."""
        for run in map(str, run_ids):
            run_key = self.keys.run_key(run)
            with self.connection.errors():
                threads = await (await self.connection.aclient()).smembers(run_key)
            for escaped in threads:
                await self._aeval(DELETE, unquote(as_text(escaped)), "run", run)
            with self.connection.errors():
                await (await self.connection.aclient()).delete(run_key)
        self._forget_runs(map(str, run_ids))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint and write of a thread into another (merging); with
        owner checks, the copy is the source's owner's.
        """
        if self.thread_owners is not None:
            drive(self.thread_owners.copied(str(source_thread_id), str(target_thread_id)))
        contents = self._eval(READ_ALL, str(source_thread_id))
        target = str(target_thread_id)
        for run in runs_of(contents[4]):
            self._mark(run, target)
        if contents[0]:
            self._eval(COPY, target, *copy_args(self._ttl_ms, contents))

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Async :meth:`copy_thread`."""
        if self.thread_owners is not None:
            await adrive(self.thread_owners.copied(str(source_thread_id), str(target_thread_id)))
        contents = await self._aeval(READ_ALL, str(source_thread_id))
        target = str(target_thread_id)
        for run in runs_of(contents[4]):
            await self._amark(run, target)
        if contents[0]:
            await self._aeval(COPY, target, *copy_args(self._ttl_ms, contents))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Delete old checkpoints: ``"keep_latest"`` keeps the newest of each namespace,
        ``"delete"`` deletes the threads.

        With ``keep_latest``, a graph using LangGraph's ``DeltaChannel`` loses the history
        its older checkpoints carried (as with LangGraph's own savers): prune those
        threads with ``"delete"`` or not at all.
        """
        self._check_strategy(strategy)
        for thread_id in map(str, thread_ids):
            if strategy == "delete":
                self.delete_thread(thread_id)
                continue
            contents = self._eval(READ_ALL, thread_id)
            keep, drop = keep_latest(contents[0])
            for i in range(0, len(drop), DELETE_CHUNK):
                self._eval(DELETE, thread_id, "members", *drop[i : i + DELETE_CHUNK])
            stale = stale_runs(contents[4], keep)
            if stale:
                with self.connection.errors():
                    self.connection.sync.zrem(self._thread_keys(thread_id)[4], *stale)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Async :meth:`prune`."""
        self._check_strategy(strategy)
        for thread_id in map(str, thread_ids):
            if strategy == "delete":
                await self.adelete_thread(thread_id)
                continue
            contents = await self._aeval(READ_ALL, thread_id)
            keep, drop = keep_latest(contents[0])
            for i in range(0, len(drop), DELETE_CHUNK):
                await self._aeval(DELETE, thread_id, "members", *drop[i : i + DELETE_CHUNK])
            stale = stale_runs(contents[4], keep)
            if stale:
                with self.connection.errors():
                    await (await self.connection.aclient()).zrem(
                        self._thread_keys(thread_id)[4], *stale
                    )

    @staticmethod
    def _check_strategy(strategy: str) -> None:
        if strategy not in ("keep_latest", "delete"):
            raise ValueError(f"prune strategy must be 'keep_latest' or 'delete', not {strategy!r}.")

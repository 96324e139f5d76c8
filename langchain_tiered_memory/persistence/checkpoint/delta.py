"""The delta walk: ``get_delta_channel_history``, what a ``DeltaChannel`` (the prebuilt
graph's messages) replays, in a few round trips, as one plan (``_steps``) that the sync and
the async method drive over the saver's I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import ormsgpack
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import DeltaChannelHistory, PendingWrite, writes_sort_key

from langchain_tiered_memory._steps import Plan, adrive, call, drive
from langchain_tiered_memory.backend.connection import as_text
from langchain_tiered_memory.errors import CorruptMemoryError
from langchain_tiered_memory.persistence.checkpoint.ancestors import (
    Ancestor,
    byte_parts,
    digest,
    fresh_ancestor,
    skip_ext,
)
from langchain_tiered_memory.persistence.checkpoint.base import SEP, BaseRedisSaver
from langchain_tiered_memory.persistence.checkpoint.records import unpack_record
from langchain_tiered_memory.persistence.checkpoint.scripts import DIGEST, LOAD

__all__ = ["DELTA_BATCH", "DELTA_FIRST", "DIGEST_MAX", "DeltaWalk"]

# Ancestors loaded per round trip by get_delta_channel_history (the first batch of a walk
# is small: what is new since the last walk is a turn's few steps), and at most this many
# kept ones checked by one digest call (past them the walk loads).
DELTA_BATCH = 128
DELTA_FIRST = 16
DIGEST_MAX = 4096


class DeltaWalk(BaseRedisSaver):
    """``get_delta_channel_history`` and its async twin (``RedisSaver`` inherits them)."""

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """The writes of ``channels`` along the parent chain and their seed values (what a
        ``DeltaChannel`` replays), ancestors loaded in batches: a few round trips.
        """
        return drive(self._delta_plan(config, channels))

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Async :meth:`get_delta_channel_history`."""
        return await adrive(self._delta_plan(config, channels))

    def _delta_plan(
        self, config: RunnableConfig, channels: Sequence[str]
    ) -> Plan[Mapping[str, DeltaChannelHistory]]:
        """``get_delta_channel_history`` (LangGraph's contract, its default's results) in
        a few round trips. The ancestors this saver walked before are checked with one
        digest each (``DIGEST``), in one call for all of them; the others are loaded newest
        first (on a linear thread, the parent chain), ``DELTA_FIRST`` and then
        ``DELTA_BATCH`` at a time, not one ``get_tuple`` each. A fork's parent that is not
        in a batch starts the next batch at it.
        """
        if not channels:
            return {}
        where = self._where(config)
        thread = where.thread_id
        refresh = self._refresh(config)
        load = self._load_latest_args(where, refresh)
        reply = yield call(self._eval, self._aeval, LOAD, thread, *load)
        collected: dict[str, list[PendingWrite]] = {c: [] for c in channels}
        seeds: dict[str, Any] = {}
        remaining = set(channels)
        target = self._decode(where.thread_id, reply[0]) if reply else None
        parent = target.parent_config if target else None
        ns = parent["configurable"].get("checkpoint_ns", "") if parent else ""
        cursor = str(parent["configurable"]["checkpoint_id"]) if parent else None
        loaded: dict[str, Ancestor] = {}
        batch = DELTA_FIRST
        walked: set[str] = set()
        checked: set[str] = set()  # sent in a digest call: never asked about twice
        while cursor is not None and remaining:
            if cursor in walked:  # a parent chain that loops would walk forever
                raise CorruptMemoryError(
                    f"checkpoint {cursor!r} of thread {where.thread_id!r} is its own "
                    "ancestor; delete the thread (delete_thread) or restore its keys."
                )
            walked.add(cursor)
            if cursor not in loaded and cursor not in checked:
                # The ancestors this saver walked before are checked, not loaded again:
                # one digest each (record, refs, writes), one round trip for them all.
                known = checked | loaded.keys()  # a new set: the chain adds to it
                chain = self._walked_chain(where.thread_id, ns, cursor, remaining, known)
                if chain:
                    members = [member for member, _, _ in chain]
                    digests = yield call(self._eval, self._aeval, DIGEST, thread, *members)
                    for (_, digest, ancestor), now in zip(chain, digests, strict=True):
                        checked.add(ancestor.checkpoint_id)
                        # a digest vouches for its own checkpoint (its parent included):
                        # one that changed or is gone is loaded, the others still serve
                        if now is not None and as_text(now) == digest:
                            loaded[ancestor.checkpoint_id] = fresh_ancestor(ancestor)
            if cursor not in loaded:
                # the newest ones are few (a turn's steps): a small batch first
                high, low = f"[{ns}{SEP}{cursor}", f"[{ns}{SEP}"
                members = yield call(self._members, self._amembers, where, high, low, 0, batch)
                entries = []
                if members:
                    load = self._load_members_args(members, refresh)
                    entries = yield call(self._eval, self._aeval, LOAD, thread, *load)
                batch = DELTA_BATCH
                for entry in entries:
                    found = self._ancestor(where.thread_id, entry, remaining)
                    self._keep_walked(where.thread_id, entry, remaining, found)
                    loaded[found.checkpoint_id] = fresh_ancestor(found)
                if cursor not in loaded:
                    break  # the parent is gone (pruned): the walk ends, as the default's
            ancestor = loaded[cursor]
            for write in reversed(ancestor.writes):
                if write[1] in remaining:
                    collected[write[1]].append(write)
            for ch in [c for c in remaining if c in ancestor.seeds]:
                seeds[ch] = ancestor.seeds[ch]
                remaining.discard(ch)
            cursor = ancestor.parent
        result: dict[str, DeltaChannelHistory] = {}
        for ch in channels:
            entry_: DeltaChannelHistory = {"writes": list(reversed(collected[ch]))}
            if ch in seeds:
                entry_["seed"] = seeds[ch]
            result[ch] = entry_
        return result

    def _walked_chain(
        self,
        thread_id: str,
        ns: str,
        cursor: str | None,
        channels: set[str],
        known: set[str],
    ) -> list[tuple[str, str, Ancestor]]:
        """The kept ancestors from ``cursor`` back, as (member, digest, ancestor), up to one
        the walk already knows (``known``, which this adds each one to: one that appears
        twice, a loop, ends the chain too).
        """
        chain: list[tuple[str, str, Ancestor]] = []
        wanted, unseeded = frozenset(channels), set(channels)
        while cursor is not None and unseeded and cursor not in known and len(chain) < DIGEST_MAX:
            known.add(cursor)
            member = f"{ns}{SEP}{cursor}"
            kept = self._decoded.peek(("walked", thread_id, member, wanted))
            if kept is None:
                break
            digest, ancestor = kept
            chain.append((member, digest, ancestor))
            unseeded -= ancestor.seeds.keys()  # the walk ends where every channel has a seed
            cursor = ancestor.parent
        return chain

    def _keep_walked(
        self, thread_id: str, entry: Sequence[Any], channels: set[str], found: Ancestor
    ) -> None:
        member, record, fields, values = as_text(entry[0]), entry[1], entry[2], entry[3]
        refs = entry[4] if len(entry) > 4 else b""
        found_digest = digest(record, refs, fields, values)
        size = sum(len(part) for part in byte_parts(entry))
        key = ("walked", thread_id, member, frozenset(channels))
        self._decoded.keep(key, (found_digest, found), size)

    def _ancestor(self, thread_id: str, entry: Sequence[Any], channels: set[str]) -> Ancestor:
        """What a delta walk needs of a loaded checkpoint, decoding only that: the
        writes to ``channels`` and their values if the checkpoint holds them (a
        ``JsonPlusSerializer`` msgpack record is first read without building its values,
        so the other channels, e.g. twenty recent messages, cost nothing).
        """
        member = as_text(entry[0])
        try:
            _, record, fields, values = entry[:4]
            _, _, checkpoint_id = member.partition(SEP)
            ctype, cbytes, _mtype, _mbytes, parent = unpack_record(record)
            held = set(channels)
            if ctype == "msgpack":
                shape = ormsgpack.unpackb(
                    cbytes, ext_hook=skip_ext, option=ormsgpack.OPT_NON_STR_KEYS
                )
                held &= set(shape.get("channel_values") or ())
            seeds: dict[str, Any] = self._blobs(entry, channels)
            if held:
                stored = self.serde.loads_typed((ctype, cbytes))["channel_values"]
                seeds.update({ch: stored[ch] for ch in held if ch in stored})
            writes: list[tuple[tuple[str, str, int], PendingWrite]] = []
            for field, value in zip(fields, values, strict=True):
                if value is None:
                    continue
                channel, vtype, vbytes, task_path = ormsgpack.unpackb(value)
                if channel in channels:
                    _, _, task_id, idx = as_text(field).split(SEP)
                    write = (task_id, channel, self._value(vtype, vbytes))
                    writes.append((writes_sort_key(task_path, task_id, int(idx)), write))
        except Exception:
            # the full decoder names the thread and keys of a record it cannot read
            self._decode(thread_id, entry)
            raise
        writes.sort(key=lambda item: item[0])
        return Ancestor(checkpoint_id, parent or None, [w for _, w in writes], seeds)

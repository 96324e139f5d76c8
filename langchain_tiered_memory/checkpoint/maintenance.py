"""What the checkpointers' maintenance (``delete_for_runs``, ``copy_thread``, ``prune``)
computes from a thread's keys as ``READ_ALL`` returns them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from langchain_tiered_memory._redis import as_text
from langchain_tiered_memory.checkpoint.base import SEP

__all__ = ["copy_args", "keep_latest", "runs_of", "stale_runs"]


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

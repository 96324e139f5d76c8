"""Data of an earlier stored format brought to the package's (:func:`upgrade`,
``tiered-memory upgrade``).

Format 1 (0.1.x) differs in what its checkpoints hold: the memory section, the history a
new thread carried and the tags, in every thread that loaded them, which no 0.2 reader
needs and erasure would not reach. The upgrade strips them from every thread of the
memory's own saver, indexes every user in the console's directory (so the users page
lists users no 0.2 turn has touched yet), rewrites the embedded server's files, and then
records the format. Each step can run again and only changes what still holds what it
read, so an upgrade interrupted is finished by running it again, beside running
processes of this version. ``dry_run`` reports what it would change and writes nothing.

The steps run whatever format the data records: a 0.1 process that writes after the
upgrade (a rollback, a worker left running) checkpoints the retired channels again under
a record that already says 2, and an upgrade that trusted the record reported "stripped
0" over them. Running it again finds them; the log says a release before 0.2 wrote them.

Example:
    >>> from langchain_tiered_memory.upgrade import upgrade
    >>> upgrade(memory, dry_run=True)["from_format"]  # doctest: +SKIP
    1
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from langchain_tiered_memory import privacy
from langchain_tiered_memory._steps import drive
from langchain_tiered_memory.backend.format import FORMAT, read_format, write_format
from langchain_tiered_memory.backend.keys import keys_of
from langchain_tiered_memory.capabilities import Capability
from langchain_tiered_memory.errors import DataFormatError
from langchain_tiered_memory.memory import TieredMemory
from langchain_tiered_memory.stores.directory import RedisUserDirectory

__all__ = ["aupgrade", "upgrade"]

logger = logging.getLogger(__name__)


def upgrade(memory: TieredMemory, *, dry_run: bool = False) -> dict[str, Any]:
    """Upgrade the memory's data to :data:`FORMAT`; return what changed (or would):
    ``from_format`` (``None``: no data yet), ``to_format``, ``threads``, ``fields`` (the
    stored values stripped), ``users_indexed``, ``dry_run``. The checkpoints are scanned
    at every format, the recorded one too (a 0.1 process may have written after an
    upgrade: see the module).

    Raises:
        DataFormatError: the data is in a newer format than this package knows.
        UnsupportedOperationError: the memory is not on Redis (nothing to upgrade).
    """
    connection = memory.tiers.require(Capability.UPGRADE, "upgrade")
    keys = keys_of(memory.history)
    found = drive(read_format(connection.sync, keys))
    report: dict[str, Any] = {
        "from_format": found,
        "to_format": FORMAT,
        "threads": 0,
        "fields": 0,
        "users_indexed": 0,
        "dry_run": dry_run,
    }
    if found is not None and found > FORMAT:
        # read_format does not refuse it (check_format, the memory's first command, does)
        raise DataFormatError(
            f"the data is in format {found}, newer than format {FORMAT}: upgrade the package "
            "that runs the upgrade; nothing was changed."
        )
    if found is not None:
        # every format, the recorded one too: what a 0.1 process wrote after an upgrade
        # (a rollback, a worker left running) is under a record that says 2 already
        saver = memory.checkpointer()
        for thread_id in saver.list_threads():
            changed = saver.strip_retired(thread_id, dry_run=dry_run)
            report["threads"] += bool(changed)
            report["fields"] += changed
        directory = RedisUserDirectory.of(memory.history)
        if directory is not None and not dry_run:
            report["users_indexed"] = directory.reindex()
        if found == FORMAT and report["fields"]:
            logger.warning(
                "data recorded as format %d holds %d values in %d threads written by a "
                "release before 0.2 (a process of it ran after the upgrade: a rollback, "
                "or a worker left running)%s; stop every such process, or run the upgrade "
                "again after it",
                FORMAT,
                report["fields"],
                report["threads"],
                " (dry run: left as they are)" if dry_run else ", stripped now",
            )
    if not dry_run:
        if report["fields"]:
            drive(privacy.compact(memory.tiers))  # the stripped values off disk too
        drive(write_format(connection.sync, keys))
    return report


async def aupgrade(memory: TieredMemory, *, dry_run: bool = False) -> dict[str, Any]:
    """Async :func:`upgrade` (an operator's rare call: run in a worker thread)."""
    return await asyncio.to_thread(upgrade, memory, dry_run=dry_run)

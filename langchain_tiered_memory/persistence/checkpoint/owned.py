"""Thread ownership where LangGraph writes: the one check every checkpointer gets.

A thread belongs to the user of its first turn. LangGraph reads a thread (``get_tuple``)
before it writes the run's input into it, so the check sits at that read: a run of one user
on another user's thread is refused before anything of it reaches the owner's checkpoints,
whichever door started the run (the prebuilt graph, ``create_agent`` with the middleware,
the graph as a subgraph of the app's own, ``update_state``, the LangGraph server) and
whichever saver holds the thread. ``list`` (``get_state_history``) is checked the same way.

The rule itself is :meth:`~langchain_tiered_memory.stores.history.ThreadGuard.admission`;
:class:`OwnedSaver` wraps any ``BaseCheckpointSaver`` in it, and the memory's own
``RedisSaver`` calls it from its reads (:func:`run_of` tells both whose run a read is).
"""

from __future__ import annotations

from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Collection,
    Iterator,
    Mapping,
    Sequence,
)
from typing import Any, Protocol, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)

from langchain_tiered_memory._ids import run_user_id, validate_user_id
from langchain_tiered_memory._steps import Plan, Step, adrive, call, drive
from langchain_tiered_memory.errors import MissingUserIdError

__all__ = [
    "OWNER_METADATA_KEY",
    "OwnedSaver",
    "ThreadOwners",
    "admission",
    "aholds_thread",
    "holds_thread",
    "is_guarded",
    "owned_put",
    "run_of",
]

# Who wrote a checkpoint, in its metadata: erasure finds a user's threads in any saver by
# it (``list(None, filter=...)``) when the user's own records of them expired (user_ttl)
OWNER_METADATA_KEY = "tiered_memory_user"

# LangGraph puts the run's Runtime (with its context) in the config under this key
_RUNTIME = "__pregel_runtime"


class ThreadOwners(Protocol):
    """Who owns a thread (a ``ThreadGuard``): the plan that admits a run or raises."""

    def admission(
        self, user_id: str, thread_id: str, has_state: Step, *, claim: bool = True
    ) -> Plan[None]:
        """Raise ``ThreadOwnershipError`` unless the user's run may use the thread."""

    def copied(self, source_id: str, target_id: str) -> Plan[None]:
        """Make the copy of a thread its source's owner's (before the copy is written)."""


def run_of(config: RunnableConfig | None) -> tuple[str, str] | None:
    """``(user, thread)`` of a read that a run of a named user makes on a thread's root
    namespace (a subgraph's reads share its parent's thread, checked at the parent's);
    ``None`` when the config names no thread, or no user outside a run (the app reading
    its threads: ``get_state``, ``list``).

    Raises:
        MissingUserIdError: a run (its config carries LangGraph's ``Runtime``) on a thread
            names no usable user: refused here, before LangGraph writes the run's input
            into the thread (a guest's message reached the owner's next turn).
        ServedUserIdMismatchError: a LangGraph server's run names a user other than the
            authenticated one (issue 77: bob's run through an assistant naming alice was
            recorded as hers before the graph refused it).
    """
    configurable = (config or {}).get("configurable") or {}
    thread = configurable.get("thread_id")
    if configurable.get("checkpoint_ns") or thread is None:
        return None
    runtime = configurable.get(_RUNTIME)
    # the graph's rule (the server's identity first; a run naming another user refused),
    # here at the read that records the thread's owner, before anything is written
    user = run_user_id(getattr(runtime, "context", None), configurable)
    if runtime is not None and user is not None:
        user = validate_user_id(user)  # "" or a non-string: the load's own error, here first
    if not isinstance(user, str) or not user:
        if runtime is not None:
            raise MissingUserIdError(
                f"a run on thread {str(thread)[:64]!r} names no user: nothing was written. "
                "Pass context={'user_id': ...} (or config={'configurable': {'user_id': "
                "...}}) with every run on a thread."
            )
        return None
    return user, str(thread)


def owned_put(
    config: RunnableConfig, metadata: CheckpointMetadata
) -> tuple[RunnableConfig, CheckpointMetadata]:
    """The config and metadata a saver that checks owners writes a checkpoint with: the
    metadata stamped with the user of the run (:data:`OWNER_METADATA_KEY`) on a thread's
    root namespace, and the config without that key in its ``metadata`` or
    ``configurable``. A saver merges those into a checkpoint's metadata
    (``get_checkpoint_metadata``): a run whose config said ``{"tiered_memory_user":
    "alice"}`` had its subgraph checkpoints stamped as alice's, and her export listed and
    her erasure deleted that thread (issue 76 item 7). The stamp comes from the run alone.

    An ``update_state`` write (``metadata["source"] == "update"``) that names no user is
    refused: the app's edit must be the owner's (its read was admitted as theirs), never a
    write anyone's config can make into the owner's thread.

    Raises:
        MissingUserIdError: the update names no usable user.
    """
    configurable = config.get("configurable") or {}
    stamped: dict[str, Any] = {k: v for k, v in metadata.items() if k != OWNER_METADATA_KEY}
    clean: dict[str, Any] = {**config}
    for part in ("metadata", "configurable"):
        held = config.get(part)
        if isinstance(held, Mapping) and OWNER_METADATA_KEY in held:
            clean[part] = {k: v for k, v in held.items() if k != OWNER_METADATA_KEY}
    run = run_of(config)
    if run is not None:
        stamped[OWNER_METADATA_KEY] = run[0]
    elif (
        metadata.get("source") == "update"
        and not configurable.get("checkpoint_ns")
        and configurable.get("thread_id") is not None
    ):
        raise MissingUserIdError(
            "update_state on a thread names no user: nothing was written. Pass "
            "config={'configurable': {'thread_id': ..., 'user_id': <the thread's owner>}}."
        )
    return cast(RunnableConfig, clean), cast(CheckpointMetadata, stamped)


def admission(
    owners: ThreadOwners | None,
    config: RunnableConfig | None,
    has_state: Callable[[str], bool],
    ahas_state: Callable[[str], Awaitable[bool]],
    *,
    claim: bool,
) -> Plan[None]:
    """The plan that admits the run of a read to its thread (:func:`run_of`), or raises;
    ``has_state``/``ahas_state`` tell whether the saver holds a thread (asked only for a
    thread with no owner). Nothing to do for a read that names no user.
    """
    if owners is not None and (run := run_of(config)) is not None:
        user, thread = run
        yield from owners.admission(user, thread, call(has_state, ahas_state, thread), claim=claim)


def _latest(thread_id: str) -> RunnableConfig:
    # names no user: a guarded saver reads it without admitting anyone (run_of)
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}


def holds_thread(savers: Sequence[BaseCheckpointSaver[Any]], thread_id: str) -> bool:
    """Whether any of ``savers`` holds state of the thread: the ``has_state`` of
    ``ThreadGuard.admission`` (a guard asks its saver; the memory's load, its attached
    checkpointers).
    """
    return any(saver.get_tuple(_latest(thread_id)) is not None for saver in savers)


async def aholds_thread(savers: Sequence[BaseCheckpointSaver[Any]], thread_id: str) -> bool:
    """Async :func:`holds_thread`."""
    for saver in savers:
        if await saver.aget_tuple(_latest(thread_id)) is not None:
            return True
    return False


class OwnedSaver(BaseCheckpointSaver[Any]):
    """Any ``BaseCheckpointSaver``, refusing a run on another user's thread at its first
    read, before LangGraph writes the run's input (``memory.checkpointer(saver)``).

    Every other call goes to the saver as it is; ``saver`` is the wrapped one.

    Example:
        >>> from langgraph.checkpoint.memory import InMemorySaver
        >>> saver = memory.checkpointer(InMemorySaver())  # doctest: +SKIP
        >>> agent = create_agent(model, middleware=[TieredMemoryMiddleware(memory)],
        ...                      checkpointer=saver)  # doctest: +SKIP
    """

    checks_thread_owners = True

    def __init__(self, saver: BaseCheckpointSaver[Any], owners: ThreadOwners) -> None:
        super().__init__(serde=saver.serde)
        self.saver = saver
        self.owners = owners

    def __getattr__(self, name: str) -> Any:
        # what the wrapped saver has beyond the interface (setup(), conn, ...)
        if name in ("saver", "owners"):
            raise AttributeError(name)
        return getattr(self.saver, name)

    @property
    def config_specs(self) -> list[Any]:  # type: ignore[override]
        """The saver's own."""
        return list(self.saver.config_specs)

    # ----- the check -----

    def _has_state(self, thread_id: str) -> bool:
        return holds_thread([self.saver], thread_id)

    async def _ahas_state(self, thread_id: str) -> bool:
        return await aholds_thread([self.saver], thread_id)

    def _admission(self, config: RunnableConfig | None, *, claim: bool) -> Plan[None]:
        return admission(self.owners, config, self._has_state, self._ahas_state, claim=claim)

    # ----- reads: checked -----

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The saver's ``get_tuple``, after the run's user is admitted to the thread."""
        drive(self._admission(config, claim=True))
        return self.saver.get_tuple(config)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async :meth:`get_tuple`."""
        await adrive(self._admission(config, claim=True))
        return await self.saver.aget_tuple(config)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """The saver's ``list``, after the user's read is admitted (nothing is claimed)."""
        drive(self._admission(config, claim=False))
        return self.saver.list(config, filter=filter, before=before, limit=limit)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Async :meth:`list`."""
        await adrive(self._admission(config, claim=False))
        async for item in self.saver.alist(config, filter=filter, before=before, limit=limit):
            yield item

    # ----- writes and the rest: as the saver does them -----

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """The saver's ``put``, the metadata stamped with the run's user (an
        ``update_state`` must name one: :func:`owned_put`).
        """
        config, metadata = owned_put(config, metadata)
        return self.saver.put(config, checkpoint, metadata, new_versions)

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Async :meth:`put`."""
        config, metadata = owned_put(config, metadata)
        return await self.saver.aput(config, checkpoint, metadata, new_versions)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """The saver's ``put_writes``."""
        self.saver.put_writes(config, writes, task_id, task_path)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Async :meth:`put_writes`."""
        await self.saver.aput_writes(config, writes, task_id, task_path)

    def delete_thread(self, thread_id: str) -> None:
        """The saver's ``delete_thread``."""
        self.saver.delete_thread(thread_id)

    async def adelete_thread(self, thread_id: str) -> None:
        """Async :meth:`delete_thread`."""
        await self.saver.adelete_thread(thread_id)

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """The saver's ``delete_for_runs``."""
        self.saver.delete_for_runs(run_ids)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Async :meth:`delete_for_runs`."""
        await self.saver.adelete_for_runs(run_ids)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """The saver's ``copy_thread``, the copy its source's owner's (recorded first)."""
        drive(self.owners.copied(str(source_thread_id), str(target_thread_id)))
        self.saver.copy_thread(source_thread_id, target_thread_id)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Async :meth:`copy_thread`."""
        await adrive(self.owners.copied(str(source_thread_id), str(target_thread_id)))
        await self.saver.acopy_thread(source_thread_id, target_thread_id)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """The saver's ``prune``."""
        self.saver.prune(thread_ids, strategy=strategy)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Async :meth:`prune`."""
        await self.saver.aprune(thread_ids, strategy=strategy)

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, Any]:
        """The saver's own walk (a run's reads after its admitted first one)."""
        return self.saver.get_delta_channel_history(config=config, channels=channels)

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, Any]:
        """Async :meth:`get_delta_channel_history`."""
        return await self.saver.aget_delta_channel_history(config=config, channels=channels)

    def get_next_version(self, current: Any, channel: Any) -> Any:
        """The saver's own versions."""
        return self.saver.get_next_version(current, channel)

    def with_allowlist(self, extra_allowlist: Collection[tuple[str, ...]]) -> OwnedSaver:
        """The saver's ``with_allowlist`` (LangGraph calls it at compile), still guarded."""
        inner = self.saver.with_allowlist(extra_allowlist)
        return self if inner is self.saver else OwnedSaver(inner, self.owners)


def is_guarded(saver: object) -> bool:
    """Whether ``saver`` checks thread owners at its reads (an :class:`OwnedSaver`, the
    memory's own ``RedisSaver``, or a wrapper that forwards attributes to one, as the
    LangGraph server's checkpointer adapter does).
    """
    return getattr(saver, "checks_thread_owners", False) is True

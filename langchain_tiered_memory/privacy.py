"""Privacy across every tier: erase or export one user, or one thread, and nothing else.

The plans (``_steps``) behind ``TieredMemory.forget_user``/``forget_thread``/``export_user``
and the rest of its privacy methods, which run them sync or async. They compose the
memory's stores, a LangGraph checkpointer and a LangGraph store, each of which sends its
own commands. A user's store namespaces are those
a template declares (``"{user_id}"`` at a position), never any label equal to the id.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, TypeGuard

from langchain_core.documents import Document
from langchain_core.load import dumpd
from langchain_core.messages import messages_to_dict
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.store.base import BaseStore, Item, PutOp

from langchain_tiered_memory._ids import validate_thread_id, validate_user_id
from langchain_tiered_memory._steps import Plan, Step, call
from langchain_tiered_memory.persistence.checkpoint.owned import OWNER_METADATA_KEY
from langchain_tiered_memory.persistence.messages import messages_at
from langchain_tiered_memory.persistence.store import RedisStore
from langchain_tiered_memory.stores.attachments import Attachments
from langchain_tiered_memory.stores.directory import RedisUserDirectory
from langchain_tiered_memory.tiers import DEFAULT_STORE_NAMESPACES, Tiers

logger = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_STORE_NAMESPACES",
    "check_namespaces",
    "compact",
    "delete_items",
    "delete_tags",
    "edit_item",
    "export_user",
    "forget_thread",
    "forget_user",
]

# list_namespaces / search page size when collecting a user's store items
_STORE_PAGE = 1000

_Stores = list[tuple[BaseStore, tuple[tuple[str, ...], ...]]]


def forget_user(
    tiers: Tiers,
    user_id: str,
    *,
    checkpointer: BaseCheckpointSaver | None = None,
    store: BaseStore | None = None,
    store_namespaces: Sequence[tuple[str, ...]] | None = None,
) -> Plan[dict[str, int]]:
    """Erase every tier of the user; return how much of each was removed.

    The work behind :meth:`TieredMemory.forget_user`, which documents it.
    """
    savers, stores = tiers.reaching(
        checkpointer=checkpointer, store=store, store_namespaces=store_namespaces
    )
    return (yield from _forget_user_plan(tiers, user_id, savers, stores))


def forget_thread(
    tiers: Tiers,
    user_id: str,
    thread_id: str,
    *,
    checkpointer: BaseCheckpointSaver | None = None,
) -> Plan[dict[str, int]]:
    """Erase one conversation thread of the user; return how much was removed.

    The work behind :meth:`TieredMemory.forget_thread`, which documents it.
    """
    savers, _ = tiers.reaching(checkpointer=checkpointer)
    return (yield from _forget_thread_plan(tiers, user_id, thread_id, savers))


def export_user(
    tiers: Tiers,
    user_id: str,
    *,
    checkpointer: BaseCheckpointSaver | None = None,
    store: BaseStore | None = None,
    store_namespaces: Sequence[tuple[str, ...]] | None = None,
) -> Plan[dict[str, Any]]:
    """A JSON-serializable copy of every tier of the user.

    The work behind :meth:`TieredMemory.export_user`, which documents it.
    """
    savers, stores = tiers.reaching(
        checkpointer=checkpointer, store=store, store_namespaces=store_namespaces
    )
    return (yield from _export_plan(tiers, user_id, savers, stores))


def _retract_sources(tiers: Tiers, user_id: str, ids: Sequence[str]) -> Plan[None]:
    """The messages the items were made from (their ``source_positions``), and the
    replies to them, stop being carried into new threads as current: the user deleted or
    edited what the memory made of them (until they say it again, in a new message).
    """
    wanted = {str(i) for i in ids}
    summaries = tiers.summaries
    items = yield call(summaries.get_all, summaries.aget_all, user_id)
    positions = sorted(
        {
            p
            for d in items
            if str(d.id) in wanted
            for p in (d.metadata.get("source_positions") or [])
            if isinstance(p, int)
        }
    )
    if positions:
        yield call(tiers.history.retract, tiers.history.aretract, user_id, positions)


def delete_items(tiers: Tiers, user_id: str, ids: Sequence[str]) -> Plan[int]:
    """The plan of ``TieredMemory.delete_summaries``: the items' source messages retracted,
    the items, then the server's files.
    """
    user_id = validate_user_id(user_id)
    summaries = tiers.summaries
    yield from _retract_sources(tiers, user_id, ids)
    return int(
        (
            yield from _compacted(
                tiers, call(summaries.delete, summaries.adelete, user_id, list(ids))
            )
        )
    )


def edit_item(tiers: Tiers, user_id: str, item_id: str, text: str) -> Plan[bool]:
    """The plan of ``TieredMemory.update_summary``: one in-place write, then the server's
    files (the replaced text is kept on the item, not in the files' old records).
    """
    user_id = validate_user_id(user_id)
    summaries = tiers.summaries
    yield from _retract_sources(tiers, user_id, [str(item_id)])
    update = call(summaries.update, summaries.aupdate, user_id, str(item_id), text)
    return bool((yield from _compacted(tiers, update)))


def delete_tags(tiers: Tiers, user_id: str, names: Sequence[str]) -> Plan[int]:
    """The plan of ``TieredMemory.delete_user_tags``: the tags, then the server's files."""
    user_id = validate_user_id(user_id)
    tags = tiers.tags
    return int(
        (yield from _compacted(tiers, call(tags.delete, tags.adelete, user_id, list(names))))
    )


def _compacted(tiers: Tiers, delete: Step) -> Plan[Any]:
    """Run one delete or edit; when it changed anything, rewrite the server's files."""
    changed = yield delete
    if changed:
        yield from compact(tiers)
    return changed


def compact(tiers: Tiers) -> Plan[None]:
    """After a delete: the server's files rewritten, so the deleted data is off disk."""
    if tiers.disk is not None:
        yield call(tiers.disk.compact, tiers.disk.acompact)


# ----- the plans (``_steps``): one body for the sync and the async form -----


def _recorded(
    tiers: Tiers, savers: list[BaseCheckpointSaver], stores: _Stores
) -> Plan[tuple[_Stores, list[str]]]:
    """``stores`` with what every process attached to the memory (the record beside the
    data), and what they attached that this process cannot reach.
    """
    record = tiers.attachment_record()
    recorded = Attachments() if record is None else (yield call(record.read, record.aread))
    stores, unreached = tiers.with_recorded(savers, stores, recorded)
    if unreached:
        logger.warning(
            "the app attached %s to this memory, which this process does not hold: its data "
            "there is not reached; erase it from the app's process (memory.forget_user "
            "there), or attach the same savers and stores here (a LangGraph server's "
            "threads: memory.attach(server=LangGraphServerThreads(url, headers=...)))",
            ", ".join(unreached),
        )
    return stores, unreached


def _forget_user_plan(
    tiers: Tiers, user_id: str, savers: list[BaseCheckpointSaver], stores: _Stores
) -> Plan[dict[str, int]]:
    user_id = validate_user_id(user_id)
    stores, unreached = yield from _recorded(tiers, savers, stores)
    # only the threads the user owns: another user's thread is never touched
    threads = yield from _threads_of(tiers, user_id, savers)
    # a LangGraph server's threads of the user (by its owner stamp: copies too), through
    # its API; found before anything is deleted, as the stores' items below
    served = []
    for server in tiers.servers:
        served.append((server, (yield call(server.threads_of, server.athreads_of, user_id))))
    # other stores' items are collected before anything is deleted: a read that fails
    # then leaves the user whole, not half erased
    found: list[list[Item]] = []
    for store, templates in stores:
        items: list[Item] = []
        if _generic(store) or _overlapping(user_id, templates):
            items = yield from _store_items(store, user_id, templates)
        found.append(items)
    for saver in savers:
        for thread_id in threads:
            yield call(saver.delete_thread, saver.adelete_thread, thread_id)
    server_threads = 0
    for server, ids in served:
        for thread_id in ids:
            yield call(server.delete, server.adelete, thread_id)
        server_threads += len(ids)
    store_items = 0
    for (store, templates), items in zip(stores, found, strict=True):
        if isinstance(store, RedisStore) and not _overlapping(user_id, templates):
            for prefix in _user_prefixes(user_id, templates):
                store_items += yield call(store.purge, store.apurge, prefix)
        elif items:
            yield call(store.batch, store.abatch, [PutOp(i.namespace, i.key, None) for i in items])
            store_items += len(items)
    yield call(tiers.history.release_threads, tiers.history.arelease_threads, user_id, threads)
    # the history's positions start again (no counter is left of the user): a summarizer
    # that read positions before this erasure must not store what it made of them after
    # it, so every fence read so far is invalidated first
    summaries = tiers.summaries
    yield call(summaries.rotate_fence, summaries.arotate_fence, user_id)
    removed = {
        "threads": len(threads),
        "history": (yield call(tiers.history.erase, tiers.history.aerase, user_id)),
        "tags": (yield call(tiers.tags.clear, tiers.tags.aclear, user_id)),
        "summaries": (yield call(tiers.summaries.clear, tiers.summaries.aclear, user_id)),
    }
    if stores:
        removed["store_items"] = store_items
    if served:
        removed["server_threads"] = server_threads
    if unreached:  # not a complete erasure: said, not hidden
        removed["unreached"] = len(unreached)
    yield from tiers.turn.forget(user_id)
    # the user's member of the console's directory, on each Redis that indexed them
    for directory in _directories(tiers):
        yield call(directory.forget, directory.aforget, user_id)
    if tiers.queue is not None:
        # its entry, the pending index, the watermark copy
        yield call(tiers.queue.forget, tiers.queue.aforget, user_id)
    yield from compact(tiers)
    return removed


def _directories(tiers: Tiers) -> list[RedisUserDirectory]:
    """The directories of the tiers' Redis stores, one per Redis and prefix."""
    out: dict[tuple[int, str], RedisUserDirectory] = {}
    for store in (tiers.history, tiers.tags):
        directory = RedisUserDirectory.of(store)
        if directory is not None:
            out.setdefault((id(directory.connection), directory.keys.prefix), directory)
    return list(out.values())


def _forget_thread_plan(
    tiers: Tiers, user_id: str, thread_id: str, savers: list[BaseCheckpointSaver]
) -> Plan[dict[str, int]]:
    user_id = validate_user_id(user_id)
    thread_id = validate_thread_id(thread_id) or ""
    checkpoints = 0
    if (yield from _owns(tiers, user_id, thread_id, savers)):
        config = _thread_config(thread_id, any_namespace=True)
        for saver in savers:
            checkpoints += yield call(_count, _acount, saver, config)
            yield call(saver.delete_thread, saver.adelete_thread, thread_id)
        yield call(
            tiers.history.release_threads, tiers.history.arelease_threads, user_id, [thread_id]
        )
    messages = yield call(
        tiers.history.forget_thread, tiers.history.aforget_thread, user_id, thread_id
    )
    # a summarization that read the thread before this erasure must not store it after;
    # one that stored before is caught below by its provenance
    yield call(tiers.summaries.rotate_fence, tiers.summaries.arotate_fence, user_id)
    derived = _derived_only_from(
        (yield call(tiers.summaries.get_all, tiers.summaries.aget_all, user_id)), thread_id
    )
    removed = {
        "messages": messages,
        "summaries": (
            yield call(tiers.summaries.delete, tiers.summaries.adelete, user_id, derived)
        ),
        "checkpoints": checkpoints,
    }
    if tiers.servers:  # the server's thread, if the server keeps it as the user's
        removed["server_threads"] = 0
        for server in tiers.servers:
            if (yield call(server.owner, server.aowner, thread_id)) == user_id:
                yield call(server.delete, server.adelete, thread_id)
                removed["server_threads"] += 1
    # the items other threads said too stay, without the forgotten thread among their
    # sources; so do the logged tag changes (forgetting a thread deletes no tag)
    summaries, tags = tiers.summaries, tiers.tags
    yield call(summaries.drop_thread, summaries.adrop_thread, user_id, thread_id)
    yield call(tags.drop_thread, tags.adrop_thread, user_id, thread_id)
    yield from compact(tiers)
    return removed


def _export_plan(
    tiers: Tiers, user_id: str, savers: list[BaseCheckpointSaver], stores: _Stores
) -> Plan[dict[str, Any]]:
    user_id = validate_user_id(user_id)
    stores, unreached = yield from _recorded(tiers, savers, stores)
    first, messages = yield call(tiers.history.since, tiers.history.asince, user_id, 0)
    threads = yield from _threads_of(tiers, user_id, savers)
    extra: dict[str, Any] = {}
    if savers:
        states = []
        for thread_id in threads:
            states.append((yield from _thread_export(savers, thread_id)))
        extra["thread_states"] = states
    if tiers.servers:
        extra["server_threads"] = []
        for server in tiers.servers:
            for thread_id in (yield call(server.threads_of, server.athreads_of, user_id)):
                record = yield call(server.export, server.aexport, thread_id)
                extra["server_threads"].append(_jsonable(record))
    if stores:
        extra["store"] = []
        for store, templates in stores:
            items = yield from _store_items(store, user_id, templates)
            extra["store"] += [_jsonable(i.dict()) for i in items]
    summaries = yield call(tiers.summaries.get_all, tiers.summaries.aget_all, user_id)
    return {
        "user_id": user_id,
        "tags": (yield call(tiers.tags.get_all, tiers.tags.aget_all, user_id)),
        "tag_history": (yield call(tiers.tags.history, tiers.tags.ahistory, user_id)),
        "threads": threads,
        "history": {"first_position": first, "messages": messages_to_dict(messages)},
        "summaries": [{"id": d.id, "text": d.page_content, **d.metadata} for d in summaries],
        "watermark": (
            yield call(tiers.summaries.get_watermark, tiers.summaries.aget_watermark, user_id)
        ),
        **extra,
        **({"unreached": unreached} if unreached else {}),
    }


def _thread_export(savers: list[BaseCheckpointSaver], thread_id: str) -> Plan[dict[str, Any]]:
    """The latest state of a thread, from the first checkpointer that holds it."""
    config = _thread_config(thread_id)
    for saver in savers:
        found = yield call(saver.get_tuple, saver.aget_tuple, config)
        if found is None:
            continue
        state = _thread_state(thread_id, found)
        stored = found.checkpoint["channel_values"].get("messages")
        if not isinstance(stored, list):
            # the prebuilt graph's messages are a DeltaChannel: a checkpoint holds what
            # a step wrote (or now and then a snapshot), not the thread; rebuilt from
            # the saver's writes (issue 32 item 5: the export had no messages)
            history = yield call(
                saver.get_delta_channel_history,
                saver.aget_delta_channel_history,
                config=found.config,
                channels=["messages"],
            )
            rebuilt = messages_at(history.get("messages") or {})
            if rebuilt:
                state["values"]["messages"] = _jsonable(rebuilt)
        return state
    return _thread_state(thread_id, None)


def _stamped(checkpointer: BaseCheckpointSaver, user_id: str) -> list[str]:
    found = checkpointer.list(None, filter={OWNER_METADATA_KEY: user_id})
    return list(dict.fromkeys(str(c.config["configurable"]["thread_id"]) for c in found))


async def _astamped(checkpointer: BaseCheckpointSaver, user_id: str) -> list[str]:
    found = checkpointer.alist(None, filter={OWNER_METADATA_KEY: user_id})
    return list(dict.fromkeys([str(c.config["configurable"]["thread_id"]) async for c in found]))


def _threads_of(tiers: Tiers, user_id: str, savers: list[BaseCheckpointSaver]) -> Plan[list[str]]:
    """The threads the user owns: their record, and with ``user_ttl`` (the record may have
    expired while a thread lives on: a read refreshed it, or a foreign saver never
    expires) every thread a saver holds a checkpoint of theirs in (the owner stamp,
    :data:`OWNER_METADATA_KEY`; a full read of each saver, as erasure may afford).
    """
    threads: list[str] = yield call(tiers.history.threads, tiers.history.athreads, user_id)
    if tiers.user_ttl is not None:
        for saver in savers:
            found = yield call(_stamped, _astamped, saver, user_id)
            threads += [t for t in found if t not in threads]
    return threads


def _owns(
    tiers: Tiers, user_id: str, thread_id: str, savers: list[BaseCheckpointSaver]
) -> Plan[bool]:
    """Whether the user owns the thread: their record, or (``user_ttl``: the record may
    have expired first) the owner stamp of its latest checkpoint in a saver.
    """
    if thread_id in (yield call(tiers.history.threads, tiers.history.athreads, user_id)):
        return True
    if tiers.user_ttl is not None:
        for saver in savers:
            latest = yield call(saver.get_tuple, saver.aget_tuple, _thread_config(thread_id))
            if latest is not None and latest.metadata.get(OWNER_METADATA_KEY) == user_id:
                return True
    return False


def _count(checkpointer: BaseCheckpointSaver, config: RunnableConfig) -> int:
    return sum(1 for _ in checkpointer.list(config))


async def _acount(checkpointer: BaseCheckpointSaver, config: RunnableConfig) -> int:
    return len([c async for c in checkpointer.alist(config)])


def check_namespaces(templates: Sequence[tuple[str, ...]]) -> None:
    """Raise ``ValueError`` for a namespace template without a ``"{user_id}"`` label."""
    _user_prefixes("x", templates)


def _user_prefixes(user_id: str, templates: Sequence[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """The namespace prefixes of ``user_id``: each template with ``"{user_id}"`` filled."""
    if isinstance(templates, tuple) and templates and isinstance(templates[0], str):
        templates = [templates]  # type: ignore[list-item]  # one template given bare
    prefixes = []
    for template in templates:
        if not any("{user_id}" in label for label in template):
            raise ValueError(
                f"store namespace template {template!r} has no '{{user_id}}' label: it would "
                "match other users' items. Write it as e.g. ('memories', '{user_id}')."
            )
        prefix = tuple(label.replace("{user_id}", user_id) for label in template)
        if any("." in label or "\x00" in label for label in prefix):
            # LangGraph refuses a period or a NUL byte in a namespace label (on put as on
            # search), so no store holds items there: nothing to erase or export, and the
            # other tiers must not fail for it (an e-mail address is a valid user id here).
            logger.info("store namespace %r cannot exist (a label LangGraph refuses)", prefix)
            continue
        prefixes.append(prefix)
    return list(dict.fromkeys(prefixes))


def _under(page: Sequence[tuple[str, ...]], prefix: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The namespaces of ``page`` that start with ``prefix`` label for label: a store reads
    ``"*"`` in a prefix as any label, and a user id may be ``"*"``.
    """
    return [tuple(n) for n in page if tuple(n[: len(prefix)]) == prefix]


def _generic(store: BaseStore | None) -> TypeGuard[BaseStore]:
    """Whether ``store`` is another ``BaseStore`` (erased item by item, not by key)."""
    return store is not None and not isinstance(store, RedisStore)


def _read_as_another(
    namespace: tuple[str, ...], user_id: str, templates: Sequence[tuple[str, ...]]
) -> bool:
    """Whether the template that reads ``namespace`` (of those that match it, the one
    with the longest fixed head: the most specific) reads it as another user's. With the
    layouts ``("{user_id}",)`` and ``("memories", "{user_id}")`` declared, the user
    "memories" has the prefix ``("memories",)``, under which ``("memories", "alice")`` is
    alice's.
    """
    best = -1
    owner = None
    for template in templates:
        if "{user_id}" not in template:
            continue
        at = template.index("{user_id}")
        if at > best and len(namespace) > at and namespace[:at] == template[:at]:
            best, owner = at, namespace[at]
    return owner is not None and owner != user_id


def _overlapping(user_id: str, templates: Sequence[tuple[str, ...]]) -> bool:
    """Whether a namespace under one of the user's prefixes may be read as another
    user's (a prefix of the user's is a head of another template, or longer than it):
    then the user's namespaces are erased one by one, never by prefix.
    """
    heads = [t[: t.index("{user_id}")] for t in templates if "{user_id}" in t]
    for prefix in _user_prefixes(user_id, templates):
        for head in heads:
            n = min(len(prefix), len(head))
            if prefix[:n] == head[:n] and (
                len(prefix) <= len(head) or prefix[len(head)] != user_id
            ):
                return True
    return False


def _store_items(
    store: BaseStore, user_id: str, templates: Sequence[tuple[str, ...]]
) -> Plan[list[Item]]:
    """Every item of every store namespace under one of the user's prefixes that no
    template reads as another user's.
    """
    namespaces: list[tuple[str, ...]] = []
    for prefix in _user_prefixes(user_id, templates):
        offset = 0
        while page := (
            yield call(
                store.list_namespaces,
                store.alist_namespaces,
                prefix=prefix,
                limit=_STORE_PAGE,
                offset=offset,
            )
        ):
            namespaces += [
                n for n in _under(page, prefix) if not _read_as_another(n, user_id, templates)
            ]
            offset += len(page)
    items: list[Item] = []
    for namespace in dict.fromkeys(namespaces):
        offset = 0
        while found := (
            yield call(store.search, store.asearch, namespace, limit=_STORE_PAGE, offset=offset)
        ):
            items += [i for i in found if tuple(i.namespace) == namespace]
            offset += len(found)
    return items


def _thread_config(thread_id: str, *, any_namespace: bool = False) -> RunnableConfig:
    if any_namespace:  # list() over every namespace of the thread (subgraphs too)
        return {"configurable": {"thread_id": thread_id}}
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}


def _thread_state(thread_id: str, found: CheckpointTuple | None) -> dict[str, Any]:
    if found is None:
        return {"thread_id": thread_id, "checkpoint_id": None, "values": {}}
    return {
        "thread_id": thread_id,
        "checkpoint_id": found.checkpoint["id"],
        "ts": found.checkpoint["ts"],
        "values": _jsonable(found.checkpoint["channel_values"]),
    }


def _jsonable(value: Any) -> Any:
    """JSON-ready data: LangChain objects (messages, ...) as their serialized form."""
    return dumpd(value)


def _derived_only_from(items: Sequence[Document], thread_id: str) -> list[str]:
    """The items ``thread_id`` may be the only source of: those from it alone, and those
    no message carried (a paraphrase, attributed to its whole batch) whose batch held it.
    """
    out = []
    for d in items:
        # items from before per-item provenance (or an app's own) say "threads": the
        # console shows them as the item's threads, so erasure reads them the same way
        threads = d.metadata.get("source_threads", d.metadata.get("threads")) or []
        threads = threads if isinstance(threads, list) else [threads]
        batch = d.metadata.get("source_basis") == "batch"
        if d.id is not None and (threads == [thread_id] or (batch and thread_id in threads)):
            out.append(str(d.id))
    return out

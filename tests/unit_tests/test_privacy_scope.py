"""Erasure and export of a LangGraph store stay inside one user's namespaces.

The user id is matched at the position a namespace template declares, never as any label:
with LangMem's ``("memories", "{user_id}")``, a user whose id is ``"memories"`` (or ``"*"``,
a wildcard to ``list_namespaces``) owns ``("memories", "memories")`` and nothing else.
Run against LangGraph's ``InMemoryStore`` and this package's ``RedisStore``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from langchain_tiered_memory import TieredMemory

USERS = ["alice", "memories", "*", "bob"]


@pytest.fixture(params=["InMemoryStore", "RedisStore"])
def memory_and_store(
    request: pytest.FixtureRequest, embedded_memory: TieredMemory
) -> Iterator[tuple[TieredMemory, BaseStore]]:
    store = InMemoryStore() if request.param == "InMemoryStore" else embedded_memory.store()
    for user in USERS:
        store.put(("memories", user), "fact", {"content": f"{user} likes tea"})
        store.put(("memories", user, "work"), "job", {"content": f"{user} is a nurse"})
    # a namespace where a user id appears as a label but not at the template's position
    store.put(("memories", "shared", "alice"), "note", {"content": "not alice's"})
    store.put(("alice",), "profile", {"content": "LangGraph's (user_id, ...) layout"})
    yield embedded_memory, store


def contents(store: BaseStore) -> set[str]:
    return {
        i.value["content"]
        for ns in store.list_namespaces(limit=1000)
        for i in store.search(ns, limit=1000)
        if tuple(i.namespace) == tuple(ns)
    }


@pytest.mark.parametrize("user", ["memories", "*", "alice"])
def test_forget_and_export_touch_only_the_users_namespaces(
    memory_and_store: tuple[TieredMemory, BaseStore], user: str
) -> None:
    memory, store = memory_and_store
    before = contents(store)
    exported = memory.export_user(user, store=store)
    mine = {f"{user} likes tea", f"{user} is a nurse"}
    assert {i["value"]["content"] for i in exported["store"]} == mine
    removed = memory.forget_user(user, store=store)
    assert removed["store_items"] == 2
    assert contents(store) == before - mine


async def test_the_async_pair_has_the_same_scope(
    memory_and_store: tuple[TieredMemory, BaseStore],
) -> None:
    memory, store = memory_and_store
    before = contents(store)
    exported = await memory.aexport_user("memories", store=store)
    assert len(exported["store"]) == 2
    assert (await memory.aforget_user("memories", store=store))["store_items"] == 2
    assert contents(store) == before - {"memories likes tea", "memories is a nurse"}


def test_another_layout_is_declared_by_template(
    memory_and_store: tuple[TieredMemory, BaseStore],
) -> None:
    memory, store = memory_and_store
    removed = memory.forget_user("alice", store=store, store_namespaces=[("{user_id}",)])
    assert "LangGraph's (user_id, ...) layout" not in contents(store)
    if isinstance(store, InMemoryStore):
        assert removed["store_items"] == 1  # ("alice",) only
        assert "alice likes tea" in contents(store)
    else:
        # the memory's own store: its default layout is always the user's too (issue 43
        # item 7), the template given adds ("alice",)
        assert removed["store_items"] == 3
        assert "alice likes tea" not in contents(store)
    with pytest.raises(ValueError, match="no '\\{user_id\\}' label"):
        memory.forget_user("alice", store=store, store_namespaces=[("memories",)])

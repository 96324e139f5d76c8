"""Re-embedding a user's stored summary items with another embeddings model.

A store refuses items embedded by another model than its own (``EmbeddingsMismatchError``),
because vectors of two models must never be compared. Changing the model therefore means
converting every user's vectors, and the conversion must not strand anyone:

1. **Stage.** The new vectors go to a separate hash (``sum:revecs``), tagged in the user's
   meta hash with the target model (``re_model``). The items and their current vectors are
   not touched, so processes still configured with the old model keep serving the user.
   Pages of items are read with ``HSCAN`` and only ids with no staged vector are embedded,
   so a run killed at any point resumes where it stopped.
2. **Swap.** One script checks that every current item has a staged vector (items added
   meanwhile by the old model are embedded and staged first), drops staged vectors of items
   deleted meanwhile, and renames the staged hash over the vectors while it records the new
   model and size and bumps the user's ``gen`` (every process rebuilds its cached index).

From the swap on, the user is served by processes on the new model; one on the old model
gets ``EmbeddingsMismatchError`` for that user, so restart the app with the new model when
the command finishes (see the README, "Changing the embeddings model").
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np
from langchain_core.embeddings import Embeddings

from langchain_tiered_memory._steps import Plan, call
from langchain_tiered_memory.backend.connection import RedisConnection, as_text
from langchain_tiered_memory.embeddings import embeddings_model_id
from langchain_tiered_memory.errors import ConcurrentReembedError
from langchain_tiered_memory.stores.summaries.index import (
    Record,
    VectorDtype,
    encode_vector,
    parse_item_id,
    unit_rows,
)


class ReembedTarget(Protocol):
    """What a re-embedding needs of a summary store (``RedisSummaryStore`` has it); a
    protocol, so this module does not import the store that calls it.
    """

    connection: RedisConnection
    embeddings: Embeddings
    vector_dtype: VectorDtype

    def reembed_keys(self, user_id: str) -> tuple[str, str, str, str]:
        """The four keys the re-embedding scripts take."""

    def where(self, user_id: str) -> str:
        """How errors name the user's items."""

    def drop_cached(self, user_id: str) -> None:
        """Forget the user's index held in this process."""

    def users(self) -> list[str]:
        """Every user with items."""

    async def ausers(self) -> list[str]:
        """Async :meth:`users`."""


__all__ = ["Progress", "ReembedTarget", "UsersProgress", "reembed_plan", "reembed_users_plan"]

#: Called after each staged page with (items converted so far, items in all).
Progress = Callable[[int, int], None]
#: The same, with the user first: (user id, items converted, items in all).
UsersProgress = Callable[[str, int, int], None]

# KEYS: items, vecs, meta, revecs. ARGV: target model.
_BEGIN_LUA = """
if redis.call('HLEN', KEYS[1]) == 0 then return {'empty', 0} end
if redis.call('HGET', KEYS[3], 'model') == ARGV[1] then
  redis.call('DEL', KEYS[4])
  redis.call('HDEL', KEYS[3], 're_model')
  return {'done', redis.call('HLEN', KEYS[1])}
end
if redis.call('HGET', KEYS[3], 're_model') ~= ARGV[1] then
  -- a run for another target (or none) left vectors behind: they are not this model's
  redis.call('DEL', KEYS[4])
  redis.call('HSET', KEYS[3], 're_model', ARGV[1])
end
return {'go', redis.call('HLEN', KEYS[1])}
"""

# KEYS: items, vecs, meta, revecs. ARGV: target model, then id, vector pairs.
_STAGE_LUA = """
if redis.call('HGET', KEYS[3], 're_model') ~= ARGV[1] then return -1 end
local n = 0
for i = 2, #ARGV, 2 do
  -- an item deleted since it was read gets no vector
  if redis.call('HEXISTS', KEYS[1], ARGV[i]) == 1 then
    redis.call('HSET', KEYS[4], ARGV[i], ARGV[i + 1])
    n = n + 1
  end
end
return n
"""

# KEYS: items, vecs, meta, revecs. ARGV: target model, its vector size.
_SWAP_LUA = """
if redis.call('HGET', KEYS[3], 're_model') ~= ARGV[1] then return {-1} end
local ids = redis.call('HKEYS', KEYS[1])
local missing = {}
for _, id in ipairs(ids) do
  if redis.call('HEXISTS', KEYS[4], id) == 0 then missing[#missing + 1] = id end
end
if #missing > 0 then return {0, unpack(missing)} end
for _, id in ipairs(redis.call('HKEYS', KEYS[4])) do
  if redis.call('HEXISTS', KEYS[1], id) == 0 then redis.call('HDEL', KEYS[4], id) end
end
if #ids > 0 then redis.call('RENAME', KEYS[4], KEYS[2]) else redis.call('DEL', KEYS[4]) end
redis.call('HSET', KEYS[3], 'model', ARGV[1], 'dim', ARGV[2])
redis.call('HDEL', KEYS[3], 're_model')
redis.call('HINCRBY', KEYS[3], 'gen', 1)
return {1, #ids}
"""

_PAGE = 256


def _hmget(conn: RedisConnection, key: str, ids: list[str]) -> list[Any]:
    return list(conn.sync.hmget(key, ids))


async def _ahmget(conn: RedisConnection, key: str, ids: list[str]) -> list[Any]:
    return list(await (await conn.aclient()).hmget(key, ids))


def _hscan(conn: RedisConnection, key: str, cursor: int) -> tuple[int, dict[Any, Any]]:
    found: Any = conn.sync.hscan(key, cursor, count=_PAGE)
    return int(found[0]), dict(found[1])


async def _ahscan(conn: RedisConnection, key: str, cursor: int) -> tuple[int, dict[Any, Any]]:
    found: Any = await (await conn.aclient()).hscan(key, cursor, count=_PAGE)
    return int(found[0]), dict(found[1])


_SWAP_TRIES = 8
_CONCURRENT = (
    "another run re-embeds these items for another model; run one reembed at a time, "
    "with the embeddings model the app will use."
)


def _texts(raw: dict[Any, Any], where: str) -> dict[str, str]:
    return {
        str(parse_item_id(k, where)): Record.from_json(str(parse_item_id(k, where)), v, where).text
        for k, v in raw.items()
    }


def reembed_plan(
    store: ReembedTarget, user_id: str, *, progress: Progress | None = None
) -> Plan[int]:
    """Stage, then swap, the user's vectors for ``store``'s embeddings model.

    Returns how many items now carry the new model's vectors (0 when the user has none).
    """
    conn = store.connection
    keys = store.reembed_keys(user_id)
    items_key, revecs_key = keys[0], keys[3]
    emb = store.embeddings
    target = embeddings_model_id(emb)
    where = store.where(user_id)
    state, total = yield call(conn.eval, conn.aeval, _BEGIN_LUA, 4, *keys, target)
    total = int(total)
    if as_text(state) != "go":
        return total
    dim = 0

    def stage(found: dict[str, str]) -> Plan[int]:
        nonlocal dim
        if not found:
            return 0
        ids = list(found)
        have = yield call(_hmget, _ahmget, conn, revecs_key, ids)
        todo = [i for i, vec in zip(ids, have, strict=True) if vec is None]
        if not todo:
            return 0
        raw = yield call(emb.embed_documents, emb.aembed_documents, [found[i] for i in todo])
        vectors: np.ndarray = unit_rows(raw)
        dim = int(vectors.shape[1])
        pairs: list[Any] = []
        for item_id, vector in zip(todo, vectors, strict=True):
            pairs += [item_id, encode_vector(vector, store.vector_dtype)]
        staged = yield call(conn.eval, conn.aeval, _STAGE_LUA, 4, *keys, target, *pairs)
        if int(staged) < 0:
            raise ConcurrentReembedError(f"{where}: {_CONCURRENT}")
        return len(todo)

    done, cursor = 0, 0
    while True:
        cursor, page = yield call(_hscan, _ahscan, conn, items_key, cursor)
        done += yield from stage(_texts(page, where))
        if progress is not None:
            progress(min(done, total), total)
        if int(cursor) == 0:
            break
    for _ in range(_SWAP_TRIES):
        if not dim:  # resumed with everything staged: the size is the model's
            probe = yield call(emb.embed_documents, emb.aembed_documents, ["size"])
            dim = len(probe[0])
        result = yield call(conn.eval, conn.aeval, _SWAP_LUA, 4, *keys, target, str(dim))
        if int(result[0]) == 1:
            store.drop_cached(user_id)
            return int(result[1])
        if int(result[0]) < 0:
            raise ConcurrentReembedError(f"{where}: {_CONCURRENT}")
        missing = [as_text(i) for i in result[1:]]  # items added by the old model meanwhile
        found = yield call(_hmget, _ahmget, conn, items_key, missing)
        yield from stage(
            _texts({k: v for k, v in zip(missing, found, strict=True) if v is not None}, where)
        )
    raise ConcurrentReembedError(
        f"{where}: items kept arriving while re-embedding; run reembed again when the "
        "summarization workers are idle."
    )


def reembed_users_plan(
    store: ReembedTarget,
    user_ids: Sequence[str] | None = None,
    *,
    progress: UsersProgress | None = None,
) -> Plan[dict[str, int]]:
    """:func:`reembed_plan` for each of ``user_ids`` (default: every user with items, by
    SCAN), one after the other. Returns each user's count of re-embedded items.
    """
    users = list(user_ids) if user_ids is not None else (yield call(store.users, store.ausers))
    done: dict[str, int] = {}
    for user in users:
        report = None if progress is None else functools.partial(progress, user)
        done[user] = yield from reembed_plan(store, user, progress=report)
    return done

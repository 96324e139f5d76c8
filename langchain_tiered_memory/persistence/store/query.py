"""What a store batch's reads compute in Python: which namespaces a listing matches, which
items a filter keeps, and the vector scores of a search (cosine over unit vectors).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import ormsgpack
from langgraph.store.base import (
    Item,
    ListNamespacesOp,
    MatchCondition,
    SearchItem,
    SearchOp,
)

from langchain_tiered_memory.backend.keys import (
    encode_namespace,
)

__all__ = [
    "MAX_VALUE_DEPTH",
    "Stored",
    "filter_ok",
    "fixed_prefix",
    "hit",
    "lex_range",
    "load_vectors",
    "matches_all",
    "unit",
    "value_depth",
    "vector_search",
]

# Values nest at most this deep (a deeper one could be written but never read back: the
# JSON decoder's recursion limit).
MAX_VALUE_DEPTH = 100


class Stored(NamedTuple):
    """An item as stored: the item and its TTL in minutes (``None``: none)."""

    item: Item
    ttl: float | None


def value_depth(value: Any) -> int:
    """How deep ``value`` nests (a scalar is 0), without recursing."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        current, level = stack.pop()
        children = current.values() if isinstance(current, dict) else current
        if isinstance(current, (dict, list, tuple)):
            deepest = max(deepest, level)
            if level <= MAX_VALUE_DEPTH:
                stack += [(child, level + 1) for child in children]
    return deepest


def fixed_prefix(op: ListNamespacesOp) -> tuple[str, ...]:
    """The leading labels every listed namespace must have (a prefix condition up to its
    first wildcard), to read only that range of the registry.
    """
    for condition in op.match_conditions or ():
        if condition.match_type == "prefix":
            labels = tuple(condition.path)
            cut = labels.index("*") if "*" in labels else len(labels)
            return labels[:cut]
    return ()


def lex_range(prefix: tuple[str, ...]) -> tuple[str, str]:
    """ZRANGEBYLEX bounds of the namespaces under ``prefix``."""
    if not prefix:
        return "-", "+"
    encoded = encode_namespace(prefix)
    # every member under the prefix starts with "<...>/"; "0" is the byte after "/"
    return f"[{encoded}", f"({encoded[:-1]}0"


def matches_all(conditions: Sequence[MatchCondition] | None, namespace: tuple[str, ...]) -> bool:
    """Whether ``namespace`` meets every ``list_namespaces`` condition."""
    return all(matches(c, namespace) for c in conditions or ())


def matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise ValueError(f"match_type must be 'prefix' or 'suffix', not {condition.match_type!r}.")
    return all(p == "*" or n == p for n, p in pairs)


def filter_ok(value: dict[str, Any], filter: dict[str, Any] | None) -> bool:  # noqa: A002
    """Whether an item's value passes a search's ``filter`` (equality or ``$`` operators)."""
    return not filter or all(compare(value.get(k), v) for k, v in filter.items())


def compare(item_value: Any, filter_value: Any) -> bool:
    """LangGraph's filter semantics (as ``InMemoryStore`` and ``PostgresStore``)."""
    if isinstance(filter_value, dict):
        if any(k.startswith("$") for k in filter_value):
            return all(operator(item_value, k, v) for k, v in filter_value.items())
        if not isinstance(item_value, dict):
            return False
        return all(compare(item_value.get(k), v) for k, v in filter_value.items())
    if isinstance(filter_value, (list, tuple)):
        return (
            isinstance(item_value, (list, tuple))
            and len(item_value) == len(filter_value)
            and all(compare(i, f) for i, f in zip(item_value, filter_value, strict=True))
        )
    return bool(item_value == filter_value)


def operator(value: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return bool(value == operand)
    if operator == "$ne":
        return bool(value != operand)
    comparisons = {
        "$gt": float.__gt__,
        "$gte": float.__ge__,
        "$lt": float.__lt__,
        "$lte": float.__le__,
    }
    if operator not in comparisons:
        raise ValueError(
            f"unsupported filter operator {operator!r}: use $eq $ne $gt $gte $lt $lte."
        )
    if value is None:
        return False
    return bool(comparisons[operator](float(value), float(operand)))


def unit(vector: Sequence[float]) -> np.ndarray:
    """``vector`` as float32 of length 1 (a zero vector stays zero)."""
    array = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(array))
    return array / norm if norm else array


def load_vectors(raw: Any) -> dict[str, np.ndarray]:
    """An item's stored vectors by field path (msgpack of float32 bytes)."""
    if not raw:
        return {}
    return {p: np.frombuffer(b, dtype=np.float32) for p, b in ormsgpack.unpackb(raw).items()}


def vector_search(
    op: SearchOp,
    candidates: list[tuple[Stored, dict[str, np.ndarray]]],
    query: np.ndarray | None,
) -> list[tuple[Stored, float | None]]:
    """Rank by the best cosine similarity of an item's embedded fields (max pooling), as
    LangGraph's stores do; items without vectors fill up after the scored ones.
    """
    if query is None:
        return [(stored, None) for stored, _ in candidates[op.offset : op.offset + op.limit]]
    scored: list[tuple[Stored, float | None]] = []
    scoreless: list[Stored] = []
    for stored, vectors in candidates:
        if vectors:
            scored.append((stored, max(cosine(query, v) for v in vectors.values())))
        else:
            scoreless.append(stored)
    scored.sort(key=lambda pair: pair[1] or 0.0, reverse=True)
    kept = scored[op.offset : op.offset + op.limit]
    if scoreless and len(kept) < op.limit:
        kept += [(stored, None) for stored in scoreless[: op.limit - len(kept)]]
    return kept


def cosine(query: np.ndarray, vector: np.ndarray) -> float:
    norm = float(np.linalg.norm(vector))
    if not norm:
        return 0.0
    value = float(np.dot(query, vector) / norm)
    return value if math.isfinite(value) else 0.0


def hit(item: Item, score: float | None) -> SearchItem:
    """A search result of ``item`` with its ``score``."""
    return SearchItem(
        namespace=item.namespace,
        key=item.key,
        value=item.value,
        created_at=item.created_at,
        updated_at=item.updated_at,
        score=score,
    )

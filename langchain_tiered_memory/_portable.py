"""Portable values: what JSON, Redis and every checkpointer's msgpack all carry.

A tool call's arguments and a stored message are checked here, by the history (before it
stores a message) and by the agent (before a call is executed), so a value that one of
them could not carry never reaches it.

Example:
    >>> check_portable({"age": 30})
    >>> check_portable({"age": float("nan")}, "age")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    langchain_tiered_memory.errors.InvalidMessageError: age holds nan; only finite ...
"""

from __future__ import annotations

from typing import Any

from langchain_tiered_memory.errors import InvalidMessageError

__all__ = ["MAX_INT", "MAX_NESTING", "MIN_INT", "check_portable"]

# What JSON and the checkpointers' msgpack both carry: 64-bit integers, finite floats,
# bounded nesting. A value outside that stored in the history would break every later
# thread that loads it (msgpack refuses integers past 64 bits).
MIN_INT, MAX_INT = -(2**63), 2**64 - 1
MAX_NESTING = 64


def check_portable(value: Any, what: str = "value") -> None:
    """Raise ``InvalidMessageError`` unless ``value`` is plain JSON data every checkpointer
    can serialize: str keys, 64-bit ints, finite floats, at most ``MAX_NESTING`` levels.
    """
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_NESTING:
            raise InvalidMessageError(
                f"{what} is nested more than {MAX_NESTING} levels deep; flatten it."
            )
        if isinstance(item, bool) or item is None or isinstance(item, str):
            continue
        if isinstance(item, int):
            if not MIN_INT <= item <= MAX_INT:
                raise InvalidMessageError(
                    f"{what} holds the integer {str(item)[:20]}... ({item.bit_length()} bits); "
                    "numbers must fit in 64 bits. Send it as a string."
                )
        elif isinstance(item, float):
            if item != item or item in (float("inf"), float("-inf")):
                raise InvalidMessageError(f"{what} holds {item!r}; only finite numbers are stored.")
        elif isinstance(item, dict):
            for key, sub in item.items():
                if not isinstance(key, str):
                    raise InvalidMessageError(f"{what} has a non-string key {key!r}.")
                stack.append((sub, depth + 1))
        elif isinstance(item, (list, tuple)):
            stack.extend((sub, depth + 1) for sub in item)
        else:
            raise InvalidMessageError(
                f"{what} holds a {type(item).__name__}, which is not JSON data."
            )
